// SPDX-License-Identifier: Apache-2.0
// DynamicResources: claim resolution at PreFilter, the allocator's rules at Filter (count,
// selectors, matchAttribute, firstAvailable, All, held devices, devices freed by a preemption dry
// run), the island order, the score (packing, device pressure, lookahead), Reserve / Unreserve on
// the claim assume cache and PreBind's write.
#include "src/plugins/dynamic_resources/dynamic_resources.h"

#include <gtest/gtest.h>

#include <boost/json/value.hpp>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/api/dra.h"
#include "src/cache/dra_store.h"
#include "src/testing/builders.h"
#include "src/testing/fake_gangs.h"
#include "src/testing/fake_handle.h"
#include "src/testing/plugin_fixture.h"

namespace gpusched::plugins::dynamic_resources {
namespace {

constexpr const char* kDriver = "gpu.nvidia.com";
constexpr const char* kA100 = "NVIDIA A100-SXM4-80GB";
constexpr const char* kT4 = "Tesla T4";

api::DeviceAttribute Str(std::string s) {
  api::DeviceAttribute a;
  a.kind = api::DeviceAttribute::Kind::kString;
  a.string_value = std::move(s);
  return a;
}

// A slice of `gpus` devices on `node`; device i is in clique "c<i / 4>".
api::ResourceSlicePtr Slice(const std::string& node, const char* product, int gpus) {
  auto s = std::make_shared<api::ResourceSlice>();
  s->name = node + "-gpu";
  s->driver = kDriver;
  s->pool = node;
  s->node_name = node;
  for (int i = 0; i < gpus; ++i) {
    api::Device d;
    d.name = "gpu-" + std::to_string(i);
    d.attributes = {{"gpu.nvidia.com/cliqueId", Str("c" + std::to_string(i / 4))},
                    {"gpu.nvidia.com/productName", Str(product)}};
    d.capacity = {
        {"gpu.nvidia.com/memory", *api::Quantity::Parse(product == kT4 ? "16Gi" : "80Gi")}};
    s->devices.push_back(std::move(d));
  }
  return s;
}

api::DeviceChoice Choice(int64_t count, std::string selector = "") {
  api::DeviceChoice c;
  c.device_class = kDriver;
  c.count = count;
  if (!selector.empty()) c.selectors.push_back(std::move(selector));
  return c;
}

// MIG partitions as NVIDIA's DRA driver publishes them (KEP-4815): per GPU g a counter set
// "gpu-g" (memory 80Gi, 7 compute slices, memory slices ms0..ms7 of 1) in one slice, and in a
// second slice of the same pool the devices drawing on it: "gpu-g" (7g.80gb: all of it),
// "gpu-g-3g-0" / "gpu-g-3g-1" (3g.40gb on memory slices 0-3 / 4-7) and "gpu-g-1g-k" (1g.10gb on
// memory slice k, k < 7).
std::vector<api::ResourceSlicePtr> MigSlices(const std::string& node, int gpus) {
  auto counters = std::make_shared<api::ResourceSlice>();
  counters->name = node + "-counters";
  counters->driver = kDriver;
  counters->pool = node;
  counters->pool_slice_count = 2;
  counters->node_name = node;
  auto parts = std::make_shared<api::ResourceSlice>(*counters);
  parts->name = node + "-mig";
  auto q = [](const char* v) { return *api::Quantity::Parse(v); };
  for (int g = 0; g < gpus; ++g) {
    const std::string gpu = "gpu-" + std::to_string(g);
    api::CounterSet set{gpu, {{"compute", q("7")}, {"memory", q("80Gi")}}};
    for (int m = 0; m < 8; ++m) set.counters.push_back({"ms" + std::to_string(m), q("1")});
    counters->shared_counters.push_back(set);
    auto device = [&](const std::string& name, const char* profile, const char* compute,
                      const char* memory, int first_slice, int slices) {
      api::Device d;
      d.name = name;
      d.attributes = {{"gpu.nvidia.com/profile", Str(profile)}};
      api::DeviceCounterConsumption c{gpu, {{"compute", q(compute)}, {"memory", q(memory)}}};
      for (int m = first_slice; m < first_slice + slices; ++m) {
        c.counters.push_back({"ms" + std::to_string(m), q("1")});
      }
      d.consumes_counters = {c};
      parts->devices.push_back(std::move(d));
    };
    device(gpu, "7g.80gb", "7", "80Gi", 0, 8);
    device(gpu + "-3g-0", "3g.40gb", "3", "40Gi", 0, 4);
    device(gpu + "-3g-1", "3g.40gb", "3", "40Gi", 4, 4);
    for (int k = 0; k < 7; ++k)
      device(gpu + "-1g-" + std::to_string(k), "1g.10gb", "1", "10Gi", k, 1);
  }
  return {counters, parts};
}

api::DeviceChoice Profile(const char* profile) {
  return Choice(
      1, std::string("device.attributes[\"gpu.nvidia.com\"].profile == \"") + profile + "\"");
}

api::ResourceClaimPtr Claim(const std::string& name, std::vector<api::DeviceRequest> requests,
                            std::vector<api::DeviceConstraint> constraints = {}) {
  auto c = std::make_shared<api::ResourceClaim>();
  c->meta.name = name;
  c->meta.namespace_ = "ml";
  c->meta.uid = name + "-uid";
  c->meta.resource_version = "1";
  c->spec.requests = std::move(requests);
  c->spec.constraints = std::move(constraints);
  return c;
}

api::DeviceRequest Exactly(const std::string& name, api::DeviceChoice choice) {
  api::DeviceRequest r;
  r.name = name;
  r.exactly = std::move(choice);
  return r;
}

api::Pod PodWithClaims(const std::string& name, std::vector<std::string> claims) {
  api::Pod pod = testing::MakePod("ml", name).Obj();
  pod.meta.uid = name + "-uid";
  auto pc = std::make_shared<api::PodResourceClaims>();
  for (const std::string& c : claims) pc->claims.push_back({c, c, ""});
  pod.resource_claims = pc;
  return pod;
}

struct Writer final : framework::DraWriter {
  common::StatusOr<api::ResourceClaimPtr> UpdateResourceClaimStatus(
      const api::ResourceClaim& claim) override {
    auto stored = std::make_shared<api::ResourceClaim>(claim);
    stored->meta.resource_version = std::to_string(std::stoi(claim.meta.resource_version) + 1);
    written.push_back(stored);
    return api::ResourceClaimPtr(stored);
  }
  common::StatusOr<api::ResourceClaimPtr> CreateResourceClaim(
      const api::ResourceClaim& claim) override {
    auto stored = std::make_shared<api::ResourceClaim>(claim);
    stored->meta.resource_version = "1";
    stored->meta.uid = "uid-" + claim.meta.name;
    created.push_back(stored);
    return api::ResourceClaimPtr(stored);
  }
  common::Status DeleteResourceClaim(const api::ResourceClaim& claim) override {
    deleted.push_back(claim.meta.name);
    return common::Status::Ok();
  }
  common::Status SetPodExtendedResourceClaimStatus(
      const api::Pod& pod, const api::PodExtendedResourceClaimStatus& status) override {
    pod_statuses.emplace_back(pod.meta.name, status);
    return common::Status::Ok();
  }
  std::vector<api::ResourceClaimPtr> written;
  std::vector<api::ResourceClaimPtr> created;
  std::vector<std::string> deleted;
  std::vector<std::pair<std::string, api::PodExtendedResourceClaimStatus>> pod_statuses;
};

class DynamicResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_.SetGangs(&gangs_);
    view().set_writer(&writer_);
    auto cls = std::make_shared<api::DeviceClass>();
    cls->name = kDriver;
    cls->selectors = {"device.driver == \"gpu.nvidia.com\""};
    view().UpsertDeviceClass(cls);
    auto pl = DynamicResources::Create(boost::json::value(), handle_);
    ASSERT_TRUE(pl.ok()) << pl.status().ToString();
    plugin_ = std::move(*pl);
    pl_ = dynamic_cast<DynamicResources*>(plugin_.get());
  }
  cache::DraStore& view() { return handle_.dra_view(); }

