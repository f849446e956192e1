// SPDX-License-Identifier: Apache-2.0
// The DRA model: pod spec.resourceClaims / status.resourceClaimStatuses, DeviceClass,
// ResourceSlice, DeviceTaintRule, ResourceClaim and ResourceClaimTemplate decoding, with
// field-path errors.
#include "src/api/decode_dra.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "src/api/decode.h"

namespace gpusched::api {
namespace {

boost::json::value Json(std::string_view text) {
  auto v = ParseJson(text, "test");
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : boost::json::value();
}

TEST(DecodePodClaimsTest, ClaimsAndGeneratedNames) {
  auto pod = DecodePod(Json(R"({"metadata":{"name":"p","namespace":"ml"},"spec":{
      "containers":[{"name":"c"}],
      "resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"one-gpu"},
                        {"name":"shared","resourceClaimName":"team-gpus"}]},
      "status":{"resourceClaimStatuses":[{"name":"gpu","resourceClaimName":"p-gpu-x7k2"}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  ASSERT_NE(pod->resource_claims, nullptr);
  const PodResourceClaims& c = *pod->resource_claims;
  ASSERT_EQ(c.claims.size(), 2u);
  EXPECT_EQ(c.ClaimName(0), "p-gpu-x7k2");
  EXPECT_EQ(c.ClaimName(1), "team-gpus");

  auto waiting = DecodePod(Json(R"({"metadata":{"name":"q"},"spec":{"containers":[{"name":"c"}],
      "resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"one-gpu"}]}})"));
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->resource_claims->ClaimName(0), std::nullopt);

  auto none = DecodePod(Json(R"({"metadata":{"name":"r"},"spec":{"containers":[{"name":"c"}]}})"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->resource_claims, nullptr);

  auto both = DecodePod(Json(R"({"metadata":{"name":"s"},"spec":{"containers":[{"name":"c"}],
      "resourceClaims":[{"name":"gpu"}]}})"));
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(std::string(both.status().message()),
              ::testing::HasSubstr("spec.resourceClaims[0].resourceClaimName"));
}

TEST(DecodeDraTest, SliceQualifiesNamesAndReadsEveryAttributeKind) {
  auto s = DecodeResourceSlice(Json(R"({"kind":"ResourceSlice","metadata":{"name":"n1-gpu"},
      "spec":{"driver":"gpu.nvidia.com","nodeName":"n1",
              "pool":{"name":"n1","generation":3,"resourceSliceCount":1},
              "devices":[{"name":"gpu-0","attributes":{
                   "productName":{"string":"NVIDIA A100-SXM4-80GB"},
                   "index":{"int":0},"mig":{"bool":false},
                   "driverVersion":{"version":"550.54.15"},
                   "resource.kubernetes.io/pcieRoot":{"string":"pci0000:00"}},
                 "capacity":{"memory":{"value":"80Gi"}}}]}})"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->pool_generation, 3);
  ASSERT_EQ(s->devices.size(), 1u);
  const Device& d = s->devices[0];
  ASSERT_NE(d.Attribute("gpu.nvidia.com/productName"), nullptr);
  EXPECT_EQ(d.Attribute("gpu.nvidia.com/productName")->string_value, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(d.Attribute("gpu.nvidia.com/index")->kind, DeviceAttribute::Kind::kInt);
  EXPECT_EQ(d.Attribute("gpu.nvidia.com/driverVersion")->kind, DeviceAttribute::Kind::kVersion);
  EXPECT_NE(d.Attribute("resource.kubernetes.io/pcieRoot"), nullptr);
  ASSERT_EQ(d.capacity.size(), 1u);
  EXPECT_EQ(d.capacity[0].first, "gpu.nvidia.com/memory");
  EXPECT_EQ(d.capacity[0].second.Value(), int64_t{80} << 30);

  auto bad = DecodeResourceSlice(Json(R"({"metadata":{"name":"x"},"spec":{"driver":"d",
      "nodeName":"n","pool":{"name":"p"},"devices":[{"name":"g","capacity":{"m":{"value":"lots"}}}]}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("resourceslice x: spec.devices[0].capacity.m.value"));
  auto two = DecodeResourceSlice(Json(R"({"metadata":{"name":"y"},"spec":{"driver":"d",
      "nodeName":"n","allNodes":true,"pool":{"name":"p"}}})"));
  EXPECT_FALSE(two.ok());
}

TEST(DecodeDraTest, SharedCountersAndWhatDevicesDrawOnThem) {
  auto counters = DecodeResourceSlice(Json(R"({"metadata":{"name":"n1-counters"},
      "spec":{"driver":"gpu.nvidia.com","nodeName":"n1","pool":{"name":"n1","resourceSliceCount":2},
              "sharedCounters":[{"name":"gpu-0-counters","counters":{
                   "memory":{"value":"80Gi"},"slices":{"value":"7"}}}]}})"));
  ASSERT_TRUE(counters.ok()) << counters.status().ToString();
  ASSERT_EQ(counters->shared_counters.size(), 1u);
  const CounterSet& set = counters->shared_counters[0];
  EXPECT_EQ(set.name, "gpu-0-counters");
  ASSERT_EQ(set.counters.size(), 2u);
  EXPECT_EQ(set.counters[0].first, "memory") << "counter names are not qualified";
  EXPECT_EQ(set.counters[0].second.Value(), 80LL << 30);
  EXPECT_EQ(set.counters[1].second.Value(), 7);

  auto parts = DecodeResourceSlice(Json(R"({"metadata":{"name":"n1-gpu"},
      "spec":{"driver":"gpu.nvidia.com","nodeName":"n1","pool":{"name":"n1","resourceSliceCount":2},
              "devices":[{"name":"gpu-0-mig-3g-0","consumesCounters":[
                  {"counterSet":"gpu-0-counters","counters":{"memory":{"value":"40Gi"},
                                                             "slices":{"value":"3"}}}]}]}})"));
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->devices[0].consumes_counters.size(), 1u);
  EXPECT_EQ(parts->devices[0].consumes_counters[0].counter_set, "gpu-0-counters");
  EXPECT_EQ(parts->devices[0].consumes_counters[0].counters[1].second.Value(), 3);

  auto empty = DecodeResourceSlice(Json(R"({"metadata":{"name":"x"},
      "spec":{"driver":"d","nodeName":"n1","pool":{"name":"n1"},
              "sharedCounters":[{"name":"s","counters":{}}]}})"));
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(std::string(empty.status().message()),
              ::testing::HasSubstr("spec.sharedCounters[0].counters"));
  auto unnamed = DecodeResourceSlice(Json(R"({"metadata":{"name":"y"},
      "spec":{"driver":"d","nodeName":"n1","pool":{"name":"n1"},
              "devices":[{"name":"a","consumesCounters":[{"counters":{"c":{"value":"1"}}}]}]}})"));
  ASSERT_FALSE(unnamed.ok());
  EXPECT_THAT(std::string(unnamed.status().message()),
              ::testing::HasSubstr("spec.devices[0].consumesCounters[0].counterSet"));
}

TEST(DecodeDraTest, ConsumableCapacityPoliciesRequestsAndShares) {
  // HAMi's DRA driver publishes one shared GPU: cores and memory with request policies.
  auto slice = DecodeResourceSlice(Json(R"({"metadata":{"name":"n1-gpu"},
      "spec":{"driver":"hami.io","nodeName":"n1","pool":{"name":"n1"},
              "devices":[{"name":"gpu-0","allowMultipleAllocations":true,"capacity":{
                  "cores":{"value":"100","requestPolicy":{"default":"100",
                           "validRange":{"min":"1","max":"100","step":"1"}}},
                  "memory":{"value":"80Gi","requestPolicy":{"default":"80Gi",
                            "validValues":["10Gi","20Gi","40Gi","80Gi"]}},
                  "power":{"value":"700"}}}]}})"));
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  const Device& d = slice->devices[0];
  EXPECT_TRUE(d.allow_multiple_allocations);
  ASSERT_EQ(d.capacity_policies.size(), 2u) << "power has no policy";
  EXPECT_EQ(d.capacity_policies[0].first, "hami.io/cores");
  const CapacityRequestPolicy* memory = d.Policy("hami.io/memory");
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->valid_values.size(), 4u);
  EXPECT_EQ(memory->default_value->Value(), 80LL << 30);
  EXPECT_EQ(d.Policy("hami.io/cores")->range_step->Value(), 1);
  EXPECT_EQ(d.Policy("hami.io/power"), nullptr);

