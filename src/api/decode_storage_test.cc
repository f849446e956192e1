// SPDX-License-Identifier: Apache-2.0
// The volume model: pod spec.volumes, PersistentVolume, PersistentVolumeClaim, StorageClass,
// CSINode and CSIDriver decoding, with the field-path errors for bad values, and the matching
// helpers of storage.h.
#include "src/api/decode_storage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "src/api/decode.h"
#include "src/api/volume.h"

namespace gpusched::api {
namespace {

using ::testing::ElementsAre;

boost::json::value Json(std::string_view text) {
  auto v = ParseJson(text, "test");
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : boost::json::value();
}

TEST(DecodePodVolumesTest, KeepsClaimsEphemeralAndCountedInlineSources) {
  auto pod = DecodePod(Json(R"({"metadata":{"name":"train","namespace":"ml"},"spec":{
      "containers":[{"name":"c"}],
      "volumes":[
        {"name":"data","persistentVolumeClaim":{"claimName":"data-0","readOnly":true}},
        {"name":"scratch","ephemeral":{"volumeClaimTemplate":{"spec":{}}}},
        {"name":"cfg","configMap":{"name":"x"}},
        {"name":"pd","gcePersistentDisk":{"pdName":"disk-1"}},
        {"name":"ebs","awsElasticBlockStore":{"volumeID":"vol-1","readOnly":true}},
        {"name":"rbd","rbd":{"image":"img","monitors":["m1","m2"]}},
        {"name":"iscsi","iscsi":{"iqn":"iqn.x","targetPortal":"10.0.0.1:3260","lun":2}},
        {"name":"csi","csi":{"driver":"ebs.csi.aws.com"}}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  ASSERT_NE(pod->volumes, nullptr);
  const std::vector<PodVolume>& v = pod->volumes->volumes;
  ASSERT_EQ(v.size(), 7u);
  EXPECT_TRUE(pod->volumes->has_claims);
  EXPECT_EQ(v[0].claim_name, "data-0");
  EXPECT_TRUE(v[0].read_only);
  EXPECT_EQ(v[1].claim_name, "train-scratch");
  EXPECT_TRUE(v[1].ephemeral);
  EXPECT_EQ(v[2].source, InlineSource::kGcePersistentDisk);
  EXPECT_EQ(v[2].disk_id, "disk-1");
  EXPECT_EQ(v[3].source, InlineSource::kAwsElasticBlockStore);
  EXPECT_TRUE(v[3].read_only);
  EXPECT_EQ(v[4].source, InlineSource::kRbd);
  EXPECT_EQ(v[4].rbd_pool, "rbd");
  EXPECT_THAT(v[4].monitors, ElementsAre("m1", "m2"));
  EXPECT_EQ(v[5].source, InlineSource::kIscsi);
  EXPECT_EQ(v[5].iscsi_lun, 2);
  EXPECT_EQ(v[5].target_portal, "10.0.0.1:3260");
  EXPECT_EQ(v[6].source, InlineSource::kCsi);
  EXPECT_EQ(v[6].csi_driver, "ebs.csi.aws.com");
}

TEST(DecodePodVolumesTest, NullWithoutRelevantVolumes) {
  auto pod = DecodePod(Json(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}],
      "volumes":[{"name":"cfg","configMap":{"name":"x"}},{"name":"s","secret":{}}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->volumes, nullptr);
}

// emptyDir and hostPath keep data on the node: no volume scheduling counts, but recorded.
TEST(DecodePodVolumesTest, LocalStorageIsRecorded) {
  for (const char* volume :
       {R"({"name":"e","emptyDir":{}})", R"({"name":"h","hostPath":{"path":"/data"}})"}) {
    auto pod = DecodePod(Json(std::string(R"({"metadata":{"name":"p"},"spec":{"containers":)") +
                              R"([{"name":"c"}],"volumes":[)" + volume + "]}}"));
    ASSERT_TRUE(pod.ok()) << pod.status().ToString();
    ASSERT_NE(pod->volumes, nullptr) << volume;
    EXPECT_TRUE(pod->volumes->local_storage);
    EXPECT_TRUE(pod->volumes->volumes.empty());
  }
}

TEST(DecodePodVolumesTest, BadValuesNameTheField) {
  struct Case {
    const char* name;
    const char* volumes;
    const char* error;
  };
  const Case cases[] = {
      {"a claim without claimName", R"([{"name":"d","persistentVolumeClaim":{}}])",
       "spec.volumes[0].persistentVolumeClaim.claimName: required"},
      {"a claim that is not an object", R"([{"name":"d","persistentVolumeClaim":"x"}])",
       "spec.volumes[0].persistentVolumeClaim: expected object, got string"},
      {"an iSCSI lun out of range",
       R"([{"name":"d","iscsi":{"iqn":"q","targetPortal":"t","lun":300}}])",
       "spec.volumes[0].iscsi.lun: value out of range [0, 255]"},
      {"volumes not a list", R"({"name":"d"})", "spec.volumes: expected array, got object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto pod = DecodePod(
        Json(std::string(R"({"metadata":{"name":"p"},"spec":{"volumes":)") + c.volumes + "}}"));
    ASSERT_FALSE(pod.ok());
    EXPECT_EQ(pod.status().message(), std::string("pod default/p: ") + c.error);
  }
}

TEST(DecodeStorageTest, PersistentVolume) {
  auto pv = DecodePersistentVolume(Json(R"({"kind":"PersistentVolume",
      "metadata":{"name":"pv-1","labels":{"topology.kubernetes.io/zone":"us-east-1a"},
        "resourceVersion":"12"},
      "spec":{"capacity":{"storage":"10Gi"},"accessModes":["ReadWriteOnce","ReadOnlyMany"],
        "storageClassName":"ebs","volumeMode":"Block",
        "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
          {"key":"topology.kubernetes.io/zone","operator":"In","values":["us-east-1a"]}]}]}},
        "claimRef":{"namespace":"ml","name":"data-0","uid":"u1"},
        "csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-1"}},
      "status":{"phase":"Available"}})"));
  ASSERT_TRUE(pv.ok()) << pv.status().ToString();
  EXPECT_EQ(pv->name(), "pv-1");
  EXPECT_EQ(pv->meta.resource_version, "12");
  EXPECT_EQ(pv->capacity_bytes, int64_t{10} << 30);
  EXPECT_EQ(pv->access_modes, kReadWriteOnce | kReadOnlyMany);
  EXPECT_EQ(pv->storage_class, "ebs");
  EXPECT_EQ(pv->volume_mode, VolumeMode::kBlock);
  ASSERT_TRUE(pv->claim_ref.has_value());
  EXPECT_EQ(pv->claim_ref->name, "data-0");
  EXPECT_EQ(pv->phase, PersistentVolume::Phase::kAvailable);
  EXPECT_EQ(pv->csi_driver, "ebs.csi.aws.com");
  Labels a;
  a.Set("topology.kubernetes.io/zone", "us-east-1a");
  Labels b;
  b.Set("topology.kubernetes.io/zone", "us-east-1b");
  EXPECT_TRUE(PvNodeAffinityMatches(*pv, a));
  EXPECT_FALSE(PvNodeAffinityMatches(*pv, b));
  EXPECT_FALSE(PvNodeAffinityMatches(*pv, Labels()));
}

