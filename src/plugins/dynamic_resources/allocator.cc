// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/dynamic_resources/allocator.h"

#include <algorithm>
#include <utility>

namespace gpusched::plugins::dynamic_resources {
namespace {

bool Tolerated(const api::Device& device, const api::DeviceChoice& choice) {
  for (const api::Taint& t : device.taints) {
    if (t.effect != api::TaintEffect::kNoSchedule && t.effect != api::TaintEffect::kNoExecute) {
      continue;
    }
    const bool ok = std::any_of(choice.tolerations.begin(), choice.tolerations.end(),
                                [&](const api::Toleration& tol) { return tol.Tolerates(t); });
    if (!ok) return false;
  }
  return true;
}

// A device picked for (claim, request) with the alternative it satisfies.
struct Pick {
  size_t claim = 0;
  size_t request = 0;
  const Alternative* alt = nullptr;
  size_t position = 0;  // in node_devices
};

class Solver {
 public:
  // `taken`, `picks` and `counters` are the caller's buffers (reused across calls: no allocation
  // per node).
  Solver(std::span<const ClaimPlan> claims, const framework::DeviceIndex& index,
         const NodeDevices& node, std::vector<uint8_t>& taken, std::vector<Pick>& picks,
         NodeDevices& counters)
      : claims_(claims),
        index_(index),
        devices_(node.devices),
        taken_(taken),
        picks_(picks),
        counters_(counters) {
    taken_.assign(devices_.size(), 0);
    picks_.clear();
    counters_.counters.assign(node.counters.begin(), node.counters.end());
  }

  bool Solve() { return SolveRequest(0, 0); }

  void Held(std::vector<uint32_t>& out) const {
    out.clear();
    for (const Pick& p : picks_) {
      if (!p.alt->choice->admin_access) out.push_back(devices_[p.position].device);
    }
  }

  void Results(std::vector<std::vector<api::DeviceResult>>& out) const {
    out.assign(claims_.size(), {});
    for (const Pick& p : picks_) {
      const framework::DeviceEntry& e = index_.devices[devices_[p.position].device];
      api::DeviceResult r;
      r.request = p.alt->result_request;
      r.driver = e.slice->driver;
      r.pool = e.slice->pool;
      r.device = e.device->name;
      r.admin_access = p.alt->choice->admin_access;
      out[p.claim].push_back(std::move(r));
    }
  }

 private:
  const api::Device& DeviceAt(size_t position) const {
    return *index_.devices[devices_[position].device].device;
  }

  // Whether `position` may serve `alt` of (claim, request) ignoring constraints.
  bool Usable(size_t position, const Alternative& alt) const {
    const NodeDevice& nd = devices_[position];
    if (taken_[position] != 0) return false;
    if (nd.busy && !alt.choice->admin_access) return false;
    if (alt.matches->match[nd.device] == 0) return false;
    if (index_.devices[nd.device].invalid || !counters_.CountersAllow(index_, nd.device)) {
      return false;
    }
    return Tolerated(DeviceAt(position), *alt.choice);
  }

  // Takes (sign 1) or gives back (-1) what the device at `position` draws.
  void Draw(size_t position, int64_t sign) {
    for (const framework::CounterDraw& c : index_.Draws(devices_[position].device)) {
      // Present: a device drawing on a counter the node's list lacks is never Usable.
      if (CounterLeft* left = counters_.Find(c.counter)) left->left -= sign * c.amount;
    }
  }

  // Whether picking `position` for (claim, request) keeps every matchAttribute constraint of the
  // claim: the device has the attribute and its value equals that of the devices already picked
  // for the constraint's requests.
  bool ConstraintsAllow(size_t claim, size_t request, size_t position) const {
    const ClaimPlan& plan = claims_[claim];
    for (const ConstraintPlan& c : plan.constraints) {
      if (!c.requests.empty() &&
          std::find(c.requests.begin(), c.requests.end(), request) == c.requests.end()) {
        continue;
      }
      const api::DeviceAttribute* mine = DeviceAt(position).Attribute(c.attribute);
      if (mine == nullptr) return false;
      for (const Pick& p : picks_) {
        if (p.claim != claim) continue;
        if (!c.requests.empty() &&
            std::find(c.requests.begin(), c.requests.end(), p.request) == c.requests.end()) {
          continue;
        }
        const api::DeviceAttribute* theirs = DeviceAt(p.position).Attribute(c.attribute);
        if (theirs == nullptr || !(*theirs == *mine)) return false;
      }
    }
    return true;
  }

