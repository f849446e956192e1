// SPDX-License-Identifier: Apache-2.0
// ResourceList: a pod's request or a node's allocatable, as flat integers. The four built-in
// resources have fixed slots; extended resources (nvidia.com/gpu, hugepages-2Mi, ...) are a small
// vector sorted by interned name. Copying is cheap when there are no extended resources.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "src/common/interner.h"

namespace gpusched::api {

// Interned names of resources and labels that the core refers to. Interned once, on first use.
struct WellKnown {
  common::Atom cpu, memory, ephemeral_storage, pods;
  common::Atom nvidia_gpu;         // "nvidia.com/gpu"
  common::Atom nvidia_gpu_shared;  // "nvidia.com/gpu.shared" (time-slicing with renameByDefault)
  common::Atom hostname;           // "kubernetes.io/hostname"
  common::Atom zone;               // "topology.kubernetes.io/zone"
  common::Atom region;             // "topology.kubernetes.io/region"
  common::Atom instance_type;      // "node.kubernetes.io/instance-type"
  common::Atom default_scheduler;  // "default-scheduler"
};
const WellKnown& Names();

struct ResourceList {
  int64_t milli_cpu = 0;
  int64_t memory = 0;             // bytes
  int64_t ephemeral_storage = 0;  // bytes
  int64_t pods = 0;
  std::vector<std::pair<common::Atom, int64_t>> scalar;  // sorted by atom id; no zero entries

  // Amount of the named resource (built-in names map to their slot; cpu in millicores).
  int64_t Get(common::Atom name) const;
  void Set(common::Atom name, int64_t value);
  void Add(const ResourceList& other);
  void Sub(const ResourceList& other);
  // Element-wise max (init containers).
  void Max(const ResourceList& other);
  bool IsZero() const;
  friend bool operator==(const ResourceList&, const ResourceList&) = default;
};

}  // namespace gpusched::api
