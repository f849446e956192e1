// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/async_events.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <utility>

namespace gpusched::kube::client {

AsyncEventClient::AsyncEventClient(ApiClient& next, ApiClient& events, const common::Clock& clock,
                                   AsyncEventOptions options)
    : next_(next), events_(events), clock_(clock), options_(options) {
  const int n = std::max(1, options_.senders);
  threads_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Send(); });
}

AsyncEventClient::~AsyncEventClient() { Shutdown(common::Duration::zero()); }

common::Status AsyncEventClient::BindPod(
    const api::Pod& pod, std::string_view node,
    const std::vector<std::pair<std::string, std::string>>& annotations) {
  return next_.BindPod(pod, node, annotations);
}

common::Status AsyncEventClient::SetPodUnschedulable(const api::Pod& pod, std::string_view reason,
                                                     std::string_view message) {
  return next_.SetPodUnschedulable(pod, reason, message);
}

common::Status AsyncEventClient::PatchPodCondition(const api::Pod& pod,
                                                   const api::Condition& condition) {
  return next_.PatchPodCondition(pod, condition);
}

common::Status AsyncEventClient::DeletePod(const api::Pod& pod) { return next_.DeletePod(pod); }
common::Status AsyncEventClient::EvictPod(const api::Pod& pod) { return next_.EvictPod(pod); }

common::Status AsyncEventClient::SetNominatedNodeName(const api::Pod& pod, std::string_view node) {
  return next_.SetNominatedNodeName(pod, node);
}

common::Status AsyncEventClient::UpdatePodGroupStatus(const api::PodGroup& group,
                                                      const api::PodGroupStatus& status) {
  return next_.UpdatePodGroupStatus(group, status);
}

common::StatusOr<std::string> AsyncEventClient::BindPersistentVolume(
    const api::PersistentVolume& pv, bool bound_by_controller) {
  return next_.BindPersistentVolume(pv, bound_by_controller);
}

common::StatusOr<std::string> AsyncEventClient::SetPvcSelectedNode(
    const api::PersistentVolumeClaim& pvc, std::string_view node) {
  return next_.SetPvcSelectedNode(pvc, node);
}

common::StatusOr<api::ResourceClaimPtr> AsyncEventClient::UpdateResourceClaimStatus(
    const api::ResourceClaim& claim) {
  return next_.UpdateResourceClaimStatus(claim);
}

common::StatusOr<api::ResourceClaimPtr> AsyncEventClient::CreateResourceClaim(
    const api::ResourceClaim& claim) {
  return next_.CreateResourceClaim(claim);
}

common::Status AsyncEventClient::DeleteResourceClaim(const api::ResourceClaim& claim) {
  return next_.DeleteResourceClaim(claim);
}

common::Status AsyncEventClient::SetPodExtendedResourceClaimStatus(
    const api::Pod& pod, const api::PodExtendedResourceClaimStatus& status) {
  return next_.SetPodExtendedResourceClaimStatus(pod, status);
}

common::Status AsyncEventClient::CreateEvent(const EventRecord& event) {
  {
    common::MutexLock l(mu_);
    if (!stopped_) {
      if (queue_.size() >= options_.max_queued) {
        if (dropped_++ % 1000 == 0) {
          spdlog::warn("events: queue full ({} waiting); dropping events ({} so far)",
                       queue_.size(), dropped_);
        }
        return common::ResourceExhaustedError("event queue full: event for " + event.namespace_ +
                                              "/" + event.pod_name + " dropped");
      }
      queue_.push_back(event);
      if (queue_.back().event_time == common::TimePoint{}) queue_.back().event_time = clock_.Now();
      cv_.notify_one();
      return common::Status::Ok();
    }
  }
  return events_.CreateEvent(event);
}

void AsyncEventClient::Send() {
  common::MutexLock l(mu_);
  while (true) {
    l.Wait(cv_, [this]() GPUSCHED_REQUIRES(mu_) { return stopped_ || !queue_.empty(); });
    if (stopped_) return;
    EventRecord ev = std::move(queue_.front());
    queue_.pop_front();
    ++sending_;
    l.Unlock();
    const bool sent = SendWithRetries(ev);
    l.Lock();
    if (!sent) ++dropped_;
    --sending_;
    if (queue_.empty() && sending_ == 0) idle_cv_.notify_all();
  }
}

bool AsyncEventClient::SendWithRetries(const EventRecord& ev) {
  common::Duration wait = options_.first_retry_wait;
  for (int tries = 1;; ++tries) {
    common::Status s = events_.CreateEvent(ev);
    if (s.ok()) return true;
    const bool retry = Transient(s) && tries < options_.max_tries;
    spdlog::warn("recording {} event for {}/{}: {}{}", ev.reason, ev.namespace_, ev.pod_name,
                 s.ToString(), retry ? " (will retry)" : "");
    if (!retry) return false;
    common::MutexLock l(mu_);
    if (l.WaitFor(stop_cv_, wait, [this]() GPUSCHED_REQUIRES(mu_) { return stopped_; })) {
      return false;
    }
    wait = std::min(wait * 2, options_.max_retry_wait);
  }
}

bool AsyncEventClient::Transient(const common::Status& s) {
  const common::TimePoint now = clock_.Now();
  common::MutexLock l(mu_);
  if (s.code() == common::StatusCode::kUnavailable) {
    last_unavailable_ = now;
    return true;
  }
  return s.code() == common::StatusCode::kPermissionDenied &&
         last_unavailable_ != common::TimePoint{} &&
         now - last_unavailable_ <= options_.restart_grace;
}

size_t AsyncEventClient::Shutdown(common::Duration timeout) {
  uint64_t dropped_before = 0;
  {
    common::MutexLock l(mu_);
    if (stopped_) return 0;
    l.WaitFor(idle_cv_, timeout,
              [this]() GPUSCHED_REQUIRES(mu_) { return queue_.empty() && sending_ == 0; });
    stopped_ = true;
    dropped_before = dropped_;
    dropped_ += queue_.size();
    queue_.clear();
  }
  cv_.notify_all();
  stop_cv_.notify_all();  // ends the senders' retry waits: those events are dropped
  for (auto& t : threads_) t.join();
  threads_.clear();
  const size_t lost = static_cast<size_t>(dropped() - dropped_before);
  if (lost > 0) spdlog::warn("events: {} events not sent before shutdown", lost);
  return lost;
}

uint64_t AsyncEventClient::dropped() const {
  common::MutexLock l(mu_);
  return dropped_;
}

size_t AsyncEventClient::queued() const {
  common::MutexLock l(mu_);
  return queue_.size();
}

}  // namespace gpusched::kube::client
