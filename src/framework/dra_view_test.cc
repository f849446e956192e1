// SPDX-License-Identifier: Apache-2.0
// DraView's claim assume cache: which version reads return, and which devices stay held.
#include "src/framework/dra_view.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace gpusched::framework {
namespace {

api::ResourceSlicePtr Slice() {
  auto s = std::make_shared<api::ResourceSlice>();
  s->name = "n1-gpu";
  s->driver = "gpu.nvidia.com";
  s->pool = "n1";
  s->pool_generation = 1;
  s->node_name = "n1";
  for (const char* name : {"gpu-0", "gpu-1"}) {
    api::Device d;
    d.name = name;
    s->devices.push_back(std::move(d));
  }
  return s;
}

api::ResourceClaimPtr Claim(const std::string& rv, bool allocated) {
  auto c = std::make_shared<api::ResourceClaim>();
  c->meta.namespace_ = "ns";
  c->meta.name = "c";
  c->meta.resource_version = rv;
  if (allocated) {
    c->allocation = api::AllocationResult{};
    c->allocation->devices.push_back({"gpu", "gpu.nvidia.com", "n1", "gpu-1", false});
  }
  return c;
}

bool Held(const DraView& view, const std::string& key) {
  const auto index = view.devices();
  const auto usage = view.usage();
  return usage->holder.at(index->by_key.at(key)) != nullptr;
}

TEST(DraViewTest, AssumedAllocationOutlivesTheFinalizerOnlyWrite) {
  DraView view;
  view.UpsertSlice(Slice());
  view.UpsertClaim(Claim("5", false));
  ASSERT_TRUE(view.AssumeClaim(Claim("5", true)).ok());
  EXPECT_TRUE(Held(view, "gpu.nvidia.com/n1/gpu-1"));

  // PreBind's first write (the finalizer) comes back newer but without the allocation: the
  // assumption stays and the device stays held.
  view.UpsertClaim(Claim("6", false));
  EXPECT_TRUE(view.GetClaim("ns", "c")->allocation.has_value());
  EXPECT_TRUE(Held(view, "gpu.nvidia.com/n1/gpu-1"));

  // The status write arrives: the informer's version replaces the assumption.
  view.UpsertClaim(Claim("7", true));
  EXPECT_EQ(view.GetClaim("ns", "c")->meta.resource_version, "7");
  EXPECT_TRUE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
  EXPECT_FALSE(Held(view, "gpu.nvidia.com/n1/gpu-0"));
}

TEST(DraViewTest, RestoreDropsTheAssumptionAndFreesItsDevices) {
  DraView view;
  view.UpsertSlice(Slice());
  view.UpsertClaim(Claim("5", false));
  ASSERT_TRUE(view.AssumeClaim(Claim("5", true)).ok());
  view.RestoreClaim("ns", "c");
  EXPECT_FALSE(view.GetClaim("ns", "c")->allocation.has_value());
  EXPECT_FALSE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
}

TEST(DraViewTest, PendingClaimsAreTheUnallocatedOnes) {
  DraView view;
  view.UpsertSlice(Slice());
  view.UpsertClaim(Claim("5", false));
  ASSERT_EQ(view.PendingClaims().size(), 1u);
  ASSERT_TRUE(view.AssumeClaim(Claim("5", true)).ok());
  EXPECT_TRUE(view.PendingClaims().empty());
  view.RestoreClaim("ns", "c");
  EXPECT_EQ(view.PendingClaims().size(), 1u);
  view.UpsertClaim(Claim("6", true));
  EXPECT_TRUE(view.PendingClaims().empty());
  view.UpsertClaim(Claim("7", false));  // deallocated
  EXPECT_EQ(view.PendingClaims().size(), 1u);
  view.DeleteClaim("ns", "c");
  EXPECT_TRUE(view.PendingClaims().empty());
}

TEST(DraViewTest, SliceChangesRebuildTheIndexOnceOnTheNextRead) {
  DraView view;
  for (const char* node : {"n1", "n2", "n3"}) {
    auto s = std::make_shared<api::ResourceSlice>(*Slice());
    s->name = std::string(node) + "-gpu";
    s->pool = node;
    view.UpsertSlice(s);
  }
  view.UpsertClaim(Claim("5", true));  // holds n1/gpu-1, read while the index is stale
  const auto index = view.devices();
  EXPECT_EQ(index->version, 1u);
  EXPECT_EQ(index->devices.size(), 6u);
  EXPECT_TRUE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
  EXPECT_EQ(view.devices()->version, 1u);
  view.DeleteSlice("n3-gpu");
  EXPECT_EQ(view.devices()->version, 2u);
  EXPECT_EQ(view.devices()->devices.size(), 4u);
  EXPECT_TRUE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
}

TEST(DraViewTest, AssumeRejectsUnknownAndOlderClaims) {
  DraView view;
  EXPECT_FALSE(view.AssumeClaim(Claim("5", true)).ok());
  view.UpsertClaim(Claim("9", false));
  EXPECT_FALSE(view.AssumeClaim(Claim("5", true)).ok());
}

}  // namespace
}  // namespace gpusched::framework
