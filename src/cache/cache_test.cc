// SPDX-License-Identifier: Apache-2.0
#include "src/cache/cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpusched::cache {
namespace {

api::NodePtr GpuNode(const std::string& name, int gpus) {
  auto n = std::make_shared<api::Node>();
  n->meta.name = name;
  n->allocatable.milli_cpu = 32000;
  n->allocatable.memory = 256LL << 30;
  n->allocatable.pods = 110;
  n->gpu.count = gpus;
  n->gpu.model = common::Intern("A100-SXM4-40GB");
  n->gpu.memory_mib = 40960;
  return n;
}

api::PodPtr GpuPod(const std::string& name, int count, int milli = 1000,
                   const std::string& node = "") {
  auto p = std::make_shared<api::Pod>();
  p->meta.name = name;
  p->meta.namespace_ = "default";
  p->meta.uid = "uid-" + name;
  p->node_name = node;
  p->requests.milli_cpu = 1000;
  p->requests.memory = 1LL << 30;
  p->requests.pods = 1;
  p->gpu.count = count;
  p->gpu.milli = count > 0 ? milli : 0;
  return p;
}

class CacheTest : public ::testing::Test {
 protected:
  common::FakeClock clock_;
  Cache cache_{clock_, std::chrono::seconds(30)};
  framework::Snapshot snap_;

  const framework::NodeInfo& Node(const std::string& name) {
    cache_.UpdateSnapshot(snap_);
    const framework::NodeInfo* ni = snap_.Get(name);
    EXPECT_NE(ni, nullptr) << name;
    return *ni;
  }
};

TEST_F(CacheTest, SnapshotCountsPodsWithPodAffinity) {
  // InterPodAffinity skips ordinary pods by these counts, so they must follow every change.
  cache_.AddNode(GpuNode("n1", 0));
  cache_.AddNode(GpuNode("n2", 0));
  auto with_anti = [](const std::string& name, const std::string& node) {
    auto p = std::const_pointer_cast<api::Pod>(GpuPod(name, 0, 1000, node));
    p->affinity.pod_anti_affinity.required.emplace_back();
    return api::PodPtr(p);
  };
  auto with_preferred = [](const std::string& name, const std::string& node) {
    auto p = std::const_pointer_cast<api::Pod>(GpuPod(name, 0, 1000, node));
    p->affinity.pod_affinity.preferred.emplace_back();
    return api::PodPtr(p);
  };
  cache_.AddPod(GpuPod("plain", 0, 1000, "n1"));
  cache_.AddPod(with_anti("anti", "n1"));
  cache_.AddPod(with_preferred("pref", "n2"));
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.pods_with_affinity(), 2);
  EXPECT_EQ(snap_.pods_with_required_anti_affinity(), 1);
  ASSERT_TRUE(cache_.AssumePod(with_anti("assumed", ""), "n2", {}).ok());
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.pods_with_affinity(), 3);
  EXPECT_EQ(snap_.pods_with_required_anti_affinity(), 2);
  cache_.RemovePod("uid-anti");
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.pods_with_affinity(), 2);
  EXPECT_EQ(snap_.pods_with_required_anti_affinity(), 1);
  cache_.RemovePod("uid-pref");
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.pods_with_affinity(), 1);
  EXPECT_EQ(snap_.pods_with_required_anti_affinity(), 1);
}