  // A pod using claim `claim` through PreFilter, Filter and Reserve on n1 in `state`: the first
  // status that is not OK, else Reserve's.
  framework::Status FilterAndReserve(const std::string& claim, framework::CycleState& state) {
    api::Pod pod = PodWithClaims(claim, {claim});
    EXPECT_TRUE(pl_->PreFilter(state, pod, framework::Snapshot()).ok());
    framework::Status f = pl_->Filter(state, pod, Node("n1"));
    if (!f.ok()) return f;
    return pl_->Reserve(state, pod, Node("n1"));
  }

  framework::NodeInfo Node(const std::string& name) {
    framework::NodeInfo n;
    n.node = testing::MakeNode(name).Ptr();
    return n;
  }

  testing::FakeGangs gangs_;
  testing::FakeHandle handle_;
  Writer writer_;
  framework::PluginPtr plugin_;
  DynamicResources* pl_ = nullptr;
};

TEST_F(DynamicResourcesTest, PodWithoutClaimsIsSkipped) {
  framework::CycleState state;
  api::Pod pod = testing::MakePod("ml", "plain").Obj();
  EXPECT_TRUE(pl_->PreFilter(state, pod, framework::Snapshot()).IsSkip());
}

TEST_F(DynamicResourcesTest, AllocatesByProductAndMemoryOnlyWhereTheDevicesAre) {
  view().UpsertSlice(Slice("a100-node", kA100, 8));
  view().UpsertSlice(Slice("t4-node", kT4, 8));
  view().UpsertClaim(
      Claim("big", {Exactly("gpus", Choice(2,
                                           "device.attributes[\"gpu.nvidia.com\"].productName == "
                                           "\"NVIDIA A100-SXM4-80GB\" && "
                                           "device.capacity[\"gpu.nvidia.com\"].memory."
                                           "compareTo(quantity(\"40Gi\")) >= 0"))}));
  framework::CycleState state;
  api::Pod pod = PodWithClaims("p", {"big"});
  ASSERT_TRUE(pl_->PreFilter(state, pod, framework::Snapshot()).ok());
  EXPECT_TRUE(pl_->Filter(state, pod, Node("a100-node")).ok());
  framework::Status t4 = pl_->Filter(state, pod, Node("t4-node"));
  EXPECT_EQ(t4.code(), framework::Code::kUnschedulable);
  EXPECT_EQ(t4.reason(), kReasonCannotAllocate);

  ASSERT_TRUE(pl_->Reserve(state, pod, Node("a100-node")).ok());
  api::ResourceClaimPtr assumed = view().GetClaim("ml", "big");
  ASSERT_TRUE(assumed->allocation.has_value());
  ASSERT_EQ(assumed->allocation->devices.size(), 2u);
  EXPECT_EQ(assumed->allocation->devices[0].pool, "a100-node");
  EXPECT_NE(assumed->allocation->devices[0].device, assumed->allocation->devices[1].device);
  ASSERT_EQ(assumed->reserved_for.size(), 1u);
  EXPECT_EQ(assumed->reserved_for[0].uid, "p-uid");
  ASSERT_TRUE(assumed->allocation->node_selector.has_value());
  EXPECT_TRUE(assumed->allocation->node_selector->Matches(api::Labels(), "a100-node"));

  ASSERT_TRUE(pl_->PreBind(state, pod, "a100-node").ok());
  ASSERT_EQ(writer_.written.size(), 1u);
  EXPECT_EQ(writer_.written[0]->allocation->devices.size(), 2u);
}

TEST_F(DynamicResourcesTest, HeldDevicesAreNotAllocatedTwiceAndUnreserveFreesThem) {
  view().UpsertSlice(Slice("n1", kA100, 2));
  view().UpsertClaim(Claim("first", {Exactly("g", Choice(2))}));
  view().UpsertClaim(Claim("second", {Exactly("g", Choice(1))}));
  framework::CycleState s1;
  api::Pod p1 = PodWithClaims("p1", {"first"});
  ASSERT_TRUE(pl_->PreFilter(s1, p1, framework::Snapshot()).ok());
  ASSERT_TRUE(pl_->Reserve(s1, p1, Node("n1")).ok());

  framework::CycleState s2;
  api::Pod p2 = PodWithClaims("p2", {"second"});
  ASSERT_TRUE(pl_->PreFilter(s2, p2, framework::Snapshot()).ok());
  EXPECT_EQ(pl_->Filter(s2, p2, Node("n1")).reason(), kReasonCannotAllocate);

  pl_->Unreserve(s1, p1, "n1");
  framework::CycleState s3;
  ASSERT_TRUE(pl_->PreFilter(s3, p2, framework::Snapshot()).ok());
  EXPECT_TRUE(pl_->Filter(s3, p2, Node("n1")).ok());
}

