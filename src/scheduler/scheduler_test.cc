// SPDX-License-Identifier: Apache-2.0
// The scheduling loop end to end, in process: the real framework and in-tree plugins, a fake
// ApiClient that confirms binds synchronously (as an informer would), an inline executor.
#include "src/scheduler/scheduler.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <variant>

#include "src/kube/accepting_api_client.h"
#include "src/plugins/in_tree_registry.h"
#include "src/testing/builders.h"

namespace gpusched::scheduler {
namespace {

using testing::MakeNode;
using testing::MakePod;

// Records writes; a successful bind is reflected back to the scheduler as a pod update.
class FakeApi final : public kube::AcceptingApiClient {
 public:
  kube::ClusterEventHandler* handler = nullptr;
  common::Status bind_result;
  std::map<std::string, std::string> bound;       // pod key -> node
  std::map<std::string, std::string> conditions;  // pod key -> message
  std::vector<kube::EventRecord> events;

  common::Status BindPod(
      const api::Pod& pod, std::string_view node,
      const std::vector<std::pair<std::string, std::string>>& annotations) override {
    if (!bind_result.ok()) return bind_result;
    auto updated = std::make_shared<api::Pod>(pod);
    updated->node_name = std::string(node);
    for (const auto& a : annotations) updated->meta.annotations.push_back(a);
    bound[pod.Key()] = std::string(node);
    handler->OnPodUpdate(std::make_shared<api::Pod>(pod), updated);
    return common::Status::Ok();
  }
  common::Status SetPodUnschedulable(const api::Pod& pod, std::string_view,
                                     std::string_view message) override {
    conditions[pod.Key()] = std::string(message);
    return common::Status::Ok();
  }
  common::StatusOr<api::ResourceClaimPtr> UpdateResourceClaimStatus(
      const api::ResourceClaim& claim) override {
    claim_writes.push_back(claim.meta.namespace_ + "/" + claim.meta.name);
    auto stored = std::make_shared<api::ResourceClaim>(claim);
    stored->meta.resource_version = "written";
    return api::ResourceClaimPtr(std::move(stored));
  }
  std::vector<std::string> claim_writes;
  common::Status CreateEvent(const kube::EventRecord& e) override {
    events.push_back(e);
    return common::Status::Ok();
  }
};

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterInTreePlugins(registry_).ok());
    auto cfg = config::DefaultSchedulerConfig();
    cfg.percentage_of_nodes_to_score = 100;
    auto s = Scheduler::Create(cfg, SchedulerDeps{clock_, random_, api_, executor_, registry_});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    sched_ = std::move(s).value();
    api_.handler = &sched_->events();
  }
  void Drain() {
    while (sched_->ScheduleOne()) {
    }
  }
  static testing::PodBuilder GpuPod(const std::string& name, int gpus) {
    return std::move(
        MakePod("default", name).SchedulerName("gpu-scheduler").Cpu("1").Memory("1Gi").Gpus(gpus));
  }
  static testing::NodeBuilder GpuNode(const std::string& name, int gpus, const std::string& model) {
    return std::move(
        MakeNode(name).Cpu("64").Memory("512Gi").Pods(110).Gpus(gpus).GpuModel(model).GpuMemoryMiB(
            40960));
  }

  common::FakeClock clock_;
  common::Random random_{42};
  FakeApi api_;
  common::InlineExecutor executor_;
  framework::Registry registry_;
  std::unique_ptr<Scheduler> sched_;
};

// Node GPU facts that were clamped or disagree (Node::gpu_error) are logged once when they appear
// and again only when they change, in real-cluster mode as in the simulator.
TEST_F(SchedulerTest, NodeGpuFactWarningsAreLoggedWhenTheyAppearOrChange) {
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_st>(out)));
  auto node = std::make_shared<api::Node>(*GpuNode("big", 8, "A100-SXM4-40GB").Ptr());
  node->gpu_error = "GPU count 17 exceeds 16; clamped";
  sched_->events().OnNodeAdd(node);
  auto same = std::make_shared<api::Node>(*node);
  sched_->events().OnNodeUpdate(node, same);  // unchanged: not logged again
  auto changed = std::make_shared<api::Node>(*node);
  changed->gpu_error = "label gpu.nvidia.com/count: invalid value \"eight\"";
  sched_->events().OnNodeUpdate(same, changed);
  auto fixed = std::make_shared<api::Node>(*node);
  fixed->gpu_error.clear();
  sched_->events().OnNodeUpdate(changed, fixed);  // fixed: nothing to say
  spdlog::set_default_logger(previous);
  const std::string log = out.str();
  EXPECT_NE(log.find("node big: GPU facts: GPU count 17 exceeds 16; clamped"), std::string::npos)
      << log;
  EXPECT_NE(log.find("node big: GPU facts: label gpu.nvidia.com/count: invalid value \"eight\""),
            std::string::npos)
      << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 2) << log;
}

