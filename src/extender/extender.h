// SPDX-License-Identifier: Apache-2.0
// Extender: kube-scheduler's HTTP extender protocol (filter, prioritize, preempt, bind) served by
// the same framework, plugins and cluster cache as `gpusched scheduler`. See README.md for the
// wire types and docs/kube-scheduler-compat.md §6.
//
// Data flow:
//   informers (cmd) ─► events() (events::EventHandler, as the scheduler's) ─► Cache, PdbStore
//                     Cache ─► published snapshot (shared_ptr<const Snapshot>)
//   kube-scheduler ─► http::Server worker ─► Filter / Prioritize (read the published snapshot,
//                                             run PreFilter+Filter / PreFilter+Score on a pooled
//                                             Framework)
//                                       ├─► Preempt (per proposed node: our filters without
//                                       │             kube-scheduler's victims; if the pod does
//                                       │             not fit, framework::preemption's
//                                       │             device-correct victims instead, else the
//                                       │             node is dropped)
//                                       └─► Bind (short bind lock: refresh, PreFilter + Filter the
//                                             node, BindingCycle::Reserve = Reserve, AssumePod,
//                                             Permit; then, outside it, BindingCycle::Bind = wait
//                                             for Permit, PreBind, Bind (the API call),
//                                             FinishBinding, PostBind, or Unreserve+ForgetPod on
//                                             failure)
//
// Snapshots: the Cache has one snapshot consumer. CurrentSnapshot() takes snapshot_mu_, lets the
// cache update the working snapshot incrementally and, when the cache's generation moved,
// publishes an immutable copy; requests share that copy without further locking. Its cost is one
// copy of the node array per cluster change, not per request.
//
// Assumptions (GPU accounting while kube-scheduler binds): a pod is assumed on the cache when it
// is bound through our bind verb, confirmed when the informer delivers it with spec.nodeName, and
// expired after options.assumed_ttl if it never shows up (Tick() runs the expiry, and times out
// Permit waits). Without the bind
// verb the accounting comes from the informer alone.
//
// What it reads: nodes, pods and PodDisruptionBudgets, through the same EventHandler as the
// scheduler (the preempt verb counts and avoids PDB violations as DefaultPreemption does). It
// tracks no PodGroups, storage or DRA objects: behind kube-scheduler, upstream's own plugins gang
// the pods, bind their volumes and allocate their claims, so the Handle offers no gangs(),
// volumes() or dra() (GangScheduling and the volume plugins pass every pod; DynamicResources
// rejects a pod with claims). UntrackedKinds() names those the profile's plugins asked for, for
// the start-up log.
//
// Threading: every method may be called from any thread concurrently. Framework instances are not
// reentrant, so each request leases one from a pool of options.workers instances.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/api/types.h"
#include "src/binding/binding_cycle.h"
#include "src/cache/cache.h"
#include "src/cache/pdb_store.h"
#include "src/common/clock.h"
#include "src/common/executor.h"
#include "src/common/mutex.h"
#include "src/common/status.h"
#include "src/config/config.h"
#include "src/events/event_handler.h"
#include "src/framework/handle.h"
#include "src/framework/network_view.h"
#include "src/framework/node_info.h"
#include "src/framework/registry.h"
#include "src/framework/runtime/framework.h"
#include "src/http/server.h"

namespace gpusched::extender {

// Writes the allocation's annotations and creates the pods/binding subresource.
using BindFunc = std::function<common::Status(const api::Pod& pod, std::string_view node,
                                              const framework::Allocation& allocation)>;

struct ExtenderOptions {
  // Pods requesting or limiting none of these are answered at once (all nodes pass, score 0).
  // Empty: every pod is evaluated.
  std::vector<std::string> managed_resources = {"nvidia.com/gpu"};
  int workers = 4;  // Framework instances; at least the HTTP server's thread count
  // How long a pod bound through us may stay unconfirmed by the informer before the assumption
  // is dropped.
  common::Duration assumed_ttl = std::chrono::seconds(60);
  size_t recent_pods = 4096;  // pods remembered from filter/prioritize for bind (FIFO)
};

struct ExtenderDeps {
  const common::Clock& clock;
  const framework::Registry& registry;
  BindFunc bind;  // empty: the bind verb answers with an Error
  // The network data plugins read through Handle::network(); null: none (what `gpusched
  // extender` passes). Must outlive the Extender.
  const framework::NetworkView* network = nullptr;
};

class Extender final : public framework::Handle {
 public:
  // Builds options.workers Frameworks from `profile`.
  static common::StatusOr<std::unique_ptr<Extender>> Create(const config::Profile& profile,
                                                            int32_t default_percentage,
                                                            ExtenderOptions options,
                                                            ExtenderDeps deps);

