// SPDX-License-Identifier: Apache-2.0
#include "src/kube/informer/informer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "src/common/mutex.h"
#include "src/kube/informer/fake_rest_client_for_test.h"

namespace gpusched::kube::informer {
namespace {

using ::testing::ElementsAre;
using testing::FakeRestClient;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ScriptedStream;

// Records each notification as "verb:name@rv" ("update:name@oldrv->newrv").
class RecordingHandler final : public ClusterEventHandler {
 public:
  void OnNodeAdd(api::NodePtr n) override {
    Log("node-add:" + Id(n->meta));
    last_node = n;
  }
  void OnNodeUpdate(api::NodePtr o, api::NodePtr n) override {
    Log("node-update:" + Id(o->meta) + "->" + n->meta.resource_version);
    last_node = n;
  }
  void OnNodeDelete(api::NodePtr n) override { Log("node-delete:" + Id(n->meta)); }
  void OnPodAdd(api::PodPtr p) override {
    Log("add:" + Id(p->meta));
    last_pod = p;
  }
  void OnPodUpdate(api::PodPtr o, api::PodPtr p) override {
    Log("update:" + Id(o->meta) + "->" + p->meta.resource_version);
    last_pod = p;
  }
  void OnPodDelete(api::PodPtr p) override { Log("delete:" + Id(p->meta)); }
  void OnPdbAdd(api::PdbPtr p) override {
    Log("pdb-add:" + Id(p->meta));
    last_pdb = p;
  }
  void OnPdbUpdate(api::PdbPtr o, api::PdbPtr p) override {
    Log("pdb-update:" + Id(o->meta) + "->" + p->meta.resource_version);
    last_pdb = p;
  }
  void OnPdbDelete(api::PdbPtr p) override { Log("pdb-delete:" + Id(p->meta)); }
  void OnDraAdd(const DraObject& o) override {
    Log("dra-add:" + DraId(o));
    last_dra = o;
  }
  void OnDraUpdate(const DraObject& o, const DraObject& n) override {
    Log("dra-update:" + DraId(o) + "->" + DraId(n));
    last_dra = n;
  }
  void OnDraDelete(const DraObject& o) override { Log("dra-delete:" + DraId(o)); }
  // "pg-add:<key> <apiVersion> min=<minMember>".
  void OnPodGroupAdd(api::PodGroupPtr g) override {
    Log("pg-add:" + g->Key() + " " + g->api_version + " min=" + std::to_string(g->min_member));
  }

  std::vector<std::string> Take() {
    common::MutexLock l(mu_);
    return std::exchange(log_, {});
  }
  api::PodPtr last_pod;
  api::NodePtr last_node;
  api::PdbPtr last_pdb;
  std::optional<DraObject> last_dra;

