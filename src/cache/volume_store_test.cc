// SPDX-License-Identifier: Apache-2.0
// VolumeStore: lookups, the assume cache's versions, and the writer hand-off.
#include "src/cache/volume_store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace gpusched::cache {
namespace {

api::PersistentVolumePtr Pv(const std::string& name, const std::string& rv,
                            const std::string& cls = "c", const std::string& claim = "") {
  auto pv = std::make_shared<api::PersistentVolume>();
  pv->meta.name = name;
  pv->meta.resource_version = rv;
  pv->storage_class = cls;
  if (!claim.empty()) pv->claim_ref = api::ClaimRef{"ns", claim, ""};
  return pv;
}

api::PersistentVolumeClaimPtr Pvc(const std::string& name, const std::string& rv,
                                  std::optional<std::string> node = std::nullopt) {
  auto pvc = std::make_shared<api::PersistentVolumeClaim>();
  pvc->meta.name = name;
  pvc->meta.namespace_ = "ns";
  pvc->meta.resource_version = rv;
  pvc->selected_node = std::move(node);
  return pvc;
}

TEST(VolumeStoreTest, AssumedVersionIsReadUntilRestoredOrSuperseded) {
  VolumeStore view;
  view.UpsertPv(Pv("pv1", "5"));
  EXPECT_EQ(view.GetPv("pv1")->claim_ref, std::nullopt);
  ASSERT_TRUE(view.AssumePv(Pv("pv1", "5", "c", "claim")).ok());
  EXPECT_TRUE(view.GetPv("pv1")->claim_ref.has_value());
  EXPECT_FALSE(view.InformerPv("pv1")->claim_ref.has_value());
  ASSERT_EQ(view.ListPvs("c").size(), 1u);
  EXPECT_TRUE(view.ListPvs("c")[0]->claim_ref.has_value());
  EXPECT_TRUE(view.ListPvs("other").empty());
  view.RestorePv("pv1");
  EXPECT_FALSE(view.GetPv("pv1")->claim_ref.has_value());

  // An informer update at least as new drops the assumed version; an older one does not.
  ASSERT_TRUE(view.AssumePv(Pv("pv1", "5", "c", "claim")).ok());
  view.UpsertPv(Pv("pv1", "4"));
  EXPECT_TRUE(view.GetPv("pv1")->claim_ref.has_value());
  view.UpsertPv(Pv("pv1", "10"));
  EXPECT_FALSE(view.GetPv("pv1")->claim_ref.has_value());
  // Assuming an older version than the cached one fails; so does an unknown object.
  EXPECT_EQ(view.AssumePv(Pv("pv1", "9")).code(), common::StatusCode::kFailedPrecondition);
  EXPECT_EQ(view.AssumePv(Pv("nope", "1")).code(), common::StatusCode::kNotFound);
}

TEST(VolumeStoreTest, ClaimsByNamespaceAndName) {
  VolumeStore view;
  view.UpsertPvc(Pvc("data", "1"));
  EXPECT_NE(view.GetPvc("ns", "data"), nullptr);
  EXPECT_EQ(view.GetPvc("other", "data"), nullptr);
  ASSERT_TRUE(view.AssumePvc(Pvc("data", "1", "node-1")).ok());
  EXPECT_EQ(view.GetPvc("ns", "data")->selected_node, "node-1");
  EXPECT_EQ(view.InformerPvc("ns", "data")->selected_node, std::nullopt);
  view.RestorePvc("ns", "data");
  EXPECT_EQ(view.GetPvc("ns", "data")->selected_node, std::nullopt);
  view.DeletePvc("ns", "data");
  EXPECT_EQ(view.GetPvc("ns", "data"), nullptr);
  EXPECT_EQ(view.ListPvcs().size(), 0u);
}

TEST(VolumeStoreTest, WritesFailWithoutAWriter) {
  VolumeStore view;
  EXPECT_EQ(view.BindPersistentVolume(*Pv("pv", "1"), true).status().code(),
            common::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gpusched::cache
