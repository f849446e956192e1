// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/dynamic_resources/allocator.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string_view>
#include <utility>

namespace gpusched::plugins::dynamic_resources {
namespace {

// A device picked for (claim, request) with the alternative it satisfies.
struct Pick {
  size_t claim = 0;
  size_t request = 0;
  const Alternative* alt = nullptr;
  size_t position = 0;  // in node_devices
  // A share of a shared device: what it consumes, Solver::consumed_[consumed_begin, end).
  uint32_t consumed_begin = 0;
  uint32_t consumed_end = 0;
};

// A share's ID (resource.k8s.io shareID, a UUID): the same for the same claim, request and device,
// so that a simulation replays exactly. FNV-1a over them, laid out as a version 4 UUID.
std::string ShareId(const api::ResourceClaim* claim, std::string_view request,
                    std::string_view device_key) {
  uint64_t h[2] = {14695981039346656037ULL, 1099511628211ULL * 31};
  const api::ObjectMeta none;
  const api::ObjectMeta& meta = claim != nullptr ? claim->meta : none;
  for (std::string_view part : {std::string_view(meta.uid), std::string_view(meta.namespace_),
                                std::string_view(meta.name), request, device_key}) {
    for (int k = 0; k < 2; ++k) {
      for (unsigned char c : part) h[k] = (h[k] ^ c) * 1099511628211ULL;
      h[k] = (h[k] ^ 0xffU) * 1099511628211ULL;
    }
  }
  char out[37];
  std::snprintf(out, sizeof out, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(h[0] >> 32),
                static_cast<unsigned>((h[0] >> 16) & 0xffff), static_cast<unsigned>(h[0] & 0xfff),
                static_cast<unsigned>(0x8000 | ((h[1] >> 48) & 0x3fff)),
                static_cast<unsigned long long>(h[1] & 0xffffffffffffULL));
  return out;
}

class Solver {
 public:
  // `taken`, `picks` and `counters` are the caller's buffers (reused across calls: no allocation
  // per node).
  Solver(std::span<const ClaimPlan> claims, const framework::DeviceIndex& index,
         const NodeDevices& node, std::vector<uint8_t>& taken, std::vector<Pick>& picks,
         NodeDevices& counters, std::vector<int64_t>& consumed)
      : claims_(claims),
        index_(index),
        devices_(node.devices),
        taken_(taken),
        picks_(picks),
        counters_(counters),
        consumed_(consumed) {
    taken_.assign(devices_.size(), 0);
    picks_.clear();
    consumed_.clear();
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
      if (e.shared && !r.admin_access) {
        r.share_id = ShareId(claims_[p.claim].claim.get(), r.request, e.key);
        for (uint32_t i = p.consumed_begin; i < p.consumed_end; ++i) {
          r.consumed_capacity.emplace_back(e.device->capacity[i - p.consumed_begin].first,
                                           api::Quantity::FromMilli(consumed_[i]));
        }
      }
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
    // Before the first pick the counters are the node's, and MarkUnallocatable left free only
    // the devices they allow: a free device needs the check only after a pick drew (admin access,
    // which may take a busy device, always checks).
    const bool counters_moved = !picks_.empty() || alt.choice->admin_access;
    if (index_.devices[nd.device].invalid ||
        (counters_moved && !counters_.CountersAllow(index_, nd))) {
      return false;
    }
    if (!counters_.CapacityAllows(index_, nd.device, *alt.choice, nullptr)) return false;
    return api::UntoleratedTaint(DeviceAt(position), alt.choice->tolerations) == nullptr;
  }

