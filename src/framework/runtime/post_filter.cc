// SPDX-License-Identifier: Apache-2.0
// The PostFilter step of SchedulePod and what it shares with the Filter scan: the context a
// PostFilter plugin (preemption) gets, filtering with nominated pods, and the nominated node tried
// first (kube-scheduler's RunPostFilterPlugins, RunFilterPluginsWithNominatedPods and
// evaluateNominatedNode).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/gpu_devices.h"
#include "src/framework/pre_filter_nodes.h"
#include "src/framework/runtime/framework.h"
#include "src/framework/runtime/timers.h"

namespace gpusched::framework::runtime {

// PostFilterContext over one failed cycle of this Framework.
class Framework::PostFilterCycle final : public PostFilterContext {
 public:
  PostFilterCycle(Framework& fw, const CycleState& state, const Snapshot& snapshot,
                  const Status& pre_filter, bool record_per_node)
      : fw_(fw),
        state_(state),
        snapshot_(snapshot),
        pre_filter_(pre_filter),
        record_per_node_(record_per_node) {}

  Code NodeCode(NodeIndex n) const override {
    if (n < 0 || static_cast<size_t>(n) >= snapshot_.nodes().size()) {
      return Code::kUnschedulableAndUnresolvable;
    }
    return CodeAt(static_cast<size_t>(n));
  }

  std::span<const NodeIndex> PotentialNodes() const override {
    if (!potential_done_) {
      potential_done_ = true;
      for (size_t i = 0; i < snapshot_.nodes().size(); ++i) {
        if (CodeAt(i) == Code::kUnschedulable) potential_.push_back(static_cast<NodeIndex>(i));
      }
    }
    return potential_;
  }

  Status RunFilters(const CycleState& state, const api::Pod& pod,
                    const NodeInfo& node) const override {
    return fw_.nominated_ == nullptr ? fw_.RunActiveFilters(state, pod, node)
                                     : fw_.RunFiltersWithNominatedPods(state, pod, node);
  }

  Status PreFilterFor(CycleState& state, const api::Pod& other) const override {
    return fw_.RunPreFilter(state, other, snapshot_);
  }

  Status RunFiltersFor(const CycleState& state, const api::Pod& other,
                       const NodeInfo& node) const override {
    return fw_.nominated_ == nullptr ? fw_.RunFilter(state, other, node)
                                     : fw_.RunFiltersWithNominatedPods(state, other, node, true);
  }

  std::span<const api::PodPtr> NominatedPods(NodeIndex n) const override {
    return fw_.nominated_ == nullptr ? std::span<const api::PodPtr>() : fw_.nominated_->ForNode(n);
  }

  bool RecordPerNode() const override { return record_per_node_; }

  std::string_view FilterSignature() const override {
    if (!signature_done_) {
      signature_done_ = true;
      std::vector<uint64_t> words;
      if (fw_.FilterSignature(state_, words)) {
        signature_.assign(reinterpret_cast<const char*>(words.data()),
                          words.size() * sizeof(uint64_t));
        signature_ += 'F';  // non-empty even with no Filter plugin
      }
    }
    return signature_;
  }

 private:
  Framework& fw_;  // non-const for PreFilterFor (RunPreFilter times its points)
  const CycleState& state_;
  const Snapshot& snapshot_;
  const Status& pre_filter_;
  const bool record_per_node_;
  // NodeCode of slot `i`. A stored verdict implies a valid node (its generation is unchanged),
  // so a node with one is answered from the flat arrays alone. REQUIRES: i < the slot count.
  Code CodeAt(size_t i) const {
    const bool reused =
        fw_.reuse_ != nullptr && !(fw_.nominated_ != nullptr && fw_.nominated_->Has(i));
    if (pre_filter_.ok() && reused && fw_.reuse_->HasVerdict(i, snapshot_.generations()[i])) {
      return fw_.reuse_->VerdictCode(i);
    }
    if (!snapshot_.nodes()[i].valid()) return Code::kUnschedulableAndUnresolvable;
    if (!pre_filter_.ok()) return pre_filter_.code();
    if (reused) return Code::kSuccess;  // every other visited node's verdict is stored
    return i < fw_.node_codes_.size() ? fw_.node_codes_[i] : Code::kSuccess;
  }