 private:
  static std::string Id(const api::ObjectMeta& m) { return m.name + "@" + m.resource_version; }
  // "class:name@rv", "slice:name@rv", "rule:name@rv", "claim:ns/name@rv".
  static std::string DraId(const DraObject& o) {
    if (const auto* r = std::get_if<api::DeviceTaintRulePtr>(&o)) {
      return "rule:" + (*r)->name + "@" + (*r)->resource_version;
    }
    if (const auto* c = std::get_if<api::DeviceClassPtr>(&o)) {
      return "class:" + (*c)->name + "@" + (*c)->resource_version;
    }
    if (const auto* s = std::get_if<api::ResourceSlicePtr>(&o)) {
      return "slice:" + (*s)->name + "@" + (*s)->resource_version;
    }
    const api::ResourceClaim& c = *std::get<api::ResourceClaimPtr>(o);
    return "claim:" + c.meta.namespace_ + "/" + Id(c.meta);
  }
  void Log(std::string s) {
    common::MutexLock l(mu_);
    log_.push_back(std::move(s));
  }
  common::Mutex mu_;
  std::vector<std::string> log_ GPUSCHED_GUARDED_BY(mu_);
};

std::string Pod(std::string_view name, std::string_view rv, std::string_view uid = "",
                std::string_view extra_meta = "", std::string_view resources = "{}") {
  std::string u = uid.empty() ? "uid-" + std::string(name) : std::string(uid);
  return R"({"metadata":{"name":")" + std::string(name) + R"(","namespace":"ns","uid":")" + u +
         R"(","resourceVersion":")" + std::string(rv) + "\"" + std::string(extra_meta) +
         R"(},"spec":{"schedulerName":"gpu-scheduler","containers":[{"name":"c","resources":)" +
         std::string(resources) + R"(}]},"status":{"phase":"Pending"}})";
}
std::string Node(std::string_view name, std::string_view rv, std::string_view labels = "{}") {
  return R"({"metadata":{"name":")" + std::string(name) + R"(","uid":"uid-)" + std::string(name) +
         R"(","resourceVersion":")" + std::string(rv) + R"(","labels":)" + std::string(labels) +
         R"(},"status":{"allocatable":{"cpu":"32","nvidia.com/gpu":"8"}}})";
}
std::string Pdb(std::string_view name, std::string_view rv, int allowed,
                std::string_view uid = "") {
  std::string u = uid.empty() ? "uid-" + std::string(name) : std::string(uid);
  return R"({"metadata":{"name":")" + std::string(name) + R"(","namespace":"ns","uid":")" + u +
         R"(","resourceVersion":")" + std::string(rv) +
         R"("},"spec":{"selector":{"matchLabels":{"app":"web"}}},"status":{"disruptionsAllowed":)" +
         std::to_string(allowed) + "}}";
}
std::string List(std::vector<std::string> items, std::string_view rv) {
  std::string s = R"({"metadata":{"resourceVersion":")" + std::string(rv) + R"("},"items":[)";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? "," : "") + items[i];
  return s + "]}";
}
std::string Event(std::string_view type, const std::string& object) {
  return R"({"type":")" + std::string(type) + R"(","object":)" + object + "}";
}

InformerOptions Fast() {
  InformerOptions o;
  o.reflector.min_watch_duration = common::Duration(0);
  o.reflector.initial_backoff = std::chrono::milliseconds(1);
  o.reflector.max_backoff = std::chrono::milliseconds(2);
  return o;
}

class InformerTest : public ::testing::Test {
 protected:
  FakeRestClient client_;
  RecordingHandler handler_;
  common::FakeClock clock_;
};

TEST_F(InformerTest, TheFirstListAddsEveryObjectAndSyncs) {
  client_.PushResponse(200, List({Pod("a", "1"), Pod("b", "2")}, "5"));
  auto inf = NewPodInformer(client_, handler_, clock_, Fast());
  EXPECT_FALSE(inf->HasSynced());
  ASSERT_TRUE(inf->StepForTest().ok());
  EXPECT_TRUE(inf->HasSynced());
  EXPECT_EQ(inf->Size(), 2u);
  EXPECT_THAT(handler_.Take(), ElementsAre("add:a@1", "add:b@2"));
  // kube-scheduler's selector: terminal pods are not listed.
  EXPECT_EQ(client_.requests()[0].path, "/api/v1/pods");
  EXPECT_EQ(client_.Query(0, "fieldSelector"), std::string(kNonTerminalPodsSelector));
}

TEST_F(InformerTest, WatchEventsBecomeNotificationsWithTheOldObject) {
  client_.PushResponse(200, List({Pod("a", "1")}, "5"));
  client_.PushStream({{
                          Event("ADDED", Pod("b", "6")), Event("MODIFIED", Pod("a", "7")),
                          Event("MODIFIED", Pod("a", "7")),  // same version: nothing
                          Event("DELETED", Pod("b", "8")), Event("DELETED", Pod("never-seen", "9")),
                          Event("MODIFIED", Pod("c", "10")),  // unknown: an add
                      },
                      {}});
  auto inf = NewPodInformer(client_, handler_, clock_, Fast());
  ASSERT_TRUE(inf->StepForTest().ok());
  ASSERT_TRUE(inf->StepForTest().ok());
  EXPECT_THAT(handler_.Take(),
              ElementsAre("add:a@1", "add:b@6", "update:a@1->7", "delete:b@8", "add:c@10"));
  EXPECT_EQ(inf->Size(), 2u);
}