TEST(DecodeStorageTest, BetaClassAnnotationWins) {
  auto pv = DecodePersistentVolume(Json(R"({"metadata":{"name":"pv",
      "annotations":{"volume.beta.kubernetes.io/storage-class":"old"}},
      "spec":{"storageClassName":"new"}})"));
  ASSERT_TRUE(pv.ok()) << pv.status().ToString();
  EXPECT_EQ(pv->storage_class, "old");
}

TEST(DecodeStorageTest, PersistentVolumeClaim) {
  auto pvc = DecodePersistentVolumeClaim(Json(R"({"metadata":{"name":"data-0","namespace":"ml",
        "uid":"u1","annotations":{"volume.kubernetes.io/selected-node":"n1",
        "pv.kubernetes.io/bind-completed":"yes"}},
      "spec":{"accessModes":["ReadWriteOncePod"],"storageClassName":"ebs",
        "resources":{"requests":{"storage":"1500Mi"}},"volumeName":"pv-1",
        "selector":{"matchLabels":{"tier":"gold"}}},
      "status":{"phase":"Bound"}})"));
  ASSERT_TRUE(pvc.ok()) << pvc.status().ToString();
  EXPECT_EQ(pvc->namespace_(), "ml");
  EXPECT_EQ(pvc->request_bytes, int64_t{1500} << 20);
  EXPECT_EQ(pvc->access_modes, kReadWriteOncePod);
  EXPECT_EQ(pvc->storage_class, "ebs");
  EXPECT_EQ(pvc->selected_node, "n1");
  EXPECT_TRUE(pvc->FullyBound());
  ASSERT_TRUE(pvc->selector.has_value());
  EXPECT_EQ(pvc->phase, PersistentVolumeClaim::Phase::kBound);
}

