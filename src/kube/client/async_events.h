// SPDX-License-Identifier: Apache-2.0
// AsyncEventClient: an ApiClient whose CreateEvent returns at once and records the event in the
// background, as kube-scheduler's event broadcaster does (client-go tools/events: events go through
// a queue of 1,000, dropped when full, and each is written by a goroutine of its own). Binds,
// conditions, deletes and nominations pass straight through.
//
//   binding cycle ──BindPod / SetPodUnschedulable──────────────────────────► next (synchronous)
//                 ──CreateEvent──► queue (max_queued) ──► sender threads ──► events.CreateEvent
//
// kube-scheduler gives events a client of their own (own token bucket, same qps/burst), so that
// events never take the binds' tokens: cmd/ passes a second KubeApiClient as `events`.
//
// Why: a Scheduled event is one more API request per pod. Sent from the binding thread it
// delays that thread's next bind; sent from fewer background threads (cmd/: half as many as
// binding threads), binds get most of the API server and events follow them (kube-scheduler's
// events can lag its binds too under load).
//
// Retries: CreateEvent stamps the record's event_time when it is queued, so every send of it
// carries the same name. A send that fails with kUnavailable (the API server away: the next
// client's own retries of transport errors and 5xx ran out) is tried again after a backoff, up to
// max_tries sends in all, as client-go's recorder does (12 tries, 10 s apart): an event outlives
// an API server restart. The sender waits meanwhile (the events behind it wait for a sender). A
// 403 (kPermissionDenied) within restart_grace of a send that found the server unavailable is
// retried the same way: a restarted API server refuses requests until its RBAC authorizer has
// synced. Any other error (a 4xx: the event itself is refused) is logged and not retried.
//
// Loss: an event is dropped (CreateEvent returns kResourceExhausted, counted in dropped()) when
// max_queued events are already waiting; client-go drops at 1,000. Also dropped: an event whose
// tries ran out, and events still queued or waiting to be retried when Shutdown's timeout ends
// (or when the process is killed).
//
// Thread safety: every method may be called from any thread. `next` and `events` must outlive
// this object.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/kube/api_client.h"

namespace gpusched::kube::client {

struct AsyncEventOptions {
  size_t max_queued = 10000;  // events waiting to be sent; more are dropped
  int senders = 2;            // threads sending events, >= 1
  int max_tries = 12;         // sends of one event while the API server is unavailable, >= 1
  // Wait before retry n (n = 1, 2, ...): min(max_retry_wait, first_retry_wait * 2^(n-1)).
  common::Duration first_retry_wait = std::chrono::milliseconds(500);
  common::Duration max_retry_wait = std::chrono::seconds(10);
  // How long after a send found the API server unavailable a 403 counts as its restart.
  common::Duration restart_grace = std::chrono::seconds(60);
};

class AsyncEventClient final : public ApiClient {
 public:
  // `clock` stamps event_time on events queued without one.
  AsyncEventClient(ApiClient& next, ApiClient& events, const common::Clock& clock,
                   AsyncEventOptions options = {});
  ~AsyncEventClient() override;  // Shutdown(0): what is still queued is dropped
  AsyncEventClient(const AsyncEventClient&) = delete;
  AsyncEventClient& operator=(const AsyncEventClient&) = delete;

  common::Status BindPod(
      const api::Pod& pod, std::string_view node,
      const std::vector<std::pair<std::string, std::string>>& annotations) override;
  common::Status SetPodUnschedulable(const api::Pod& pod, std::string_view reason,
                                     std::string_view message) override;
  // Queues the event; kResourceExhausted when the queue is full (the event is dropped). After
  // Shutdown the event is sent synchronously.
  common::Status CreateEvent(const EventRecord& event) override;
  // Passed straight through to `next`, like the binds.
  common::Status PatchPodCondition(const api::Pod& pod, const api::Condition& condition) override;
  common::Status DeletePod(const api::Pod& pod) override;
  common::Status EvictPod(const api::Pod& pod) override;
  common::Status SetNominatedNodeName(const api::Pod& pod, std::string_view node) override;
  common::Status UpdatePodGroupStatus(const api::PodGroup& group,
                                      const api::PodGroupStatus& status) override;
  common::StatusOr<std::string> BindPersistentVolume(const api::PersistentVolume& pv,
                                                     bool bound_by_controller) override;
  common::StatusOr<std::string> SetPvcSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                   std::string_view node) override;
  common::StatusOr<api::ResourceClaimPtr> UpdateResourceClaimStatus(
      const api::ResourceClaim& claim) override;
  common::StatusOr<api::ResourceClaimPtr> CreateResourceClaim(
      const api::ResourceClaim& claim) override;
  common::Status DeleteResourceClaim(const api::ResourceClaim& claim) override;
  common::Status SetPodExtendedResourceClaimStatus(
      const api::Pod& pod, const api::PodExtendedResourceClaimStatus& status) override;

  // Waits up to `timeout` for the queued events to be sent, then stops the senders (an event
  // being sent is finished; one waiting to be retried is dropped). Returns the number of events
  // dropped because time ran out.
  // Idempotent.
  size_t Shutdown(common::Duration timeout);

  uint64_t dropped() const;  // by a full queue, by tries running out, or by Shutdown
  size_t queued() const;

 private:
  void Send();  // a sender thread
  // Sends `ev`, retrying while the API server is unavailable; false when tries ran out or
  // Shutdown interrupted a wait. Called without mu_.
  bool SendWithRetries(const EventRecord& ev);
  // Whether a send that failed with `s` is tried again (tries left aside); notes unavailability.
  bool Transient(const common::Status& s);

  ApiClient& next_;
  ApiClient& events_;
  const common::Clock& clock_;
  const AsyncEventOptions options_;
  mutable common::Mutex mu_;
  std::condition_variable cv_;       // work for the senders, or stop
  std::condition_variable stop_cv_;  // stop: ends the senders' retry waits
  std::condition_variable idle_cv_;  // the queue drained
  std::deque<EventRecord> queue_ GPUSCHED_GUARDED_BY(mu_);
  int sending_ GPUSCHED_GUARDED_BY(mu_) = 0;
  bool stopped_ GPUSCHED_GUARDED_BY(mu_) = false;
  uint64_t dropped_ GPUSCHED_GUARDED_BY(mu_) = 0;
  // When a send last found the API server unavailable (epoch: never).
  common::TimePoint last_unavailable_ GPUSCHED_GUARDED_BY(mu_){};
  std::vector<std::thread> threads_;
};

}  // namespace gpusched::kube::client