TEST_F(InformerTest, ARelistDeliversTheDifferences) {
  // Before: a, b, c, d. While the watch was away: a changed, b was deleted, c unchanged, d was
  // deleted and re-created under the same name (new UID), e was created.
  client_.PushResponse(200,
                       List({Pod("a", "1"), Pod("b", "2"), Pod("c", "3"), Pod("d", "4")}, "5"));
  client_.PushStream({{Event("ERROR", R"({"kind":"Status","code":410})")}, {}});
  client_.PushResponse(
      200, List({Pod("a", "20"), Pod("c", "3"), Pod("d", "21", "uid-d2"), Pod("e", "22")}, "30"));
  auto inf = NewPodInformer(client_, handler_, clock_, Fast());
  ASSERT_TRUE(inf->StepForTest().ok());
  handler_.Take();
  EXPECT_EQ(inf->StepForTest().code(), common::StatusCode::kOutOfRange);
  ASSERT_TRUE(inf->StepForTest().ok());
  EXPECT_THAT(handler_.Take(),
              ElementsAre("delete:b@2",  // last known state: the final one was never seen
                          "update:a@1->20", "delete:d@4", "add:d@21", "add:e@22"));
  EXPECT_EQ(inf->Size(), 4u);
  EXPECT_EQ(inf->reflector().last_resource_version(), "30");
}

TEST_F(InformerTest, ObjectsThatDoNotDecodeAreSkippedAndTheOldVersionKept) {
  const std::string bad_cpu = R"({"requests":{"cpu":"1.2.3"}})";
  client_.PushResponse(200, List({Pod("a", "1"), Pod("bad", "2", "", "", bad_cpu)}, "5"));
  client_.PushStream({{
                          Event("MODIFIED", Pod("a", "6", "", "", bad_cpu)),
                          Event("ADDED", R"({"metadata":{}})"),
                          Event("ADDED", R"({"metadata":{"name":"x","namespace":"ns"},"spec":7})"),
                          Event("ADDED", Pod("z", "7")),
                      },
                      {}});
  client_.PushStream({{Event("DELETED", Pod("a", "8", "", "", bad_cpu))}, {}});
  auto inf = NewPodInformer(client_, handler_, clock_, Fast());
  ASSERT_TRUE(inf->StepForTest().ok());
  ASSERT_TRUE(inf->StepForTest().ok());
  EXPECT_THAT(handler_.Take(), ElementsAre("add:a@1", "add:z@7"));
  // The delete of an undecodable final state still goes out, with the last version we knew.
  ASSERT_TRUE(inf->StepForTest().ok());
  EXPECT_THAT(handler_.Take(), ElementsAre("delete:a@1"));
}

TEST_F(InformerTest, MalformedGpuAnnotationsStillDeliverThePodWithAReason) {
  client_.PushResponse(200,
                       List({Pod("p", "1", "", R"(,"annotations":{"gpu.nvidia.com/memory":"lots"})",
                                 R"({"limits":{"nvidia.com/gpu":"1"}})")},
                            "5"));
  auto inf = NewPodInformer(client_, handler_, clock_, Fast());
  ASSERT_TRUE(inf->StepForTest().ok());
  EXPECT_THAT(handler_.Take(), ElementsAre("add:p@1"));
  ASSERT_NE(handler_.last_pod, nullptr);
  EXPECT_THAT(handler_.last_pod->gpu_error, HasSubstr("gpu.nvidia.com/memory"));
}

