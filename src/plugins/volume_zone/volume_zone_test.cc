// SPDX-License-Identifier: Apache-2.0
// VolumeZone: upstream's volume_zone_test.go cases as data tables (single zones, multi-zone
// "a__b" labels, beta and GA keys, unbound claims by binding mode), and the queueing hints.
#include "src/plugins/volume_zone/volume_zone.h"

#include <gtest/gtest.h>

#include <boost/json/value.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/api/storage.h"
#include "src/api/volume.h"
#include "src/cache/volume_store.h"
#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"

namespace gpusched::plugins::volume_zone {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;
constexpr const char* kBetaZone = "failure-domain.beta.kubernetes.io/zone";
constexpr const char* kBetaRegion = "failure-domain.beta.kubernetes.io/region";
constexpr const char* kZone = "topology.kubernetes.io/zone";
constexpr const char* kRegion = "topology.kubernetes.io/region";

api::Pod PodWithClaim(const std::string& claim) {
  api::Pod pod = testing::MakePod("default", "pod_1").Obj();
  auto volumes = std::make_shared<api::PodVolumes>();
  api::PodVolume v;
  v.name = "vol_1";
  v.claim_name = claim;
  volumes->volumes.push_back(v);
  volumes->has_claims = true;
  pod.volumes = volumes;
  return pod;
}

void AddPv(cache::VolumeStore& view, const std::string& name, const Pairs& labels) {
  auto pv = std::make_shared<api::PersistentVolume>();
  pv->meta.name = name;
  for (const auto& [k, v] : labels) pv->meta.labels.Set(k, v);
  view.UpsertPv(pv);
}

void AddPvc(cache::VolumeStore& view, const std::string& name, const std::string& volume,
            const std::string& cls = "") {
  auto pvc = std::make_shared<api::PersistentVolumeClaim>();
  pvc->meta.name = name;
  pvc->meta.namespace_ = "default";
  pvc->volume_name = volume;
  pvc->storage_class = cls;
  view.UpsertPvc(pvc);
}

framework::NodeInfo Node(const Pairs& labels) {
  testing::NodeBuilder b = testing::MakeNode("host1");
  for (const auto& [k, v] : labels) b.Label(k, v);
  framework::NodeInfo node;
  node.node = b.Ptr();
  node.index = 0;
  return node;
}

struct Case {
  std::string name;
  std::string claim;  // "" = a pod without volumes
  Pairs node_labels;
  framework::Code prefilter = framework::Code::kSuccess;
  std::string prefilter_reason;
  framework::Code filter = framework::Code::kSuccess;
};

void RunCases(testing::FakeHandle& handle, const std::vector<Case>& cases) {
  auto plugin = VolumeZone::Create(boost::json::value(), handle);
  ASSERT_TRUE(plugin.ok()) << plugin.status().ToString();
  auto* pl = dynamic_cast<VolumeZone*>(plugin->get());
  ASSERT_NE(pl, nullptr);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    api::Pod pod =
        c.claim.empty() ? testing::MakePod("default", "pod_1").Obj() : PodWithClaim(c.claim);
    framework::CycleState state;
    framework::Snapshot snapshot;
    framework::Status pre = pl->PreFilter(state, pod, snapshot);
    EXPECT_EQ(pre.code(), c.prefilter);
    EXPECT_EQ(pre.reason(), c.prefilter_reason);
    if (!pre.ok()) continue;
    framework::Status f = pl->Filter(state, pod, Node(c.node_labels));
    EXPECT_EQ(f.code(), c.filter);
    if (!f.ok()) {
      EXPECT_EQ(f.reason(), kReasonConflict);
    }
  }
}

constexpr framework::Code kOk = framework::Code::kSuccess;
constexpr framework::Code kSkip = framework::Code::kSkip;
constexpr framework::Code kNo = framework::Code::kUnschedulableAndUnresolvable;

