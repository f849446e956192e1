// SPDX-License-Identifier: Apache-2.0
// BindingCycle: kube-scheduler's assume → permit → bind protocol (schedule_one.go), the one copy
// that the scheduler and the extender both run. It keeps a GPU from being claimed twice while a
// bind is in flight: the placement is assumed in the cache before the API call and forgotten if
// anything after it fails.
//
//   Reserve (the caller's thread, once a node is chosen):
//     RunReserve ──fail──► (the runtime has unreserved) ──► the status
//     Cache::AssumePod ──fail──► Unreserve ──► Error
//     RunPermit ──reject/error──► Unreserve, ForgetPod ──► the status
//               ──wait──► the pod is held in the WaitingPodMap; Success (Bind waits for it)
//   Bind (posted to the executor):
//     wait for Permit (WaitingPodMap::OnDecided; at once when nothing holds the pod)
//       ──rejected/timed out──► Unreserve, ForgetPod ──► done(the Unschedulable status)
//     PreBind ─► Bind ─► Cache::FinishBinding ─► PostBind ─► done(Success)
//       PreBind/Bind failure ──► Unreserve, ForgetPod ──► done(Error "Binding rejected: …")
//
// After Reserve returned Success the caller must call Bind or Abandon exactly once; after Bind,
// `done` runs exactly once, on an executor thread (inline with common::InlineExecutor). Everything
// after the wait runs on the executor, never on the thread that allowed the pod.
//
// Threading: Reserve is called by one thread at a time per Framework (the scheduling thread, or the
// extender under its bind lock); Bind and done may run concurrently for different pods.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "src/api/types.h"
#include "src/cache/cache.h"
#include "src/common/executor.h"
#include "src/framework/cycle_state.h"
#include "src/framework/node_info.h"
#include "src/framework/runtime/framework.h"
#include "src/framework/runtime/waiting_pods.h"

namespace gpusched::binding {

// One pod on its way to a node.
struct Attempt {
  framework::runtime::Framework* fw = nullptr;
  api::PodPtr pod;
  std::shared_ptr<framework::CycleState> state;
  std::string node;
};

class BindingCycle {
 public:
  using Done = std::function<void(framework::Status)>;

  BindingCycle(cache::Cache& cache, framework::runtime::WaitingPodMap& waiting,
               common::Executor& executor)
      : cache_(cache), waiting_(waiting), executor_(executor) {}

  // Reserve → Assume → Permit for `attempt` on `node` (attempt.node is its name). Not Success:
  // everything is rolled back and the attempt is over.
  framework::Status Reserve(const Attempt& attempt, const framework::NodeInfo& node);
  // The binding half of an attempt Reserve accepted. `done` gets Success once the pod is bound.
  void Bind(Attempt attempt, Done done);
  // Instead of Bind: drops an attempt Reserve accepted (held at Permit or not), on the caller's
  // thread: out of the waiting map, Unreserve, ForgetPod. The gang cycle's rollback.
  void Abandon(const Attempt& attempt);

 private:
  void BindNow(const Attempt& attempt, const Done& done);
  void Rollback(const Attempt& attempt);

  cache::Cache& cache_;
  framework::runtime::WaitingPodMap& waiting_;
  common::Executor& executor_;
};

}  // namespace gpusched::binding
