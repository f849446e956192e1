// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/image_locality/image_locality.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/plugin_fixture.h"

GPUSCHED_TESTING_COUNT_ALLOCATIONS();

namespace gpusched::plugins::image_locality {
namespace {

using testing::MakeNode;
using testing::MakePod;

// A pod whose containers run `images` and whose init containers run `init_images`.
api::PodPtr PodWithImages(std::vector<std::string> images,
                          std::vector<std::string> init_images = {}) {
  api::Pod pod = MakePod("ns", "p").Obj();
  for (std::string& image : images) {
    api::Container c;
    c.image = std::move(image);
    pod.containers.push_back(std::move(c));
  }
  for (std::string& image : init_images) {
    api::Container c;
    c.image = std::move(image);
    pod.init_containers.push_back(std::move(c));
  }
  return std::make_shared<const api::Pod>(std::move(pod));
}

// A node listing `images` ({names, size in MiB}) in status.images.
api::NodePtr ImageNode(std::string_view name, std::vector<api::ContainerImage> images) {
  api::Node node = MakeNode(name).Obj();
  for (api::ContainerImage& image : images) image.size_bytes *= kMiB;
  node.images = std::move(images);
  return std::make_shared<const api::Node>(std::move(node));
}

// Upstream's node statuses (sizes in MiB).
api::NodePtr Node403002000(std::string_view name) {
  return ImageNode(name, {{{"gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"}, 40},
                          {{"gcr.io/300:latest", "gcr.io/300:v1"}, 300},
                          {{"gcr.io/2000:latest"}, 2000}});
}
api::NodePtr Node25010(std::string_view name) {
  return ImageNode(name,
                   {{{"gcr.io/250:latest"}, 250}, {{"gcr.io/10:latest", "gcr.io/10:v1"}, 10}});
}
api::NodePtr Node60040900(std::string_view name) {
  return ImageNode(
      name,
      {{{"gcr.io/600:latest"}, 600}, {{"gcr.io/40:latest"}, 40}, {{"gcr.io/900:latest"}, 900}});
}
api::NodePtr Node300600900(std::string_view name) {
  return ImageNode(
      name,
      {{{"gcr.io/300:latest"}, 300}, {{"gcr.io/600:latest"}, 600}, {{"gcr.io/900:latest"}, 900}});
}
api::NodePtr Node400030(std::string_view name) {
  return ImageNode(name, {{{"gcr.io/4000:latest"}, 4000}, {{"gcr.io/30:latest"}, 30}});
}
api::NodePtr Node203040(std::string_view name) {
  return ImageNode(
      name, {{{"gcr.io/20:latest"}, 20}, {{"gcr.io/30:latest"}, 30}, {{"gcr.io/40:latest"}, 40}});
}

// Upstream's TestImageLocalityPriority, with its hand-computed scores.
TEST(ImageLocalityTest, ScoresAsUpstream) {
  struct Case {
    std::string name;
    api::PodPtr pod;
    std::vector<api::NodePtr> nodes;
    std::vector<int64_t> want;  // empty: PreScore skips (every node would score 0)
  };
  const std::vector<Case> cases = {
      // node1: 40M/2 < 23M -> 0; node2: 100 * (250M/2 - 23M) / (2000M - 23M) = 5
      {"two images spread on two nodes, prefer the larger image one",
       PodWithImages({"gcr.io/40", "gcr.io/250"}),
       {Node403002000("n1"), Node25010("n2")},
       {0, 5}},
      // node1: 100 * ((40M + 300M)/2 - 23M) / (2000M - 23M) = 7
      {"two images on one node, prefer this node",
       PodWithImages({"gcr.io/40", "gcr.io/300"}),
       {Node403002000("n1"), Node25010("n2")},
       {7, 0}},
      // node1: 4000M/2 >= 2000M -> 100; node2: 10M/2 < 23M -> 0
      {"above the limit, use the limit",
       PodWithImages({"gcr.io/10", "gcr.io/4000"}),
       {Node400030("n1"), Node25010("n2")},
       {100, 0}},
      // node1: 100 * (4000M/3 - 23M) / (2000M - 23M) = 66
      {"above the limit, with a node that has no images",
       PodWithImages({"gcr.io/10", "gcr.io/4000"}),
       {Node400030("n1"), Node25010("n2"), ImageNode("n3", {})},
       {66, 0, 0}},
      // node1: (600M·2/3 + 900M·2/3 − 23M) / (3000M − 23M) -> 32; node2 adds 300M/3 -> 36
      {"multiple large images, node2 preferred",
       PodWithImages({"gcr.io/300", "gcr.io/600", "gcr.io/900"}),
       {Node60040900("n1"), Node300600900("n2"), ImageNode("n3", {})},
       {32, 36, 0}},
      // node1: 100 * (30M + 40M/2 - 23M) / (2000M - 23M) = 1
      {"multiple small images",
       PodWithImages({"gcr.io/30", "gcr.io/40"}),
       {Node203040("n1"), Node400030("n2")},
       {1, 0}},
      // node1: 100 * (300M/2 - 23M) / (2000M - 23M) = 6
      {"init containers count",
       PodWithImages({"gcr.io/30"}, {"gcr.io/300"}),
       {Node403002000("n1"), Node203040("n2")},
       {6, 0}},
      {"no node lists the pod's images: skipped",
       PodWithImages({"gcr.io/nothere"}),
       {Node403002000("n1"), Node203040("n2")},
       {}},
      {"a pod naming no image: skipped", PodWithImages({""}), {Node403002000("n1")}, {}},
      // 100 * (300M/2 - 23M) / (1000M - 23M) = 12: found by its tagged name
      {"a tagged name is matched as is",
       PodWithImages({"gcr.io/300:v1"}),
       {Node403002000("n1"), ImageNode("n2", {})},
       {12, 0}},
      {"a name without a tag matches only the node's \":latest\" name",
       PodWithImages({"gcr.io/2000:v1"}),
       {Node403002000("n1"), ImageNode("n2", {})},
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = testing::MustCreate<ImageLocality>();
    ASSERT_NE(plugin, nullptr);
    const framework::Snapshot snapshot = testing::SnapshotOf(c.nodes);
    std::vector<int64_t> got =
        testing::NormalizedScores(*plugin, *c.pod, snapshot, g_counting, g_allocations);
    EXPECT_EQ(got, c.want);
  }
}

TEST(ImageLocalityTest, NormalizedImageName) {
  EXPECT_EQ(NormalizedImageName("root"), "root:latest");
  EXPECT_EQ(NormalizedImageName("gcr.io:5000/root"), "gcr.io:5000/root:latest");
  EXPECT_EQ(NormalizedImageName("root:tag"), "root:tag");
  const std::string digest = "root@sha256:" + std::string(64, 'a');
  EXPECT_EQ(NormalizedImageName(digest), digest);
}

TEST(ImageLocalityTest, CalculatePriorityClampsToTheThresholds) {
  EXPECT_EQ(CalculatePriority(0, 1), 0);
  EXPECT_EQ(CalculatePriority(kMinThreshold, 1), 0);
  EXPECT_EQ(CalculatePriority(kMaxContainerThreshold, 1), 100);
  EXPECT_EQ(CalculatePriority(50 * kMaxContainerThreshold, 2), 100);
  // 100 * (523M - 23M) / (1000M - 23M) = 51
  EXPECT_EQ(CalculatePriority(523 * kMiB, 1), 51);
}

TEST(ImageLocalityTest, ReusesItsIndexWhileTheNodeSetIsUnchanged) {
  auto plugin = testing::MustCreate<ImageLocality>();
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(plugin->Name(), names::kImageLocality);
  EXPECT_FALSE(plugin->NodeLocal());  // a node's score depends on the other nodes' images
  framework::Snapshot snapshot = testing::SnapshotOf({Node403002000("n1"), Node25010("n2")});
  snapshot.BumpNodeSetVersionForCache();
  const api::PodPtr pod = PodWithImages({"gcr.io/40", "gcr.io/250"});
  EXPECT_EQ(testing::NormalizedScores(*plugin, *pod, snapshot, g_counting, g_allocations),
            (std::vector<int64_t>{0, 5}));
  // A node that now lists gcr.io/250 too changes the spread once the version moves.
  framework::NodeInfo& n1 = snapshot.MutableSlotForCache(0);
  n1.node = ImageNode("n1", {{{"gcr.io/250:latest"}, 250}});
  EXPECT_EQ(testing::NormalizedScores(*plugin, *pod, snapshot, g_counting, g_allocations),
            (std::vector<int64_t>{0, 5}));  // stale until the cache bumps the version
  snapshot.BumpNodeSetVersionForCache();
  // 100 * (250M - 23M) / (2000M - 23M) = 11 on both
  EXPECT_EQ(testing::NormalizedScores(*plugin, *pod, snapshot, g_counting, g_allocations),
            (std::vector<int64_t>{11, 11}));
}

TEST(ImageLocalityTest, RejectsArgs) {
  testing::FakeHandle handle;
  EXPECT_FALSE(ImageLocality::Create(boost::json::parse(R"({"x":1})"), handle).ok());
}

}  // namespace
}  // namespace gpusched::plugins::image_locality