TEST_F(SchedulerTest, BindsGpuPodsToNodesWithFreeDevicesAndRecordsTheChoice) {
  sched_->events().OnNodeAdd(GpuNode("a100-1", 8, "A100-SXM4-40GB").Ptr());
  sched_->events().OnNodeAdd(GpuNode("t4-1", 4, "Tesla-T4").Ptr());
  sched_->events().OnPodAdd(GpuPod("train", 4).GpuModel("A100").Ptr());
  sched_->events().OnPodAdd(GpuPod("serve", 1).GpuModel("T4").Ptr());
  sched_->events().OnPodAdd(MakePod("default", "other").SchedulerName("default-scheduler").Ptr());
  Drain();
  EXPECT_EQ(api_.bound["default/train"], "a100-1");
  EXPECT_EQ(api_.bound["default/serve"], "t4-1");
  EXPECT_EQ(api_.bound.count("default/other"), 0u) << "pods of other schedulers are left alone";
  EXPECT_EQ(sched_->stats().scheduled.load(), 2);
  EXPECT_FALSE(sched_->IsAssumed(MakePod("default", "train").Obj().meta.uid))
      << "the bind was confirmed";
  auto gpu = sched_->GpuAssignmentOf(MakePod("default", "train").Obj().meta.uid);
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->devices.size(), 4u);
  EXPECT_TRUE(sched_->CheckCacheInvariants().ok());
  bool scheduled_event = false;
  for (const auto& e : api_.events) {
    if (e.reason == "Scheduled" && e.pod_name == "train") {
      scheduled_event = true;
      EXPECT_EQ(e.note, "Successfully assigned default/train to a100-1");
    }
  }
  EXPECT_TRUE(scheduled_event);
}

TEST_F(SchedulerTest, CountsFreeDevicesNotTheNodeTotal) {
  sched_->events().OnNodeAdd(GpuNode("n1", 8, "A100-SXM4-40GB").Ptr());
  // Another scheduler placed a 3-GPU pod there.
  sched_->events().OnPodAdd(MakePod("default", "theirs").Gpus(3).NodeName("n1").Ptr());
  sched_->events().OnPodAdd(GpuPod("six", 6).Ptr());
  sched_->events().OnPodAdd(GpuPod("five", 5).Ptr());
  Drain();
  EXPECT_EQ(api_.bound.count("default/six"), 0u);
  EXPECT_EQ(api_.bound["default/five"], "n1");
  EXPECT_EQ(api_.conditions["default/six"],
            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are "
            "available: 1 No preemption victims found for incoming pod.");
}

TEST_F(SchedulerTest, FailureMessageCountsReasonsLikeKubeScheduler) {
  sched_->events().OnNodeAdd(GpuNode("a1", 1, "A100-SXM4-40GB").Ptr());
  sched_->events().OnNodeAdd(GpuNode("a2", 2, "A100-SXM4-40GB").Ptr());
  sched_->events().OnNodeAdd(GpuNode("t1", 8, "Tesla-T4").Ptr());
  sched_->events().OnPodAdd(GpuPod("big", 4).GpuModel("A100").Ptr());
  Drain();
  EXPECT_EQ(api_.conditions["default/big"],
            "0/3 nodes are available: 1 GPU model mismatch, 2 Insufficient nvidia.com/gpu. "
            "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No "
            "preemption victims found for incoming pod.");
  ASSERT_FALSE(api_.events.empty());
  EXPECT_EQ(api_.events.back().reason, "FailedScheduling");
  EXPECT_EQ(api_.events.back().type, "Warning");
  EXPECT_EQ(sched_->PendingCounts().unschedulable, 1);
}

TEST_F(SchedulerTest, MalformedGpuAnnotationRejectsOnlyThatPod) {
  sched_->events().OnNodeAdd(GpuNode("n1", 8, "A100-SXM4-40GB").Ptr());
  sched_->events().OnPodAdd(GpuPod("bad", 1).Annotation("gpu.nvidia.com/memory", "lots").Ptr());
  sched_->events().OnPodAdd(GpuPod("good", 1).Ptr());
  Drain();
  EXPECT_EQ(api_.bound["default/good"], "n1");
  ASSERT_EQ(api_.bound.count("default/bad"), 0u);
  EXPECT_NE(api_.conditions["default/bad"].find("gpu.nvidia.com/memory"), std::string::npos)
      << api_.conditions["default/bad"];
  EXPECT_NE(api_.conditions["default/bad"].find("lots"), std::string::npos);
}

