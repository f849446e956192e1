// SPDX-License-Identifier: Apache-2.0
// NodeVolumeLimits: upstream's csi_test.go TestCSILimits cases as a data table (CSI volumes of
// bound and pending claims, missing classes, several drivers, in-tree volumes migrated to CSI,
// inline volumes, no CSINode, ephemeral claims), the skip cases, and the queueing hints. As
// upstream's fixtures: claim "csi-<driver>-<i>" is bound to PV "csi-<driver>-<i>" (CSI, or
// in-tree EBS for kubernetes.io/aws-ebs) with that volume handle; "csi-4" is pending with class
// "csi-sc" (provisioner: the first driver), "csi-5" has no class, "csi-6" names a missing PV.
#include "src/plugins/node_volume_limits/node_volume_limits.h"

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

namespace gpusched::plugins::node_volume_limits {
namespace {

using api::InlineSource;
using api::PodVolume;

constexpr const char* kEbs = "ebs.csi.aws.com";
constexpr const char* kGce = "pd.csi.storage.gke.io";
constexpr const char* kInTreeEbs = "kubernetes.io/aws-ebs";
constexpr const char* kHostPath = "kubernetes.io/hostpath";

PodVolume ClaimVolume(const std::string& claim, bool ephemeral = false) {
  PodVolume v;
  v.name = claim;
  v.claim_name = claim;
  v.ephemeral = ephemeral;
  return v;
}

PodVolume InlineEbs(const std::string& id) {
  PodVolume v;
  v.name = id;
  v.source = InlineSource::kAwsElasticBlockStore;
  v.disk_id = id;
  return v;
}

api::PodPtr PodWith(const std::string& name, std::vector<PodVolume> volumes,
                    const std::string& ns = "default") {
  auto pod = std::make_shared<api::Pod>(testing::MakePod(ns, name).Uid(name).Obj());
  if (!volumes.empty()) {
    auto v = std::make_shared<api::PodVolumes>();
    for (const PodVolume& x : volumes) v->has_claims = v->has_claims || x.IsClaim();
    v->volumes = std::move(volumes);
    pod->volumes = v;
  }
  return pod;
}

api::PodPtr Claims(const std::string& name, std::vector<std::string> claims) {
  std::vector<PodVolume> v;
  for (const std::string& c : claims) v.push_back(ClaimVolume(c));
  return PodWith(name, std::move(v));
}

void FillView(cache::VolumeStore& view, const std::vector<std::string>& drivers) {
  for (const std::string& driver : drivers) {
    for (int j = 0; j < 4; ++j) {
      const std::string handle = "csi-" + driver + "-" + std::to_string(j);
      auto pv = std::make_shared<api::PersistentVolume>();
      pv->meta.name = handle;
      if (driver == kInTreeEbs) {
        pv->in_tree_source = InlineSource::kAwsElasticBlockStore;
        pv->in_tree_id = handle;
      } else if (driver != kHostPath) {
        pv->csi_driver = driver;
        pv->csi_volume_handle = handle;
      }
      view.UpsertPv(pv);
      auto pvc = std::make_shared<api::PersistentVolumeClaim>();
      pvc->meta.name = handle;
      pvc->meta.namespace_ = "default";
      pvc->volume_name = handle;
      view.UpsertPvc(pvc);
    }
  }
  auto pending = std::make_shared<api::PersistentVolumeClaim>();
  pending->meta.name = "csi-4";
  pending->meta.namespace_ = "default";
  pending->storage_class = "csi-sc";
  view.UpsertPvc(pending);
  auto no_class = std::make_shared<api::PersistentVolumeClaim>();
  no_class->meta.name = "csi-5";
  no_class->meta.namespace_ = "default";
  view.UpsertPvc(no_class);
  auto missing_pv = std::make_shared<api::PersistentVolumeClaim>(*pending);
  missing_pv->meta.name = "csi-6";
  missing_pv->volume_name = "missing-in-action";
  view.UpsertPvc(missing_pv);
  auto sc = std::make_shared<api::StorageClass>();
  sc->name = "csi-sc";
  sc->provisioner = drivers.front();
  view.UpsertStorageClass(sc);
}

enum class Limits { kNone, kCSINode, kCSINodeWithoutLimit };

struct Case {
  std::string name;
  api::PodPtr pod;
  std::vector<api::PodPtr> existing;
  int32_t max_vols;
  std::vector<std::string> drivers;
  Limits limits;
  framework::Code code = framework::Code::kSuccess;
  std::string reason;
};

TEST(NodeVolumeLimitsTest, CSILimits) {
  const auto running = Claims("running", {"csi-ebs.csi.aws.com-3"});
  const auto pending = Claims("pending", {"csi-4"});
  const auto unbound2 = Claims("unbound2", {"csi-4"});
  const auto missing_pv = Claims("missing-pv", {"csi-6"});
  const auto no_sc = Claims("no-sc", {"csi-5"});
  const auto gce_two =
      Claims("gce-two", {"csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2"});
  const auto in_tree_one = Claims("in-tree-one", {"csi-kubernetes.io/aws-ebs-0"});
  const auto in_tree_two =
      Claims("in-tree-two", {"csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2"});
  const auto ebs_one = Claims("ebs-one", {"csi-ebs.csi.aws.com-0"});
  const auto ebs_two = Claims("ebs-two", {"csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2"});
  const auto non_migratable = Claims("non-migratable", {"csi-kubernetes.io/hostpath-0"});
  const auto inline_ebs = PodWith("inline", {InlineEbs("aws-inline1")});
  const auto inline_same_id = PodWith("inline-same", {InlineEbs("csi-ebs.csi.aws.com-1")});
  constexpr auto kNo = framework::Code::kUnschedulable;
  const std::string exceed(kReasonMaxVolumeCountExceeded);
  const std::vector<Case> cases = {
      {"fits when node volume limit >= new pods CSI volume",
       ebs_one,
       {running, ebs_two},
       4,
       {kEbs},
       Limits::kCSINode},
      {"doesn't when node volume limit <= pods CSI volume",
       ebs_one,
       {running, ebs_two},
       2,
       {kEbs},
       Limits::kCSINode,
       kNo,
       exceed},
      {"should when driver does not support volume limits",
       ebs_one,
       {running, ebs_two},
       2,
       {kEbs},
       Limits::kCSINodeWithoutLimit},
      {"count pending PVCs towards volume limit <= pods CSI volume",
       ebs_one,
       {pending, ebs_two},
       2,
       {kEbs},
       Limits::kCSINode,
       kNo,
       exceed},
      {"count multiple pending pvcs towards volume limit >= pods CSI volume",
       ebs_one,
       {pending, unbound2, ebs_two},
       4,
       {kEbs},
       Limits::kCSINode},
      {"should count PVCs with invalid PV name but valid SC",
       ebs_one,
       {missing_pv, ebs_two},
       2,
       {kEbs},
       Limits::kCSINode,
       kNo,
       exceed},
      {"don't count pvcs with missing SC towards volume limit",
       ebs_one,
       {running, no_sc},
       2,
       {kEbs},
       Limits::kCSINode},
      {"count pvcs with the same type towards volume limit",
       ebs_one,
       {gce_two, ebs_two},
       2,
       {kEbs, kGce},
       Limits::kCSINode,
       kNo,
       exceed},
      {"don't count pvcs with different type towards volume limit",
       gce_two,
       {ebs_two, running},
       2,
       {kEbs, kGce},
       Limits::kCSINode},
      {"should count in-tree volumes if migration is enabled",
       in_tree_one,
       {in_tree_two},
       2,
       {kInTreeEbs, kEbs},
       Limits::kCSINode,
       kNo,
       exceed},
      {"nil csi node", inline_ebs, {in_tree_two}, 0, {kInTreeEbs, kEbs}, Limits::kNone},
      {"should count unbound in-tree volumes if migration is enabled",
       pending,
       {in_tree_two},
       2,
       {kInTreeEbs, kEbs},
       Limits::kCSINode,
       kNo,
       exceed},
      {"should not limit pod if volume used does not report limits",
       in_tree_one,
       {in_tree_two},
       2,
       {kInTreeEbs, kEbs},
       Limits::kCSINodeWithoutLimit},
      {"should not count non-migratable in-tree volumes",
       non_migratable,
       {ebs_two},
       2,
       {kHostPath, kEbs},
       Limits::kCSINode},
      {"should count in-tree inline volumes if migration is enabled",
       inline_ebs,
       {in_tree_two},
       2,
       {kInTreeEbs, kEbs},
       Limits::kCSINode,
       kNo,
       exceed},
      {"should count in-tree and csi volumes if migration is enabled (when scheduling in-tree "
       "volumes)",
       in_tree_one,
       {ebs_two},
       2,
       {kInTreeEbs, kEbs},
       Limits::kCSINode,
       kNo,
       exceed},
      {"should count in-tree, inline and csi volumes if migration is enabled (when scheduling "
       "in-tree volumes)",
       inline_ebs,
       {ebs_two, in_tree_one},
       3,
       {kInTreeEbs, kEbs},
       Limits::kCSINode,
       kNo,
       exceed},
      {"should not count in-tree, inline and csi volumes if migration is enabled (when "
       "scheduling in-tree volumes)",
       inline_same_id,
       {ebs_two, in_tree_one},
       3,
       {kInTreeEbs, kEbs},
       Limits::kCSINode},
      {"should count in-tree and csi volumes if migration is enabled (when scheduling csi "
       "volumes)",
       ebs_one,
       {in_tree_two},
       2,
       {kInTreeEbs, kEbs},
       Limits::kCSINode,
       kNo,
       exceed},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::FakeHandle handle;
    cache::VolumeStore& view = handle.volume_view();
    FillView(view, c.drivers);
    if (c.limits != Limits::kNone) {
      auto csi_node = std::make_shared<api::CSINode>();
      csi_node->name = "node-for-max-pd-test-1";
      for (const std::string& d : c.drivers) {
        api::CSINodeDriver driver;
        driver.name = d;
        if (c.limits == Limits::kCSINode) driver.allocatable_count = c.max_vols;
        csi_node->drivers.push_back(driver);
      }
      view.UpsertCSINode(csi_node);
    }
    auto plugin = NodeVolumeLimits::Create(boost::json::value(), handle);
    ASSERT_TRUE(plugin.ok());
    auto* pl = dynamic_cast<NodeVolumeLimits*>(plugin->get());
    framework::NodeInfo node;
    node.node = testing::MakeNode("node-for-max-pd-test-1").Ptr();
    node.pods = c.existing;
    const framework::Snapshot snapshot = testing::SnapshotOfInfos({node});
    framework::CycleState state;
    framework::Status pre = pl->PreFilter(state, *c.pod, snapshot);
    ASSERT_TRUE(pre.ok() || pre.IsSkip()) << pre.reason();
    if (pre.IsSkip()) {
      EXPECT_EQ(c.code, framework::Code::kSuccess);
      continue;
    }
    framework::Status f = pl->Filter(state, *c.pod, snapshot.at(0));
    EXPECT_EQ(f.code(), c.code);
    EXPECT_EQ(f.reason(), c.reason);
  }
}

TEST(NodeVolumeLimitsTest, EphemeralClaimsAndSkips) {
  testing::FakeHandle handle;
  cache::VolumeStore& view = handle.volume_view();
  FillView(view, {kEbs});
  auto plugin = NodeVolumeLimits::Create(boost::json::value(), handle);
  ASSERT_TRUE(plugin.ok());
  auto* pl = dynamic_cast<NodeVolumeLimits*>(plugin->get());
  const framework::Snapshot snapshot = testing::SnapshotOfInfos([] {
    framework::NodeInfo n;
    n.node = testing::MakeNode("n").Ptr();
    return std::vector<framework::NodeInfo>{n};
  }());
  const auto ephemeral = PodWith("abc", {ClaimVolume("abc-xyz", true)}, "test");
  framework::CycleState state;
  framework::Status missing = pl->PreFilter(state, *ephemeral, snapshot);
  EXPECT_EQ(missing.code(), framework::Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(missing.reason(),
            "looking up PVC test/abc-xyz: persistentvolumeclaim \"abc-xyz\" not found");

  auto claim = std::make_shared<api::PersistentVolumeClaim>();
  claim->meta.name = "abc-xyz";
  claim->meta.namespace_ = "test";
  claim->storage_class = "csi-sc";
  api::OwnerReference owner;
  owner.kind = "Pod";
  owner.name = "abc";
  owner.uid = "other";
  owner.controller = true;
  claim->meta.owner_references.push_back(owner);
  view.UpsertPvc(claim);
  EXPECT_EQ(pl->PreFilter(state, *ephemeral, snapshot).reason(),
            "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)");

  // Only secrets and configmaps (no volume kept): skipped; claims: not skipped.
  EXPECT_TRUE(pl->PreFilter(state, *PodWith("plain", {}), snapshot).IsSkip());
  EXPECT_TRUE(pl->PreFilter(state, *Claims("p", {"csi-ebs.csi.aws.com-0"}), snapshot).ok());
  EXPECT_EQ(pl->Name(), names::kNodeVolumeLimits);
}

TEST(NodeVolumeLimitsTest, QueueingHints) {
  NodeVolumeLimits pl(nullptr);
  using framework::EventResource;
  using framework::QueueingHint;
  auto hint = [&](EventResource r, uint32_t action, const api::Pod& pod,
                  const framework::EventObjects& o) {
    for (const framework::ClusterEventWithHint& e : pl.EventsToRegister()) {
      if (e.event.resource != r || (e.event.actions & action) == 0) continue;
      if (!e.hint) return QueueingHint::kQueue;
      return e.hint(pod, framework::ClusterEvent{r, action}, o);
    }
    ADD_FAILURE() << "not registered";
    return QueueingHint::kSkip;
  };
  const auto pod = Claims("p", {"data"});
  api::CSINode before;
  api::CSINodeDriver d;
  d.name = kEbs;
  d.allocatable_count = 2;
  before.drivers.push_back(d);
  api::CSINode raised = before;
  raised.drivers[0].allocatable_count = 3;
  api::CSINode lowered = before;
  lowered.drivers[0].allocatable_count = 1;
  framework::EventObjects o;
  o.old_obj = &before;
  o.new_obj = &raised;
  EXPECT_EQ(hint(EventResource::kCSINode, framework::kUpdate, *pod, o), QueueingHint::kQueue);
  o.new_obj = &lowered;
  EXPECT_EQ(hint(EventResource::kCSINode, framework::kUpdate, *pod, o), QueueingHint::kSkip);
  o.new_obj = &before;
  EXPECT_EQ(hint(EventResource::kCSINode, framework::kUpdate, *pod, o), QueueingHint::kSkip);

  api::Pod placed = *Claims("placed", {"other"});
  placed.node_name = "n";
  framework::EventObjects deleted;
  deleted.old_pod = &placed;
  EXPECT_EQ(hint(EventResource::kAssignedPod, framework::kDelete, *pod, deleted),
            QueueingHint::kQueue);
  api::Pod unscheduled = *Claims("unscheduled", {"other"});
  deleted.old_pod = &unscheduled;
  EXPECT_EQ(hint(EventResource::kAssignedPod, framework::kDelete, *pod, deleted),
            QueueingHint::kSkip);
  api::Pod no_volumes = *PodWith("none", {});
  no_volumes.node_name = "n";
  deleted.old_pod = &no_volumes;
  EXPECT_EQ(hint(EventResource::kAssignedPod, framework::kDelete, *pod, deleted),
            QueueingHint::kSkip);

  api::PersistentVolumeClaim pvc;
  pvc.meta.name = "data";
  pvc.meta.namespace_ = "default";
  framework::EventObjects added;
  added.new_obj = &pvc;
  EXPECT_EQ(hint(EventResource::kPersistentVolumeClaim, framework::kAdd, *pod, added),
            QueueingHint::kQueue);
  pvc.meta.namespace_ = "other";
  EXPECT_EQ(hint(EventResource::kPersistentVolumeClaim, framework::kAdd, *pod, added),
            QueueingHint::kSkip);
}

}  // namespace
}  // namespace gpusched::plugins::node_volume_limits