TEST_F(InformerTest, NodesAreDecodedAndAMalformedCountLabelIsOnlyAWarning) {
  client_.PushResponse(200, List({Node("n1", "1", R"({"gpu.nvidia.com/count":"eight"})")}, "5"));
  client_.PushStream({{Event("MODIFIED", Node("n1", "6", R"({"gpu.nvidia.com/count":"4"})")),
                       Event("DELETED", Node("n1", "7"))},
                      {}});
  auto inf = NewNodeInformer(client_, handler_, clock_, Fast());
  ASSERT_TRUE(inf->StepForTest().ok());
  EXPECT_EQ(client_.requests()[0].path, "/api/v1/nodes");
  EXPECT_EQ(client_.Query(0, "fieldSelector"), std::nullopt);
  ASSERT_NE(handler_.last_node, nullptr);
  EXPECT_THAT(handler_.last_node->gpu_error, HasSubstr("gpu.nvidia.com/count"));
  EXPECT_EQ(handler_.last_node->gpu.count, 8);  // from allocatable
  ASSERT_TRUE(inf->StepForTest().ok());
  EXPECT_THAT(handler_.Take(),
              ElementsAre("node-add:n1@1", "node-update:n1@1->6", "node-delete:n1@7"));
  EXPECT_EQ(inf->Size(), 0u);
}

TEST_F(InformerTest, PodDisruptionBudgetsAreListedWatchedAndDecoded) {
  const std::string bad_selector =
      R"({"metadata":{"name":"bad","namespace":"ns","uid":"u","resourceVersion":"3"},)"
      R"("spec":{"selector":{"matchExpressions":[{"key":"app","operator":"Near"}]}}})";
  client_.PushResponse(200, List({Pdb("web", "1", 1), bad_selector}, "5"));
  client_.PushStream({{Event("MODIFIED", Pdb("web", "6", 0)), Event("ADDED", Pdb("db", "7", 2)),
                       Event("DELETED", Pdb("web", "8", 0))},
                      {}});
  client_.PushStream({{Event("ERROR", R"({"kind":"Status","code":410})")}, {}});
  client_.PushResponse(200, List({Pdb("db", "9", 2, "uid-db2")}, "10"));
  auto inf = NewPdbInformer(client_, handler_, clock_, Fast());
  ASSERT_TRUE(inf->StepForTest().ok());
  EXPECT_EQ(client_.requests()[0].path, "/apis/policy/v1/poddisruptionbudgets");
  EXPECT_EQ(client_.Query(0, "fieldSelector"), std::nullopt);
  EXPECT_EQ(inf->Size(), 1u);  // the one whose selector does not decode is skipped
  ASSERT_NE(handler_.last_pdb, nullptr);
  EXPECT_EQ(handler_.last_pdb->disruptions_allowed, 1);
  ASSERT_TRUE(inf->StepForTest().ok());
  EXPECT_EQ(handler_.last_pdb->meta.name, "db");
  EXPECT_EQ(handler_.last_pdb->disruptions_allowed, 2);
  EXPECT_EQ(inf->Size(), 1u);
  EXPECT_EQ(inf->StepForTest().code(), common::StatusCode::kOutOfRange);
  ASSERT_TRUE(inf->StepForTest().ok());  // the relist: db was re-created under a new uid
  EXPECT_THAT(handler_.Take(), ElementsAre("pdb-add:web@1", "pdb-update:web@1->6", "pdb-add:db@7",
                                           "pdb-delete:web@8", "pdb-delete:db@7", "pdb-add:db@9"));
  EXPECT_EQ(inf->Size(), 1u);
}

