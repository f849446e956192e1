// SPDX-License-Identifier: Apache-2.0
// Pod scheduling equivalence: two pods with the same key get the same Filter verdict and the same
// raw Score from every node-local plugin on every node (framework/plugin.h, Plugin::NodeLocal),
// so the runtime may reuse one pod's per-node results for the next (runtime/result_cache.h).
//
// The key is a canonical byte encoding (fixed-width integers, length-prefixed strings and
// lists), so two keys are equal exactly when the encoded fields are equal: a hit is confirmed by
// comparing the whole key, never by the hash alone.
//
// Fields in the key (every pod field a scheduling plugin reads):
//   metadata.namespace; annotations whose key starts with "gpusched.io/" (per-pod policy
//   overrides such as gpusched.io/gpu-policy);
//   spec.schedulerName, spec.nodeName, spec.priority, spec.nodeSelector, spec.affinity (node
//   affinity required + preferred; pod affinity and anti-affinity required + preferred: label
//   selector, namespaces, namespace selector, topology key, weight), spec.tolerations (key,
//   operator, value, effect, tolerationSeconds), spec.topologySpreadConstraints (maxSkew,
//   topologyKey, whenUnsatisfiable, label selector, minDomains, node inclusion policies),
//   spec.overhead, every container's and init container's requests, limits and host ports
//   (hostPort, protocol, hostIP: NodePorts) and the init containers' restartPolicy;
//   derived on decode: requests (effective), gpu (the normalised GPU request: count, milli,
//   memory share, minimum memory, models — i.e. the GPU annotations and limits) and gpu_error.
// Not in the key: name, uid, resourceVersion, labels, other annotations, owner references,
// container images (only ImageLocality reads them, and it is not node-local), status. Labels are
// left out on purpose: only cross-node plugins (PodTopologySpread, InterPodAffinity) read the
// incoming pod's labels, and a cross-node plugin that is not skipped disables result reuse for the
// cycle anyway; keeping labels out lets the pods of one Job or ReplicaSet with per-pod labels (e.g.
// a completion index) share results.
//
// A plugin that reads any other pod field must not declare itself node-local, or that field must
// be added here (with a case in equivalence_test.cc).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "src/api/types.h"

namespace gpusched::api {

// Writes the pod's equivalence key into `out` (replacing its contents; reuses its capacity, so
// a caller that keeps `out` allocates nothing once it has grown).
void SchedulingEquivalenceKey(const Pod& pod, std::string& out);

// A 64-bit hash of a key (FNV-1a), for bucketing; equal keys have equal hashes.
uint64_t HashEquivalenceKey(std::string_view key);

// Node twins: two nodes with equal keys differ only in their identity — metadata.name, uid,
// resourceVersion, creationTimestamp and the kubernetes.io/hostname label — so, while their pods
// add up to the same (cache/twin_groups.h), every plugin that does not read that identity for the
// pod at hand gives them the same Filter verdict and raw Score (framework/plugin.h,
// Plugin::SameForTwinNodes; Snapshot::twins). The same canonical encoding as the pod key.
// In the key: the other labels, every annotation, deletionTimestamp, capacity, allocatable,
// taints, spec.unschedulable, the conditions' type, status and reason, status.images (names and
// size), and the derived GPU description (NodeGpuInfo and gpu_error; derived from the fields
// above, kept for safety). Not in it: the identity, owner references, condition messages and
// times.
void NodeTwinKey(const Node& node, std::string& out);

}  // namespace gpusched::api