  // framework::Handle
  const common::Clock& clock() const override { return deps_.clock; }
  common::Status BindPod(const api::Pod& pod, std::string_view node,
                         const framework::Allocation& allocation) override;
  framework::WaitingPods& waiting_pods() override { return waiting_; }
  std::vector<api::PdbPtr> PodDisruptionBudgets() const override { return pdbs_.List(); }
  const framework::NetworkView* network() const override { return deps_.network; }
  // None: noted as asked for (UntrackedKinds).
  framework::Gangs* gangs() override;
  framework::VolumeView* volumes() override;
  framework::DraView* dra() override;

  // The one entry point for cluster objects (the informers of cmd, or tests): nodes, pods and
  // PodDisruptionBudgets; the kinds it does not track are ignored (see the file comment).
  events::EventHandler& events() { return events_; }
  // The kinds the profile's plugins asked the Handle for while they were built and the extender
  // does not track ("PodGroups", "PersistentVolumeClaims", "ResourceClaims"); empty when none.
  std::vector<std::string> UntrackedKinds() const;
  // Expires assumptions and Permit waits; call about once a second. Returns how many assumptions
  // were dropped.
  int Tick();

  // Verb handlers: JSON request body in, HTTP response out (200 with the result type; 400 for a
  // body that is not valid JSON or lacks the required fields).
  http::Response Filter(std::string_view body);
  http::Response Prioritize(std::string_view body);
  http::Response Bind(std::string_view body);
  // kube-scheduler's preemptVerb: ExtenderPreemptionArgs (Pod, and NodeNameToVictims with full
  // pods or NodeNameToMetaVictims with UIDs) in, ExtenderPreemptionResult
  // {NodeNameToMetaVictims: {node: {Pods: [{UID}], NumPDBViolations}}} out. Per node: the
  // proposed victims are kept when the pod passes our filters without them; otherwise they are
  // replaced by framework::preemption::VictimSelector's victims among the node's pods of lower
  // priority (those free usable devices, not just a GPU count), or the node is dropped when even
  // that fails. 400 for a malformed body (the message names the field), 500 for a plugin error.
  http::Response Preempt(std::string_view body);

  // Registers POST {prefix}/filter, /prioritize, /preempt, /bind on `server`.
  void RegisterRoutes(http::Server& server, std::string_view prefix = "");

  // Whether the pod requests or limits a managed resource.
  bool Interested(const api::Pod& pod) const;

  // Read-only views of the cache (tests, diagnostics).
  bool IsAssumed(std::string_view uid) const { return cache_.IsAssumed(uid); }
  bool InCache(std::string_view uid) const { return cache_.Contains(uid); }
  common::Status CheckCacheInvariants() const { return cache_.CheckInvariants(); }
  int32_t OvercommittedPods() const { return cache_.OvercommittedPods(); }
  std::shared_ptr<const framework::Snapshot> CurrentSnapshot();

 private:
  class Lease;
  Extender(ExtenderOptions options, ExtenderDeps deps);
  framework::runtime::Framework& Acquire();
  void Release(framework::runtime::Framework& fw);
  void Remember(const api::PodPtr& pod);
  api::PodPtr Recall(std::string_view uid);
  // Re-checks `pod` on `node` and reserves it (BindingCycle::Reserve), under bind_mu_. Empty on
  // success, else the ExtenderBindingResult error.
  std::string ReserveForBind(const binding::Attempt& attempt);

  ExtenderOptions options_;
  ExtenderDeps deps_;
  std::vector<common::Atom> managed_;
  cache::Cache cache_;
  cache::PdbStore pdbs_;
  // Which of gangs(), volumes(), dra() a plugin asked for while Create built the frameworks.
  std::atomic<bool> building_{false};
  std::atomic<bool> asked_gangs_{false}, asked_volumes_{false}, asked_dra_{false};
  events::EventHandler events_{{.cache = cache_, .pdbs = pdbs_}};  // after the stores
  framework::runtime::WaitingPodMap waiting_;
  common::InlineExecutor bind_executor_;  // the binding half runs on the request's thread
  binding::BindingCycle binding_;

  common::Mutex snapshot_mu_;
  framework::Snapshot working_ GPUSCHED_GUARDED_BY(snapshot_mu_);
  std::shared_ptr<const framework::Snapshot> published_ GPUSCHED_GUARDED_BY(snapshot_mu_);

  // Serialises the Reserve+Assume step of concurrent binds (not the API call).
  common::Mutex bind_mu_;

  common::Mutex pool_mu_;
  std::condition_variable_any pool_cv_;
  std::vector<std::unique_ptr<framework::runtime::Framework>> frameworks_;
  std::vector<framework::runtime::Framework*> free_ GPUSCHED_GUARDED_BY(pool_mu_);

  common::Mutex recent_mu_;
  std::unordered_map<std::string, api::PodPtr> recent_ GPUSCHED_GUARDED_BY(recent_mu_);
  std::deque<std::string> recent_order_ GPUSCHED_GUARDED_BY(recent_mu_);
};

using ExtenderPtr = std::unique_ptr<Extender>;

}  // namespace gpusched::extender