  // Takes (sign 1) or gives back (-1) what the device at `position` draws (a shared device in
  // use drew already) and what pick `p` consumes of a shared device's capacities.
  void Draw(size_t position, const Pick& p, int64_t sign) {
    const NodeDevice& nd = devices_[position];
    if (!nd.shared_in_use) {
      for (const framework::CounterDraw& c : index_.Draws(nd.device)) {
        // Present: a device drawing on a counter the node's list lacks is never Usable.
        if (CounterLeft* left = counters_.Find(c.counter)) left->left -= sign * c.amount;
      }
    }
    const uint32_t first = index_.devices[nd.device].capacity_begin;
    for (uint32_t i = p.consumed_begin; i < p.consumed_end; ++i) {
      if (CounterLeft* left = counters_.Find(first + (i - p.consumed_begin))) {
        left->left -= sign * consumed_[i];
      }
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
    Pick p{claim, request, alt, position};
    p.consumed_begin = p.consumed_end = static_cast<uint32_t>(consumed_.size());
    if (index_.devices[devices_[position].device].shared && !alt->choice->admin_access) {
      thread_local std::vector<int64_t> amounts;
      counters_.CapacityAllows(index_, devices_[position].device, *alt->choice, &amounts);
      consumed_.insert(consumed_.end(), amounts.begin(), amounts.end());
      p.consumed_end = static_cast<uint32_t>(consumed_.size());
    }
    Draw(position, p, 1);
    picks_.push_back(p);
  }
  void Pop() {
    const Pick& p = picks_.back();
    taken_[p.position] = 0;
    Draw(p.position, p, -1);
    consumed_.resize(p.consumed_begin);
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
  NodeDevices& counters_;           // only its counters: what is left as devices are picked
  std::vector<int64_t>& consumed_;  // the shares' amounts, by Pick::consumed_begin
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

bool NodeDevices::CountersAllow(const framework::DeviceIndex& index, const NodeDevice& nd) const {
  if (nd.shared_in_use) return true;
  for (const framework::CounterDraw& c : index.Draws(nd.device)) {
    const CounterLeft* left = Find(c.counter);
    if (left == nullptr || left->left < c.amount) return false;
  }
  return true;
}

bool NodeDevices::CapacityAllows(const framework::DeviceIndex& index, uint32_t d,
                                 const api::DeviceChoice& choice, std::vector<int64_t>* out) const {
  const framework::DeviceEntry& e = index.devices[d];
  if (out != nullptr) out->clear();
  if (!e.shared && choice.capacity_requests.empty()) return true;
  thread_local std::vector<int64_t> amounts;
  if (!api::ConsumedCapacity(*e.device, e.slice->driver, choice.capacity_requests, amounts)) {
    return false;
  }
  for (size_t i = 0; i < amounts.size(); ++i) {
    int64_t left = e.device->capacity[i].second.MilliValue();
    if (e.shared) {
      const CounterLeft* c = Find(e.capacity_begin + static_cast<uint32_t>(i));
      left = c != nullptr ? c->left : 0;
    }
    if (amounts[i] > left) return false;
  }
  if (out != nullptr && e.shared) out->assign(amounts.begin(), amounts.end());
  return true;
}

void NodeDevices::MarkUnallocatable(const framework::DeviceIndex& index) {
  for (NodeDevice& nd : devices) {
    if (!nd.busy && (index.devices[nd.device].invalid || !CountersAllow(index, nd))) {
      nd.busy = true;
    }
  }
}

void NodeDevices::Take(const framework::DeviceIndex& index, std::span<const uint32_t> held) {
  for (NodeDevice& nd : devices) {
    if (nd.busy || std::find(held.begin(), held.end(), nd.device) == held.end()) continue;
    nd.busy = true;
    if (nd.shared_in_use) continue;  // a share more holds it whole here: its draws are taken
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
  thread_local std::vector<int64_t> consumed;
  Solver solver(claims, index, node_devices, taken, picks, counters, consumed);
  if (!solver.Solve()) return false;
  if (out != nullptr) solver.Results(*out);
  if (held != nullptr) solver.Held(*held);
  return true;
}

}  // namespace gpusched::plugins::dynamic_resources