  auto claim = DecodeResourceClaim(Json(R"({"metadata":{"name":"half","namespace":"ml"},
      "spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"hami",
          "capacity":{"requests":{"memory":"30Gi","cores":"50"}}}}]}},
      "status":{"allocation":{"devices":{"results":[{"request":"gpu","driver":"hami.io",
          "pool":"n1","device":"gpu-0","shareID":"9a3c1e0b-5d2f-4c1a-8b7e-0f1e2d3c4b5a",
          "consumedCapacity":{"memory":"40Gi","cores":"50","power":"700"}}]}}}})"));
  ASSERT_TRUE(claim.ok()) << claim.status().ToString();
  const Counters& asked = claim->spec.requests[0].exactly->capacity_requests;
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[0].first, "cores") << "request names stay as written";
  EXPECT_EQ(asked[1].second.Value(), 30LL << 30);
  const DeviceResult& r = claim->allocation->devices[0];
  EXPECT_EQ(r.share_id, "9a3c1e0b-5d2f-4c1a-8b7e-0f1e2d3c4b5a");
  ASSERT_EQ(r.consumed_capacity.size(), 3u);
  EXPECT_EQ(r.consumed_capacity[1].first, "hami.io/memory");
  EXPECT_EQ(r.consumed_capacity[1].second.Value(), 40LL << 30);

  auto unsorted = DecodeResourceSlice(Json(R"({"metadata":{"name":"x"},
      "spec":{"driver":"d","nodeName":"n1","pool":{"name":"n1"},
              "devices":[{"name":"a","allowMultipleAllocations":true,"capacity":{"m":{
                  "value":"8","requestPolicy":{"default":"4","validValues":["4","2"]}}}}]}})"));
  ASSERT_FALSE(unsorted.ok());
  EXPECT_THAT(std::string(unsorted.status().message()),
              ::testing::HasSubstr("spec.devices[0].capacity.m.requestPolicy.validValues: must be "
                                   "sorted in ascending order"));
}