TEST_F(CacheTest, SnapshotKnowsTheLowestPodPriority) {
  // Preemption answers "no victims anywhere" in O(1) from it, so it must follow every change.
  cache_.AddNode(GpuNode("n1", 0));
  cache_.AddNode(GpuNode("n2", 0));
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.lowest_pod_priority(), INT32_MAX);  // no pod
  auto with_priority = [](const std::string& name, const std::string& node, int32_t priority) {
    auto p = std::const_pointer_cast<api::Pod>(GpuPod(name, 0, 1000, node));
    p->priority = priority;
    return api::PodPtr(p);
  };
  cache_.AddPod(with_priority("high", "n1", 100));
  cache_.AddPod(with_priority("low", "n2", -5));
  cache_.AddPod(with_priority("low-too", "n1", -5));
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.lowest_pod_priority(), -5);
  cache_.RemovePod("uid-low");
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.lowest_pod_priority(), -5);  // low-too is still there
  ASSERT_TRUE(cache_.AssumePod(with_priority("assumed", "", -9), "n2", {}).ok());
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.lowest_pod_priority(), -9);
  cache_.RemovePod("uid-assumed");
  cache_.RemovePod("uid-low-too");
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.lowest_pod_priority(), 100);
  cache_.RemovePod("uid-high");
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.lowest_pod_priority(), INT32_MAX);
}

TEST_F(CacheTest, AssumeChargesNodeAndDevicesAtOnceThenConfirm) {
  cache_.AddNode(GpuNode("n1", 8));
  api::GpuAssignment a{{2, 3}, 1000, 0};
  ASSERT_TRUE(cache_.AssumePod(GpuPod("p", 2), "n1", a).ok());
  const auto& ni = Node("n1");
  EXPECT_EQ(ni.requested.milli_cpu, 1000);
  EXPECT_EQ(ni.pod_count, 1);
  EXPECT_EQ(ni.gpus[2].used_milli, 1000);
  EXPECT_EQ(ni.gpus[3].used_milli, 1000);
  EXPECT_EQ(ni.FreeWholeGpus(), 6);
  EXPECT_TRUE(cache_.IsAssumed("uid-p"));
  // The informer confirms the bind: accounting unchanged, no longer assumed.
  cache_.AddPod(GpuPod("p", 2, 1000, "n1"));
  EXPECT_FALSE(cache_.IsAssumed("uid-p"));
  EXPECT_EQ(Node("n1").FreeWholeGpus(), 6);
  EXPECT_EQ(cache_.GpuAssignmentOf("uid-p"), a);
  EXPECT_TRUE(cache_.CheckInvariants().ok());
}

// Gang preemption's plan hides victims: they leave the accounting (and the snapshot lists them)
// but keep their state and devices; an update meanwhile keeps them hidden; ShowHiddenPods puts
// them back on the same devices.
TEST_F(CacheTest, HiddenPodsLeaveTheAccountingUntilShown) {
  cache_.AddNode(GpuNode("n1", 8));
  api::GpuAssignment a{{2, 3}, 1000, 0};
  api::PodPtr p = GpuPod("p", 2);
  ASSERT_TRUE(cache_.AssumePod(p, "n1", a).ok());
  cache_.HidePods(std::vector<api::PodPtr>{p});
  EXPECT_EQ(Node("n1").FreeWholeGpus(), 8);
  EXPECT_EQ(Node("n1").pod_count, 0);
  ASSERT_EQ(snap_.hidden_pods().size(), 1u);
  EXPECT_EQ(snap_.hidden_pods()[0], "uid-p");
  EXPECT_TRUE(cache_.IsAssumed("uid-p"));
  EXPECT_TRUE(cache_.CheckInvariants().ok());
  cache_.AddPod(GpuPod("p", 2, 1000, "n1"));  // the informer confirms the bind meanwhile
  EXPECT_EQ(Node("n1").FreeWholeGpus(), 8) << "still hidden";
  cache_.ShowHiddenPods();
  EXPECT_EQ(Node("n1").FreeWholeGpus(), 6);
  EXPECT_EQ(Node("n1").gpus[2].used_milli, 1000);
  EXPECT_TRUE(snap_.hidden_pods().empty());
  EXPECT_EQ(cache_.GpuAssignmentOf("uid-p"), a);
  EXPECT_TRUE(cache_.CheckInvariants().ok());
}