  mutable bool signature_done_ = false;
  mutable std::string signature_;
  mutable bool potential_done_ = false;
  mutable std::vector<NodeIndex> potential_;
};

bool Framework::HasPostFilterPlugin(std::string_view name) const {
  for (const PostFilterPlugin* p : post_filter_) {
    if (p->Name() == name) return true;
  }
  return false;
}

void Framework::RunPostFilter(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                              const SchedulePodOptions& options, ScheduleResult& result) {
  Diagnosis& diag = result.diagnosis;
  const bool record_per_node = options.record_verdicts;
  if (!post_filter_.empty() && options.run_post_filter) {
    PointTimer timer(metrics_, metrics::Point::kPostFilter);
    PostFilterCycle context(*this, state, snapshot, diag.pre_filter_status, record_per_node);
    result.post_filter_ran = true;
    Status last;
    for (PostFilterPlugin* pf : post_filter_) {
      PostFilterResult r;
      last = pf->PostFilter(state, pod, snapshot, context, r);
      last.WithPlugin(pf->Name());
      r.plugin = pf->Name();
      if (last.ok()) {
        result.post_filter = std::move(r);
        break;
      }
      if (!last.reason().empty()) diag.post_filter_messages.emplace_back(last.reason());
      if (r.mode == PostFilterResult::Mode::kOverride) result.post_filter = std::move(r);
    }
    timer.Record(last.ok() ? last : Status::Unschedulable({}));
  }
  if (!diag.pre_filter_status.ok()) return;  // result.status is the PreFilter rejection
  result.status = Status(
      diag.unresolvable_everywhere ? Code::kUnschedulableAndUnresolvable : Code::kUnschedulable,
      {});
}

Status Framework::RunFiltersWithNominatedPods(const CycleState& state, const api::Pod& pod,
                                              const NodeInfo& node, bool from_state) const {
  auto run = [&](const NodeInfo& n) {
    return from_state ? RunFilter(state, pod, n) : RunActiveFilters(state, pod, n);
  };
  bool added = false;
  for (const api::PodPtr& p : nominated_->ForNode(node.index)) {
    if (p->priority < pod.priority || p->meta.uid == pod.meta.uid) continue;
    if (!added) nominated_scratch_ = node;
    added = true;
    PodDevices devices;
    if (!p->gpu.empty() && node.node != nullptr) {
      if (auto a = api::ChooseDevicesBestFit(node.node->gpu, nominated_scratch_.gpus, p->gpu)) {
        devices = PodDevices::From(*a);
      }
    }
    (void)nominated_scratch_.AddPod(p, devices);
  }
  if (!added) return run(node);
  // The pod must fit with the nominated pods there (they may need the room) and without them
  // (filters like pod affinity may need them absent).
  Status with = run(nominated_scratch_);
  if (!with.ok()) return with;
  return run(node);
}

Status Framework::FitsWithout(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                              std::string_view node, std::span<const api::PodPtr> removed) {
  const NodeInfo* original = snapshot.Get(node);
  if (original == nullptr || !original->valid()) {
    return Status::Unresolvable("node not found");
  }
  BeginCycle();
  SelectNominated(snapshot);
  ScheduleResult result;
  if (!PreFilterPod(state, pod, snapshot, result)) return result.status;
  SelectActiveFilters(state);
  if (const auto* named = state.Get<PreFilterNodes>(kPreFilterNodesKey);
      named != nullptr && !named->Allows(original->name())) {
    return Status::Unresolvable(named->reason).WithPlugin(named->plugin);
  }
  NodeInfo without = *original;
  for (const api::PodPtr& p : removed) {
    const int32_t i = without.IndexOfPod(*p);
    if (i >= 0) without.RemovePodAt(static_cast<size_t>(i));
  }
  return nominated_ == nullptr ? RunActiveFilters(state, pod, without)
                               : RunFiltersWithNominatedPods(state, pod, without);
}

bool Framework::EvaluateNominatedNode(const CycleState& state, const api::Pod& pod,
                                      const Snapshot& snapshot, ScheduleResult& result) {
  std::string from_nominator;
  std::string_view name = pod.nominated_node_name;
  if (name.empty() && nominator_ != nullptr) {
    from_nominator = nominator_->NodeOf(pod.meta.uid);
    name = from_nominator;
  }
  if (name.empty()) return false;
  const NodeInfo* node = snapshot.Get(name);
  if (node == nullptr) return false;
  Status s = nominated_ == nullptr ? RunActiveFilters(state, pod, *node)
                                   : RunFiltersWithNominatedPods(state, pod, *node);
  if (s.IsError()) result.status = s;
  if (!s.ok()) return false;
  result.node = node->index;
  result.counts.evaluated = 1;
  result.counts.feasible = 1;
  return true;
}

}  // namespace gpusched::framework::runtime