TEST(DecodeStorageTest, StorageClassCSINodeCSIDriver) {
  auto sc = DecodeStorageClass(Json(R"({"metadata":{"name":"zonal"},"provisioner":"ebs.csi",
      "volumeBindingMode":"WaitForFirstConsumer","allowedTopologies":[{"matchLabelExpressions":[
        {"key":"topology.kubernetes.io/zone","values":["a","b"]}]}]})"));
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  EXPECT_EQ(sc->binding_mode, StorageClass::BindingMode::kWaitForFirstConsumer);
  Labels a;
  a.Set("topology.kubernetes.io/zone", "a");
  Labels c;
  c.Set("topology.kubernetes.io/zone", "c");
  EXPECT_TRUE(TopologyTermsMatch(sc->allowed_topologies, a));
  EXPECT_FALSE(TopologyTermsMatch(sc->allowed_topologies, c));
  EXPECT_TRUE(TopologyTermsMatch({}, c));

  auto immediate = DecodeStorageClass(Json(R"({"metadata":{"name":"std"},"provisioner":"x"})"));
  ASSERT_TRUE(immediate.ok());
  EXPECT_EQ(immediate->binding_mode, StorageClass::BindingMode::kImmediate);

  auto node = DecodeCSINode(Json(R"({"metadata":{"name":"n1","annotations":{
        "storage.alpha.kubernetes.io/migrated-plugins":"kubernetes.io/gce-pd, kubernetes.io/aws-ebs"}},
      "spec":{"drivers":[{"name":"ebs.csi.aws.com","nodeID":"i-1","allocatable":{"count":25}},
        {"name":"other","nodeID":"x"}]}})"));
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_THAT(node->migrated_plugins, ElementsAre("kubernetes.io/aws-ebs", "kubernetes.io/gce-pd"));
  ASSERT_NE(node->Driver("ebs.csi.aws.com"), nullptr);
  EXPECT_EQ(node->Driver("ebs.csi.aws.com")->allocatable_count, 25);
  EXPECT_FALSE(node->Driver("other")->allocatable_count.has_value());
  EXPECT_EQ(node->Driver("none"), nullptr);

  auto driver =
      DecodeCSIDriver(Json(R"({"metadata":{"name":"d"},"spec":{"attachRequired":false}})"));
  ASSERT_TRUE(driver.ok());
  EXPECT_FALSE(driver->attach_required);
}