TEST(DecodeDraTest, ClaimWithRequestsConstraintsAndAllocation) {
  auto c = DecodeResourceClaim(Json(R"({"metadata":{"name":"train","namespace":"ml",
        "resourceVersion":"7"},
      "spec":{"devices":{
        "requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","count":4,
                       "selectors":[{"cel":{"expression":"device.driver == 'gpu.nvidia.com'"}}]}},
                    {"name":"any","firstAvailable":[
                       {"name":"big","deviceClassName":"gpu.nvidia.com","allocationMode":"All"},
                       {"name":"small","deviceClassName":"gpu.nvidia.com"}]}],
        "constraints":[{"requests":["gpus"],"matchAttribute":"gpu.nvidia.com/cliqueId"}]}},
      "status":{"allocation":{"devices":{"results":[
          {"request":"gpus","driver":"gpu.nvidia.com","pool":"n1","device":"gpu-0"}]},
        "nodeSelector":{"nodeSelectorTerms":[{"matchFields":[
          {"key":"metadata.name","operator":"In","values":["n1"]}]}]}},
        "reservedFor":[{"resource":"pods","name":"p","uid":"u1"},
          {"apiGroup":"scheduling.k8s.io","resource":"podgroups","name":"g","uid":"u2"}]}})"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->spec.requests.size(), 2u);
  EXPECT_EQ(c->spec.requests[0].exactly->count, 4);
  EXPECT_EQ(c->spec.requests[0].exactly->selectors.size(), 1u);
  ASSERT_EQ(c->spec.requests[1].first_available.size(), 2u);
  EXPECT_EQ(c->spec.requests[1].first_available[0].choice.mode, AllocationMode::kAll);
  EXPECT_EQ(c->spec.constraints[0].match_attribute, "gpu.nvidia.com/cliqueId");
  ASSERT_TRUE(c->allocation.has_value());
  EXPECT_EQ(c->allocation->devices[0].device, "gpu-0");
  ASSERT_TRUE(c->allocation->node_selector.has_value());
  EXPECT_TRUE(c->allocation->node_selector->Matches(Labels(), "n1"));
  EXPECT_EQ(c->reserved_for[0], (ClaimConsumer{"pods", "p", "u1", ""}));
  EXPECT_EQ(c->reserved_for[1], (ClaimConsumer{"podgroups", "g", "u2", "scheduling.k8s.io"}));

  auto bad = DecodeResourceClaim(Json(R"({"metadata":{"name":"t","namespace":"ml"},
      "spec":{"devices":{"requests":[{"name":"g","exactly":{"deviceClassName":"c",
        "allocationMode":"Some"}}]}}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("resourceclaim ml/t: spec.devices.requests[0].exactly."
                                   "allocationMode: invalid value \"Some\""));
}