std::string DeviceClass(std::string_view name, std::string_view rv) {
  return R"({"metadata":{"name":")" + std::string(name) + R"(","resourceVersion":")" +
         std::string(rv) +
         R"("},"spec":{"selectors":[{"cel":{"expression":"device.driver == \"gpu.nvidia.com\""}}]}})";
}
std::string TaintRule(std::string_view name, std::string_view rv, std::string_view effect) {
  return R"({"metadata":{"name":")" + std::string(name) + R"(","resourceVersion":")" +
         std::string(rv) + R"("},"spec":{"deviceSelector":{"device":"gpu-0"},"taint":{)" +
         R"("key":"broken","effect":")" + std::string(effect) + R"("}}})";
}
std::string Slice(std::string_view name, std::string_view rv, std::string_view memory) {
  return R"({"metadata":{"name":")" + std::string(name) + R"(","resourceVersion":")" +
         std::string(rv) +
         R"("},"spec":{"driver":"gpu.nvidia.com","nodeName":"n1","pool":{"name":"n1",)"
         R"("generation":1,"resourceSliceCount":1},"devices":[{"name":"gpu-0","attributes":{)"
         R"("productName":{"string":"NVIDIA H100 80GB HBM3"},"cliqueId":{"string":"c0"}},)"
         R"("capacity":{"memory":{"value":")" +
         std::string(memory) + R"("}}}]}})";
}
std::string Claim(std::string_view name, std::string_view rv, std::string_view status = "{}") {
  return R"({"metadata":{"name":")" + std::string(name) + R"(","namespace":"ml","uid":"uid-)" +
         std::string(name) + R"(","resourceVersion":")" + std::string(rv) +
         R"("},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{)"
         R"("deviceClassName":"gpu.nvidia.com","count":2}}]}},"status":)" +
         std::string(status) + "}";
}

// A built-in kind's LIST items carry no apiVersion (its watch events do): the gang informers,
// whose decoder tells the APIs apart by it, take their collection's.
TEST_F(InformerTest, GangPoliciesOfBuiltInKindsListedWithoutApiVersionAreDecoded) {
  const std::string pod_group =
      R"({"metadata":{"name":"train","namespace":"ml","uid":"u1","resourceVersion":"2"},)"
      R"("spec":{"schedulingPolicy":{"gang":{"minCount":4}}}})";
  client_.PushResponse(200, List({pod_group}, "5"));
  client_.PushStream({{Event("ADDED", R"({"apiVersion":"scheduling.k8s.io/v1alpha3",)"
                                      R"("kind":"PodGroup","metadata":{"name":"eval",)"
                                      R"("namespace":"ml","uid":"u2","resourceVersion":"6"},)"
                                      R"("spec":{"schedulingPolicy":{"gang":{"minCount":2}}}})")},
                      {}});
  InformerOptions native = Fast();
  native.reflector.path = "/apis/scheduling.k8s.io/v1alpha3/podgroups";
  auto inf = NewPodGroupInformer(client_, handler_, clock_, GangPolicyApi::kNative, native);
  ASSERT_TRUE(inf->StepForTest().ok());
  ASSERT_TRUE(inf->StepForTest().ok());
  EXPECT_EQ(client_.requests()[0].path, "/apis/scheduling.k8s.io/v1alpha3/podgroups");
  EXPECT_THAT(handler_.Take(),
              ElementsAre("pg-add:native:ml/train scheduling.k8s.io/v1alpha3 min=4",
                          "pg-add:native:ml/eval scheduling.k8s.io/v1alpha3 min=2"));

  client_.PushResponse(
      200, List({R"({"metadata":{"name":"llm","namespace":"ml","uid":"u3","resourceVersion":"3"},)"
                 R"("spec":{"podGroups":[{"name":"w","policy":{"gang":{"minCount":3}}}]}})"},
                "7"));
  auto workloads = NewPodGroupInformer(client_, handler_, clock_, GangPolicyApi::kWorkload, Fast());
  ASSERT_TRUE(workloads->StepForTest().ok());
  EXPECT_THAT(handler_.Take(), ElementsAre("pg-add:workload:ml/llm/w  min=3"));
}