TEST_F(DynamicResourcesTest, MatchAttributeKeepsDevicesInOneClique) {
  // 8 devices, cliques c0 (0-3) and c1 (4-7); device 0 and 5 are held: 3 free in each clique.
  view().UpsertSlice(Slice("n1", kA100, 8));
  auto holder = Claim("holder", {Exactly("g", Choice(2))});
  auto held = std::make_shared<api::ResourceClaim>(*holder);
  held->allocation = api::AllocationResult{};
  held->allocation->devices = {{"g", kDriver, "n1", "gpu-0", false},
                               {"g", kDriver, "n1", "gpu-5", false}};
  view().UpsertClaim(held);
  api::DeviceConstraint same;
  same.match_attribute = "gpu.nvidia.com/cliqueId";
  view().UpsertClaim(Claim("four", {Exactly("g", Choice(4))}, {same}));
  view().UpsertClaim(Claim("three", {Exactly("g", Choice(3))}, {same}));
  framework::CycleState state;
  api::Pod four = PodWithClaims("four", {"four"});
  ASSERT_TRUE(pl_->PreFilter(state, four, framework::Snapshot()).ok());
  EXPECT_EQ(pl_->Filter(state, four, Node("n1")).reason(), kReasonCannotAllocate);

  framework::CycleState s3;
  api::Pod three = PodWithClaims("three", {"three"});
  ASSERT_TRUE(pl_->PreFilter(s3, three, framework::Snapshot()).ok());
  ASSERT_TRUE(pl_->Reserve(s3, three, Node("n1")).ok());
  const auto& devices = view().GetClaim("ml", "three")->allocation->devices;
  ASSERT_EQ(devices.size(), 3u);
  const bool c0 = devices[0].device < "gpu-4";
  for (const api::DeviceResult& r : devices) EXPECT_EQ(r.device < "gpu-4", c0) << r.device;
}

TEST_F(DynamicResourcesTest, SingleDeviceGoesToTheFullestIsland) {
  // c0 has one free device (1-3 held), c1 has four: a 1-GPU claim takes c0's, keeping c1 whole.
  view().UpsertSlice(Slice("n1", kA100, 8));
  auto held = Claim("held", {Exactly("g", Choice(3))});
  auto h = std::make_shared<api::ResourceClaim>(*held);
  h->allocation = api::AllocationResult{};
  for (const char* d : {"gpu-1", "gpu-2", "gpu-3"})
    h->allocation->devices.push_back({"g", kDriver, "n1", d, false});
  view().UpsertClaim(h);
  view().UpsertClaim(Claim("one", {Exactly("g", Choice(1))}));
  framework::CycleState state;
  api::Pod pod = PodWithClaims("one", {"one"});
  ASSERT_TRUE(pl_->PreFilter(state, pod, framework::Snapshot()).ok());
  ASSERT_TRUE(pl_->Reserve(state, pod, Node("n1")).ok());
  EXPECT_EQ(view().GetClaim("ml", "one")->allocation->devices[0].device, "gpu-0");
}

TEST_F(DynamicResourcesTest, FirstAvailableAndAllMode) {
  view().UpsertSlice(Slice("n1", kT4, 2));
  api::DeviceRequest r;
  r.name = "gpu";
  r.first_available = {
      {"a100", Choice(1,
                      "device.attributes[\"gpu.nvidia.com\"].productName == \"NVIDIA "
                      "A100-SXM4-80GB\"")},
      {"any", Choice(1)}};
  view().UpsertClaim(Claim("fa", {r}));
  api::DeviceChoice all = Choice(1);
  all.mode = api::AllocationMode::kAll;
  view().UpsertClaim(Claim("all", {Exactly("every", all)}));

  framework::CycleState state;
  api::Pod pod = PodWithClaims("fa", {"fa"});
  ASSERT_TRUE(pl_->PreFilter(state, pod, framework::Snapshot()).ok());
  ASSERT_TRUE(pl_->Reserve(state, pod, Node("n1")).ok());
  EXPECT_EQ(view().GetClaim("ml", "fa")->allocation->devices[0].request, "gpu/any");

  framework::CycleState s2;
  api::Pod every = PodWithClaims("every", {"all"});
  ASSERT_TRUE(pl_->PreFilter(s2, every, framework::Snapshot()).ok());
  // One of the two devices is held by "fa": All cannot be satisfied.
  EXPECT_EQ(pl_->Filter(s2, every, Node("n1")).reason(), kReasonCannotAllocate);
  pl_->Unreserve(state, pod, "n1");
  framework::CycleState s3;
  ASSERT_TRUE(pl_->PreFilter(s3, every, framework::Snapshot()).ok());
  ASSERT_TRUE(pl_->Reserve(s3, every, Node("n1")).ok());
  EXPECT_EQ(view().GetClaim("ml", "all")->allocation->devices.size(), 2u);
}

TEST_F(DynamicResourcesTest, AllocatedSharedClaimPinsTheNodeAndAddsTheConsumer) {
  view().UpsertSlice(Slice("n1", kA100, 1));
  auto shared = Claim("shared", {Exactly("g", Choice(1))});
  auto s = std::make_shared<api::ResourceClaim>(*shared);
  s->allocation = api::AllocationResult{};
  s->allocation->devices = {{"g", kDriver, "n1", "gpu-0", false}};
  api::NodeSelectorTerm term;
  term.match_fields_names_in = {"n1"};
  s->allocation->node_selector = api::NodeSelector{{term}};
  s->reserved_for = {{"pods", "first", "first-uid"}};
  view().UpsertClaim(s);
  framework::CycleState state;
  api::Pod pod = PodWithClaims("second", {"shared"});
  ASSERT_TRUE(pl_->PreFilter(state, pod, framework::Snapshot()).ok());
  EXPECT_EQ(pl_->Filter(state, pod, Node("n2")).reason(), kReasonNotAvailable);
  ASSERT_TRUE(pl_->Filter(state, pod, Node("n1")).ok());
  ASSERT_TRUE(pl_->Reserve(state, pod, Node("n1")).ok());
  EXPECT_EQ(view().GetClaim("ml", "shared")->reserved_for.size(), 2u);
}

// KEP-5729: a member of native PodGroup `group` whose claim "fabric" comes from template
// "fabric" and was made as `claim` (for the PodGroup, or for the pod).
api::Pod GroupMember(const std::string& name, const std::string& group, const std::string& claim) {
  api::Pod pod = testing::MakePod("ml", name).Obj();
  pod.meta.uid = name + "-uid";
  pod.scheduling_group = group;
  pod.gang = {api::GangApi::kNative, group, "", ""};
  auto pc = std::make_shared<api::PodResourceClaims>();
  pc->claims.push_back({"fabric", "", "fabric"});
  pc->statuses.emplace_back("fabric", claim);
  pod.resource_claims = pc;
  return pod;
}