TEST_F(SchedulerTest, UnschedulablePodIsBoundOnceAFittingNodeArrives) {
  sched_->events().OnNodeAdd(GpuNode("small", 1, "A100-SXM4-40GB").Ptr());
  sched_->events().OnPodAdd(GpuPod("eight", 8).Ptr());
  Drain();
  EXPECT_EQ(api_.bound.count("default/eight"), 0u);
  sched_->events().OnNodeAdd(GpuNode("big", 8, "A100-SXM4-40GB").Ptr());
  Drain();
  EXPECT_EQ(api_.bound.count("default/eight"), 0u) << "still in its 1 s backoff";
  clock_.Advance(std::chrono::seconds(2));
  Drain();
  EXPECT_EQ(api_.bound["default/eight"], "big");
}

TEST_F(SchedulerTest, FailedBindIsForgottenAndRetriedWithBackoff) {
  sched_->events().OnNodeAdd(GpuNode("n1", 2, "A100-SXM4-40GB").Ptr());
  api_.bind_result = common::UnavailableError("connection refused");
  sched_->events().OnPodAdd(GpuPod("p", 2).Ptr());
  Drain();
  std::string uid = MakePod("default", "p").Obj().meta.uid;
  EXPECT_FALSE(sched_->InCache(uid)) << "a failed bind must release the GPUs";
  EXPECT_EQ(sched_->stats().errors.load(), 1);
  EXPECT_EQ(sched_->PendingCounts().backoff, 1);
  api_.bind_result = common::Status::Ok();
  clock_.Advance(std::chrono::seconds(2));
  Drain();
  EXPECT_EQ(api_.bound["default/p"], "n1");
}

TEST_F(SchedulerTest, PodBoundBySomeoneElseLeavesTheQueue) {
  sched_->events().OnPodAdd(GpuPod("p", 1).Ptr());
  EXPECT_TRUE(sched_->IsQueued(MakePod("default", "p").Obj().meta.uid));
  sched_->events().OnNodeAdd(GpuNode("n1", 1, "A100-SXM4-40GB").Ptr());
  sched_->events().OnPodUpdate(GpuPod("p", 1).Ptr(), GpuPod("p", 1).NodeName("n1").Ptr());
  EXPECT_FALSE(sched_->ScheduleOne());
  EXPECT_TRUE(api_.bound.empty()) << "never bind twice";
}

// A Permit plugin that holds each pod until the other pod of its pair (same name before the last
// '-') is reserved too, then lets both bind: a two-member gang.
class PairPermit final : public framework::PermitPlugin {
 public:
  explicit PairPermit(framework::Handle& handle) : handle_(handle) {}
  std::string_view Name() const override { return "PairPermit"; }
  framework::Status Permit(framework::CycleState&, const api::Pod& pod, std::string_view,
                           common::Duration* timeout) override {
    const std::string group = Group(pod.meta.name);
    for (const auto& w : handle_.waiting_pods().List()) {
      if (Group(w.pod->meta.name) == group) {
        handle_.waiting_pods().Allow(w.pod->meta.uid, Name());
        return framework::Status::Success();
      }
    }
    *timeout = std::chrono::seconds(30);
    return framework::Status::Wait();
  }

 private:
  static std::string Group(const std::string& name) { return name.substr(0, name.rfind('-')); }
  framework::Handle& handle_;
};

class SchedulerPermitTest : public SchedulerTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterInTreePlugins(registry_).ok());
    ASSERT_TRUE(registry_
                    .Register("PairPermit",
                              [](const boost::json::value&,
                                 framework::Handle& h) -> common::StatusOr<framework::PluginPtr> {
                                return framework::PluginPtr(std::make_unique<PairPermit>(h));
                              })
                    .ok());
    auto cfg = config::DefaultSchedulerConfig();
    cfg.percentage_of_nodes_to_score = 100;
    cfg.profiles[0].plugins.at(config::Point::kPermit).enabled.push_back({"PairPermit", 0, ""});
    auto s = Scheduler::Create(cfg, SchedulerDeps{clock_, random_, api_, executor_, registry_});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    sched_ = std::move(s).value();
    api_.handler = &sched_->events();
  }
};

