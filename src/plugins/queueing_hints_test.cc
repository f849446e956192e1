// SPDX-License-Identifier: Apache-2.0
// The in-tree plugins' queueing hints (EventsToRegister), as tables: for a rejected pod and one
// cluster event, whether the plugin registered the event and what its hint says.
#include <gtest/gtest.h>

#include <boost/json/value.hpp>
#include <string>
#include <vector>

#include "src/framework/plugin.h"
#include "src/plugins/in_tree_registry.h"
#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"

namespace gpusched::plugins {
namespace {

using framework::ClusterEvent;
using framework::EventObjects;
using framework::EventResource;
using testing::MakeNode;
using testing::MakePod;

enum class Want { kNotRegistered, kSkip, kQueue };

struct Case {
  std::string name;
  std::string_view plugin;
  api::PodPtr pod;  // the rejected pod
  ClusterEvent event;
  api::PodPtr old_pod, new_pod;
  api::NodePtr old_node, new_node;  // pod events: new_node is where the pod runs (ran)
  Want want;
};

// What `plugin`'s registrations say about `c`: not registered, or the first matching hint's
// answer (kQueue when any matching registration queues, as the queue decides).
Want Evaluate(const framework::Plugin& plugin, const Case& c) {
  const auto* ext = dynamic_cast<const framework::EnqueueExtensions*>(&plugin);
  if (ext == nullptr) return Want::kQueue;  // every event, no hint
  const EventObjects objects{c.old_pod.get(),  c.new_pod.get(), c.old_node.get(),
                             c.new_node.get(), nullptr,         nullptr};
  Want got = Want::kNotRegistered;
  for (const auto& reg : ext->EventsToRegister()) {
    if (!reg.event.Matches(c.event)) continue;
    if (!reg.hint || reg.hint(*c.pod, c.event, objects) == framework::QueueingHint::kQueue) {
      return Want::kQueue;
    }
    got = Want::kSkip;
  }
  return got;
}

const char* WantName(Want w) {
  switch (w) {
    case Want::kNotRegistered: return "not registered";
    case Want::kSkip: return "skip";
    case Want::kQueue: return "queue";
  }
  return "?";
}

ClusterEvent NodeEv(uint32_t actions) { return {EventResource::kNode, actions}; }
ClusterEvent PodEv(uint32_t actions) { return {EventResource::kAssignedPod, actions}; }

std::vector<Case> Cases() {
  using framework::kAdd;
  using framework::kDelete;
  const auto cpu4 = MakePod("ns", "cpu4").Cpu("4").Ptr();
  const auto gpu8 = MakePod("ns", "gpu8").Gpus(8).GpuModel("H100").Ptr();
  const auto small = MakeNode("small").Cpu("2").Memory("8Gi").Ptr();
  const auto big = MakeNode("big").Cpu("16").Memory("64Gi").Ptr();
  const auto big_labelled = MakeNode("big").Cpu("16").Memory("64Gi").Label("x", "y").Ptr();
  const auto h100 = MakeNode("h").Cpu("64").Gpus(8).GpuModel("H100-SXM5-80GB").Ptr();
  const auto a100 = MakeNode("a").Cpu("64").Gpus(8).GpuModel("A100-SXM4-40GB").Ptr();
  const auto h100_4 = MakeNode("h").Cpu("64").Gpus(4).GpuModel("H100-SXM5-80GB").Ptr();
  const auto gpu_user = MakePod("ns", "user").Gpus(2).NodeName("h").Ptr();
  const auto cpu_user = MakePod("ns", "web").Cpu("1").NodeName("h").Ptr();
  const auto cpu_user_smaller = MakePod("ns", "web").Cpu("500m").NodeName("h").Ptr();
  const auto tainted =
      MakeNode("t").Cpu("8").Taint("gpu", "true", api::TaintEffect::kNoSchedule).Ptr();
  const auto untainted = MakeNode("t").Cpu("8").Ptr();
  const auto cordoned = MakeNode("c").Cpu("8").Unschedulable().Ptr();
  const auto uncordoned = MakeNode("c").Cpu("8").Ptr();
  const auto zone_a = MakeNode("z").Cpu("8").Zone("a").Ptr();
  const auto zone_b = MakeNode("z").Cpu("8").Zone("b").Ptr();
  const auto no_zone = MakeNode("z").Cpu("8").Ptr();
  const auto wants_zone_b =
      MakePod("ns", "zb").NodeSelector("topology.kubernetes.io/zone", "b").Ptr();
  const auto spread =
      MakePod("ns", "s")
          .Label("app", "web")
          .SpreadConstraint(1, "topology.kubernetes.io/zone",
                            api::TopologySpreadConstraint::WhenUnsatisfiable::kDoNotSchedule, "app",
                            "web")
          .Ptr();
  const auto web_pod = MakePod("ns", "w").Label("app", "web").NodeName("z").Ptr();
  const auto db_pod = MakePod("ns", "d").Label("app", "db").NodeName("z").Ptr();
  const auto anti_web =
      MakePod("ns", "aw").PodAntiAffinity("kubernetes.io/hostname", "app", "web").Ptr();
  const auto near_db = MakePod("ns", "nd").PodAffinity("kubernetes.io/hostname", "app", "db").Ptr();
  const auto upd = framework::kUpdateNodeAllocatable;
  const auto lbl = framework::kUpdateNodeLabel;
  const auto tnt = framework::kUpdateNodeTaint;
  const auto cond = framework::kUpdateNodeCondition;
  return {
      // NodeResourcesFit
      {"fit: node added that fits",
       names::kNodeResourcesFit,
       cpu4,
       NodeEv(kAdd),
       {},
       {},
       {},
       big,
       Want::kQueue},
      {"fit: node added too small",
       names::kNodeResourcesFit,
       cpu4,
       NodeEv(kAdd),
       {},
       {},
       {},
       small,
       Want::kSkip},
      {"fit: allocatable grew",
       names::kNodeResourcesFit,
       cpu4,
       NodeEv(upd),
       {},
       {},
       small,
       big,
       Want::kQueue},
      {"fit: label change only",
       names::kNodeResourcesFit,
       cpu4,
       NodeEv(lbl),
       {},
       {},
       big,
       big_labelled,
       Want::kNotRegistered},
      {"fit: condition change",
       names::kNodeResourcesFit,
       cpu4,
       NodeEv(cond),
       {},
       {},
       big,
       big,
       Want::kNotRegistered},
      {"fit: assigned pod deleted",
       names::kNodeResourcesFit,
       cpu4,
       PodEv(kDelete),
       cpu_user,
       {},
       {},
       {},
       Want::kQueue},
      {"fit: pod deleted on a node too small for the pod",
       names::kNodeResourcesFit,
       cpu4,
       PodEv(kDelete),
       cpu_user,
       {},
       {},
       small,
       Want::kSkip},
      {"fit: pod deleted on a node that could hold it",
       names::kNodeResourcesFit,
       cpu4,
       PodEv(kDelete),
       cpu_user,
       {},
       {},
       big,
       Want::kQueue},
      {"fit: assigned pod scaled down",
       names::kNodeResourcesFit,
       cpu4,
       PodEv(framework::kUpdatePodScaleDown),
       cpu_user,
       cpu_user_smaller,
       {},
       {},
       Want::kQueue},
      {"fit: assigned pod added",
       names::kNodeResourcesFit,
       cpu4,
       PodEv(kAdd),
       {},
       cpu_user,
       {},
       {},
       Want::kNotRegistered},
      // GpuFit
      {"gpu: GPU pod deleted",
       names::kGpuFit,
       gpu8,
       PodEv(kDelete),
       gpu_user,
       {},
       {},
       {},
       Want::kQueue},
      {"gpu: GPU pod deleted on an H100 node",
       names::kGpuFit,
       gpu8,
       PodEv(kDelete),
       gpu_user,
       {},
       {},
       h100,
       Want::kQueue},
      {"gpu: GPU pod deleted on an A100 node",
       names::kGpuFit,
       gpu8,
       PodEv(kDelete),
       gpu_user,
       {},
       {},
       a100,
       Want::kSkip},
      {"gpu: CPU pod deleted",
       names::kGpuFit,
       gpu8,
       PodEv(kDelete),
       cpu_user,
       {},
       {},
       {},
       Want::kSkip},
      {"gpu: H100 node added", names::kGpuFit, gpu8, NodeEv(kAdd), {}, {}, {}, h100, Want::kQueue},
      {"gpu: A100 node added", names::kGpuFit, gpu8, NodeEv(kAdd), {}, {}, {}, a100, Want::kSkip},
      {"gpu: CPU node added", names::kGpuFit, gpu8, NodeEv(kAdd), {}, {}, {}, big, Want::kSkip},
      {"gpu: node grew to 8 GPUs",
       names::kGpuFit,
       gpu8,
       NodeEv(upd),
       {},
       {},
       h100_4,
       h100,
       Want::kQueue},
      {"gpu: GPU facts unchanged",
       names::kGpuFit,
       gpu8,
       NodeEv(upd),
       {},
       {},
       h100,
       h100,
       Want::kSkip},
      {"gpu: condition change",
       names::kGpuFit,
       gpu8,
       NodeEv(cond),
       {},
       {},
       h100,
       h100,
       Want::kNotRegistered},
      {"frag: same as GpuFit",
       names::kGpuFragmentation,
       gpu8,
       PodEv(kDelete),
       cpu_user,
       {},
       {},
       {},
       Want::kSkip},
      // TaintToleration
      {"taint: taint removed",
       names::kTaintToleration,
       cpu4,
       NodeEv(tnt),
       {},
       {},
       tainted,
       untainted,
       Want::kQueue},
      {"taint: taint added",
       names::kTaintToleration,
       cpu4,
       NodeEv(tnt),
       {},
       {},
       untainted,
       tainted,
       Want::kSkip},
      {"taint: tainted node added",
       names::kTaintToleration,
       cpu4,
       NodeEv(kAdd),
       {},
       {},
       {},
       tainted,
       Want::kSkip},
      // NodeUnschedulable
      {"cordon: uncordoned",
       names::kNodeUnschedulable,
       cpu4,
       NodeEv(tnt),
       {},
       {},
       cordoned,
       uncordoned,
       Want::kQueue},
      {"cordon: cordoned node added",
       names::kNodeUnschedulable,
       cpu4,
       NodeEv(kAdd),
       {},
       {},
       {},
       cordoned,
       Want::kSkip},
      // NodeAffinity
      {"affinity: label now matches",
       names::kNodeAffinity,
       wants_zone_b,
       NodeEv(lbl),
       {},
       {},
       zone_a,
       zone_b,
       Want::kQueue},
      {"affinity: label still wrong",
       names::kNodeAffinity,
       wants_zone_b,
       NodeEv(lbl),
       {},
       {},
       no_zone,
       zone_a,
       Want::kSkip},
      {"affinity: matching node added",
       names::kNodeAffinity,
       wants_zone_b,
       NodeEv(kAdd),
       {},
       {},
       {},
       zone_b,
       Want::kQueue},
      {"affinity: allocatable change",
       names::kNodeAffinity,
       wants_zone_b,
       NodeEv(upd),
       {},
       {},
       zone_b,
       zone_b,
       Want::kNotRegistered},
      // PodTopologySpread
      {"spread: matching pod deleted",
       names::kPodTopologySpread,
       spread,
       PodEv(kDelete),
       web_pod,
       {},
       {},
       {},
       Want::kQueue},
      {"spread: other pod deleted",
       names::kPodTopologySpread,
       spread,
       PodEv(kDelete),
       db_pod,
       {},
       {},
       {},
       Want::kSkip},
      {"spread: node with the key added",
       names::kPodTopologySpread,
       spread,
       NodeEv(kAdd),
       {},
       {},
       {},
       zone_a,
       Want::kQueue},
      {"spread: node without the key added",
       names::kPodTopologySpread,
       spread,
       NodeEv(kAdd),
       {},
       {},
       {},
       no_zone,
       Want::kSkip},
      {"spread: zone label changed",
       names::kPodTopologySpread,
       spread,
       NodeEv(lbl),
       {},
       {},
       zone_a,
       zone_b,
       Want::kQueue},
      // InterPodAffinity
      {"ipa: anti-affinity target deleted",
       names::kInterPodAffinity,
       anti_web,
       PodEv(kDelete),
       web_pod,
       {},
       {},
       {},
       Want::kQueue},
      {"ipa: unrelated pod deleted",
       names::kInterPodAffinity,
       anti_web,
       PodEv(kDelete),
       db_pod,
       {},
       {},
       {},
       Want::kSkip},
      {"ipa: affinity target added",
       names::kInterPodAffinity,
       near_db,
       PodEv(kAdd),
       {},
       db_pod,
       {},
       {},
       Want::kQueue},
      {"ipa: unrelated pod added",
       names::kInterPodAffinity,
       near_db,
       PodEv(kAdd),
       {},
       web_pod,
       {},
       {},
       Want::kSkip},
      // GangScheduling: PodGroups and room
      {"gang: PodGroup added",
       names::kGangScheduling,
       cpu4,
       ClusterEvent{EventResource::kPodGroup, kAdd},
       {},
       {},
       {},
       {},
       Want::kQueue},
      {"gang: condition change",
       names::kGangScheduling,
       cpu4,
       NodeEv(cond),
       {},
       {},
       big,
       big,
       Want::kNotRegistered},
  };
}

TEST(QueueingHintsTest, InTreePluginsAnswerAsUpstream) {
  framework::Registry registry;
  ASSERT_TRUE(RegisterInTreePlugins(registry).ok());
  testing::FakeHandle handle;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto plugin = (*registry.Find(c.plugin))(boost::json::object(), handle);
    ASSERT_TRUE(plugin.ok()) << plugin.status().ToString();
    const Want got = Evaluate(**plugin, c);
    EXPECT_EQ(WantName(got), std::string(WantName(c.want)));
  }
}

TEST(QueueingHintsTest, EveryPluginThatCanRejectRegistersEvents) {
  framework::Registry registry;
  ASSERT_TRUE(RegisterInTreePlugins(registry).ok());
  testing::FakeHandle handle;
  for (const std::string& name : registry.Names()) {
    SCOPED_TRACE(name);
    auto plugin = (*registry.Find(name))(boost::json::object(), handle);
    ASSERT_TRUE(plugin.ok());
    framework::Plugin* p = plugin->get();
    const bool rejects = dynamic_cast<framework::PreFilterPlugin*>(p) != nullptr ||
                         dynamic_cast<framework::FilterPlugin*>(p) != nullptr ||
                         dynamic_cast<framework::ReservePlugin*>(p) != nullptr ||
                         dynamic_cast<framework::PermitPlugin*>(p) != nullptr;
    const auto* ext = dynamic_cast<framework::EnqueueExtensions*>(p);
    EXPECT_EQ(rejects, ext != nullptr);
    if (ext != nullptr) {
      EXPECT_FALSE(ext->EventsToRegister().empty());
    }
  }
}

}  // namespace
}  // namespace gpusched::plugins