TEST_F(CacheTest, ForgetUndoesAnAssumption) {
  cache_.AddNode(GpuNode("n1", 4));
  ASSERT_TRUE(cache_.AssumePod(GpuPod("p", 4), "n1", {}).ok());
  EXPECT_EQ(Node("n1").FreeWholeGpus(), 0) << "an empty assignment is chosen by the cache";
  ASSERT_TRUE(cache_.ForgetPod("uid-p").ok());
  EXPECT_EQ(Node("n1").FreeWholeGpus(), 4);
  EXPECT_EQ(Node("n1").pod_count, 0);
  EXPECT_FALSE(cache_.ForgetPod("uid-p").ok()) << "forgetting twice is an error";
}

TEST_F(CacheTest, AssumeRejectsDuplicatesAndUnknownNodes) {
  cache_.AddNode(GpuNode("n1", 1));
  EXPECT_EQ(cache_.AssumePod(GpuPod("p", 1), "nope", {}).code(), common::StatusCode::kNotFound);
  ASSERT_TRUE(cache_.AssumePod(GpuPod("p", 1), "n1", {}).ok());
  EXPECT_EQ(cache_.AssumePod(GpuPod("p", 1), "n1", {}).code(), common::StatusCode::kAlreadyExists);
}

TEST_F(CacheTest, AssumedPodsExpireOnlyAfterBindingFinished) {
  cache_.AddNode(GpuNode("n1", 1));
  ASSERT_TRUE(cache_.AssumePod(GpuPod("p", 1), "n1", {}).ok());
  clock_.Advance(std::chrono::minutes(10));
  EXPECT_EQ(cache_.CleanupExpiredAssumedPods(), 0) << "the bind is still in flight";
  ASSERT_TRUE(cache_.FinishBinding("uid-p").ok());
  clock_.Advance(std::chrono::seconds(29));
  EXPECT_EQ(cache_.CleanupExpiredAssumedPods(), 0);
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_EQ(cache_.CleanupExpiredAssumedPods(), 1);
  EXPECT_EQ(Node("n1").FreeWholeGpus(), 1);
  // Confirmed by the informer before its deadline, or forgotten: it never expires.
  for (const bool confirm : {true, false}) {
    ASSERT_TRUE(cache_.AssumePod(GpuPod("q", 1), "n1", {}).ok());
    ASSERT_TRUE(cache_.FinishBinding("uid-q").ok());
    if (confirm) {
      cache_.AddPod(GpuPod("q", 1, 1000, "n1"));
    } else {
      ASSERT_TRUE(cache_.ForgetPod("uid-q").ok());
    }
    clock_.Advance(std::chrono::minutes(1));
    EXPECT_EQ(cache_.CleanupExpiredAssumedPods(), 0) << confirm;
    EXPECT_EQ(Node("n1").FreeWholeGpus(), confirm ? 0 : 1) << confirm;
    cache_.RemovePod("uid-q");
  }
}

TEST_F(CacheTest, SharedPodsPackOntoDevicesAndPodsOfOthersAreCounted) {
  cache_.AddNode(GpuNode("n1", 2));
  cache_.AddPod(GpuPod("other-scheduler", 1, 1000, "n1"));  // placed by someone else
  cache_.AddPod(GpuPod("s1", 1, 300, "n1"));
  cache_.AddPod(GpuPod("s2", 1, 500, "n1"));
  const auto& ni = Node("n1");
  EXPECT_EQ(ni.gpus[0].used_milli + ni.gpus[1].used_milli, 1800);
  EXPECT_EQ(ni.FreeGpuMilli(), 200);
  EXPECT_EQ(ni.FreeWholeGpus(), 0);
  EXPECT_TRUE(cache_.CheckInvariants().ok());
}