TEST_F(SchedulerPermitTest, APodHeldAtPermitKeepsItsGpusUntilItsPairArrivesThenBothBind) {
  sched_->events().OnNodeAdd(GpuNode("n1", 8, "A100-SXM4-40GB").Ptr());
  sched_->events().OnPodAdd(GpuPod("job-0", 4).Ptr());
  Drain();
  const std::string uid0 = MakePod("default", "job-0").Obj().meta.uid;
  EXPECT_EQ(api_.bound.count("default/job-0"), 0u) << "held at Permit, not bound";
  EXPECT_TRUE(sched_->IsAssumed(uid0)) << "its 4 GPUs stay claimed while it waits";
  EXPECT_EQ(sched_->WaitingPodCount(), 1u);
  sched_->events().OnPodAdd(
      GpuPod("lone-0", 5).Ptr());  // 4 GPUs left: does not fit beside the held pod
  sched_->events().OnPodAdd(GpuPod("job-1", 4).Ptr());
  Drain();
  EXPECT_EQ(api_.bound["default/job-0"], "n1");
  EXPECT_EQ(api_.bound["default/job-1"], "n1");
  EXPECT_EQ(api_.bound.count("default/lone-0"), 0u);
  EXPECT_EQ(api_.conditions["default/lone-0"],
            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are "
            "available: 1 No preemption victims found for incoming pod.");
  EXPECT_EQ(sched_->WaitingPodCount(), 0u);
  EXPECT_TRUE(sched_->CheckCacheInvariants().ok());
}

TEST_F(SchedulerPermitTest, AWaitThatTimesOutReleasesTheGpusAndReportsKubeSchedulersMessage) {
  sched_->events().OnNodeAdd(GpuNode("n1", 8, "A100-SXM4-40GB").Ptr());
  sched_->events().OnPodAdd(GpuPod("job-0", 8).Ptr());
  Drain();
  const std::string uid = MakePod("default", "job-0").Obj().meta.uid;
  clock_.Advance(std::chrono::seconds(29));
  sched_->Tick();
  EXPECT_TRUE(sched_->IsAssumed(uid)) << "still waiting before its timeout";
  clock_.Advance(std::chrono::seconds(1));
  sched_->Tick();
  EXPECT_FALSE(sched_->InCache(uid)) << "the timed-out pod released its GPUs";
  EXPECT_EQ(api_.bound.count("default/job-0"), 0u);
  EXPECT_EQ(
      api_.conditions["default/job-0"],
      "0/1 nodes are available: 1 rejected due to timeout after waiting 30s at plugin PairPermit.");
  ASSERT_FALSE(api_.events.empty());
  EXPECT_EQ(api_.events.back().reason, "FailedScheduling");
  EXPECT_EQ(sched_->PendingCounts().unschedulable, 1);
  EXPECT_EQ(sched_->stats().unschedulable.load(), 1);
}

api::ResourceClaimPtr DraClaim(std::string name, std::string rv) {
  auto c = std::make_shared<api::ResourceClaim>();
  c->meta.namespace_ = "ml";
  c->meta.name = std::move(name);
  c->meta.uid = "uid-" + c->meta.name;
  c->meta.resource_version = std::move(rv);
  api::DeviceRequest r;
  r.name = "gpu";
  r.exactly = api::DeviceChoice{.device_class = "gpu.nvidia.com", .count = 1};
  c->spec.requests.push_back(std::move(r));
  return c;
}

api::ResourceSlicePtr DraSlice(std::string node, int gpus) {
  auto s = std::make_shared<api::ResourceSlice>();
  s->name = node + "-gpu";
  s->resource_version = "1";
  s->driver = "gpu.nvidia.com";
  s->pool = node;
  s->node_name = node;
  for (int i = 0; i < gpus; ++i) {
    api::Device d;
    d.name = "gpu-" + std::to_string(i);
    s->devices.push_back(std::move(d));
  }
  return s;
}