// Native PodGroup `name` whose spec.resourceClaims lists "fabric" from template "fabric".
api::PodGroupPtr GroupWithClaim(const std::string& name) {
  auto g = std::make_shared<api::PodGroup>();
  g->api = api::GangApi::kNative;
  g->namespace_ = "ml";
  g->name = name;
  g->uid = name + "-uid";
  auto pc = std::make_shared<api::PodResourceClaims>();
  pc->claims.push_back({"fabric", "", "fabric"});
  g->resource_claims = pc;
  return g;
}

// A claim kube-controller-manager made from a template for PodGroup `group`.
api::ResourceClaimPtr PodGroupClaim(const std::string& name, const std::string& group) {
  auto c = std::make_shared<api::ResourceClaim>(*Claim(name, {Exactly("g", Choice(1))}));
  c->meta.owner_references.push_back(
      {"scheduling.k8s.io/v1beta1", "PodGroup", group, group + "-uid", /*controller=*/true});
  return c;
}

TEST_F(DynamicResourcesTest, APodGroupClaimIsAllocatedOnceAndReservedForThePodGroup) {
  view().UpsertSlice(Slice("n1", kA100, 2));
  view().UpsertSlice(Slice("n2", kA100, 2));
  gangs_.Add(GroupWithClaim("train"));
  view().UpsertClaim(PodGroupClaim("train-fabric-x", "train"));
  const api::ClaimConsumer group{"podgroups", "train", "train-uid", "scheduling.k8s.io"};

  framework::CycleState sa;
  api::Pod a = GroupMember("a", "train", "train-fabric-x");
  ASSERT_TRUE(pl_->PreFilter(sa, a, framework::Snapshot()).ok());
  ASSERT_TRUE(pl_->Filter(sa, a, Node("n1")).ok());
  ASSERT_TRUE(pl_->Reserve(sa, a, Node("n1")).ok());
  api::ResourceClaimPtr assumed = view().GetClaim("ml", "train-fabric-x");
  ASSERT_TRUE(assumed->allocation.has_value());
  EXPECT_EQ(assumed->reserved_for, std::vector<api::ClaimConsumer>{group});

  // The second member shares it: reachable on n1 only, and already reserved (for the group).
  framework::CycleState sb;
  api::Pod b = GroupMember("b", "train", "train-fabric-x");
  ASSERT_TRUE(pl_->PreFilter(sb, b, framework::Snapshot()).ok());
  EXPECT_EQ(pl_->Filter(sb, b, Node("n2")).reason(), kReasonNotAvailable);
  ASSERT_TRUE(pl_->Filter(sb, b, Node("n1")).ok());
  ASSERT_TRUE(pl_->Reserve(sb, b, Node("n1")).ok());
  EXPECT_EQ(view().GetClaim("ml", "train-fabric-x")->reserved_for.size(), 1U);

  ASSERT_TRUE(pl_->PreBind(sa, a, "n1").ok());
  ASSERT_TRUE(pl_->PreBind(sb, b, "n1").ok());
  ASSERT_EQ(writer_.written.size(), 1U);  // the allocation, once
  EXPECT_EQ(writer_.written[0]->reserved_for, std::vector<api::ClaimConsumer>{group});
}

TEST_F(DynamicResourcesTest, APodGroupClaimServesOnlyThatGroupsPods) {
  view().UpsertSlice(Slice("n1", kA100, 1));
  view().UpsertClaim(PodGroupClaim("train-fabric-x", "train"));
  framework::CycleState s1;
  api::Pod unknown = GroupMember("u", "train", "train-fabric-x");
  framework::Status st = pl_->PreFilter(s1, unknown, framework::Snapshot());
  EXPECT_EQ(st.code(), framework::Code::kUnschedulable);
  EXPECT_EQ(st.reason(), "podgroup.scheduling.k8s.io \"train\" not found");

  // The PodGroup's arrival queues the pod that waits for it, and no other.
  auto hint = [&](const api::Pod& pod, const api::PodGroup& g) {
    for (const framework::ClusterEventWithHint& e : pl_->EventsToRegister()) {
      const framework::ClusterEvent added{framework::EventResource::kPodGroup, framework::kAdd};
      if (!e.event.Matches(added)) continue;
      framework::EventObjects objects;
      objects.new_obj = &g;
      return e.hint(pod, added, objects);
    }
    ADD_FAILURE() << "PodGroup add not registered";
    return framework::QueueingHint::kSkip;
  };
  EXPECT_EQ(hint(unknown, *GroupWithClaim("train")), framework::QueueingHint::kQueue);
  EXPECT_EQ(hint(unknown, *GroupWithClaim("other")), framework::QueueingHint::kSkip);

  gangs_.Add(GroupWithClaim("other"));
  framework::CycleState s2;
  api::Pod stranger = GroupMember("s", "other", "train-fabric-x");
  EXPECT_EQ(pl_->PreFilter(s2, stranger, framework::Snapshot()).reason(),
            "ResourceClaim ml/train-fabric-x was not created for pod ml/s (pod is not owner)");
}

