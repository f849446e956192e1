// SPDX-License-Identifier: Apache-2.0
// Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/) of a Registry, kept apart from the
// registry and from the HTTP transport (as Seastar's prometheus.cc): the caller serves the string
// with kContentType.
//
//   # HELP name help          (help: '\' -> "\\", newline -> "\n")
//   # TYPE name counter|gauge|histogram
//   name{l1="v1",l2="v2"} 12  (label values: '\' -> "\\", '"' -> "\"", newline -> "\n")
//   name_bucket{...,le="0.001"} 3   ... le="+Inf", then name_sum and name_count
//
// Values: shortest round-trip decimal, "+Inf", "-Inf", "NaN". Families without a series still get
// their HELP and TYPE lines. Thread safety: as Registry::Gather.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/metrics/registry.h"

namespace gpusched::metrics {

inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string FormatValue(double v);
std::string EscapeLabelValue(std::string_view v);
std::string EscapeHelp(std::string_view v);

std::string WriteText(const std::vector<FamilySnapshot>& families);
std::string WriteText(const Registry& registry);
// Several registries into one page (e.g. the process's and a controller's).
std::string WriteText(const std::vector<const Registry*>& registries);

}  // namespace gpusched::metrics
