// SPDX-License-Identifier: Apache-2.0
// DraStore's claim assume cache: which version reads return, and which devices stay held; the
// waiting claims in their pods' order; DeviceTaintRules in the device index.
#include "src/cache/dra_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gpusched::cache {
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

bool Held(const DraStore& view, const std::string& key) {
  const auto index = view.devices();
  const auto usage = view.usage();
  return usage->holder.at(index->by_key.at(key)) != nullptr;
}

TEST(DraStoreTest, AssumedAllocationOutlivesTheFinalizerOnlyWrite) {
  DraStore view;
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

// PreBind assumes the version its status write stored; when the informer delivered that very
// version first (the simulator always, a real cluster in a race), there is nothing to hold, and
// the later deallocation (a newer version without the allocation) frees the device. Before the
// fix the assumption stayed and the device was held for ever (issue #36's DRA property test).
TEST(DraStoreTest, AnAlreadyDeliveredWriteIsNotHeldPastTheDeallocation) {
  DraStore view;
  view.UpsertSlice(Slice());
  view.UpsertClaim(Claim("5", false));
  ASSERT_TRUE(view.AssumeClaim(Claim("5", true)).ok());  // Reserve
  view.UpsertClaim(Claim("6", true));                    // the status write, delivered at once
  ASSERT_TRUE(view.AssumeClaim(Claim("6", true)).ok());  // PreBind assumes what it stored
  EXPECT_TRUE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
  view.UpsertClaim(Claim("7", false));  // the pod left: deallocated
  EXPECT_FALSE(view.GetClaim("ns", "c")->allocation.has_value());
  EXPECT_FALSE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
}

TEST(DraStoreTest, RestoreDropsTheAssumptionAndFreesItsDevices) {
  DraStore view;
  view.UpsertSlice(Slice());
  view.UpsertClaim(Claim("5", false));
  ASSERT_TRUE(view.AssumeClaim(Claim("5", true)).ok());
  view.RestoreClaim("ns", "c");
  EXPECT_FALSE(view.GetClaim("ns", "c")->allocation.has_value());
  EXPECT_FALSE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
}

TEST(DraStoreTest, AnAssumedNewClaimHoldsItsDevicesUntilTheInformerHasItAllocated) {
  DraStore view;
  view.UpsertSlice(Slice());
  auto ext = std::make_shared<api::ResourceClaim>(*Claim("", true));
  ext->meta.annotations.emplace_back(std::string(api::kExtendedResourceClaimAnnotation), "true");
  ext->meta.owner_references.push_back({"v1", "Pod", "p", "uid-p", true});
  ASSERT_TRUE(view.AssumeNewClaim(ext).ok());
  EXPECT_EQ(view.AssumeNewClaim(ext).code(), common::StatusCode::kAlreadyExists);
  EXPECT_TRUE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
  EXPECT_EQ(view.ExtendedResourceClaimOf("uid-p"), ext);
  EXPECT_EQ(view.PendingCount(), 0u);
  // The create comes back without the allocation: still held; then the status write: replaced.
  auto created = std::make_shared<api::ResourceClaim>(*ext);
  created->meta.resource_version = "1";
  created->allocation.reset();
  view.UpsertClaim(created);
  EXPECT_TRUE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
  EXPECT_EQ(view.GetClaim("ns", "c"), ext);
  auto written = std::make_shared<api::ResourceClaim>(*ext);
  written->meta.resource_version = "2";
  view.UpsertClaim(written);
  EXPECT_EQ(view.GetClaim("ns", "c"), written);
  EXPECT_EQ(view.ExtendedResourceClaimOf("uid-p"), written);
  view.DeleteClaim("ns", "c");
  EXPECT_FALSE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
  EXPECT_EQ(view.ExtendedResourceClaimOf("uid-p"), nullptr);
  // Restored before the API server had it: gone, devices free.
  ASSERT_TRUE(view.AssumeNewClaim(ext).ok());
  view.RestoreClaim("ns", "c");
  EXPECT_EQ(view.GetClaim("ns", "c"), nullptr);
  EXPECT_EQ(view.ExtendedResourceClaimOf("uid-p"), nullptr);
  EXPECT_FALSE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
  EXPECT_TRUE(view.ListClaims().empty());
  EXPECT_TRUE(view.CheckInvariants().ok()) << view.CheckInvariants().ToString();
}

TEST(DraStoreTest, PendingClaimsAreTheUnallocatedOnes) {
  DraStore view;
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

TEST(DraStoreTest, SliceChangesRebuildTheIndexOnceOnTheNextRead) {
  DraStore view;
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

// A DeviceTaintRule's taint is on the devices it matches in the next index, beside the held
// devices, and gone with the rule; the stored slice is not changed.
TEST(DraStoreTest, TaintRulesTaintTheDevicesTheyMatch) {
  DraStore view;
  api::ResourceSlicePtr slice = Slice();
  view.UpsertSlice(slice);
  view.UpsertClaim(Claim("5", true));
  auto rule = std::make_shared<api::DeviceTaintRule>();
  rule->name = "gpu-0-broken";
  rule->has_selector = true;
  rule->pool = "n1";
  rule->device = "gpu-0";
  rule->taint = {common::Intern("broken"), common::Intern(""), api::TaintEffect::kNoSchedule};
  view.UpsertTaintRule(rule);
  auto taints = [&](const char* key) {
    const auto index = view.devices();
    return index->devices.at(index->by_key.at(key)).device->taints.size();
  };
  EXPECT_EQ(taints("gpu.nvidia.com/n1/gpu-0"), 1u);
  EXPECT_EQ(taints("gpu.nvidia.com/n1/gpu-1"), 0u);
  EXPECT_TRUE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
  EXPECT_TRUE(slice->devices[0].taints.empty());
  const uint64_t version = view.devices()->version;
  view.DeleteTaintRule("gpu-0-broken");
  EXPECT_GT(view.devices()->version, version);
  EXPECT_EQ(taints("gpu.nvidia.com/n1/gpu-0"), 0u);
  EXPECT_TRUE(Held(view, "gpu.nvidia.com/n1/gpu-1"));
}

TEST(DraStoreTest, AssumeRejectsUnknownAndOlderClaims) {
  DraStore view;
  EXPECT_FALSE(view.AssumeClaim(Claim("5", true)).ok());
  view.UpsertClaim(Claim("9", false));
  EXPECT_FALSE(view.AssumeClaim(Claim("5", true)).ok());
}

api::ResourceClaimPtr NamedClaim(const std::string& name, std::string owner_uid = "") {
  auto c = std::make_shared<api::ResourceClaim>();
  c->meta.namespace_ = "ns";
  c->meta.name = name;
  c->meta.resource_version = "1";
  if (!owner_uid.empty()) {
    c->meta.owner_references.push_back({"v1", "Pod", "owner", std::move(owner_uid), true});
  }
  return c;
}

api::PodPtr WaitingPod(const std::string& name, int seconds, std::string claim_name,
                       int32_t priority = 0) {
  auto p = std::make_shared<api::Pod>();
  p->meta.namespace_ = "ns";
  p->meta.name = name;
  p->meta.uid = name + "-uid";
  p->meta.creation_timestamp = common::TimePoint{} + std::chrono::seconds(seconds);
  p->priority = priority;
  auto pc = std::make_shared<api::PodResourceClaims>();
  pc->claims.push_back(claim_name.empty() ? api::PodClaimSource{"gpu", "", "tmpl"}
                                          : api::PodClaimSource{"gpu", std::move(claim_name), ""});
  p->resource_claims = pc;
  return p;
}

std::vector<std::pair<std::string, int32_t>> Waiting(const DraStore& view) {
  std::vector<std::pair<std::string, int32_t>> out;
  for (const framework::WaitingClaim& w : view.WaitingClaims())
    out.emplace_back(w.claim->meta.name, w.pods);
  return out;
}

TEST(DraStoreTest, WaitingClaimsComeInTheirPodsOrderWithTheirPodCounts) {
  DraStore view;
  view.UpsertClaim(NamedClaim("orphan"));
  view.UpsertClaim(NamedClaim("shared"));
  view.UpsertClaim(NamedClaim("mine", "p1-uid"));
  const api::PodPtr pa = WaitingPod("pa", 1, "shared");
  view.ObservePod(nullptr, WaitingPod("p1", 2, "").get());
  view.ObservePod(nullptr, pa.get());
  view.ObservePod(nullptr, WaitingPod("pb", 3, "shared").get());
  using W = std::vector<std::pair<std::string, int32_t>>;
  // "shared" serves the earliest pod (pa) and pb; "mine" its owner; "orphan" no pod: last.
  EXPECT_EQ(Waiting(view), (W{{"shared", 2}, {"mine", 1}, {"orphan", 0}}));

  // pa is bound: "shared" now waits for pb only, created after p1.
  auto bound = std::make_shared<api::Pod>(*pa);
  bound->node_name = "n1";
  view.ObservePod(pa.get(), bound.get());
  EXPECT_EQ(Waiting(view), (W{{"mine", 1}, {"shared", 1}, {"orphan", 0}}));

  // A higher-priority pod goes first whatever its age.
  view.ObservePod(nullptr, WaitingPod("urgent", 9, "orphan", 100).get());
  EXPECT_EQ(Waiting(view), (W{{"orphan", 1}, {"mine", 1}, {"shared", 1}}));
  EXPECT_EQ(view.PendingCount(), 3U);
}

}  // namespace
}  // namespace gpusched::cache