TEST_F(DynamicResourcesTest, PreFilterNamesWhatIsMissing) {
  view().UpsertSlice(Slice("n1", kA100, 1));
  api::Pod pod = testing::MakePod("ml", "waiting").Obj();
  auto pc = std::make_shared<api::PodResourceClaims>();
  pc->claims.push_back({"gpu", "", "one-gpu"});
  pod.resource_claims = pc;
  framework::CycleState state;
  framework::Status st = pl_->PreFilter(state, pod, framework::Snapshot());
  EXPECT_EQ(st.code(), framework::Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(st.reason(), "pod \"ml/waiting\": ResourceClaim not created yet");

  api::DeviceChoice c = Choice(1);
  c.device_class = "no-such-class";
  view().UpsertClaim(Claim("orphan", {Exactly("g", c)}));
  framework::CycleState s2;
  api::Pod p2 = PodWithClaims("p2", {"orphan"});
  EXPECT_EQ(pl_->PreFilter(s2, p2, framework::Snapshot()).reason(),
            "request g: device class no-such-class does not exist");

  framework::CycleState s3;
  api::Pod p3 = PodWithClaims("p3", {"nope"});
  EXPECT_EQ(pl_->PreFilter(s3, p3, framework::Snapshot()).reason(),
            "resourceclaim.resource.k8s.io \"nope\" not found");
}

TEST_F(DynamicResourcesTest, DevicesOfAPodRemovedByPreemptionCountAsFree) {
  view().UpsertSlice(Slice("n1", kA100, 1));
  auto v = Claim("victim-claim", {Exactly("g", Choice(1))});
  auto held = std::make_shared<api::ResourceClaim>(*v);
  held->allocation = api::AllocationResult{};
  held->allocation->devices = {{"g", kDriver, "n1", "gpu-0", false}};
  held->reserved_for = {{"pods", "victim", "victim-uid"}};
  view().UpsertClaim(held);
  view().UpsertClaim(Claim("want", {Exactly("g", Choice(1))}));

  framework::Snapshot snapshot;
  framework::NodeInfo& slot = snapshot.MutableSlotForCache(0);
  slot = Node("n1");
  slot.index = 0;
  api::Pod victim = testing::MakePod("ml", "victim").Obj();
  victim.meta.uid = "victim-uid";
  slot.pods.push_back(std::make_shared<api::Pod>(victim));
  snapshot.SetNodeCountForCache(1, 1);

  framework::CycleState state;
  api::Pod pod = PodWithClaims("preemptor", {"want"});
  ASSERT_TRUE(pl_->PreFilter(state, pod, snapshot).ok());
  EXPECT_EQ(pl_->Filter(state, pod, snapshot.at(0)).reason(), kReasonCannotAllocate);
  framework::NodeInfo without = snapshot.at(0);
  without.pods.clear();
  EXPECT_TRUE(pl_->Filter(state, pod, without).ok());
}

// With an empty snapshot there is no lookahead (it needs the candidates' NodeInfos): the device
// pressure decides, as on clusters too large for the lookahead's budget.
TEST_F(DynamicResourcesTest, ScorePacksAndKeepsDevicesWaitingRestrictedClaimsNeed) {
  view().UpsertSlice(Slice("n1", kA100, 2));
  view().UpsertSlice(Slice("n2", kT4, 2));
  view().UpsertClaim(Claim("any", {Exactly("g", Choice(1))}));
  const std::vector<framework::NodeIndex> feasible = {0, 1};
  auto scores = [&] {
    framework::CycleState state;
    api::Pod pod = PodWithClaims("any", {"any"});
    const framework::Snapshot empty;  // the cycle state keeps a pointer to it
    EXPECT_TRUE(pl_->PreFilter(state, pod, empty).ok());
    EXPECT_TRUE(pl_->PreScore(state, pod, empty, feasible).ok());
    const framework::Snapshot nodes =
        testing::SnapshotOf({testing::MakeNode("n1").Ptr(), testing::MakeNode("n2").Ptr()});
    return std::make_pair(testing::ScoreOf(*pl_, state, pod, nodes, 0),
                          testing::ScoreOf(*pl_, state, pod, nodes, 1));
  };
  // Packing alone: one of two devices used after the allocation on either node.
  EXPECT_EQ(scores(), std::make_pair(int64_t{50}, int64_t{50}));

  // A waiting claim any device serves is no reason to prefer a node.
  view().UpsertClaim(Claim("generic", {Exactly("g", Choice(2))}));
  EXPECT_EQ(scores(), std::make_pair(int64_t{50}, int64_t{50}));

  // A waiting claim for two A100s: both A100s are spoken for, so the pod takes a T4.
  view().UpsertClaim(Claim(
      "a100s", {Exactly("g", Choice(2,
                                    "device.attributes[\"gpu.nvidia.com\"].productName == \"NVIDIA "
                                    "A100-SXM4-80GB\""))}));
  EXPECT_EQ(scores(), std::make_pair(int64_t{25}, int64_t{75}));

  // Once that claim is allocated, nothing waits for the A100s any more.
  auto allocated = std::make_shared<api::ResourceClaim>(*view().GetClaim("ml", "a100s"));
  allocated->meta.resource_version = "2";
  allocated->allocation = api::AllocationResult{};
  view().UpsertClaim(allocated);
  EXPECT_EQ(scores(), std::make_pair(int64_t{50}, int64_t{50}));
}

TEST_F(DynamicResourcesTest, ScoreLeavesRoomForTheClaimsThatWait) {
  view().UpsertSlice(Slice("n1", kA100, 4));
  view().UpsertSlice(Slice("n2", kT4, 4));
  auto held = std::make_shared<api::ResourceClaim>(*Claim("held", {Exactly("g", Choice(2))}));
  held->allocation = api::AllocationResult{};
  held->allocation->devices = {{"g", kDriver, "n1", "gpu-0", false},
                               {"g", kDriver, "n1", "gpu-1", false}};
  view().UpsertClaim(held);
  view().UpsertClaim(Claim("any", {Exactly("g", Choice(1))}));
  framework::Snapshot snapshot;
  for (int i = 0; i < 2; ++i) {
    framework::NodeInfo& slot = snapshot.MutableSlotForCache(i);
    slot = Node(i == 0 ? "n1" : "n2");
    slot.index = i;
    snapshot.IndexNameForCache(std::string(slot.name()), i);
  }
  snapshot.SetNodeCountForCache(2, 1);
  const std::vector<framework::NodeIndex> feasible = {0, 1};
  auto scores = [&] {
    framework::CycleState state;
    api::Pod pod = PodWithClaims("any", {"any"});
    EXPECT_TRUE(pl_->PreFilter(state, pod, snapshot).ok());
    EXPECT_TRUE(pl_->PreScore(state, pod, snapshot, feasible).ok());
    return std::make_pair(testing::ScoreOf(*pl_, state, pod, snapshot, 0),
                          testing::ScoreOf(*pl_, state, pod, snapshot, 1));
  };
  // Packing alone: n1 is fuller (3 of 4 A100s used after the allocation, 1 of 4 T4s).
  EXPECT_EQ(scores(), std::make_pair(int64_t{75}, int64_t{25}));

  // A claim waiting for two A100s fits only if the pod leaves n1's last two free: the pod goes
  // to n2 (51 + packing 25 × 49 / 100), n1 gets half its packing.
  view().UpsertClaim(Claim(
      "pair", {Exactly("g", Choice(2,
                                   "device.attributes[\"gpu.nvidia.com\"].productName == \"NVIDIA "
                                   "A100-SXM4-80GB\""))}));
  EXPECT_EQ(scores(), std::make_pair(int64_t{37}, int64_t{63}));

  // A waiting claim that fits wherever the pod goes changes nothing.
  auto allocated = std::make_shared<api::ResourceClaim>(*view().GetClaim("ml", "pair"));
  allocated->meta.resource_version = "2";
  allocated->allocation = api::AllocationResult{};
  view().UpsertClaim(allocated);
  view().UpsertClaim(Claim("t4", {Exactly("g", Choice(1,
                                                      "device.attributes[\"gpu.nvidia.com\"]"
                                                      ".productName == \"Tesla T4\""))}));
  EXPECT_EQ(scores(), std::make_pair(int64_t{75}, int64_t{25}));
}

TEST_F(DynamicResourcesTest, PartitionsNeverOverDrawTheirGpu) {
  // The case: three 3g.40gb partitions and the 7g.80gb of one GPU asked by four pods.
  for (const api::ResourceSlicePtr& s : MigSlices("n1", 1)) view().UpsertSlice(s);
  for (const char* c : {"a", "b", "c"})
    view().UpsertClaim(Claim(c, {Exactly("g", Profile("3g.40gb"))}));
  view().UpsertClaim(Claim("whole", {Exactly("g", Profile("7g.80gb"))}));
  std::map<std::string, framework::CycleState> states;
  auto reserve = [&](const std::string& claim) { return FilterAndReserve(claim, states[claim]); };
  EXPECT_TRUE(reserve("a").ok());
  EXPECT_TRUE(reserve("b").ok());
  EXPECT_EQ(reserve("c").reason(), kReasonCannotAllocate) << "both halves are cut";
  EXPECT_EQ(reserve("whole").reason(), kReasonCannotAllocate);
  EXPECT_TRUE(view().CheckInvariants().ok()) << view().CheckInvariants().ToString();

  pl_->Unreserve(states["a"], PodWithClaims("a", {"a"}), "n1");
  EXPECT_EQ(reserve("whole").reason(), kReasonCannotAllocate) << "b still holds half";
  pl_->Unreserve(states["b"], PodWithClaims("b", {"b"}), "n1");
  ASSERT_TRUE(reserve("whole").ok());
  EXPECT_EQ(view().GetClaim("ml", "whole")->allocation->devices[0].device, "gpu-0");
  EXPECT_TRUE(view().CheckInvariants().ok()) << view().CheckInvariants().ToString();
}

TEST_F(DynamicResourcesTest, APartitionGoesToTheGpuAlreadyCut) {
  // gpu-1's 1g on memory slice 0 is held: a new 1g partition goes to gpu-1 too, keeping gpu-0
  // whole for a 7g.80gb claim.
  for (const api::ResourceSlicePtr& s : MigSlices("n1", 2)) view().UpsertSlice(s);
  auto held =
      std::make_shared<api::ResourceClaim>(*Claim("held", {Exactly("g", Profile("1g.10gb"))}));
  held->allocation = api::AllocationResult{};
  held->allocation->devices = {{"g", kDriver, "n1", "gpu-1-1g-0", false}};
  view().UpsertClaim(held);
  view().UpsertClaim(Claim("small", {Exactly("g", Profile("1g.10gb"))}));
  view().UpsertClaim(Claim("whole", {Exactly("g", Profile("7g.80gb"))}));
  for (const char* c : {"small", "whole"}) {
    framework::CycleState state;
    api::Pod pod = PodWithClaims(c, {c});
    ASSERT_TRUE(pl_->PreFilter(state, pod, framework::Snapshot()).ok());
    ASSERT_TRUE(pl_->Reserve(state, pod, Node("n1")).ok()) << c;
  }
  EXPECT_TRUE(
      view().GetClaim("ml", "small")->allocation->devices[0].device.starts_with("gpu-1-1g-"));
  EXPECT_EQ(view().GetClaim("ml", "whole")->allocation->devices[0].device, "gpu-0");
}

TEST_F(DynamicResourcesTest, ConflictsCountThePartitionsADeviceRulesOut) {
  for (const api::ResourceSlicePtr& s : MigSlices("n1", 1)) view().UpsertSlice(s);
  const auto index = view().devices();
  auto conflicts = [&](const std::string& device) {
    return index->devices[index->by_key.at("gpu.nvidia.com/n1/" + device)].conflicts;
  };
  EXPECT_EQ(conflicts("gpu-0"), 9u);       // the whole GPU: every partition
  EXPECT_EQ(conflicts("gpu-0-3g-0"), 5u);  // the 7g and the 1g on memory slices 0-3
  EXPECT_EQ(conflicts("gpu-0-3g-1"), 4u);  // the 7g and the 1g on memory slices 4-6
  EXPECT_EQ(conflicts("gpu-0-1g-0"), 2u);  // the 7g and one 3g
  EXPECT_EQ(conflicts("gpu-0-1g-6"), 2u);
}

// One A100 on `node` that allows multiple allocations (KEP-5075, as HAMi's DRA driver publishes
// GPUs): memory 80Gi taken in steps of 10Gi from 1Gi (1Gi by default), cores 100 (10 by
// default).
api::ResourceSlicePtr SharedGpu(const std::string& node) {
  auto s = std::const_pointer_cast<api::ResourceSlice>(Slice(node, kA100, 1));
  api::Device& d = s->devices[0];
  d.allow_multiple_allocations = true;
  d.capacity.insert(d.capacity.begin(), {"gpu.nvidia.com/cores", *api::Quantity::Parse("100")});
  api::CapacityRequestPolicy memory;
  memory.default_value = api::Quantity::Parse("1Gi").value();
  memory.range_min = api::Quantity::Parse("1Gi").value();
  memory.range_step = api::Quantity::Parse("10Gi").value();
  api::CapacityRequestPolicy cores;
  cores.default_value = api::Quantity::Parse("10").value();
  d.capacity_policies = {{"gpu.nvidia.com/cores", cores}, {"gpu.nvidia.com/memory", memory}};
  return s;
}

api::DeviceChoice Memory(const char* amount) {
  api::DeviceChoice c = Choice(1);
  c.capacity_requests = {{"memory", *api::Quantity::Parse(amount)}};
  return c;
}

TEST_F(DynamicResourcesTest, CapacitySharesOneGpuUntilItIsFull) {
  // The case: two 30Gi requests share the 80Gi GPU (each rounded up to 31Gi by the
  // policy's step), a third does not fit until one leaves.
  view().UpsertSlice(SharedGpu("n1"));
  for (const char* c : {"a", "b", "c"})
    view().UpsertClaim(Claim(c, {Exactly("g", Memory("30Gi"))}));
  std::map<std::string, framework::CycleState> states;
  auto reserve = [&](const std::string& claim) { return FilterAndReserve(claim, states[claim]); };
  ASSERT_TRUE(reserve("a").ok());
  ASSERT_TRUE(reserve("b").ok());
  EXPECT_EQ(reserve("c").reason(), kReasonCannotAllocate) << "18Gi left";
  EXPECT_TRUE(view().CheckInvariants().ok()) << view().CheckInvariants().ToString();
  const api::DeviceResult a = view().GetClaim("ml", "a")->allocation->devices[0];
  const api::DeviceResult b = view().GetClaim("ml", "b")->allocation->devices[0];
  EXPECT_EQ(a.device, "gpu-0");
  EXPECT_EQ(b.device, "gpu-0");
  EXPECT_EQ(a.share_id.size(), 36u);
  EXPECT_NE(a.share_id, b.share_id);
  ASSERT_EQ(a.consumed_capacity.size(), 2u);
  EXPECT_EQ(a.consumed_capacity[0].first, "gpu.nvidia.com/cores");
  EXPECT_EQ(a.consumed_capacity[0].second.Value(), 10) << "not asked: the default";
  EXPECT_EQ(a.consumed_capacity[1].second.Value(), int64_t{31} << 30);
  EXPECT_EQ(view().usage()->shares[0], 2u);

  pl_->Unreserve(states["a"], PodWithClaims("a", {"a"}), "n1");
  EXPECT_EQ(view().usage()->shares[0], 1u);
  EXPECT_TRUE(reserve("c").ok());
  EXPECT_TRUE(view().CheckInvariants().ok()) << view().CheckInvariants().ToString();
}

TEST_F(DynamicResourcesTest, CapacityRequestsOnAPlainDeviceMustFitItsCapacity) {
  view().UpsertSlice(Slice("n1", kT4, 1));  // 16Gi, not shared
  view().UpsertClaim(Claim("big", {Exactly("g", Memory("20Gi"))}));
  view().UpsertClaim(Claim("small", {Exactly("g", Memory("8Gi"))}));
  framework::CycleState big_state;
  framework::CycleState small_state;
  api::Pod big = PodWithClaims("big", {"big"});
  api::Pod small = PodWithClaims("small", {"small"});
  ASSERT_TRUE(pl_->PreFilter(big_state, big, framework::Snapshot()).ok());
  EXPECT_EQ(pl_->Filter(big_state, big, Node("n1")).reason(), kReasonCannotAllocate);
  ASSERT_TRUE(pl_->PreFilter(small_state, small, framework::Snapshot()).ok());
  ASSERT_TRUE(pl_->Reserve(small_state, small, Node("n1")).ok());
  const api::DeviceResult r = view().GetClaim("ml", "small")->allocation->devices[0];
  EXPECT_TRUE(r.share_id.empty()) << "a plain device is held whole";
  EXPECT_TRUE(r.consumed_capacity.empty());
}

TEST_F(DynamicResourcesTest, APoolWithAnUnknownCounterSetIsNeverAllocated) {
  std::vector<api::ResourceSlicePtr> slices = MigSlices("n1", 1);
  auto parts = std::make_shared<api::ResourceSlice>(*slices[1]);
  parts->devices[1].consumes_counters[0].counter_set = "gpu-9";
  view().UpsertSlice(slices[0]);
  view().UpsertSlice(parts);
  view().UpsertClaim(Claim("one", {Exactly("g", Profile("1g.10gb"))}));
  framework::CycleState state;
  api::Pod pod = PodWithClaims("one", {"one"});
  ASSERT_TRUE(pl_->PreFilter(state, pod, framework::Snapshot()).ok());
  EXPECT_EQ(pl_->Filter(state, pod, Node("n1")).reason(), kReasonCannotAllocate);
  const auto index = view().devices();
  ASSERT_EQ(index->invalid_pools.size(), 1u);
  EXPECT_EQ(index->invalid_pools[0],
            "gpu.nvidia.com/n1: device \"gpu-0-3g-0\" draws on counter \"compute\" of counter "
            "set \"gpu-9\", which the pool does not publish");
}

}  // namespace
}  // namespace gpusched::plugins::dynamic_resources