TEST_F(CacheTest, AnnotatedDeviceChoiceIsHonouredAndOvercommitIsCountedNotApplied) {
  cache_.AddNode(GpuNode("n1", 2));
  auto p = std::const_pointer_cast<api::Pod>(GpuPod("a", 1, 1000, "n1"));
  p->meta.annotations.emplace_back(std::string(api::kPodGpuDevicesAnnotation), "1");
  cache_.AddPod(p);
  EXPECT_EQ(Node("n1").gpus[1].used_milli, 1000);
  auto q = std::const_pointer_cast<api::Pod>(GpuPod("b", 1, 1000, "n1"));
  q->meta.annotations.emplace_back(std::string(api::kPodGpuDevicesAnnotation), "1");
  cache_.AddPod(q);  // claims the same device: must not drive it past 1000m
  EXPECT_EQ(Node("n1").gpus[1].used_milli, 1000);
  EXPECT_EQ(cache_.OvercommittedPods(), 1);
  EXPECT_TRUE(cache_.CheckInvariants().ok());
  cache_.RemovePod("uid-b");
  EXPECT_EQ(cache_.OvercommittedPods(), 0);
}

TEST_F(CacheTest, PodsBeforeTheirNodeAndNodeDeletionKeepAccountingConsistent) {
  cache_.AddPod(GpuPod("early", 2, 1000, "n1"));  // the pod event beats the node event
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.Get("n1"), nullptr) << "a placeholder is invisible to plugins";
  EXPECT_EQ(snap_.num_nodes(), 0);
  cache_.AddNode(GpuNode("n1", 4));
  EXPECT_EQ(Node("n1").FreeWholeGpus(), 2);
  cache_.RemoveNode("n1");
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.Get("n1"), nullptr);
  cache_.RemovePod("uid-early");
  EXPECT_EQ(cache_.PodCount(), 0);
  cache_.AddNode(GpuNode("n1", 4));
  EXPECT_EQ(Node("n1").FreeWholeGpus(), 4);
  EXPECT_EQ(snap_.num_nodes(), 1);
  EXPECT_TRUE(cache_.CheckInvariants().ok());
}

TEST_F(CacheTest, TerminalPodsReleaseResources) {
  cache_.AddNode(GpuNode("n1", 1));
  cache_.AddPod(GpuPod("job", 1, 1000, "n1"));
  EXPECT_EQ(Node("n1").FreeWholeGpus(), 0);
  auto done = std::make_shared<api::Pod>(*GpuPod("job", 1, 1000, "n1"));
  done->phase = api::PodPhase::kSucceeded;
  cache_.UpdatePod(done);
  EXPECT_EQ(Node("n1").FreeWholeGpus(), 1);
  EXPECT_EQ(Node("n1").pod_count, 0);
}

TEST_F(CacheTest, SnapshotCopiesOnlyWhatChanged) {
  for (int i = 0; i < 3; ++i) cache_.AddNode(GpuNode("n" + std::to_string(i), 1));
  cache_.UpdateSnapshot(snap_);
  uint64_t g0 = snap_.at(snap_.Get("n0")->index).generation;
  uint64_t g2 = snap_.at(snap_.Get("n2")->index).generation;
  cache_.AddPod(GpuPod("p", 1, 1000, "n2"));
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.Get("n0")->generation, g0) << "untouched nodes keep their generation";
  EXPECT_GT(snap_.Get("n2")->generation, g2);
  EXPECT_EQ(snap_.Get("n2")->FreeWholeGpus(), 0);
}

TEST_F(CacheTest, ExternalGpuUtilizationOverridesTheAnnotationUntilCleared) {
  auto annotated = GpuNode("a", 1);
  auto copy = std::make_shared<api::Node>(*annotated);
  copy->meta.annotations.emplace_back(std::string(api::kNodeGpuUtilizationAnnotation), "0.3");
  cache_.AddNode(copy);
  cache_.AddNode(GpuNode("b", 1));
  EXPECT_DOUBLE_EQ(Node("a").gpu_utilization, 0.3);
  EXPECT_LT(Node("b").gpu_utilization, 0) << "unknown without a source";

  cache_.SetGpuUtilization("a", 0.9);
  cache_.SetGpuUtilization("b", 0.1);
  cache_.SetGpuUtilization("not-yet", 0.5);  // kept for a node that arrives later
  EXPECT_DOUBLE_EQ(Node("a").gpu_utilization, 0.9);
  EXPECT_DOUBLE_EQ(Node("b").gpu_utilization, 0.1);
  cache_.AddNode(GpuNode("not-yet", 1));
  EXPECT_DOUBLE_EQ(Node("not-yet").gpu_utilization, 0.5);

  // A node update keeps the external value; clearing falls back to the annotation.
  cache_.UpdateNode(copy);
  EXPECT_DOUBLE_EQ(Node("a").gpu_utilization, 0.9);
  const uint64_t g = Node("b").generation;
  cache_.SetGpuUtilization("b", 0.1);
  EXPECT_EQ(Node("b").generation, g) << "an unchanged value does not dirty the node";
  cache_.SetGpuUtilization("a", -1);
  cache_.SetGpuUtilization("b", -1);
  EXPECT_DOUBLE_EQ(Node("a").gpu_utilization, 0.3);
  EXPECT_LT(Node("b").gpu_utilization, 0);
}

