// SPDX-License-Identifier: Apache-2.0
// DynamicResources: places pods with spec.resourceClaims (Dynamic Resource Allocation,
// resource.k8s.io/v1) only where their claims can be allocated, allocates them, and writes the
// allocation — kube-scheduler's dynamicresources plugin with gpusched's device choice:
//   PreFilter  every claim of the pod exists (template claims: kube-controller-manager created it
//              and the pod, or the native PodGroup the pod names, owns it), is not being deleted;
//              a pod naming a PodGroup waits until the PodGroup is known; allocated claims keep
//              their node selector; the others are planned: each request's device class exists
//              and its CEL selectors compile (SelectorCache matches them once per device index
//              version);
//   Filter     allocated claims: the node is in the allocation's node selector; the others: the
//              allocator (allocator.h) finds devices on the node ("cannot allocate all claims");
//              devices held by claims of pods removed in a preemption dry run count as free, so
//              DefaultPreemption can free DRA devices (upstream cannot yet, KEP-5690); pods
//              nominated to the node keep their room: their unallocated claims take devices
//              first (upstream does not count them);
//   Score      packing: the fraction of the node's devices in use after the allocation (fuller
//              nodes first, so whole nodes and NVLink islands stay free for big requests); with
//              claims waiting for devices, PreScore looks ahead (lookahead.h: which nodes leave
//              room for the most waiting pods) and those nodes score 51..100 by packing, the
//              others 0..50; where the cluster is too large for the lookahead's budget and
//              waiting claims are restricted to some devices (pressure.h), half packing and half
//              the share of the node's free devices this pod could take that those claims do
//              not need;
//   Reserve    allocates on the chosen node and assumes the claims (DraView) with the allocation
//              and the pod in status.reservedFor — or its native PodGroup (KEP-5729) for a claim
//              the PodGroup's spec.resourceClaims lists the same way: the gang's members share
//              it, the first allocates, the others go where it is reachable; Unreserve restores;
//   PreBind    writes each claim's status (allocation, reservedFor) and waits for the write.
// Extended resources backed by DRA (KEP-5004, extended_resources.h): a pod's extended resource
// that a DeviceClass backs is, on a node that does not advertise it, a claim of its own: planned
// in PreFilter (a variant per set of such resources the nodes leave to DRA; a claim of an earlier
// attempt not allocated for the pod is deleted first), allocated with the pod's claims, assumed
// at Reserve as "<pod>-extended-resources-<5>", created and written in PreBind with the pod's
// status.extendedResourceClaimStatus, deleted again by Unreserve.
// Within a node, devices of the fullest island (the value of gpu.nvidia.com/cliqueId, else of
// resource.kubernetes.io/pcieRoot) are tried first. Reads the cluster through Handle::dra();
// without one, a pod with claims is unschedulable ("no DRA data source"). No args.
#pragma once

#include <boost/json/fwd.hpp>
#include <memory>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/dra_view.h"
#include "src/framework/gangs.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"
#include "src/plugins/dynamic_resources/allocator.h"
#include "src/plugins/dynamic_resources/node_devices.h"
#include "src/plugins/dynamic_resources/pressure.h"
#include "src/plugins/dynamic_resources/selectors.h"

namespace gpusched::plugins::dynamic_resources {

// Upstream's reasons.
inline constexpr std::string_view kReasonCannotAllocate = "cannot allocate all claims";
inline constexpr std::string_view kReasonNotAvailable = "resourceclaim not available on the node";
inline constexpr std::string_view kReasonInUse = "resourceclaim in use";

class DynamicResources final : public framework::PreFilterPlugin,
                               public framework::FilterPlugin,
                               public framework::PreScorePlugin,
                               public framework::ScorePlugin,
                               public framework::ReservePlugin,
                               public framework::PreBindPlugin,
                               public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  // `gangs` (may be null): where the pods' native PodGroups are found (their shared claims).
  DynamicResources(framework::DraView* dra, const framework::Gangs* gangs)
      : dra_(dra), gangs_(gangs) {}

  std::string_view Name() const override;
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const framework::Snapshot& snapshot,
                             std::span<const framework::NodeIndex> feasible) override;
  void ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override;
  framework::Status Reserve(framework::CycleState& state, const api::Pod& pod,
                            const framework::NodeInfo& node) override;
  void Unreserve(framework::CycleState& state, const api::Pod& pod, std::string_view node) override;
  framework::Status PreBind(framework::CycleState& state, const api::Pod& pod,
                            std::string_view node) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

 private:
  // Marks busy in `devices` what the unallocated claims of the pods nominated to this node (on a
  // copy of it with them added: Framework::RunFiltersWithNominatedPods) would take first.
  void TakeForNominatedPods(const framework::NodeInfo& node, const framework::NodeInfo& original,
                            const framework::DeviceIndex& index, NodeDevices& devices) const;

  framework::DraView* dra_;          // null: no DRA data
  const framework::Gangs* gangs_;    // null: no gang data (no claim is a PodGroup's)
  mutable SelectorCache selectors_;  // thread-safe; Filter plans nominated pods' claims
  // Each node's devices in preference order, kept until their usage changes (thread-safe;
  // Filter and Score read it through the cycle state).
  std::unique_ptr<NodeDevicesCache> node_devices_ = std::make_unique<NodeDevicesCache>();
  DevicePressure pressure_;  // PreScore only (the scheduling thread)
};

}  // namespace gpusched::plugins::dynamic_resources