namespace gpusched::plugins::dynamic_resources {
namespace {

// Extended resources backed by DRA (KEP-5004): `nvidia.com/gpu` a DeviceClass maps.
class ExtendedResourceTest : public DynamicResourcesTest {
 protected:
  void SetUp() override {
    DynamicResourcesTest::SetUp();
    auto cls = std::make_shared<api::DeviceClass>();
    cls->name = "gpu.example.com";
    cls->selectors = {"device.driver == \"gpu.nvidia.com\""};
    cls->extended_resource_name = "nvidia.com/gpu";
    view().UpsertDeviceClass(cls);
    view().UpsertSlice(Slice("dra-node", kA100, 4));
  }
  api::Pod GpuPod(const std::string& name, int64_t gpus) {
    api::Pod pod = testing::MakePod("ml", name).Gpus(gpus).Obj();
    pod.meta.uid = name + "-uid";
    return pod;
  }
};

TEST_F(ExtendedResourceTest, ClassResolvesExplicitAndImplicitNames) {
  EXPECT_EQ(view().ExtendedResourceClass("nvidia.com/gpu")->name, "gpu.example.com");
  EXPECT_EQ(
      view().ExtendedResourceClass("deviceclass.resource.kubernetes.io/gpu.example.com")->name,
      "gpu.example.com");
  EXPECT_EQ(view().ExtendedResourceClass("example.com/other"), nullptr);
  // Two classes claim the name: the newer wins.
  auto newer = std::make_shared<api::DeviceClass>();
  newer->name = "a-newer";
  newer->extended_resource_name = "nvidia.com/gpu";
  newer->creation_timestamp = common::TimePoint(std::chrono::seconds(100));
  view().UpsertDeviceClass(newer);
  EXPECT_EQ(view().ExtendedResourceClass("nvidia.com/gpu")->name, "a-newer");
  view().DeleteDeviceClass("a-newer");
  EXPECT_EQ(view().ExtendedResourceClass("nvidia.com/gpu")->name, "gpu.example.com");
}

TEST_F(ExtendedResourceTest, GpusOnADraOnlyNodeGetAClaimWrittenAsUpstream) {
  framework::CycleState state;
  api::Pod pod = GpuPod("train", 2);
  ASSERT_TRUE(pl_->PreFilter(state, pod, framework::Snapshot()).ok());
  ASSERT_TRUE(pl_->Filter(state, pod, Node("dra-node")).ok());
  EXPECT_EQ(pl_->Filter(state, pod, Node("empty-node")).reason(), kReasonCannotAllocate);
  ASSERT_TRUE(pl_->Reserve(state, pod, Node("dra-node")).ok());
  ASSERT_TRUE(pl_->PreBind(state, pod, "dra-node").ok());

  ASSERT_EQ(writer_.created.size(), 1u);
  const api::ResourceClaim& created = *writer_.created[0];
  EXPECT_TRUE(created.meta.name.starts_with("train-extended-resources-"));
  EXPECT_EQ(created.meta.name.size(), std::string("train-extended-resources-").size() + 5);
  EXPECT_EQ(created.meta.namespace_, "ml");
  ASSERT_EQ(created.meta.owner_references.size(), 1u);
  EXPECT_EQ(created.meta.owner_references[0].uid, "train-uid");
  EXPECT_TRUE(created.meta.owner_references[0].controller);
  EXPECT_EQ(*created.meta.Annotation(api::kExtendedResourceClaimAnnotation), "true");
  ASSERT_EQ(created.spec.requests.size(), 1u);
  EXPECT_EQ(created.spec.requests[0].exactly->device_class, "gpu.example.com");
  EXPECT_EQ(created.spec.requests[0].exactly->count, 2);
  EXPECT_FALSE(created.allocation.has_value());

  ASSERT_EQ(writer_.written.size(), 1u);  // the status: allocation and reservedFor
  EXPECT_EQ(writer_.written[0]->meta.name, created.meta.name);
  ASSERT_EQ(writer_.written[0]->allocation->devices.size(), 2u);
  EXPECT_EQ(writer_.written[0]->reserved_for[0].uid, "train-uid");

  ASSERT_EQ(writer_.pod_statuses.size(), 1u);
  const api::PodExtendedResourceClaimStatus& st = writer_.pod_statuses[0].second;
  EXPECT_EQ(st.resource_claim_name, created.meta.name);
  ASSERT_EQ(st.request_mappings.size(), 1u);
  EXPECT_EQ(st.request_mappings[0].resource_name, "nvidia.com/gpu");
  EXPECT_EQ(st.request_mappings[0].request_name, created.spec.requests[0].name);
}

TEST_F(ExtendedResourceTest, TheAssumedClaimHoldsTheDevicesAndUnreserveDeletesIt) {
  framework::CycleState s1;
  api::Pod p1 = GpuPod("p1", 3);
  ASSERT_TRUE(pl_->PreFilter(s1, p1, framework::Snapshot()).ok());
  ASSERT_TRUE(pl_->Reserve(s1, p1, Node("dra-node")).ok());
  // 1 of 4 devices left.
  framework::CycleState s2;
  api::Pod p2 = GpuPod("p2", 2);
  ASSERT_TRUE(pl_->PreFilter(s2, p2, framework::Snapshot()).ok());
  EXPECT_EQ(pl_->Filter(s2, p2, Node("dra-node")).reason(), kReasonCannotAllocate);
  ASSERT_TRUE(pl_->PreBind(s1, p1, "dra-node").ok());
  pl_->Unreserve(s1, p1, "dra-node");  // e.g. the bind failed
  ASSERT_EQ(writer_.deleted.size(), 1u);
  EXPECT_EQ(writer_.deleted[0], writer_.created[0]->meta.name);
  framework::CycleState s3;
  ASSERT_TRUE(pl_->PreFilter(s3, p2, framework::Snapshot()).ok());
  EXPECT_TRUE(pl_->Filter(s3, p2, Node("dra-node")).ok());
}

TEST_F(ExtendedResourceTest, ANodeWithTheDevicePluginNeedsNoClaim) {
  framework::CycleState state;
  api::Pod pod = GpuPod("train", 2);
  ASSERT_TRUE(pl_->PreFilter(state, pod, framework::Snapshot()).ok());
  framework::NodeInfo plugin_node;
  plugin_node.node = testing::MakeNode("plugin-node").Gpus(8).Ptr();
  EXPECT_TRUE(pl_->Filter(state, pod, plugin_node).ok());
  ASSERT_TRUE(pl_->Reserve(state, pod, plugin_node).ok());
  ASSERT_TRUE(pl_->PreBind(state, pod, "plugin-node").ok());
  EXPECT_TRUE(writer_.created.empty());
  EXPECT_TRUE(writer_.pod_statuses.empty());
}

TEST_F(ExtendedResourceTest, LooksAheadForTheClaimsThatWaitAcrossDraAndDevicePluginNodes) {
  // dra-node: 4 A100s (SetUp); t4-node: 4 T4s; plugin-node: the device plugin's 8 GPUs.
  view().UpsertSlice(Slice("t4-node", kT4, 4));
  framework::Snapshot snapshot;
  const std::vector<std::string> names = {"dra-node", "t4-node", "plugin-node"};
  for (int i = 0; i < 3; ++i) {
    framework::NodeInfo& slot = snapshot.MutableSlotForCache(i);
    slot.node = (i == 2 ? testing::MakeNode(names[2]).Gpus(8) : testing::MakeNode(names[i])).Ptr();
    slot.index = i;
    snapshot.IndexNameForCache(names[i], i);
  }
  snapshot.SetNodeCountForCache(3, 1);
  const std::vector<framework::NodeIndex> feasible = {0, 1, 2};
  auto scores = [&] {
    framework::CycleState state;
    api::Pod pod = GpuPod("plain", 1);
    EXPECT_TRUE(pl_->PreFilter(state, pod, snapshot).ok());
    EXPECT_TRUE(pl_->PreScore(state, pod, snapshot, feasible).ok());
    return std::vector<int64_t>{testing::ScoreOf(*pl_, state, pod, snapshot, 0),
                                testing::ScoreOf(*pl_, state, pod, snapshot, 1),
                                testing::ScoreOf(*pl_, state, pod, snapshot, 2)};
  };
  // Packing alone: a quarter of either DRA node, nothing on the device plugin's node.
  EXPECT_EQ(scores(), (std::vector<int64_t>{25, 25, 0}));
  // A claim waits for all four A100s: the pod must not take one (it serves the waiting pod
  // from the T4s or the device plugin: 51 + packing there).
  view().UpsertClaim(Claim(
      "four-a100", {Exactly("g", Choice(4,
                                        "device.attributes[\"gpu.nvidia.com\"].productName == "
                                        "\"NVIDIA A100-SXM4-80GB\""))}));
  EXPECT_EQ(scores(), (std::vector<int64_t>{12, 63, 51}));
}

TEST_F(ExtendedResourceTest, AStaleClaimOfAnEarlierAttemptIsDeletedFirst) {
  auto stale =
      Claim("train-extended-resources-abcde", {Exactly("container-0-request-1", Choice(2))});
  auto owned = std::make_shared<api::ResourceClaim>(*stale);
  owned->meta.owner_references.push_back({"v1", "Pod", "train", "train-uid", true});
  owned->meta.annotations.emplace_back(std::string(api::kExtendedResourceClaimAnnotation), "true");
  view().UpsertClaim(owned);
  framework::CycleState state;
  api::Pod pod = GpuPod("train", 2);
  const framework::Status st = pl_->PreFilter(state, pod, framework::Snapshot());
  EXPECT_EQ(st.code(), framework::Code::kUnschedulable);
  ASSERT_EQ(writer_.deleted.size(), 1u);
  EXPECT_EQ(writer_.deleted[0], "train-extended-resources-abcde");
}

}  // namespace
}  // namespace gpusched::plugins::dynamic_resources
