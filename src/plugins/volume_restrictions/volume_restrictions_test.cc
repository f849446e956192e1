// SPDX-License-Identifier: Apache-2.0
// VolumeRestrictions: upstream's volume_restrictions_test.go as data tables (GCE PD, EBS, RBD and
// iSCSI disk conflicts; ReadWriteOncePod conflicts), read-only exceptions, and the hints.
#include "src/plugins/volume_restrictions/volume_restrictions.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/api/storage.h"
#include "src/api/volume.h"
#include "src/cache/volume_store.h"
#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"
#include "src/testing/plugin_fixture.h"

namespace gpusched::plugins::volume_restrictions {
namespace {

using api::InlineSource;
using api::PodVolume;

PodVolume Disk(InlineSource source, std::string id, bool read_only = false,
               std::vector<std::string> monitors = {}) {
  PodVolume v;
  v.name = "v";
  v.source = source;
  v.disk_id = std::move(id);
  v.read_only = read_only;
  if (source == InlineSource::kRbd) {
    v.rbd_pool = "foo";
    v.monitors = std::move(monitors);
  }
  return v;
}

PodVolume Claim(std::string name) {
  PodVolume v;
  v.name = name;
  v.claim_name = std::move(name);
  return v;
}

api::PodPtr PodWith(const std::string& name, std::vector<PodVolume> volumes) {
  auto pod = std::make_shared<api::Pod>(testing::MakePod("default", name).Uid(name).Obj());
  if (!volumes.empty()) {
    auto v = std::make_shared<api::PodVolumes>();
    v->volumes = std::move(volumes);
    for (const PodVolume& x : v->volumes) v->has_claims = v->has_claims || x.IsClaim();
    pod->volumes = v;
  }
  return pod;
}

framework::NodeInfo NodeWith(const std::vector<api::PodPtr>& pods) {
  framework::NodeInfo node;
  node.node = testing::MakeNode("node-1").Ptr();
  node.index = 0;
  node.pods = pods;
  return node;
}

struct Case {
  std::string name;
  api::PodPtr pod;
  std::vector<api::PodPtr> on_node;
  framework::Code prefilter;
  framework::Code filter;
};

constexpr framework::Code kOk = framework::Code::kSuccess;
constexpr framework::Code kSkip = framework::Code::kSkip;
constexpr framework::Code kNo = framework::Code::kUnschedulable;

void RunDiskCases(const std::vector<Case>& cases) {
  testing::FakeHandle handle;
  auto plugin = VolumeRestrictions::Create(boost::json::value(), handle);
  ASSERT_TRUE(plugin.ok()) << plugin.status().ToString();
  auto* pl = dynamic_cast<VolumeRestrictions*>(plugin->get());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    framework::CycleState state;
    const framework::NodeInfo node = NodeWith(c.on_node);
    const framework::Snapshot snapshot = testing::SnapshotOfInfos({node});
    framework::Status pre = pl->PreFilter(state, *c.pod, snapshot);
    EXPECT_EQ(pre.code(), c.prefilter);
    if (!pre.ok()) continue;
    framework::Status f = pl->Filter(state, *c.pod, node);
    EXPECT_EQ(f.code(), c.filter);
    if (!f.ok()) {
      EXPECT_EQ(f.reason(), kReasonDiskConflict);
    }
  }
}

// The four tables of upstream's test share one shape: nothing, one state (the pod has no
// volume), the same disk (conflict), a different disk.
std::vector<Case> Table(const PodVolume& state1, const PodVolume& state2) {
  return {
      {"nothing", PodWith("p", {}), {}, kSkip, kOk},
      {"one state", PodWith("p", {}), {PodWith("e", {state1})}, kSkip, kOk},
      {"same state", PodWith("p", {state1}), {PodWith("e", {state1})}, kOk, kNo},
      {"different state", PodWith("p", {state2}), {PodWith("e", {state1})}, kOk, kOk},
  };
}

TEST(VolumeRestrictionsTest, GCEDiskConflicts) {
  RunDiskCases(Table(Disk(InlineSource::kGcePersistentDisk, "foo"),
                     Disk(InlineSource::kGcePersistentDisk, "bar")));
  PodVolume ro = Disk(InlineSource::kGcePersistentDisk, "foo", true);
  RunDiskCases(
      {{"both read-only do not conflict", PodWith("p", {ro}), {PodWith("e", {ro})}, kOk, kOk}});
}

TEST(VolumeRestrictionsTest, AWSDiskConflicts) {
  RunDiskCases(Table(Disk(InlineSource::kAwsElasticBlockStore, "foo"),
                     Disk(InlineSource::kAwsElasticBlockStore, "bar")));
  PodVolume ro = Disk(InlineSource::kAwsElasticBlockStore, "foo", true);
  RunDiskCases({{"EBS conflicts even when both are read-only",
                 PodWith("p", {ro}),
                 {PodWith("e", {ro})},
                 kOk,
                 kNo}});
}

TEST(VolumeRestrictionsTest, RBDDiskConflicts) {
  RunDiskCases(Table(Disk(InlineSource::kRbd, "bar", false, {"a", "b"}),
                     Disk(InlineSource::kRbd, "bar", false, {"c", "d"})));
}

TEST(VolumeRestrictionsTest, ISCSIDiskConflicts) {
  RunDiskCases(Table(Disk(InlineSource::kIscsi, "iqn.2016-12.server:storage.target01"),
                     Disk(InlineSource::kIscsi, "iqn.2017-12.server:storage.target01")));
}

TEST(VolumeRestrictionsTest, AccessModeConflicts) {
  testing::FakeHandle handle;
  cache::VolumeStore& view = handle.volume_view();
  auto add_claim = [&](const std::string& name, uint8_t modes) {
    auto pvc = std::make_shared<api::PersistentVolumeClaim>();
    pvc->meta.name = name;
    pvc->meta.namespace_ = "default";
    pvc->access_modes = modes;
    view.UpsertPvc(pvc);
  };
  auto plugin = VolumeRestrictions::Create(boost::json::value(), handle);
  ASSERT_TRUE(plugin.ok());
  auto* pl = dynamic_cast<VolumeRestrictions*>(plugin->get());

  const auto with_one = PodWith("pod-with-one-pvc", {Claim("claim-with-rwop-1")});
  const auto with_two =
      PodWith("pod-with-two-pvcs", {Claim("claim-with-rwop-1"), Claim("claim-with-rwop-2")});
  const auto one_conflict = PodWith("pod-with-one-conflict", {Claim("claim-with-rwop-1")});
  const auto two_conflicts =
      PodWith("pod-with-two-conflicts", {Claim("claim-with-rwop-1"), Claim("claim-with-rwop-2")});
  const auto rwx = PodWith("pod-with-rwx", {Claim("claim-with-rwx")});
  struct AccessCase {
    std::string name;
    api::PodPtr pod;
    std::vector<api::PodPtr> on_node;
    bool claims_exist;
    framework::Code prefilter;
    std::string prefilter_reason;
    framework::Code filter;
  };
  const std::vector<AccessCase> cases = {
      {"nothing", PodWith("p", {}), {}, true, kSkip, "", kOk},
      {"failed to get PVC",
       with_one,
       {},
       false,
       framework::Code::kUnschedulableAndUnresolvable,
       "persistentvolumeclaim \"claim-with-rwop-1\" not found",
       kOk},
      {"no access mode conflict", with_one, {rwx}, true, kSkip, "", kOk},
      {"access mode conflict, unschedulable", one_conflict, {with_one, rwx}, true, kOk, "", kNo},
      {"two conflicts, unschedulable", two_conflicts, {with_two, rwx}, true, kOk, "", kNo},
  };
  for (const AccessCase& c : cases) {
    SCOPED_TRACE(c.name);
    if (c.claims_exist) {
      add_claim("claim-with-rwop-1", api::kReadWriteOncePod);
      add_claim("claim-with-rwop-2", api::kReadWriteOncePod);
      add_claim("claim-with-rwx", api::kReadWriteMany);
    } else {
      view.DeletePvc("default", "claim-with-rwop-1");
    }
    framework::CycleState state;
    const framework::NodeInfo node = NodeWith(c.on_node);
    const framework::Snapshot snapshot = testing::SnapshotOfInfos({node});
    framework::Status pre = pl->PreFilter(state, *c.pod, snapshot);
    EXPECT_EQ(pre.code(), c.prefilter);
    EXPECT_EQ(pre.reason(), c.prefilter_reason);
    if (!pre.ok()) continue;
    framework::Status f = pl->Filter(state, *c.pod, NodeWith({}));
    EXPECT_EQ(f.code(), c.filter);
    if (!f.ok()) {
      EXPECT_EQ(f.reason(), kReasonReadWriteOncePodConflict);
    }
  }
  EXPECT_EQ(pl->Name(), names::kVolumeRestrictions);
}

TEST(VolumeRestrictionsTest, QueueingHints) {
  VolumeRestrictions pl(nullptr);
  using framework::EventResource;
  using framework::QueueingHint;
  auto hint = [&](EventResource r, const api::Pod& pod, const framework::EventObjects& o) {
    for (const framework::ClusterEventWithHint& e : pl.EventsToRegister()) {
      if (e.event.resource != r) continue;
      if (!e.hint) return QueueingHint::kQueue;
      return e.hint(pod, framework::ClusterEvent{r, framework::kAdd}, o);
    }
    ADD_FAILURE() << "not registered";
    return QueueingHint::kSkip;
  };
  const auto disk = Disk(InlineSource::kGcePersistentDisk, "foo");
  const auto pod = PodWith("p", {disk, Claim("data")});
  const auto holder = PodWith("e", {disk});
  const auto claim_user = PodWith("c", {Claim("data")});
  const auto unrelated = PodWith("u", {Disk(InlineSource::kGcePersistentDisk, "bar")});
  framework::EventObjects deleted;
  deleted.old_pod = holder.get();
  EXPECT_EQ(hint(EventResource::kAssignedPod, *pod, deleted), QueueingHint::kQueue);
  deleted.old_pod = claim_user.get();
  EXPECT_EQ(hint(EventResource::kAssignedPod, *pod, deleted), QueueingHint::kQueue);
  deleted.old_pod = unrelated.get();
  EXPECT_EQ(hint(EventResource::kAssignedPod, *pod, deleted), QueueingHint::kSkip);

  api::PersistentVolumeClaim pvc;
  pvc.meta.name = "data";
  pvc.meta.namespace_ = "default";
  framework::EventObjects added;
  added.new_obj = &pvc;
  EXPECT_EQ(hint(EventResource::kPersistentVolumeClaim, *pod, added), QueueingHint::kQueue);
  pvc.meta.name = "other";
  EXPECT_EQ(hint(EventResource::kPersistentVolumeClaim, *pod, added), QueueingHint::kSkip);
}

}  // namespace
}  // namespace gpusched::plugins::volume_restrictions