TEST(DraQueueEventTest, EachChangeIsAnEventWithItsObjects) {
  using framework::EventResource;
  auto cls = std::make_shared<api::DeviceClass>();
  cls->name = "gpu.nvidia.com";
  const kube::DraObject klass = api::DeviceClassPtr(cls);
  const kube::DraObject slice = DraSlice("n1", 2);
  const kube::DraObject claim = DraClaim("a", "1");
  const kube::DraObject claim2 = DraClaim("a", "2");
  struct Case {
    const char* name;
    const kube::DraObject* old_obj;
    const kube::DraObject* obj;
    EventResource want_resource;
    uint32_t want_actions;
  };
  const Case cases[] = {
      {"a class is added", nullptr, &klass, EventResource::kDeviceClass, framework::kAdd},
      {"a slice is added", nullptr, &slice, EventResource::kResourceSlice, framework::kAdd},
      {"a slice changes", &slice, &slice, EventResource::kResourceSlice, framework::kUpdateOther},
      {"a claim is added", nullptr, &claim, EventResource::kResourceClaim, framework::kAdd},
      {"a claim changes", &claim, &claim2, EventResource::kResourceClaim, framework::kUpdateOther},
      {"a claim is deleted", &claim, nullptr, EventResource::kResourceClaim, framework::kDelete},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    queue::QueueEvent e = events::DraQueueEvent(c.old_obj, c.obj);
    EXPECT_EQ(e.event.resource, c.want_resource);
    EXPECT_EQ(e.event.actions, c.want_actions);
    auto raw = [](const kube::DraObject* o) -> const void* {
      if (o == nullptr) return nullptr;
      return std::visit([](const auto& p) -> const void* { return p.get(); }, *o);
    };
    EXPECT_EQ(e.old_obj.get(), raw(c.old_obj));
    EXPECT_EQ(e.new_obj.get(), raw(c.obj));
    // What the plugin's hints read: the typed objects.
    const framework::EventObjects objs = e.Objects();
    EXPECT_EQ(objs.new_obj, raw(c.obj));
  }
}

// A DeviceTaintRule changes the taints of the slices it matches: every change of one is a slice
// update (as upstream's ResourceSlice tracker sends), without objects.
TEST(DraQueueEventTest, ATaintRuleChangeIsASliceUpdate) {
  auto r = std::make_shared<api::DeviceTaintRule>();
  r->name = "gpu-0";
  const kube::DraObject rule = api::DeviceTaintRulePtr(r);
  for (auto [old_obj, obj] :
       {std::pair<const kube::DraObject*, const kube::DraObject*>{nullptr, &rule},
        {&rule, &rule},
        {&rule, nullptr}}) {
    queue::QueueEvent e = events::DraQueueEvent(old_obj, obj);
    EXPECT_EQ(e.event.resource, framework::EventResource::kResourceSlice);
    EXPECT_EQ(e.event.actions, framework::kUpdateOther);
    EXPECT_EQ(e.old_obj, nullptr);
    EXPECT_EQ(e.new_obj, nullptr);
  }
}

TEST_F(SchedulerTest, DraInformerEventsFeedTheDraViewAndItsWriterIsTheApiClient) {
  framework::DraView* view = sched_->dra();
  ASSERT_NE(view, nullptr);
  auto cls = std::make_shared<api::DeviceClass>();
  cls->name = "gpu.nvidia.com";
  sched_->events().OnDraAdd(api::DeviceClassPtr(cls));
  sched_->events().OnDraAdd(DraSlice("n1", 2));
  sched_->events().OnDraAdd(DraClaim("a", "1"));
  EXPECT_NE(view->GetDeviceClass("gpu.nvidia.com"), nullptr);
  EXPECT_EQ(view->devices()->NodeDevices("n1").size(), 2u);
  ASSERT_NE(view->GetClaim("ml", "a"), nullptr);

  // An update replaces the claim; the allocation is visible as device usage.
  auto allocated = std::make_shared<api::ResourceClaim>(*DraClaim("a", "2"));
  allocated->allocation =
      api::AllocationResult{{{"gpu", "gpu.nvidia.com", "n1", "gpu-0", false}}, std::nullopt};
  sched_->events().OnDraUpdate(DraClaim("a", "1"), api::ResourceClaimPtr(allocated));
  EXPECT_EQ(view->GetClaim("ml", "a")->meta.resource_version, "2");
  auto usage = view->usage();
  size_t held = 0;
  for (const api::ResourceClaimPtr& h : usage->holder) held += h != nullptr ? 1 : 0;
  EXPECT_EQ(held, 1u);

  // PreBind's write goes through the scheduler's ApiClient.
  common::StatusOr<api::ResourceClaimPtr> stored = view->UpdateClaimStatus(*allocated);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ((*stored)->meta.resource_version, "written");
  EXPECT_EQ(api_.claim_writes, std::vector<std::string>{"ml/a"});

  // Deletes remove them again.
  sched_->events().OnDraDelete(api::ResourceClaimPtr(allocated));
  sched_->events().OnDraDelete(DraSlice("n1", 2));
  sched_->events().OnDraDelete(api::DeviceClassPtr(cls));
  EXPECT_EQ(view->GetClaim("ml", "a"), nullptr);
  EXPECT_TRUE(view->devices()->NodeDevices("n1").empty());
  EXPECT_EQ(view->GetDeviceClass("gpu.nvidia.com"), nullptr);
}

}  // namespace
}  // namespace gpusched::scheduler