TEST_F(CacheTest, NodesThatDifferOnlyInIdentityAndWhichPodsTheyHoldAreTwins) {
  auto labelled = [](const std::string& name, const std::string& rack) {
    auto n = std::const_pointer_cast<api::Node>(GpuNode(name, 4));
    n->meta.labels.Set("kubernetes.io/hostname", name);
    n->meta.labels.Set("rack", rack);
    return api::NodePtr(n);
  };
  cache_.AddNode(labelled("a", "r0"));
  cache_.AddNode(labelled("b", "r0"));
  cache_.AddNode(labelled("c", "r1"));
  auto twin = [&](const std::string& name) {
    cache_.UpdateSnapshot(snap_);
    const framework::NodeInfo* ni = snap_.Get(name);
    EXPECT_NE(ni, nullptr) << name;
    return ni == nullptr ? -2 : snap_.twins()[static_cast<size_t>(ni->index)];
  };
  EXPECT_GE(twin("a"), 0);
  EXPECT_EQ(twin("a"), twin("b"));
  EXPECT_GE(twin("c"), 0);
  EXPECT_NE(twin("c"), twin("a"));
  EXPECT_LT(twin("a"), snap_.num_twin_groups());
  EXPECT_LT(twin("c"), snap_.num_twin_groups());

  // A pod takes its node out of the group until an equal pod (other name, same requests and
  // devices) is on its twin, or it leaves.
  cache_.AddPod(GpuPod("p", 1, 1000, "b"));
  EXPECT_GE(twin("b"), 0);
  EXPECT_NE(twin("b"), twin("a"));
  cache_.AddPod(GpuPod("q", 1, 1000, "a"));
  EXPECT_EQ(twin("b"), twin("a"));
  cache_.AddPod(GpuPod("r", 1, 500, "a"));  // a shares a device's usage b does not have
  EXPECT_NE(twin("b"), twin("a"));
  cache_.RemovePod("uid-r");
  cache_.RemovePod("uid-q");
  cache_.RemovePod("uid-p");
  EXPECT_EQ(twin("b"), twin("a"));

  // GPU utilization is part of the group.
  cache_.SetGpuUtilization("a", 0.5);
  EXPECT_NE(twin("a"), twin("b"));
  cache_.SetGpuUtilization("b", 0.5);
  EXPECT_EQ(twin("a"), twin("b"));

  // An updated node object moves its slot; a removed node has no group.
  cache_.UpdateNode(labelled("a", "r1"));
  cache_.SetGpuUtilization("a", -1);
  EXPECT_EQ(twin("a"), twin("c"));
  const int32_t groups = snap_.num_twin_groups();
  cache_.RemoveNode("b");
  cache_.UpdateSnapshot(snap_);
  EXPECT_EQ(snap_.Get("b"), nullptr);
  // b's group is gone; a new shape reuses its id instead of growing the ids.
  cache_.AddNode(labelled("d", "r2"));
  EXPECT_GE(twin("d"), 0);
  EXPECT_NE(twin("d"), twin("c"));
  EXPECT_EQ(snap_.num_twin_groups(), groups);
}

}  // namespace
}  // namespace gpusched::cache
