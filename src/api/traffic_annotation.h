// SPDX-License-Identifier: Apache-2.0
// The gpusched.io/traffic annotation: a light way for a pod (or a pod template) to say which
// workloads it talks to and how much, without the AppGroup CRD.
//
//   metadata:
//     annotations:
//       gpusched.io/traffic: "app=cart => 20; app in (redis,db),tier=cache => 5.5"
//
// Grammar: one or more entries separated by ';'. Each entry is
//   <label selector> => <MB/s>
// where <label selector> is kubectl's -l syntax (ParseSelector: "k=v", "k!=v",
// "k in (a,b)", "k notin (a,b)", "k", "!k", joined by ','), and <MB/s> is a decimal number
// > 0 and <= 100000: the average traffic, both directions together, in megabytes (10^6 bytes)
// per second between this pod and the peer workload as a whole. Peers are the pods of the pod's
// own namespace that match the selector (the pod itself never counts). Whitespace around
// tokens is ignored; an empty entry (e.g. a trailing ';') is allowed.
//
// Validation is strict: an empty selector (which would match every pod), a missing "=>", a
// weight that is not a finite positive number, the same selector twice, or more than
// kMaxTrafficEntries entries is an error naming the annotation, the entry and the value.
// The scheduler treats a bad annotation as "no declared traffic" for that pod (and reports the
// error), so the pod still schedules.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/api/labels.h"
#include "src/common/status.h"

namespace gpusched::api {

inline constexpr std::string_view kTrafficAnnotation = "gpusched.io/traffic";
inline constexpr double kMaxTrafficMBps = 100000;
inline constexpr size_t kMaxTrafficEntries = 64;

struct TrafficPeer {
  std::string selector_text;  // as written, trimmed
  LabelSelector selector;
  double mbps = 0;  // MB/s, both directions
};

// Parses the annotation's value.
common::StatusOr<std::vector<TrafficPeer>> ParseTrafficAnnotation(std::string_view value);

}  // namespace gpusched::api
