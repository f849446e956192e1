// SPDX-License-Identifier: Apache-2.0
#include "src/kube/leaderelection/leader_elector.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "src/common/logging.h"

namespace gpusched::kube::leaderelection {
namespace {

constexpr double kJitterFactor = 1.2;  // client-go's JitterFactor

std::string Secs(common::Duration d) { return fmt::format("{:g}s", common::Seconds(d)); }

}  // namespace

common::Status Validate(const LeaderElectionConfig& c) {
  std::vector<std::string> errors;
  if (c.identity.empty()) errors.push_back("identity: must not be empty");
  if (c.lease_name.empty()) errors.push_back("resourceName: must not be empty");
  if (c.lease_namespace.empty()) errors.push_back("resourceNamespace: must not be empty");
  if (c.retry_period <= common::Duration(0)) {
    errors.push_back("retryPeriod: must be greater than zero, got " + Secs(c.retry_period));
  }
  if (c.lease_duration < std::chrono::seconds(1)) {
    errors.push_back("leaseDuration: must be at least 1s, got " + Secs(c.lease_duration));
  }
  if (c.lease_duration <= c.renew_deadline) {
    errors.push_back("leaseDuration (" + Secs(c.lease_duration) +
                     ") must be greater than renewDeadline (" + Secs(c.renew_deadline) + ")");
  }
  if (static_cast<double>(c.renew_deadline.count()) <=
      kJitterFactor * static_cast<double>(c.retry_period.count())) {
    errors.push_back("renewDeadline (" + Secs(c.renew_deadline) +
                     ") must be greater than 1.2 x retryPeriod (" + Secs(c.retry_period) + ")");
  }
  if (errors.empty()) return common::Status::Ok();
  std::string msg = "leaderElection: ";
  for (size_t i = 0; i < errors.size(); ++i) msg += (i ? "; " : "") + errors[i];
  return common::InvalidArgumentError(std::move(msg));
}

common::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(RestClient& client,
                                                                       const common::Clock& clock,
                                                                       LeaderElectionConfig config,
                                                                       LeaderCallbacks callbacks) {
  GPUSCHED_RETURN_IF_ERROR(Validate(config));
  return std::unique_ptr<LeaderElector>(
      new LeaderElector(client, clock, std::move(config), std::move(callbacks)));
}

LeaderElector::LeaderElector(RestClient& client, const common::Clock& clock,
                             LeaderElectionConfig config, LeaderCallbacks callbacks)
    : clock_(clock),
      config_(std::move(config)),
      callbacks_(std::move(callbacks)),
      // Each request may take at most half the renew deadline, so a slow API server still leaves
      // time for a second attempt before leadership is given up.
      lock_(client, config_.lease_namespace, config_.lease_name,
            std::max(
                std::chrono::milliseconds(500),
                std::chrono::duration_cast<std::chrono::milliseconds>(config_.renew_deadline / 2))),
      random_(config_.seed) {}

bool LeaderElector::IsLeader() const {
  common::MutexLock l(mu_);
  return leader_;
}

std::string LeaderElector::GetLeader() const {
  common::MutexLock l(mu_);
  return observed_holder_;
}

void LeaderElector::Observe(const LeaderElectionRecord& record, common::TimePoint now) {
  if (observed_any_ && record == observed_record_) return;
  observed_any_ = true;
  observed_record_ = record;
  observed_time_ = now;
  bool changed = false;
  {
    common::MutexLock l(mu_);
    if (record.holder_identity != observed_holder_) {
      observed_holder_ = record.holder_identity;
      changed = !record.holder_identity.empty();
    }
  }
  if (changed) {
    spdlog::info("leader election: lease {} is held by {}", lock_.Describe(),
                 record.holder_identity);
    if (callbacks_.on_new_leader) callbacks_.on_new_leader(record.holder_identity);
  }
}

bool LeaderElector::TryAcquireOrRenew(common::TimePoint now) {
  const int64_t lease_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count();
  // Two tries: a 409 means the lease changed under us; read it again and decide again.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto got = lock_.Get();
    if (!got.ok()) {
      if (got.status().code() != common::StatusCode::kNotFound) {
        spdlog::warn("leader election: reading lease {}: {}", lock_.Describe(),
                     got.status().ToString());
        return false;
      }
      LeaderElectionRecord mine{config_.identity, lease_seconds, now, now, 0};
      common::Status st = lock_.Create(mine);
      if (!st.ok()) {
        if (st.code() == common::StatusCode::kAborted ||
            st.code() == common::StatusCode::kAlreadyExists) {
          continue;  // someone else created it first
        }
        spdlog::warn("leader election: creating lease {}: {}", lock_.Describe(), st.ToString());
        return false;
      }
      Observe(mine, now);
      return true;
    }
    const LeaderElectionRecord& current = *got;
    Observe(current, now);
    // The lease runs out leaseDuration after it was last renewed: by the holder's renewTime when
    // that is older than our own observation (the holder died before we first looked), else from
    // when we saw the record change (client-go's rule, which needs no trust in remote clocks).
    // Trusting renewTime only ever shortens a dead holder's tail; a live holder renews every
    // retryPeriod, so only a clock skew above leaseDuration - retryPeriod could cause a steal.
    common::TimePoint renewed = observed_time_;
    if (current.renew_time && *current.renew_time < renewed) renewed = *current.renew_time;
    const common::TimePoint expiry = renewed + std::chrono::seconds(current.lease_duration_seconds);
    bool held_by_other = !current.holder_identity.empty() &&
                         current.holder_identity != config_.identity && expiry > now;
    if (held_by_other) {
      if (IsLeader()) lost_ = true;
      other_expiry_ = expiry;
      if (common::V(4)) {
        spdlog::info("leader election: lease {} is held by {} and has not expired",
                     lock_.Describe(), current.holder_identity);
      }
      return false;
    }
    LeaderElectionRecord next;
    next.holder_identity = config_.identity;
    next.lease_duration_seconds = lease_seconds;
    next.renew_time = now;
    if (current.holder_identity == config_.identity) {
      next.acquire_time = current.acquire_time;
      next.lease_transitions = current.lease_transitions;
    } else {
      next.acquire_time = now;
      next.lease_transitions = current.lease_transitions + 1;
    }
    common::Status st = lock_.Update(next);
    if (st.ok()) {
      Observe(next, now);
      return true;
    }
    if (st.code() != common::StatusCode::kAborted) {
      spdlog::warn("leader election: updating lease {}: {}", lock_.Describe(), st.ToString());
      return false;
    }
    if (common::V(2))
      spdlog::info("leader election: lease {} changed under us (409); re-reading",
                   lock_.Describe());
  }
  return false;
}

