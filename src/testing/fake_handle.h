// SPDX-License-Identifier: Apache-2.0
// FakeHandle: a framework::Handle for plugin tests. Time comes from a FakeClock; BindPod records
// each call and returns a settable status instead of talking to an API server; waiting_pods() is
// an empty table unless a test sets one (SetWaitingPods); gangs() is null unless a test sets one
// (SetGangs); network() is null unless a test sets a view (SetNetwork, e.g. an
// cache::NetworkStore it fills). Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/types.h"
#include "src/cache/dra_store.h"
#include "src/cache/volume_store.h"
#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/common/status.h"
#include "src/framework/cycle_state.h"
#include "src/framework/handle.h"
#include "src/framework/network_view.h"

namespace gpusched::testing {

class FakeHandle final : public framework::Handle {
 public:
  // One recorded BindPod call.
  struct BindCall {
    std::string pod;  // namespace/name
    std::string node;
    framework::Allocation allocation;
  };

  const common::Clock& clock() const override { return clock_; }
  common::FakeClock& fake_clock() { return clock_; }

  common::Status BindPod(const api::Pod& pod, std::string_view node,
                         const framework::Allocation& allocation) override {
    common::MutexLock lock(mu_);
    binds_.push_back(BindCall{pod.Key(), std::string(node), allocation});
    return bind_result_;
  }

  framework::WaitingPods& waiting_pods() override {
    return waiting_ != nullptr ? *waiting_ : no_waiting_;
  }
  // REQUIRES: before any plugin uses waiting_pods(); `waiting` outlives the handle's use.
  void SetWaitingPods(framework::WaitingPods* waiting) { waiting_ = waiting; }

  framework::Gangs* gangs() override { return gangs_; }
  // REQUIRES: before any plugin uses gangs(); `gangs` outlives the handle's use.
  void SetGangs(framework::Gangs* gangs) { gangs_ = gangs; }

  std::vector<api::PdbPtr> PodDisruptionBudgets() const override {
    common::MutexLock lock(mu_);
    return pdbs_;
  }
  void SetPodDisruptionBudgets(std::vector<api::PdbPtr> pdbs) {
    common::MutexLock lock(mu_);
    pdbs_ = std::move(pdbs);
  }

  const framework::NetworkView* network() const override { return network_; }
  // REQUIRES: before any plugin is created on this handle; `network` outlives the handle's use.
  void SetNetwork(const framework::NetworkView* network) { network_ = network; }

  // The storage objects: the scheduler's real store, which the test fills through volume_view()
  // (UpsertPv, UpsertPvc, set_writer, ...). volumes() is null until volume_view() is first
  // called, so plugins see no volume data by default, as in the extender.
  framework::VolumeView* volumes() override { return volumes_enabled_ ? &volumes_ : nullptr; }
  cache::VolumeStore& volume_view() {
    volumes_enabled_ = true;
    return volumes_;
  }
  // The DRA objects: the scheduler's real store, which the test fills through dra_view(); dra() is
  // null until then.
  framework::DraView* dra() override { return dra_enabled_ ? &dra_ : nullptr; }
  cache::DraStore& dra_view() {
    dra_enabled_ = true;
    return dra_;
  }

  // The status every later BindPod returns (OK by default).
  void SetBindResult(common::Status status) {
    common::MutexLock lock(mu_);
    bind_result_ = std::move(status);
  }
  // A copy of the calls so far, in call order.
  std::vector<BindCall> binds() const {
    common::MutexLock lock(mu_);
    return binds_;
  }

 private:
  // No pod is ever waiting.
  class NoWaitingPods final : public framework::WaitingPods {
   public:
    std::vector<Info> List() const override { return {}; }
    bool Allow(std::string_view, std::string_view) override { return false; }
    bool Reject(std::string_view, std::string_view, std::string_view) override { return false; }
  };

  common::FakeClock clock_;
  cache::VolumeStore volumes_;
  bool volumes_enabled_ = false;
  cache::DraStore dra_;
  bool dra_enabled_ = false;
  NoWaitingPods no_waiting_;
  framework::WaitingPods* waiting_ = nullptr;
  framework::Gangs* gangs_ = nullptr;
  const framework::NetworkView* network_ = nullptr;
  mutable common::Mutex mu_;
  std::vector<BindCall> binds_ GPUSCHED_GUARDED_BY(mu_);
  common::Status bind_result_ GPUSCHED_GUARDED_BY(mu_);
  std::vector<api::PdbPtr> pdbs_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace gpusched::testing