TEST(DecodeDraTest, ClassAndTemplate) {
  auto k = DecodeDeviceClass(Json(R"({"metadata":{"name":"gpu.nvidia.com"},"spec":{"selectors":[
      {"cel":{"expression":"device.driver == 'gpu.nvidia.com'"}}]}})"));
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->selectors.size(), 1u);
  auto t = DecodeResourceClaimTemplate(Json(R"({"metadata":{"name":"one-gpu","namespace":"ml"},
      "spec":{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{
        "deviceClassName":"gpu.nvidia.com"}}]}}}})"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->spec.requests[0].exactly->count, 1);
}

// A device taint's effect: NoSchedule and NoExecute act; None and effects this version does not
// know are informational (kNone), as resource.k8s.io/v1 tells consumers; a missing one is an error.
TEST(DecodeDraTest, DeviceTaintEffects) {
  auto s = DecodeResourceSlice(Json(R"({"metadata":{"name":"n1"},"spec":{"driver":"d",
      "nodeName":"n1","pool":{"name":"n1"},"devices":[{"name":"g0","taints":[
        {"key":"a","value":"1","effect":"NoSchedule"},{"key":"b","effect":"NoExecute"},
        {"key":"c","effect":"None"},{"key":"d","effect":"SomeFutureEffect"}]}]}})"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const std::vector<Taint>& t = s->devices[0].taints;
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(common::Str(t[0].key), "a");
  EXPECT_EQ(common::Str(t[0].value), "1");
  EXPECT_EQ(t[0].effect, TaintEffect::kNoSchedule);
  EXPECT_EQ(t[1].effect, TaintEffect::kNoExecute);
  EXPECT_EQ(t[2].effect, TaintEffect::kNone);
  EXPECT_EQ(t[3].effect, TaintEffect::kNone);

  auto bad = DecodeResourceSlice(Json(R"({"metadata":{"name":"n1"},"spec":{"driver":"d",
      "nodeName":"n1","pool":{"name":"n1"},"devices":[{"name":"g0","taints":[{"key":"a"}]}]}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("spec.devices[0].taints[0].effect"));
}

TEST(DecodeDraTest, DeviceTaintRule) {
  auto r = DecodeDeviceTaintRule(Json(R"({"apiVersion":"resource.k8s.io/v1",
      "kind":"DeviceTaintRule","metadata":{"name":"gpu-3-broken","resourceVersion":"7"},
      "spec":{"deviceSelector":{"driver":"gpu.nvidia.com","pool":"n1","device":"gpu-3"},
              "taint":{"key":"example.com/xid","value":"79","effect":"NoSchedule"}}})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->name, "gpu-3-broken");
  EXPECT_EQ(r->resource_version, "7");
  EXPECT_TRUE(r->has_selector);
  EXPECT_EQ(r->driver, "gpu.nvidia.com");
  EXPECT_EQ(r->pool, "n1");
  EXPECT_EQ(r->device, "gpu-3");
  EXPECT_EQ(common::Str(r->taint.key), "example.com/xid");
  EXPECT_EQ(r->taint.effect, TaintEffect::kNoSchedule);

  // An empty selector (every device) and none at all (no device) are told apart.
  auto all = DecodeDeviceTaintRule(Json(R"({"metadata":{"name":"all"},"spec":{
      "deviceSelector":{},"taint":{"key":"k","effect":"NoExecute"}}})"));
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_TRUE(all->has_selector);
  EXPECT_EQ(all->driver, std::nullopt);
  auto none = DecodeDeviceTaintRule(
      Json(R"({"metadata":{"name":"none"},"spec":{"taint":{"key":"k","effect":"None"}}})"));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_selector);
  EXPECT_EQ(none->taint.effect, TaintEffect::kNone);

  auto no_taint = DecodeDeviceTaintRule(
      Json(R"({"metadata":{"name":"t"},"spec":{"deviceSelector":{"driver":"d"}}})"));
  ASSERT_FALSE(no_taint.ok());
  EXPECT_THAT(std::string(no_taint.status().message()),
              ::testing::HasSubstr("devicetaintrule t: spec.taint"));
  auto wrong_kind = DecodeDeviceTaintRule(Json(R"({"kind":"ResourceSlice","metadata":{"name":"t"},
      "spec":{"taint":{"key":"k","effect":"None"}}})"));
  ASSERT_FALSE(wrong_kind.ok());
  EXPECT_THAT(std::string(wrong_kind.status().message()), ::testing::HasSubstr("kind"));
}

}  // namespace
}  // namespace gpusched::api
