// SPDX-License-Identifier: Apache-2.0
// ImageLocality: kube-scheduler's imagelocality plugin. Prefers nodes that already hold the pod's
// container images, weighting each image by its size and by how widely it has spread (so one
// node holding a rare image does not attract every pod that uses it).
//   PreScore  normalizes the pod's image names (init containers, then containers; a name with no
//             tag gets ":latest"), and, from an index of status.images over all nodes, sums per
//             node: Σ over containers whose image the node lists of
//             int64(sizeBytes · nodesWithImage / allNodes). kSkip when no node lists any of the
//             pod's images (every node would score 0), or the pod names no image.
//   Score     clamp(sum, 23 MiB, 1000 MiB · containers), then
//             100 · (sum − 23 MiB) / (1000 MiB · containers − 23 MiB).
// No args. Not node-local (a node's score depends on how many other nodes hold the image).
//
// Cost: the index (image name -> the nodes listing it, with sizes) is rebuilt when the snapshot's
// node set changes (Snapshot::node_set_version; every cycle on a hand-filled snapshot), only for
// pods that name an image; PreScore is then O(nodes holding the pod's images) and Score O(1).
// Node names are matched as the kubelet reports them (not normalized), as upstream.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::image_locality {

inline constexpr int64_t kMiB = 1024 * 1024;
// Below this sum a node scores 0 (upstream's minThreshold).
inline constexpr int64_t kMinThreshold = 23 * kMiB;
// Per container, above this a node scores 100 (upstream's maxContainerThreshold).
inline constexpr int64_t kMaxContainerThreshold = 1000 * kMiB;

// `name` with ":latest" appended when it has no tag (no ':' after the last '/').
std::string NormalizedImageName(std::string_view name);
// The score of a node whose scaled image sizes sum to `sum`, for a pod of `containers`
// containers (upstream's calculatePriority).
int64_t CalculatePriority(int64_t sum, int64_t containers);

class ImageLocality final : public framework::PreScorePlugin, public framework::ScorePlugin {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);

  std::string_view Name() const override;
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const framework::Snapshot& snapshot,
                             std::span<const framework::NodeIndex> feasible) override;
  void ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override;

 private:
  struct Holder {
    framework::NodeIndex node = framework::kNoNode;
    int64_t size_bytes = 0;
  };
  struct PreScoreState;

  // Rebuilds index_ unless it was built from this snapshot's current node set.
  void RefreshIndex(const framework::Snapshot& snapshot);

  // Image name (as nodes report it) -> the nodes listing it, each once, in slot order.
  std::unordered_map<std::string, std::vector<Holder>> index_;
  const framework::Snapshot* indexed_snapshot_ = nullptr;
  uint64_t indexed_version_ = 0;
};

}  // namespace gpusched::plugins::image_locality