TEST(VolumeZoneTest, SingleZone) {
  testing::FakeHandle handle;
  cache::VolumeStore& view = handle.volume_view();
  AddPv(view, "Vol_1", {{kBetaZone, "us-west1-a"}});
  AddPv(view, "Vol_2", {{kBetaRegion, "us-west1"}, {"uselessLabel", "none"}});
  AddPv(view, "Vol_Stable_1", {{kZone, "us-west1-a"}});
  AddPv(view, "Vol_Stable_2", {{kRegion, "us-west1"}, {"uselessLabel", "none"}});
  AddPv(view, "Vol_Stable_3", {{kZone, "us-west1-a"}, {kRegion, "us-west1-a"}});
  AddPvc(view, "PVC_1", "Vol_1");
  AddPvc(view, "PVC_2", "Vol_2");
  AddPvc(view, "PVC_Stable_1", "Vol_Stable_1");
  AddPvc(view, "PVC_Stable_2", "Vol_Stable_2");
  AddPvc(view, "PVC_Stable_3", "Vol_Stable_3");
  RunCases(
      handle,
      {
          {"pod without volume", "", {{kBetaZone, "us-west1-a"}}, kSkip, ""},
          {"node without labels", "PVC_1", {}},
          {"beta zone label matched",
           "PVC_1",
           {{kBetaZone, "us-west1-a"}, {"uselessLabel", "none"}}},
          {"beta region label matched",
           "PVC_2",
           {{kBetaRegion, "us-west1"}, {"uselessLabel", "none"}}},
          {"beta region label doesn't match",
           "PVC_2",
           {{kBetaRegion, "no_us-west1"}, {"uselessLabel", "none"}},
           kOk,
           "",
           kNo},
          {"beta zone label doesn't match",
           "PVC_1",
           {{kBetaZone, "no_us-west1-a"}, {"uselessLabel", "none"}},
           kOk,
           "",
           kNo},
          {"zone label matched", "PVC_Stable_1", {{kZone, "us-west1-a"}, {"uselessLabel", "none"}}},
          {"region label matched",
           "PVC_Stable_2",
           {{kRegion, "us-west1"}, {"uselessLabel", "none"}}},
          {"region label doesn't match",
           "PVC_Stable_2",
           {{kRegion, "no_us-west1"}, {"uselessLabel", "none"}},
           kOk,
           "",
           kNo},
          {"zone label doesn't match",
           "PVC_Stable_1",
           {{kZone, "no_us-west1-a"}, {"uselessLabel", "none"}},
           kOk,
           "",
           kNo},
          {"pv with zone and region, node with only zone",
           "PVC_Stable_3",
           {{kZone, "us-west1-a"}},
           kOk,
           "",
           kNo},
          {"pv with zone,node with beta zone",
           "PVC_Stable_1",
           {{kBetaZone, "us-west1-a"}},
           kOk,
           "",
           kNo},
          {"pv with beta label,node with ga label, matched", "PVC_1", {{kZone, "us-west1-a"}}},
          {"pv with beta label,node with ga label, don't match",
           "PVC_1",
           {{kZone, "us-west1-b"}},
           kOk,
           "",
           kNo},
      });
}

TEST(VolumeZoneTest, MultiZone) {
  testing::FakeHandle handle;
  cache::VolumeStore& view = handle.volume_view();
  AddPv(view, "Vol_1", {{kBetaZone, "us-west1-a"}});
  AddPv(view, "Vol_2", {{kBetaZone, "us-west1-b"}, {"uselessLabel", "none"}});
  AddPv(view, "Vol_3", {{kBetaZone, "us-west1-c__us-west1-a"}});
  AddPv(view, "Vol_Stable_1", {{kZone, "us-west1-a"}});
  AddPv(view, "Vol_Stable_2", {{kZone, "us-west1-c__us-west1-a"}});
  AddPv(view, "Vol_Bad", {{kZone, "us-west1-c____us-west1-a"}});
  AddPvc(view, "PVC_1", "Vol_1");
  AddPvc(view, "PVC_2", "Vol_2");
  AddPvc(view, "PVC_3", "Vol_3");
  AddPvc(view, "PVC_Stable_1", "Vol_Stable_1");
  AddPvc(view, "PVC_Stable_2", "Vol_Stable_2");
  AddPvc(view, "PVC_Bad", "Vol_Bad");
  RunCases(
      handle,
      {
          {"node without labels", "PVC_3", {}},
          {"beta zone label matched",
           "PVC_3",
           {{kBetaZone, "us-west1-a"}, {"uselessLabel", "none"}}},
          {"beta zone label doesn't match",
           "PVC_1",
           {{kBetaZone, "us-west1-b"}, {"uselessLabel", "none"}},
           kOk,
           "",
           kNo},
          {"zone label matched", "PVC_Stable_2", {{kZone, "us-west1-a"}, {"uselessLabel", "none"}}},
          {"zone label doesn't match",
           "PVC_Stable_1",
           {{kZone, "us-west1-b"}, {"uselessLabel", "none"}},
           kOk,
           "",
           kNo},
          {"a label that does not parse is ignored", "PVC_Bad", {{kZone, "x"}}, kSkip, ""},
      });
}