TEST_F(InformerTest, DraObjectsAreListedWatchedDecodedAndBadOnesSkipped) {
  struct Case {
    std::string name;
    DraKind kind;
    std::string path;
    std::vector<std::string> listed;  // the last one does not decode
    std::vector<std::string> watched;
    std::vector<std::string> want;
  };
  const std::string allocated =
      R"({"allocation":{"devices":{"results":[{"request":"gpu","driver":"gpu.nvidia.com",)"
      R"("pool":"n1","device":"gpu-0"}]},"nodeSelector":{"nodeSelectorTerms":[{"matchFields":)"
      R"([{"key":"metadata.name","operator":"In","values":["n1"]}]}]}},)"
      R"("reservedFor":[{"resource":"pods","name":"p","uid":"uid-p"}]})";
  const std::vector<Case> cases = {
      {"device classes",
       DraKind::kDeviceClass,
       "/apis/resource.k8s.io/v1/deviceclasses",
       {DeviceClass("gpu.nvidia.com", "1"),
        R"({"metadata":{"name":"bad","resourceVersion":"2"},"spec":{"selectors":7}})"},
       {Event("MODIFIED", DeviceClass("gpu.nvidia.com", "6")),
        Event("DELETED", DeviceClass("gpu.nvidia.com", "7"))},
       {"dra-add:class:gpu.nvidia.com@1",
        "dra-update:class:gpu.nvidia.com@1->class:gpu.nvidia.com@6",
        "dra-delete:class:gpu.nvidia.com@7"}},
      {"resource slices",
       DraKind::kResourceSlice,
       "/apis/resource.k8s.io/v1/resourceslices",
       {Slice("n1-gpu", "1", "80Gi"), Slice("n2-gpu", "2", "lots")},
       {Event("MODIFIED", Slice("n1-gpu", "6", "40Gi")),
        Event("MODIFIED", Slice("n1-gpu", "7", "lots"))},
       {"dra-add:slice:n1-gpu@1", "dra-update:slice:n1-gpu@1->slice:n1-gpu@6"}},
      {"resource claims, all namespaces",
       DraKind::kResourceClaim,
       "/apis/resource.k8s.io/v1/resourceclaims",
       {Claim("a", "1"),
        R"({"metadata":{"name":"bad","namespace":"ml","uid":"u","resourceVersion":"2"},)"
        R"("spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"x",)"
        R"("allocationMode":"Some"}}]}}})"},
       {Event("MODIFIED", Claim("a", "6", allocated)), Event("DELETED", Claim("a", "7"))},
       {"dra-add:claim:ml/a@1", "dra-update:claim:ml/a@1->claim:ml/a@6",
        "dra-delete:claim:ml/a@7"}},
      {"device taint rules",
       DraKind::kDeviceTaintRule,
       "/apis/resource.k8s.io/v1/devicetaintrules",
       {TaintRule("gpu-0", "1", "NoSchedule"),
        R"({"metadata":{"name":"bad","resourceVersion":"2"},"spec":{"taint":{"key":"k"}}})"},
       {Event("MODIFIED", TaintRule("gpu-0", "6", "NoExecute")),
        Event("DELETED", TaintRule("gpu-0", "7", "NoExecute"))},
       {"dra-add:rule:gpu-0@1", "dra-update:rule:gpu-0@1->rule:gpu-0@6",
        "dra-delete:rule:gpu-0@7"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRestClient client;
    RecordingHandler handler;
    client.PushResponse(200, List(c.listed, "5"));
    client.PushStream({c.watched, {}});
    auto inf = NewDraInformer(client, handler, clock_, c.kind, Fast());
    ASSERT_TRUE(inf->StepForTest().ok());
    EXPECT_EQ(client.requests()[0].path, c.path);
    EXPECT_EQ(inf->Size(), 1u);  // the malformed object is skipped
    EXPECT_TRUE(inf->HasSynced());
    ASSERT_TRUE(handler.last_dra.has_value());
    // The decoded content, as the view will read it.
    if (c.kind == DraKind::kDeviceClass) {
      const auto& dc = std::get<api::DeviceClassPtr>(*handler.last_dra);
      EXPECT_THAT(dc->selectors, ElementsAre("device.driver == \"gpu.nvidia.com\""));
    } else if (c.kind == DraKind::kResourceSlice) {
      const auto& sl = std::get<api::ResourceSlicePtr>(*handler.last_dra);
      ASSERT_EQ(sl->devices.size(), 1u);
      EXPECT_EQ(sl->node_name, "n1");
      EXPECT_NE(sl->devices[0].Attribute("gpu.nvidia.com/cliqueId"), nullptr);
    } else if (c.kind == DraKind::kDeviceTaintRule) {
      const auto& r = std::get<api::DeviceTaintRulePtr>(*handler.last_dra);
      EXPECT_EQ(r->device, "gpu-0");
      EXPECT_EQ(r->taint.effect, api::TaintEffect::kNoSchedule);
    } else {
      const auto& cl = std::get<api::ResourceClaimPtr>(*handler.last_dra);
      ASSERT_EQ(cl->spec.requests.size(), 1u);
      EXPECT_EQ(cl->spec.requests[0].exactly->count, 2);
      EXPECT_FALSE(cl->allocation.has_value());
    }
    ASSERT_TRUE(inf->StepForTest().ok());
    EXPECT_EQ(handler.Take(), c.want);
    if (c.kind == DraKind::kResourceClaim) {
      // The update carried the allocation and reservedFor.
      ASSERT_TRUE(handler.last_dra.has_value());
      const auto& cl = std::get<api::ResourceClaimPtr>(*handler.last_dra);
      ASSERT_TRUE(cl->allocation.has_value());
      EXPECT_EQ(cl->allocation->devices.size(), 1u);
      EXPECT_EQ(cl->reserved_for, (std::vector<api::ClaimConsumer>{{"pods", "p", "uid-p"}}));
    }
  }
}

TEST_F(InformerTest, AnUnservedDraApiNeverSyncsAndKeepsRetrying) {
  client_.PushResponse(404, R"({"kind":"Status","code":404,"reason":"NotFound"})");
  client_.PushResponse(404, R"({"kind":"Status","code":404,"reason":"NotFound"})");
  auto inf = NewDraInformer(client_, handler_, clock_, DraKind::kResourceSlice, Fast());
  EXPECT_EQ(inf->StepForTest().code(), common::StatusCode::kNotFound);
  EXPECT_EQ(inf->StepForTest().code(), common::StatusCode::kNotFound);
  EXPECT_FALSE(inf->HasSynced());
  EXPECT_THAT(handler_.Take(), IsEmpty());
}

TEST_F(InformerTest, SelectorsCanBeChanged) {
  struct Case {
    std::string name;
    std::string field_selector;
    std::optional<std::string> want;
  };
  std::vector<Case> cases = {
      {"the default is kube-scheduler's non-terminal selector", "",
       std::string(kNonTerminalPodsSelector)},
      {"an explicit selector replaces it", "spec.nodeName=", "spec.nodeName="},
      {"\"-\" asks for every pod", "-", std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRestClient client;
    client.PushResponse(200, List({}, "1"));
    InformerOptions o = Fast();
    o.field_selector = c.field_selector;
    o.label_selector = "team=ml";
    auto inf = NewPodInformer(client, handler_, clock_, o);
    ASSERT_TRUE(inf->StepForTest().ok());
    EXPECT_EQ(client.Query(0, "fieldSelector"), c.want);
    EXPECT_EQ(client.Query(0, "labelSelector"), "team=ml");
  }
}

TEST_F(InformerTest, RunsOnItsOwnThreadUntilStopped) {
  client_.PushDoError(common::UnavailableError("refused"));  // the first list fails: backoff
  client_.PushResponse(200, List({Pod("a", "1")}, "5"));
  client_.PushStream({{Event("ADDED", Pod("b", "6"))}, {}});
  auto inf = NewPodInformer(client_, handler_, clock_, Fast());
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(std::chrono::seconds(10)));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (inf->Size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  inf->Join();
  EXPECT_THAT(handler_.Take(), ElementsAre("add:a@1", "add:b@6"));
}

TEST_F(InformerTest, WaitForSyncTimesOutWhenTheListNeverWorks) {
  auto inf = NewNodeInformer(client_, handler_, clock_, Fast());
  inf->Start();
  EXPECT_FALSE(inf->WaitForSync(std::chrono::milliseconds(50)));
  inf->Join();
  EXPECT_THAT(handler_.Take(), IsEmpty());
}

}  // namespace
}  // namespace gpusched::kube::informer
