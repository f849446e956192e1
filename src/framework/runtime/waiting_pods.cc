// SPDX-License-Identifier: Apache-2.0
#include "src/framework/runtime/waiting_pods.h"

#include <algorithm>
#include <utility>

namespace gpusched::framework::runtime {

std::string FormatWait(common::Duration d) {
  using std::chrono::duration_cast;
  const int64_t ms = duration_cast<std::chrono::milliseconds>(d).count();
  if (ms < 1000) return std::to_string(ms) + "ms";
  std::string out;
  int64_t rest_ms = ms;
  if (const int64_t h = rest_ms / 3'600'000; h > 0) {
    out += std::to_string(h) + "h";
    rest_ms -= h * 3'600'000;
  }
  if (const int64_t m = rest_ms / 60'000; m > 0 || !out.empty()) {
    out += std::to_string(m) + "m";
    rest_ms -= m * 60'000;
  }
  out += std::to_string(rest_ms / 1000);
  if (int64_t frac = rest_ms % 1000; frac != 0) {
    std::string f = std::to_string(frac + 1000).substr(1);  // three digits
    while (!f.empty() && f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out + "s";
}

void WaitingPodMap::Add(api::PodPtr pod, std::string node, std::vector<Hold> holds,
                        common::TimePoint now) {
  common::MutexLock l(mu_);
  std::string uid = pod->meta.uid;
  Entry& e = entries_[uid];
  e.pod = std::move(pod);
  e.node = std::move(node);
  e.holds = std::move(holds);
  e.since = now;
  e.order = next_order_++;
}

std::function<void()> WaitingPodMap::DecideLocked(
    std::unordered_map<std::string, Entry>::iterator it, Status outcome) {
  Entry& e = it->second;
  e.holds.clear();
  if (!e.decided) {
    e.outcome = std::move(outcome);
    return nullptr;
  }
  Decided decided = std::move(e.decided);
  entries_.erase(it);
  return [decided = std::move(decided), outcome = std::move(outcome)]() mutable {
    decided(std::move(outcome));
  };
}

void WaitingPodMap::OnDecided(std::string_view uid, Decided decided) {
  std::optional<Status> outcome;
  {
    common::MutexLock l(mu_);
    auto it = entries_.find(std::string(uid));
    if (it != entries_.end() && !it->second.outcome) {
      it->second.decided = std::move(decided);
      return;
    }
    outcome = it == entries_.end() ? Status::Success() : std::move(*it->second.outcome);
    if (it != entries_.end()) entries_.erase(it);
  }
  decided(std::move(*outcome));
}

bool WaitingPodMap::Allow(std::string_view uid, std::string_view plugin) {
  std::function<void()> run;
  {
    common::MutexLock l(mu_);
    auto it = entries_.find(std::string(uid));
    if (it == entries_.end() || it->second.outcome) return false;
    auto& holds = it->second.holds;
    auto h =
        std::find_if(holds.begin(), holds.end(), [&](const Hold& x) { return x.plugin == plugin; });
    if (h == holds.end()) return false;
    holds.erase(h);
    if (holds.empty()) run = DecideLocked(it, Status::Success());
  }
  if (run) run();
  return true;
}

bool WaitingPodMap::Reject(std::string_view uid, std::string_view plugin,
                           std::string_view message) {
  std::function<void()> run;
  {
    common::MutexLock l(mu_);
    auto it = entries_.find(std::string(uid));
    if (it == entries_.end() || it->second.outcome) return false;
    // The plugin's own name literal when it holds the pod (Status keeps a view of it).
    std::string_view name = plugin;
    for (const Hold& h : it->second.holds) {
      if (h.plugin == plugin) name = h.plugin;
    }
    Status s = Status::WithMessage(Code::kUnschedulable, std::string(message));
    s.WithPlugin(name);
    run = DecideLocked(it, std::move(s));
  }
  if (run) run();
  return true;
}

bool WaitingPodMap::Remove(std::string_view uid) {
  common::MutexLock lock(mu_);
  return entries_.erase(std::string(uid)) > 0;
}

int WaitingPodMap::ExpireDue(common::TimePoint now) {
  std::vector<std::function<void()>> runs;
  int expired = 0;
  {
    common::MutexLock l(mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto next = std::next(it);
      Entry& e = it->second;
      if (!e.outcome && !e.holds.empty()) {
        auto first =
            std::min_element(e.holds.begin(), e.holds.end(),
                             [](const Hold& a, const Hold& b) { return a.deadline < b.deadline; });
        if (first->deadline <= now) {
          Status s = Status::WithMessage(Code::kUnschedulable,
                                         "rejected due to timeout after waiting " +
                                             FormatWait(first->deadline - e.since) + " at plugin " +
                                             std::string(first->plugin));
          s.WithPlugin(first->plugin);
          if (auto run = DecideLocked(it, std::move(s))) runs.push_back(std::move(run));
          ++expired;
        }
      }
      it = next;
    }
  }
  for (auto& run : runs) run();
  return expired;
}

size_t WaitingPodMap::size() const {
  common::MutexLock l(mu_);
  return entries_.size();
}

std::vector<WaitingPods::Info> WaitingPodMap::List() const {
  std::vector<std::pair<uint64_t, Info>> ordered;
  {
    common::MutexLock l(mu_);
    for (const auto& [uid, e] : entries_) {
      if (e.outcome) continue;
      Info info{e.pod, e.node, {}};
      for (const Hold& h : e.holds) info.pending.emplace_back(h.plugin);
      ordered.emplace_back(e.order, std::move(info));
    }
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Info> out;
  out.reserve(ordered.size());
  for (auto& [order, info] : ordered) out.push_back(std::move(info));
  return out;
}

}  // namespace gpusched::framework::runtime