TEST(DecodeStorageTest, BadValuesNameObjectFieldAndValue) {
  struct Case {
    const char* name;
    int kind;  // 0 PV, 1 PVC, 2 StorageClass, 3 CSINode
    const char* json;
    const char* error;
  };
  const Case cases[] = {
      {"a bad capacity", 0, R"({"metadata":{"name":"pv"},"spec":{"capacity":{"storage":"ten"}}})",
       "persistentvolume pv: spec.capacity.storage: invalid quantity \"ten\": no digits"},
      {"a bad access mode", 0, R"({"metadata":{"name":"pv"},"spec":{"accessModes":["RWO"]}})",
       "persistentvolume pv: spec.accessModes[0]: invalid value \"RWO\" (want ReadWriteOnce, "
       "ReadOnlyMany, ReadWriteMany or ReadWriteOncePod)"},
      {"a bad node affinity operator", 0,
       R"({"metadata":{"name":"pv"},"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[
         {"matchExpressions":[{"key":"z","operator":"Near","values":["a"]}]}]}}}})",
       "persistentvolume pv: spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0]."
       "operator: invalid value \"Near\" (want In, NotIn, Exists, DoesNotExist, Gt or Lt)"},
      {"a bad phase", 0, R"({"metadata":{"name":"pv"},"status":{"phase":"Gone"}})",
       "persistentvolume pv: status.phase: invalid value \"Gone\" (want Pending, Available, Bound, "
       "Released or Failed)"},
      {"a bad volume mode", 1, R"({"metadata":{"name":"c","namespace":"ml"},
         "spec":{"volumeMode":"Raw"}})",
       "persistentvolumeclaim ml/c: spec.volumeMode: invalid value \"Raw\" (want Filesystem or "
       "Block)"},
      {"a negative request", 1, R"({"metadata":{"name":"c"},
         "spec":{"resources":{"requests":{"storage":"-1Gi"}}}})",
       "persistentvolumeclaim default/c: spec.resources.requests.storage: must be non-negative"},
      {"a bad binding mode", 2, R"({"metadata":{"name":"fast"},"volumeBindingMode":"Later"})",
       "storageclass fast: volumeBindingMode: invalid value \"Later\" (want Immediate or "
       "WaitForFirstConsumer)"},
      {"a bad allocatable count", 3, R"({"metadata":{"name":"n1"},"spec":{"drivers":[
         {"name":"d","allocatable":{"count":-1}}]}})",
       "csinode n1: spec.drivers[0].allocatable.count: value out of range [0, 2147483647]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const boost::json::value json = Json(c.json);
    common::Status status;
    switch (c.kind) {
      case 0: status = DecodePersistentVolume(json).status(); break;
      case 1: status = DecodePersistentVolumeClaim(json).status(); break;
      case 2: status = DecodeStorageClass(json).status(); break;
      default: status = DecodeCSINode(json).status(); break;
    }
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.message(), c.error);
  }
  EXPECT_FALSE(DecodePersistentVolume(Json("[1]")).ok());
}

TEST(StorageHelpersTest, IsVolumeBoundToClaim) {
  PersistentVolume pv;
  PersistentVolumeClaim pvc;
  pvc.meta.name = "c";
  pvc.meta.namespace_ = "ml";
  pvc.meta.uid = "u1";
  EXPECT_FALSE(IsVolumeBoundToClaim(pv, pvc));
  pv.claim_ref = ClaimRef{"ml", "c", ""};
  EXPECT_TRUE(IsVolumeBoundToClaim(pv, pvc));
  pv.claim_ref->uid = "u2";
  EXPECT_FALSE(IsVolumeBoundToClaim(pv, pvc));
  pv.claim_ref->uid = "u1";
  EXPECT_TRUE(IsVolumeBoundToClaim(pv, pvc));
  pv.claim_ref->namespace_ = "other";
  EXPECT_FALSE(IsVolumeBoundToClaim(pv, pvc));
}

}  // namespace
}  // namespace gpusched::api