bool LeaderElector::Step() {
  common::TimePoint now = clock_.Now();
  lost_ = false;
  other_expiry_.reset();
  bool ok = TryAcquireOrRenew(now);
  bool started = false;
  bool stopped = false;
  {
    common::MutexLock l(mu_);
    if (ok) {
      last_renew_ = now;
      started = !leader_;
      leader_ = true;
    } else if (leader_ && (lost_ || now - last_renew_ >= config_.renew_deadline)) {
      leader_ = false;
      stopped = true;
    }
  }
  if (started) {
    spdlog::info("leader election: {} acquired lease {}", config_.identity, lock_.Describe());
    if (callbacks_.on_started_leading) callbacks_.on_started_leading();
  }
  if (stopped) {
    spdlog::error("leader election: {} lost lease {} ({})", config_.identity, lock_.Describe(),
                  lost_ ? "another holder took it"
                        : "failed to renew within " + Secs(config_.renew_deadline));
    if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
  }
  return ok;
}

common::Status LeaderElector::Release() {
  if (!IsLeader()) return common::Status::Ok();
  common::TimePoint now = clock_.Now();
  LeaderElectionRecord released;
  released.lease_duration_seconds = 1;
  released.acquire_time = now;
  released.renew_time = now;
  released.lease_transitions = observed_record_.lease_transitions;
  common::Status st = lock_.Update(released);
  if (st.code() == common::StatusCode::kAborted) {
    // The lease changed since our last renew: release only if it is still ours.
    auto got = lock_.Get();
    if (got.ok() && got->holder_identity == config_.identity) {
      released.lease_transitions = got->lease_transitions;
      st = lock_.Update(released);
    } else if (got.ok()) {
      st = common::Status::Ok();  // not ours any more: nothing to release
    } else {
      st = got.status();
    }
  }
  {
    common::MutexLock l(mu_);
    leader_ = false;
  }
  if (st.ok()) {
    Observe(released, now);
    spdlog::info("leader election: {} released lease {}", config_.identity, lock_.Describe());
  } else {
    spdlog::warn("leader election: releasing lease {}: {}", lock_.Describe(), st.ToString());
  }
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
  return st;
}

void LeaderElector::Stop() {
  common::MutexLock l(mu_);
  stopping_ = true;
  cv_.notify_all();
}

common::Duration LeaderElector::NextWait() {
  common::Duration wait = config_.retry_period;
  if (IsLeader()) return wait;
  wait += common::Duration(static_cast<int64_t>(kJitterFactor * random_.NextDouble() *
                                                static_cast<double>(config_.retry_period.count())));
  if (other_expiry_) {
    // Just after the expiry; a little later than exact, so the lease has surely run out.
    common::Duration until = *other_expiry_ - clock_.Now() + std::chrono::milliseconds(50);
    wait = std::clamp(until, common::Duration(std::chrono::milliseconds(50)), wait);
  }
  return wait;
}

void LeaderElector::Run() {
  spdlog::info("leader election: {} is trying to acquire lease {}", config_.identity,
               lock_.Describe());
  while (true) {
    {
      common::MutexLock l(mu_);
      if (stopping_) break;
    }
    Step();
    common::Duration wait = NextWait();
    common::MutexLock l(mu_);
    l.WaitFor(cv_, wait, [this]() GPUSCHED_REQUIRES(mu_) { return stopping_; });
  }
  if (config_.release_on_cancel) Release().IgnoreError();  // logged inside
}

}  // namespace gpusched::kube::leaderelection
