// SPDX-License-Identifier: Apache-2.0
// Handle: what the framework gives a plugin at construction. Plugins see the cluster only through
// the Snapshot passed to each call and through this Handle (including its typed data sources,
// e.g. network()), so a plugin depends on the framework alone and one fake handle
// (src/testing) suffices to test any plugin, and the scheduler, the extender and the simulator run
// the same plugin code.
#pragma once

#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/framework/cycle_state.h"
#include "src/framework/gangs.h"
#include "src/framework/network_view.h"
#include "src/framework/waiting_pods.h"

namespace gpusched::framework {

class VolumeView;  // volume_view.h
class DraView;     // dra_view.h

class Handle {
 public:
  virtual ~Handle() = default;
  virtual const common::Clock& clock() const = 0;
  // Binds `pod` to `node` through the API (pods/binding), first writing the allocation's
  // annotations. Used by the DefaultBinder plugin. Thread-safe.
  virtual common::Status BindPod(const api::Pod& pod, std::string_view node,
                                 const Allocation& allocation) = 0;
  // The pods held at Permit (waiting_pods.h), for plugins that release or reject them (gangs).
  virtual WaitingPods& waiting_pods() = 0;
  // The cluster's PodDisruptionBudgets as the informer last saw them, for preemption (the
  // scheduler's and the extender's preempt verb). Thread-safe; a copy.
  virtual std::vector<api::PdbPtr> PodDisruptionBudgets() const { return {}; }
  // What the scheduler knows about gangs (gangs.h), for the GangScheduling plugin; nullptr where
  // nothing tracks gangs (the extender: kube-scheduler gangs the pods): the plugin then treats
  // every pod as a single pod.
  virtual Gangs* gangs() { return nullptr; }
  // The network data (AppGroups, NetworkTopologies, measured traffic; network_view.h) for
  // plugins that place pods by traffic; null where none is configured (the simulator and
  // `gpusched extender` configure none).
  // The same pointer for the handle's life, so a plugin may keep it from its factory on.
  virtual const NetworkView* network() const { return nullptr; }
  // The cluster's storage objects and the volume assume cache (volume_view.h), for the volume
  // plugins; null where nothing feeds them (the extender: kube-scheduler binds the volumes):
  // those plugins then treat every pod as having no volumes they can check. The same pointer for
  // the handle's life.
  virtual VolumeView* volumes() { return nullptr; }
  // The cluster's DeviceClasses, ResourceSlices and ResourceClaims with the allocations in
  // flight (dra_view.h), for the DynamicResources plugin; null where nothing feeds them (the
  // extender: kube-scheduler allocates the claims): a pod with claims is then unschedulable
  // there. The same pointer for the handle's life.
  virtual DraView* dra() { return nullptr; }
};

}  // namespace gpusched::framework