  void Push(size_t claim, size_t request, const Alternative* alt, size_t position) {
    taken_[position] = 1;
    Draw(position, 1);
    picks_.push_back({claim, request, alt, position});
  }
  void Pop() {
    taken_[picks_.back().position] = 0;
    Draw(picks_.back().position, -1);
    picks_.pop_back();
  }

  bool SolveRequest(size_t claim, size_t request) {
    if (claim == claims_.size()) return true;
    if (request == claims_[claim].requests.size()) return SolveRequest(claim + 1, 0);
    for (const Alternative& alt : claims_[claim].requests[request].alternatives) {
      if (alt.choice->mode == api::AllocationMode::kAll) {
        if (PickAll(claim, request, alt)) return true;
      } else if (PickN(claim, request, alt, static_cast<size_t>(alt.choice->count), 0)) {
        return true;
      }
      if (steps_ > kMaxSteps) return false;
    }
    return false;
  }

  // allocationMode All: every matching device the node reaches, none held (unless admin access).
  bool PickAll(size_t claim, size_t request, const Alternative& alt) {
    const size_t mark = picks_.size();
    for (size_t p = 0; p < devices_.size(); ++p) {
      if (alt.matches->match[devices_[p].device] == 0) continue;
      const framework::DeviceEntry& e = index_.devices[devices_[p].device];
      if (index_.PoolIncomplete(e.slice->driver, e.slice->pool) || !Usable(p, alt) ||
          !ConstraintsAllow(claim, request, p)) {
        while (picks_.size() > mark) Pop();
        return false;
      }
      Push(claim, request, &alt, p);
    }
    if (picks_.size() == mark) return false;
    if (SolveRequest(claim, request + 1)) return true;
    while (picks_.size() > mark) Pop();
    return false;
  }

  bool PickN(size_t claim, size_t request, const Alternative& alt, size_t need, size_t start) {
    if (need == 0) return SolveRequest(claim, request + 1);
    for (size_t p = start; p < devices_.size(); ++p) {
      if (!Usable(p, alt) || !ConstraintsAllow(claim, request, p)) continue;
      if (++steps_ > kMaxSteps) return false;
      Push(claim, request, &alt, p);
      if (PickN(claim, request, alt, need - 1, p + 1)) return true;
      Pop();
    }
    return false;
  }

  std::span<const ClaimPlan> claims_;
  const framework::DeviceIndex& index_;
  std::span<const NodeDevice> devices_;
  std::vector<uint8_t>& taken_;
  std::vector<Pick>& picks_;
  NodeDevices& counters_;  // only its counters: what is left as devices are picked
  int steps_ = 0;
};

}  // namespace

CounterLeft* NodeDevices::Find(uint32_t counter) {
  return const_cast<CounterLeft*>(std::as_const(*this).Find(counter));
}

const CounterLeft* NodeDevices::Find(uint32_t counter) const {
  auto it = std::lower_bound(counters.begin(), counters.end(), counter,
                             [](const CounterLeft& c, uint32_t n) { return c.counter < n; });
  return it != counters.end() && it->counter == counter ? &*it : nullptr;
}

bool NodeDevices::CountersAllow(const framework::DeviceIndex& index, uint32_t d) const {
  for (const framework::CounterDraw& c : index.Draws(d)) {
    const CounterLeft* left = Find(c.counter);
    if (left == nullptr || left->left < c.amount) return false;
  }
  return true;
}

void NodeDevices::MarkUnallocatable(const framework::DeviceIndex& index) {
  for (NodeDevice& nd : devices) {
    if (!nd.busy && (index.devices[nd.device].invalid || !CountersAllow(index, nd.device))) {
      nd.busy = true;
    }
  }
}

void NodeDevices::Take(const framework::DeviceIndex& index, std::span<const uint32_t> held) {
  for (NodeDevice& nd : devices) {
    if (nd.busy || std::find(held.begin(), held.end(), nd.device) == held.end()) continue;
    nd.busy = true;
    for (const framework::CounterDraw& c : index.Draws(nd.device)) {
      if (CounterLeft* left = Find(c.counter)) left->left -= c.amount;
    }
  }
  if (!counters.empty()) MarkUnallocatable(index);
}

bool Allocate(std::span<const ClaimPlan> claims, const framework::DeviceIndex& index,
              const NodeDevices& node_devices, std::vector<std::vector<api::DeviceResult>>* out,
              std::vector<uint32_t>* held) {
  thread_local std::vector<uint8_t> taken;
  thread_local std::vector<Pick> picks;
  thread_local NodeDevices counters;
  Solver solver(claims, index, node_devices, taken, picks, counters);
  if (!solver.Solve()) return false;
  if (out != nullptr) solver.Results(*out);
  if (held != nullptr) solver.Held(*held);
  return true;
}

}  // namespace gpusched::plugins::dynamic_resources
