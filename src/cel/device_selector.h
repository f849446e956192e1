// SPDX-License-Identifier: Apache-2.0
// CEL selectors of Dynamic Resource Allocation (resource.k8s.io/v1 DeviceClass and request
// selectors, issue #23): compile once, match each device. The environment is upstream's
// (k8s.io/dynamic-resource-allocation/cel/compile.go): one variable, `device`, with fields
// driver, attributes, capacity and allowMultipleAllocations; the Kubernetes quantity and semver
// libraries, the strings extension, cel.bind, and upstream's cost limit
// (CELSelectorExpressionMaxCost = 1,000,000) both on the estimate at compile time and at run time.
// A domain the device does not have reads as an empty map, so
// `device.attributes["other.example.com"].x` is the runtime error "no such key: x" and
// `has(device.attributes["other.example.com"].x)` is false, as upstream. Scope and what is not
// supported: src/cel/README.md.
//
// Thread safety: a Program is immutable; MatchDevice may run on many threads at once with the
// same Program. MatchDevice allocates nothing for selectors that build no strings or lists.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/dra.h"
#include "src/api/quantity.h"
#include "src/common/status.h"

namespace gpusched::cel {

class Program;  // a compiled expression, immutable, thread-safe to evaluate concurrently

// What the DRA `device` variable holds. Attribute/capacity names are fully qualified
// "<domain>/<id>" (domain may contain dots, id has no '/'), sorted by name. In CEL:
// device.driver, device.attributes["<domain>"].<id> (or ["<domain>"]["<id>"]),
// device.capacity["<domain>"].<id> (a quantity), device.allowMultipleAllocations.
// A name without '/' is read with the driver as its domain, as upstream.
struct DeviceInput {
  std::string_view driver;
  const std::vector<std::pair<std::string, api::DeviceAttribute>>* attributes = nullptr;
  const std::vector<std::pair<std::string, api::Quantity>>* capacity = nullptr;
  bool allow_multiple_allocations = false;
};

// resource.k8s.io CELSelectorExpressionMaxLength.
inline constexpr size_t kSelectorMaxLength = 10 * 1024;

// Compiles a DeviceClass or request selector once; the error names the expression and why
// (syntax error with position, unknown function, non-bool result where it can tell, estimated
// cost over the limit), in words close to upstream's:
//   CEL selector "device.drver == 1": compilation failed: ERROR: <input>:1:7: undefined field 'drver'
common::StatusOr<std::shared_ptr<const Program>> CompileDeviceSelector(std::string_view expression);

// Evaluates the selector for one device: true/false, or an error (CEL runtime error such as
// "no such key", type mismatch, overflow, or the runtime cost limit exceeded) as upstream reports it.
common::StatusOr<bool> MatchDevice(const Program& program, const DeviceInput& device);

}  // namespace gpusched::cel
