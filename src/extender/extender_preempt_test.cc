// SPDX-License-Identifier: Apache-2.0
// The preempt verb: kube-scheduler's proposed victims per node are kept when they make room on
// our devices, replaced by the device-correct set when they count enough GPUs but free no usable
// device, and the node is dropped when nothing helps; both request forms (full pods, UIDs) and
// malformed bodies. The cache is filled directly, as from the informer (gpusched.io/gpu-devices
// annotations on bound pods).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "src/api/gpu.h"
#include "src/common/clock.h"
#include "src/common/interner.h"
#include "src/config/config.h"
#include "src/extender/extender.h"
#include "src/plugins/in_tree_registry.h"
#include "src/testing/builders.h"

namespace gpusched::extender {
namespace {

namespace json = boost::json;

constexpr int32_t kHigh = 1000;

// A bound pod holding `devices` ("1" a whole GPU, "0:500m" a share asked for with
// gpusched.io/gpu-milli and no nvidia.com/gpu), as the informer delivers it.
api::PodPtr Placed(std::string_view name, std::string_view node, int32_t priority,
                   std::string_view devices, int64_t start_seconds = 0) {
  testing::PodBuilder b = testing::MakePod("ns", name);
  b.NodeName(node).Priority(priority).Cpu("1").Phase(api::PodPhase::kRunning).Label("app", name);
  b.StartTime(common::TimePoint(std::chrono::seconds(1'000 + start_seconds)));
  if (!devices.empty()) {
    b.Annotation(api::kPodGpuDevicesAnnotation, devices);
    if (devices.find(':') != std::string_view::npos) {
      b.Annotation(api::kPodGpuMilliAnnotation, devices.substr(devices.find(':') + 1, 3));
    } else {
      b.Gpus(1);
    }
  }
  return b.Ptr();
}

// The same pod as v1 JSON (what NodeNameToVictims carries); `gpus` whole GPUs, or a share.
json::value PodJson(std::string_view name, int32_t priority, int gpus,
                    std::string_view milli = "") {
  json::object annotations;
  if (!milli.empty()) annotations[api::kPodGpuMilliAnnotation] = milli;
  json::object limits;
  if (gpus > 0) limits["nvidia.com/gpu"] = std::to_string(gpus);
  return json::object{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "ns"},
        {"uid", "ns/" + std::string(name)},
        {"annotations", annotations}}},
      {"spec",
       {{"priority", priority},
        {"containers", json::array{json::object{
                           {"name", "main"},
                           {"resources", {{"limits", limits}, {"requests", {{"cpu", "1"}}}}}}}}}}};
}

using Proposal = std::map<std::string, std::pair<std::vector<std::string>, int64_t>>;

// ExtenderPreemptionArgs for the preemptor (one whole GPU, priority kHigh) and `proposal`
// (node -> victim names, NumPDBViolations): UIDs (nodeCacheCapable) or full pods.
std::string PreemptArgs(const Proposal& proposal, bool meta,
                        const std::map<std::string, json::value>& pods = {}) {
  json::object nodes;
  for (const auto& [node, victims] : proposal) {
    json::array items;
    for (const std::string& name : victims.first) {
      if (meta) {
        items.push_back(json::object{{"UID", "ns/" + name}});
      } else {
        items.push_back(pods.at(name));
      }
    }
    nodes[node] = json::object{{"Pods", items}, {"NumPDBViolations", victims.second}};
  }
  json::object o;
  o["Pod"] = PodJson("preemptor", kHigh, 1);
  o[meta ? "NodeNameToMetaVictims" : "NodeNameToVictims"] = nodes;
  o[meta ? "NodeNameToVictims" : "NodeNameToMetaVictims"] = nullptr;  // as kube-scheduler sends
  return json::serialize(o);
}

// The reply's NodeNameToMetaVictims as node -> (victim names in order, NumPDBViolations).
Proposal Answer(const http::Response& r) {
  EXPECT_EQ(r.status, 200) << r.body;
  Proposal out;
  if (r.status != 200) return out;
  json::value v = json::parse(r.body);
  for (const auto& kv : v.at("NodeNameToMetaVictims").as_object()) {
    auto& entry = out[std::string(kv.key())];
    for (const auto& p : kv.value().at("Pods").as_array()) {
      std::string uid(p.at("UID").as_string());
      entry.first.push_back(uid.substr(uid.find('/') + 1));
    }
    entry.second = kv.value().at("NumPDBViolations").as_int64();
  }
  return out;
}

class ExtenderPreemptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_.Set(common::TimePoint(std::chrono::seconds(100'000)));
    ASSERT_TRUE(plugins::RegisterInTreePlugins(registry_).ok());
    auto cfg = config::DefaultSchedulerConfig();
    auto e = Extender::Create(cfg.profiles.front(), cfg.percentage_of_nodes_to_score,
                              ExtenderOptions{}, ExtenderDeps{clock_, registry_, nullptr});
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ext_ = std::move(e).value();
    auto node = [&](std::string_view name, int64_t gpus) {
      ext_->events().OnNodeAdd(testing::MakeNode(name).Cpu("16").Memory("64Gi").Gpus(gpus).Ptr());
    };
    // shared: device 0 holds a (p1) + c (p3), device 1 b (p1) + d (p3), half a GPU each.
    node("shared", 2);
    Add(Placed("a", "shared", 1, "0:500m"), PodJson("a", 1, 0, "500"));
    Add(Placed("c", "shared", 3, "0:500m"), PodJson("c", 3, 0, "500"));
    Add(Placed("b", "shared", 1, "1:500m", 10), PodJson("b", 1, 0, "500"));
    Add(Placed("d", "shared", 3, "1:500m", 10), PodJson("d", 3, 0, "500"));
    // whole: two whole-GPU pods of priority 1.
    node("whole", 2);
    Add(Placed("w1", "whole", 1, "0"), PodJson("w1", 1, 1));
    Add(Placed("w2", "whole", 1, "1", 10), PodJson("w2", 1, 1));
    // blocked: its GPU is held by a pod of higher priority; a CPU pod is all that can go.
    node("blocked", 1);
    Add(Placed("boss", "blocked", kHigh + 1, "0"), PodJson("boss", kHigh + 1, 1));
    Add(Placed("cpu", "blocked", 1, ""), PodJson("cpu", 1, 0));
  }

  void Add(api::PodPtr pod, json::value wire) {
    pods_[pod->meta.name] = std::move(wire);
    ext_->events().OnPodAdd(std::move(pod));
  }

  common::FakeClock clock_;
  framework::Registry registry_;
  ExtenderPtr ext_;
  std::map<std::string, json::value> pods_;
};

TEST_F(ExtenderPreemptTest, VictimsThatFreeADeviceAreKeptWithTheirPdbCount) {
  for (const bool meta : {true, false}) {
    SCOPED_TRACE(meta ? "NodeNameToMetaVictims" : "NodeNameToVictims");
    Proposal got = Answer(ext_->Preempt(PreemptArgs({{"whole", {{"w2"}, 1}}}, meta, pods_)));
    EXPECT_EQ(got, (Proposal{{"whole", {{"w2"}, 1}}}));
  }
}

TEST_F(ExtenderPreemptTest, SharesOnTwoDevicesAreReplacedByOneWholeDevice) {
  // kube-scheduler counts GPUs: the two cheapest shares (a, b) free a whole GPU's worth, but on
  // two devices. The device-correct set empties device 1 (d, b), most important first; its PDB
  // violations are the extender's count (no budgets: 0), not the proposal's.
  for (const bool meta : {true, false}) {
    SCOPED_TRACE(meta ? "NodeNameToMetaVictims" : "NodeNameToVictims");
    Proposal got = Answer(ext_->Preempt(PreemptArgs({{"shared", {{"a", "b"}, 2}}}, meta, pods_)));
    EXPECT_EQ(got, (Proposal{{"shared", {{"d", "b"}, 0}}}));
  }
}

// A budget over the pods labelled app in `apps` that allows no disruption.
api::PdbPtr Guard(std::vector<std::string_view> apps) {
  auto pdb = std::make_shared<api::PodDisruptionBudget>();
  pdb->meta.name = "guard";
  pdb->meta.namespace_ = "ns";
  api::LabelSelector sel;
  api::Requirement r{common::Intern("app"), api::SelectorOp::kIn, {}, 0};
  for (std::string_view app : apps) r.values.push_back(common::Intern(app));
  sel.requirements.push_back(std::move(r));
  pdb->selector = std::move(sel);
  return pdb;
}

TEST_F(ExtenderPreemptTest, AReplacedSetAvoidsAndCountsPdbViolationsFromTheInformer) {
  // Without budgets: (d, b), as above. With d guarded, device 0 is emptied instead (c, a): no
  // violation. With c and d guarded, one of them must go: (d, b), one violation.
  api::PdbPtr guard_d = Guard({"d"});
  ext_->events().OnPdbAdd(guard_d);
  Proposal got = Answer(ext_->Preempt(PreemptArgs({{"shared", {{"a", "b"}, 0}}}, true)));
  EXPECT_EQ(got, (Proposal{{"shared", {{"c", "a"}, 0}}}));
  ext_->events().OnPdbUpdate(guard_d, Guard({"c", "d"}));
  got = Answer(ext_->Preempt(PreemptArgs({{"shared", {{"a", "b"}, 0}}}, true)));
  EXPECT_EQ(got, (Proposal{{"shared", {{"d", "b"}, 1}}}));
}

TEST_F(ExtenderPreemptTest, ANodeWhereNothingHelpsIsDropped) {
  Proposal got = Answer(ext_->Preempt(PreemptArgs(
      {{"blocked", {{"cpu"}, 0}}, {"whole", {{"w1"}, 0}}, {"ghost-node", {{"w2"}, 0}}}, true)));
  // blocked: no pod of lower priority holds its GPU; ghost-node: not in our cache.
  EXPECT_EQ(got, (Proposal{{"whole", {{"w1"}, 0}}}));
}

TEST_F(ExtenderPreemptTest, AVictimWeDoNotKnowIsKeptAsGiven) {
  std::map<std::string, json::value> pods = pods_;
  pods["stranger"] = PodJson("stranger", 1, 0);
  Proposal got = Answer(ext_->Preempt(PreemptArgs(
      {{"whole", {{"w2", "stranger"}, 0}}, {"shared", {{"b", "stranger"}, 0}}}, false, pods)));
  EXPECT_EQ(
      got, (Proposal{{"whole", {{"w2", "stranger"}, 0}}, {"shared", {{"d", "b", "stranger"}, 0}}}));
}

TEST_F(ExtenderPreemptTest, APodWithoutManagedResourcesKeepsTheProposal) {
  json::value args = json::parse(PreemptArgs({{"shared", {{"a"}, 3}}}, true));
  args.as_object()["Pod"] = PodJson("cpu-only", kHigh, 0);
  Proposal got = Answer(ext_->Preempt(json::serialize(args)));
  EXPECT_EQ(got, (Proposal{{"shared", {{"a"}, 3}}}));
}

TEST_F(ExtenderPreemptTest, MalformedRequestsAre400AndNameTheField) {
  const std::string pod = json::serialize(PodJson("preemptor", kHigh, 1));
  struct Case {
    std::string name;
    std::string body;
    std::string want;  // in the message
  };
  const std::vector<Case> cases = {
      {"not JSON", "{\"Pod\":", "request"},
      {"an array", "[]", "want an ExtenderPreemptionArgs object"},
      {"no Pod", R"({"NodeNameToMetaVictims":{}})", "Pod is required"},
      {"a Pod of the wrong type", R"({"Pod":[],"NodeNameToMetaVictims":{}})", "Pod"},
      {"no victims map", "{\"Pod\":" + pod + "}",
       "one of NodeNameToMetaVictims or NodeNameToVictims is required"},
      {"a map that is not an object", "{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":[]}",
       "NodeNameToMetaVictims: want an object"},
      {"a node's victims not an object",
       "{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"n1\":3}}",
       "NodeNameToMetaVictims[n1]: want a MetaVictims object"},
      {"Pods not an array", "{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":1}}}",
       "NodeNameToMetaVictims[n1].Pods: want an array"},
      {"a MetaPod without UID",
       "{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{}]}}}",
       "NodeNameToMetaVictims[n1].Pods[0].UID: want a non-empty string"},
      {"NumPDBViolations a string",
       "{\"Pod\":" + pod +
           ",\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[],\"NumPDBViolations\":\"2\"}}}",
       "NodeNameToMetaVictims[n1].NumPDBViolations: want an integer"},
      {"a victim pod that does not decode",
       "{\"Pod\":" + pod + ",\"NodeNameToVictims\":{\"n1\":{\"Pods\":[7]}}}",
       "NodeNameToVictims[n1].Pods[0]"},
      {"a victim pod without uid",
       "{\"Pod\":" + pod +
           ",\"NodeNameToVictims\":{\"n1\":{\"Pods\":[{\"metadata\":{\"name\":\"x\"}}]}}}",
       "NodeNameToVictims[n1].Pods[0].metadata.uid: is required"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    http::Response r = ext_->Preempt(c.body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find(c.want), std::string::npos) << r.body;
  }
}

}  // namespace
}  // namespace gpusched::extender