TEST(VolumeZoneTest, UnboundClaims) {
  testing::FakeHandle handle;
  cache::VolumeStore& view = handle.volume_view();
  AddPv(view, "Vol_1", {{kBetaZone, "us-west1-a"}});
  auto wait = std::make_shared<api::StorageClass>();
  wait->name = "Class_Wait";
  wait->binding_mode = api::StorageClass::BindingMode::kWaitForFirstConsumer;
  view.UpsertStorageClass(wait);
  auto immediate = std::make_shared<api::StorageClass>();
  immediate->name = "Class_Immediate";
  view.UpsertStorageClass(immediate);
  AddPvc(view, "PVC_FromVolume", "Vol_1");
  AddPvc(view, "PVC_EmptySC", "", "");
  AddPvc(view, "PVC_NonExistentSC", "", "Class_0");
  AddPvc(view, "PVC_WaitForFirstConsumer", "", "Class_Wait");
  AddPvc(view, "PVC_Immediate", "", "Class_Immediate");
  const Pairs node = {{kBetaZone, "us-west1-a"}, {"uselessLabel", "none"}};
  RunCases(handle,
           {
               {"label zone failure domain matched", "PVC_FromVolume", node},
               {"unbound volume empty storage class", "PVC_EmptySC", node, kNo,
                "PersistentVolumeClaim had no pv name and storageClass name"},
               {"unbound volume no storage class", "PVC_NonExistentSC", node, kNo,
                "storageclass.storage.k8s.io \"Class_0\" not found"},
               // Upstream's case has a class with no volumeBindingMode; the API server
               // defaults it to Immediate, which gets this message.
               {"unbound volume immediate binding mode", "PVC_Immediate", node, kNo,
                "PersistentVolume had no name"},
               {"unbound volume wait binding mode", "PVC_WaitForFirstConsumer", node, kSkip, ""},
               {"a missing claim", "PVC_None", node, kNo,
                "persistentvolumeclaim \"PVC_None\" not found"},
           });
}

TEST(VolumeZoneTest, SkipsWithoutVolumeData) {
  testing::FakeHandle handle;  // volumes() is null, as in the extender
  auto plugin = VolumeZone::Create(boost::json::value(), handle);
  ASSERT_TRUE(plugin.ok());
  auto* pl = dynamic_cast<VolumeZone*>(plugin->get());
  framework::CycleState state;
  EXPECT_TRUE(pl->PreFilter(state, PodWithClaim("x"), framework::Snapshot()).IsSkip());
  EXPECT_EQ(pl->Name(), names::kVolumeZone);
}

TEST(VolumeZoneTest, RejectsUnknownArgs) {
  testing::FakeHandle handle;
  auto plugin = VolumeZone::Create(boost::json::object{{"x", 1}}, handle);
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().message(), "x: unknown field");
}

framework::QueueingHint Hint(const VolumeZone& pl, framework::EventResource resource,
                             const api::Pod& pod, const void* old_obj, const void* new_obj) {
  for (const framework::ClusterEventWithHint& e : pl.EventsToRegister()) {
    if (e.event.resource != resource) continue;
    if (!e.hint) return framework::QueueingHint::kQueue;
    framework::EventObjects objects;
    objects.old_obj = old_obj;
    objects.new_obj = new_obj;
    return e.hint(pod, framework::ClusterEvent{resource, framework::kUpdate}, objects);
  }
  ADD_FAILURE() << "resource not registered";
  return framework::QueueingHint::kSkip;
}

TEST(VolumeZoneTest, QueueingHints) {
  testing::FakeHandle handle;
  VolumeZone pl(nullptr);
  using framework::EventResource;
  using framework::QueueingHint;
  const api::Pod pod = PodWithClaim("claim");

  api::PersistentVolumeClaim mine;
  mine.meta.name = "claim";
  mine.meta.namespace_ = "default";
  api::PersistentVolumeClaim other = mine;
  other.meta.name = "other";
  api::PersistentVolumeClaim other_ns = mine;
  other_ns.meta.namespace_ = "ml";
  EXPECT_EQ(Hint(pl, EventResource::kPersistentVolumeClaim, pod, nullptr, &mine),
            QueueingHint::kQueue);
  EXPECT_EQ(Hint(pl, EventResource::kPersistentVolumeClaim, pod, nullptr, &other),
            QueueingHint::kSkip);
  EXPECT_EQ(Hint(pl, EventResource::kPersistentVolumeClaim, pod, nullptr, &other_ns),
            QueueingHint::kSkip);

  api::StorageClass wait;
  wait.binding_mode = api::StorageClass::BindingMode::kWaitForFirstConsumer;
  api::StorageClass immediate;
  EXPECT_EQ(Hint(pl, EventResource::kStorageClass, pod, nullptr, &wait), QueueingHint::kQueue);
  EXPECT_EQ(Hint(pl, EventResource::kStorageClass, pod, nullptr, &immediate), QueueingHint::kSkip);

  api::PersistentVolume pv_a;
  pv_a.meta.labels.Set(kZone, "a");
  api::PersistentVolume pv_a2 = pv_a;
  pv_a2.meta.labels.Set("unrelated", "x");
  api::PersistentVolume pv_b;
  pv_b.meta.labels.Set(kZone, "b");
  EXPECT_EQ(Hint(pl, EventResource::kPersistentVolume, pod, nullptr, &pv_a), QueueingHint::kQueue);
  EXPECT_EQ(Hint(pl, EventResource::kPersistentVolume, pod, &pv_a, &pv_b), QueueingHint::kQueue);
  EXPECT_EQ(Hint(pl, EventResource::kPersistentVolume, pod, &pv_a, &pv_a2), QueueingHint::kSkip);
  EXPECT_EQ(Hint(pl, EventResource::kNode, pod, nullptr, nullptr), QueueingHint::kQueue);
}

}  // namespace
}  // namespace gpusched::plugins::volume_zone
