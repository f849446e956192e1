// SPDX-License-Identifier: Apache-2.0
// Checks on a manifest document that the decoder does not make, because a client of the API
// server never needs them: what the API server itself would refuse, and fields that nothing
// reads (a typo such as `resource:` for `resources:` is otherwise silently ignored).
//
//   errors:   spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "0.5": must
//             be an integer
//   warnings: spec.containers[0].resource: unknown field (did you mean "resources"?); ignored
//
// Covered kinds: Pod, Node, and the pod templates of Deployment, ReplicaSet, StatefulSet,
// DaemonSet and Job (apps/v1, batch/v1), with the object's metadata and spec; the unknown fields of
// DeviceClass, ResourceSlice, ResourceClaim and ResourceClaimTemplate (resource.k8s.io/v1, their
// specs, devices, requests and constraints); other kinds are not checked. The API server's rules
// reproduced (k8s.io/kubernetes pkg/apis/core/validation, ValidateResourceRequirements): a resource
// quantity must not be negative; an extended resource (a name with a domain outside kubernetes.io,
// such as nvidia.com/gpu) must be an integer, must have a limit, and its request must equal its
// limit; a cpu or memory request must not exceed its limit. And ValidateObjectMeta's names: a
// Pod, Node or workload name is a DNS-1123 subdomain (required), a namespace a DNS-1123 label; a
// Pod or Node of an apiVersion other than v1 is refused (an absent apiVersion is accepted: the
// simulator reads the kind); a pod spec needs containers (their names and images are not checked:
// no scheduling rule reads them, and sketches omit them). The replay's gpusched.io/arrival and
// gpusched.io/duration annotations must be durations (in every run: all are reported at once).
// Pure functions; thread-safe.
#pragma once

#include <boost/json/fwd.hpp>
#include <string>
#include <vector>

namespace gpusched::sim {

struct DocumentFindings {
  std::vector<std::string> errors;    // "path: why": the API server would refuse the object
  std::vector<std::string> warnings;  // "path: unknown field ..."
};

// Checks one manifest document (an object with kind; List items are checked one by one, their
// paths prefixed with items[i]).
DocumentFindings CheckDocument(const boost::json::value& document);

}  // namespace gpusched::sim
