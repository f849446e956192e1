// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/image_locality/image_locality.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::image_locality {
namespace {

const framework::StateKey kPreScoreKey{"ImageLocality/PreScore"};

}  // namespace

struct ImageLocality::PreScoreState final : framework::StateData {
  int64_t containers = 0;
  std::vector<int64_t> sum_by_node;  // indexed by NodeIndex; the scaled sizes summed
};

std::string NormalizedImageName(std::string_view name) {
  const size_t colon = name.rfind(':');
  const size_t slash = name.rfind('/');
  // Go's LastIndex is -1 when absent; npos plays that part here (both absent: no tag).
  const bool tagged =
      colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash);
  std::string out(name);
  if (!tagged) out += ":latest";
  return out;
}

int64_t CalculatePriority(int64_t sum, int64_t containers) {
  const int64_t max_threshold = kMaxContainerThreshold * containers;
  sum = std::clamp(sum, kMinThreshold, std::max(kMinThreshold, max_threshold));
  if (max_threshold <= kMinThreshold) return 0;
  return framework::kMaxNodeScore * (sum - kMinThreshold) / (max_threshold - kMinThreshold);
}

common::StatusOr<framework::PluginPtr> ImageLocality::Create(const boost::json::value& args,
                                                             framework::Handle& /*handle*/) {
  GPUSCHED_RETURN_IF_ERROR(helper::ReadNoArgs(args));
  return framework::PluginPtr(std::make_unique<ImageLocality>());
}

std::string_view ImageLocality::Name() const { return names::kImageLocality; }

void ImageLocality::RefreshIndex(const framework::Snapshot& snapshot) {
  const uint64_t version = snapshot.node_set_version();
  if (&snapshot == indexed_snapshot_ && version != 0 && version == indexed_version_) return;
  index_.clear();
  for (const framework::NodeInfo& n : snapshot.nodes()) {
    if (!n.valid()) continue;
    for (const api::ContainerImage& image : n.node->images) {
      for (const std::string& name : image.names) {
        std::vector<Holder>& holders = index_[name];
        // A node listing one name twice counts once (upstream keeps a set of node names).
        if (holders.empty() || holders.back().node != n.index) {
          holders.push_back(Holder{n.index, image.size_bytes});
        }
      }
    }
  }
  indexed_snapshot_ = &snapshot;
  indexed_version_ = version;
}

framework::Status ImageLocality::PreScore(framework::CycleState& state, const api::Pod& pod,
                                          const framework::Snapshot& snapshot,
                                          std::span<const framework::NodeIndex> /*feasible*/) {
  const auto has_image = [](const api::Container& c) { return !c.image.empty(); };
  if (std::none_of(pod.containers.begin(), pod.containers.end(), has_image) &&
      std::none_of(pod.init_containers.begin(), pod.init_containers.end(), has_image)) {
    return framework::Status::Skip();
  }
  RefreshIndex(snapshot);
  auto s = std::make_unique<PreScoreState>();
  s->containers = static_cast<int64_t>(pod.init_containers.size() + pod.containers.size());
  const double total_nodes = static_cast<double>(std::max(1, snapshot.num_nodes()));
  bool any = false;
  auto add = [&](const api::Container& c) {
    auto it = index_.find(NormalizedImageName(c.image));
    if (it == index_.end()) return;
    if (!any) s->sum_by_node.assign(snapshot.nodes().size(), 0);
    any = true;
    const double spread = static_cast<double>(it->second.size()) / total_nodes;
    for (const Holder& h : it->second) {
      s->sum_by_node[static_cast<size_t>(h.node)] +=
          static_cast<int64_t>(static_cast<double>(h.size_bytes) * spread);
    }
  };
  for (const api::Container& c : pod.init_containers) add(c);
  for (const api::Container& c : pod.containers) add(c);
  if (!any) return framework::Status::Skip();
  state.Write(kPreScoreKey, std::move(s));
  return framework::Status::Success();
}

void ImageLocality::ScoreNodes(const framework::CycleState& state, const api::Pod& /*pod*/,
                               const framework::Snapshot& snapshot,
                               std::span<const framework::NodeIndex> nodes,
                               std::span<int64_t> out) const {
  const auto* s = state.Get<PreScoreState>(kPreScoreKey);
  framework::ScoreEach(snapshot, nodes, out, [s](const framework::NodeInfo& node) -> int64_t {
    const auto slot = static_cast<size_t>(node.index);
    if (s == nullptr || slot >= s->sum_by_node.size()) return 0;
    return CalculatePriority(s->sum_by_node[slot], s->containers);
  });
}

}  // namespace gpusched::plugins::image_locality
