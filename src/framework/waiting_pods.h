// SPDX-License-Identifier: Apache-2.0
// WaitingPods: the pods held at Permit, as plugins see them through Handle::waiting_pods()
// (kube-scheduler's framework.WaitingPod and Handle.IterateOverWaitingPods/GetWaitingPod).
//
// A pod waits when one or more Permit plugins returned kWait (each with its own timeout) and none
// rejected it. It stays assumed in the cache — its devices stay claimed — until every plugin that
// holds it has called Allow (it then binds), one calls Reject, or the earliest timeout passes
// (rejected with "rejected due to timeout after waiting <d> at plugin <P>"). A rejected pod is
// unreserved, forgotten and requeued as unschedulable, exactly as one rejected by Permit at once.
//
// Threading: every method is thread-safe and may be called from any plugin point. Allow and Reject
// never run the pod's binding cycle on the caller's thread when the executor is a thread pool
// (it is posted); with the inline executor (simulator, tests) it runs before they return.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"

namespace gpusched::framework {

class WaitingPods {
 public:
  virtual ~WaitingPods() = default;

  struct Info {
    api::PodPtr pod;
    std::string node;                  // the node it is reserved on
    std::vector<std::string> pending;  // the plugins still holding it, in profile order
  };
  // The pods waiting now, in the order they started waiting.
  virtual std::vector<Info> List() const = 0;
  // `plugin` releases pod `uid`; the pod binds once no plugin holds it. False when the pod is not
  // waiting or `plugin` does not hold it.
  virtual bool Allow(std::string_view uid, std::string_view plugin) = 0;
  // Rejects pod `uid` with `message` (the FailedScheduling reason). False when it is not waiting.
  virtual bool Reject(std::string_view uid, std::string_view plugin, std::string_view message) = 0;
};

}  // namespace gpusched::framework
