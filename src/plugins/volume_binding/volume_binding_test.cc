// SPDX-License-Identifier: Apache-2.0
// VolumeBinding: upstream's binder_test.go FindPodVolumes scenarios (without and with
// provisioning) and volume_binding_test.go PreFilter cases as data tables, then Reserve /
// Unreserve on the assume cache, PreBind's writes and wait, the args and the queueing hints.
#include "src/plugins/volume_binding/volume_binding.h"

#include <gtest/gtest.h>

#include <boost/json/value.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/api/quantity.h"
#include "src/api/storage.h"
#include "src/api/volume.h"
#include "src/cache/volume_store.h"
#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"

namespace gpusched::plugins::volume_binding {
namespace {

constexpr const char* kNodeKey = "nodeKey";
constexpr const char* kWait = "waitClass";  // WaitForFirstConsumer, kubernetes.io/no-provisioner
constexpr const char* kImmediate = "immediateClass";
constexpr const char* kWaitProv = "waitClassWithProvisioner";  // topologies nodeKey: node1
constexpr const char* kTopoMismatch = "topoMismatchClass";     // topologies nodeKey: elsewhere

int64_t Bytes(const char* q) { return api::Quantity::Parse(q)->Value(); }

enum class ClaimState { kUnbound, kSelectedNode, kPrebound, kBound };

api::PersistentVolumeClaimPtr Pvc(const std::string& name, const char* size, ClaimState st,
                                  const std::string& pv, const char* cls,
                                  const std::string& rv = "1") {
  auto pvc = std::make_shared<api::PersistentVolumeClaim>();
  pvc->meta.name = name;
  pvc->meta.namespace_ = "testns";
  pvc->meta.uid = "pvc-uid";
  pvc->meta.resource_version = rv;
  pvc->request_bytes = Bytes(size);
  pvc->storage_class = cls;
  if (st == ClaimState::kSelectedNode) pvc->selected_node = "node1";
  if (st == ClaimState::kBound) pvc->bind_completed = true;
  if (st == ClaimState::kBound || st == ClaimState::kPrebound) pvc->volume_name = pv;
  return pvc;
}

api::PersistentVolumePtr Pv(const std::string& name, const char* node, const char* capacity,
                            const api::PersistentVolumeClaimPtr& bound_to, const char* cls,
                            const std::string& rv = "1") {
  auto pv = std::make_shared<api::PersistentVolume>();
  pv->meta.name = name;
  pv->meta.resource_version = rv;
  pv->capacity_bytes = Bytes(capacity);
  pv->storage_class = cls;
  pv->phase = api::PersistentVolume::Phase::kAvailable;
  if (node[0] != '\0') {
    api::Requirement req;
    req.key = common::Intern(kNodeKey);
    req.op = api::SelectorOp::kIn;
    req.values = {common::Intern(node)};
    api::NodeSelectorTerm term;
    term.match_expressions.push_back(req);
    pv->node_affinity = api::NodeSelector{{term}};
  }
  if (bound_to != nullptr) {
    pv->claim_ref = api::ClaimRef{bound_to->namespace_(), bound_to->name(), bound_to->meta.uid};
    pv->meta.annotations.emplace_back(api::kAnnBoundByController, "yes");
  }
  return pv;
}

// The fixtures of upstream's binder_test.go.
const auto kUnboundPVC = Pvc("unbound-pvc", "1G", ClaimState::kUnbound, "", kWait);
const auto kUnboundPVC2 = Pvc("unbound-pvc2", "5G", ClaimState::kUnbound, "", kWait);
const auto kPreboundPVC = Pvc("prebound-pvc", "1G", ClaimState::kPrebound, "pv-node1a", kWait);
const auto kBoundPVC = Pvc("bound-pvc", "1G", ClaimState::kBound, "pv-bound", kWait);
const auto kImmediateUnboundPVC =
    Pvc("immediate-unbound-pvc", "1G", ClaimState::kUnbound, "", kImmediate);
const auto kImmediateBoundPVC =
    Pvc("immediate-bound-pvc", "1G", ClaimState::kBound, "pv-bound-immediate", kImmediate);
const auto kProvisionedPVC = Pvc("provisioned-pvc", "1Gi", ClaimState::kUnbound, "", kWaitProv);
const auto kNoProvisionerPVC = Pvc("no-provisioner-pvc", "1Gi", ClaimState::kUnbound, "", kWait);
const auto kTopoMismatchPVC =
    Pvc("topo-mismatch-pvc", "1Gi", ClaimState::kUnbound, "", kTopoMismatch);
const auto kSelectedNodePVC =
    Pvc("provisioned-pvc", "1Gi", ClaimState::kSelectedNode, "", kWaitProv);

const auto kPvNode1a = Pv("pv-node1a", "node1", "5G", nullptr, kWait);
const auto kPvNode1b = Pv("pv-node1b", "node1", "10G", nullptr, kWait);
const auto kPvNode2 = Pv("pv-node2", "node2", "1G", nullptr, kWait);
const auto kPvBound = Pv("pv-bound", "node1", "1G", kBoundPVC, kWait);
const auto kPvNode1aBound = Pv("pv-node1a", "node1", "5G", kUnboundPVC, kWait);
const auto kPvBoundImmediate =
    Pv("pv-bound-immediate", "node1", "1G", kImmediateBoundPVC, kImmediate);
const auto kPvBoundImmediateNode2 =
    Pv("pv-bound-immediate", "node2", "1G", kImmediateBoundPVC, kImmediate);

api::StorageClassPtr Class(const char* name, bool wait, const char* provisioner,
                           const char* topology_value) {
  auto sc = std::make_shared<api::StorageClass>();
  sc->name = name;
  sc->provisioner = provisioner;
  if (wait) sc->binding_mode = api::StorageClass::BindingMode::kWaitForFirstConsumer;
  if (topology_value != nullptr) {
    api::TopologySelectorTerm term;
    api::TopologyRequirement req;
    req.key = common::Intern(kNodeKey);
    req.values = {common::Intern(topology_value), common::Intern("reference-value")};
    if (std::string_view(topology_value).empty()) req.values = {common::Intern("reference-value")};
    term.requirements.push_back(req);
    sc->allowed_topologies.push_back(term);
  }
  return sc;
}

api::Pod PodWith(const std::vector<api::PersistentVolumeClaimPtr>& pvcs) {
  api::Pod pod = testing::MakePod("testns", "test-pod").Uid("pod-uid").Obj();
  if (pvcs.empty()) return pod;
  auto volumes = std::make_shared<api::PodVolumes>();
  for (const auto& pvc : pvcs) {
    api::PodVolume v;
    v.name = pvc->name();
    v.claim_name = pvc->name();
    volumes->volumes.push_back(v);
  }
  volumes->has_claims = true;
  pod.volumes = volumes;
  return pod;
}

framework::NodeInfo Node(const char* name) {
  framework::NodeInfo node;
  node.node = testing::MakeNode(name).Label(kNodeKey, name).Ptr();
  node.index = 0;
  return node;
}

// A handle whose view holds upstream's classes.
struct Env {
  testing::FakeHandle handle;
  cache::VolumeStore& view = handle.volume_view();
  framework::PluginPtr plugin;
  VolumeBinding* pl = nullptr;

  explicit Env(const boost::json::value& args = boost::json::value()) {
    view.UpsertStorageClass(Class(kWait, true, "kubernetes.io/no-provisioner", nullptr));
    view.UpsertStorageClass(Class(kImmediate, false, "", nullptr));
    view.UpsertStorageClass(Class(kWaitProv, true, "test-provisioner", "node1"));
    view.UpsertStorageClass(Class(kTopoMismatch, true, "test-provisioner", ""));
    auto created = VolumeBinding::Create(args, handle);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    if (created.ok()) {
      plugin = std::move(*created);
      pl = dynamic_cast<VolumeBinding*>(plugin.get());
    }
  }
};

struct Scenario {
  std::string name;
  std::vector<api::PersistentVolumeClaimPtr> pod_pvcs;
  std::vector<api::PersistentVolumePtr> pvs;
  // Expected on node1 (Reserve): pvc -> pv bindings, and claims given selected-node.
  std::map<std::string, std::string> bindings;
  std::vector<std::string> provisions;
  std::string_view reason;   // "" = fits node1
  bool should_fail = false;  // PreFilter rejects, or Filter errors
};

void RunScenarios(const std::vector<Scenario>& scenarios) {
  for (const Scenario& sc : scenarios) {
    SCOPED_TRACE(sc.name);
    Env env;
    ASSERT_NE(env.pl, nullptr);
    for (const auto& pv : sc.pvs) env.view.UpsertPv(pv);
    for (const auto& pvc : sc.pod_pvcs) env.view.UpsertPvc(pvc);
    const api::Pod pod = PodWith(sc.pod_pvcs);
    framework::CycleState state;
    framework::Status pre = env.pl->PreFilter(state, pod, framework::Snapshot());
    if (sc.pod_pvcs.empty()) {
      EXPECT_TRUE(pre.IsSkip());
      continue;
    }
    if (!pre.ok()) {
      EXPECT_TRUE(sc.should_fail) << pre.reason();
      continue;
    }
    const framework::NodeInfo node1 = Node("node1");
    framework::Status f = env.pl->Filter(state, pod, node1);
    if (f.IsError()) {
      EXPECT_TRUE(sc.should_fail) << f.reason();
      continue;
    }
    EXPECT_FALSE(sc.should_fail);
    EXPECT_EQ(f.reason(), sc.reason);
    if (!f.ok()) {
      EXPECT_EQ(f.code(), framework::Code::kUnschedulableAndUnresolvable);
      continue;
    }
    ASSERT_TRUE(env.pl->Reserve(state, pod, node1).ok());
    for (const auto& [pvc, pv] : sc.bindings) {
      api::PersistentVolumePtr assumed = env.view.GetPv(pv);
      ASSERT_NE(assumed, nullptr);
      ASSERT_TRUE(assumed->claim_ref.has_value()) << pv;
      EXPECT_EQ(assumed->claim_ref->name, pvc);
    }
    for (const std::string& pvc : sc.provisions) {
      EXPECT_EQ(env.view.GetPvc("testns", pvc)->selected_node, "node1") << pvc;
    }
    env.pl->Unreserve(state, pod, "node1");
    for (const auto& pv : sc.pvs) EXPECT_EQ(env.view.GetPv(pv->name()), pv);
    for (const auto& pvc : sc.pod_pvcs) {
      EXPECT_EQ(env.view.GetPvc("testns", pvc->name()), pvc);
    }
  }
}

TEST(VolumeBindingTest, FindPodVolumesWithoutProvisioning) {
  RunScenarios({
      {"no-volumes", {}, {}, {}, {}, ""},
      {"bound-pvc", {kBoundPVC}, {kPvBound}, {}, {}, ""},
      {"bound-pvc,pv-not-exists", {kBoundPVC}, {}, {}, {}, kReasonPVNotExist},
      {"prebound-pvc", {kPreboundPVC}, {kPvNode1aBound}, {}, {}, "", true},
      {"unbound-pvc,pv-same-node",
       {kUnboundPVC},
       {kPvNode2, kPvNode1a, kPvNode1b},
       {{"unbound-pvc", "pv-node1a"}},
       {},
       ""},
      {"unbound-pvc,pv-different-node", {kUnboundPVC}, {kPvNode2}, {}, {}, kReasonBindConflict},
      {"two-unbound-pvcs",
       {kUnboundPVC, kUnboundPVC2},
       {kPvNode1a, kPvNode1b},
       {{"unbound-pvc", "pv-node1a"}, {"unbound-pvc2", "pv-node1b"}},
       {},
       ""},
      {"two-unbound-pvcs,order-by-size",
       {kUnboundPVC2, kUnboundPVC},
       {kPvNode1a, kPvNode1b},
       {{"unbound-pvc", "pv-node1a"}, {"unbound-pvc2", "pv-node1b"}},
       {},
       ""},
      {"two-unbound-pvcs,partial-match",
       {kUnboundPVC, kUnboundPVC2},
       {kPvNode1a},
       {},
       {},
       kReasonBindConflict},
      {"one-bound,one-unbound",
       {kUnboundPVC, kBoundPVC},
       {kPvBound, kPvNode1a},
       {{"unbound-pvc", "pv-node1a"}},
       {},
       ""},
      {"one-bound,one-unbound,no-match",
       {kUnboundPVC, kBoundPVC},
       {kPvBound, kPvNode2},
       {},
       {},
       kReasonBindConflict},
      {"one-prebound,one-unbound",
       {kUnboundPVC, kPreboundPVC},
       {kPvNode1a, kPvNode1b},
       {},
       {},
       "",
       true},
      {"immediate-bound-pvc", {kImmediateBoundPVC}, {kPvBoundImmediate}, {}, {}, ""},
      {"immediate-bound-pvc-wrong-node",
       {kImmediateBoundPVC},
       {kPvBoundImmediateNode2},
       {},
       {},
       kReasonNodeConflict},
      {"immediate-unbound-pvc", {kImmediateUnboundPVC}, {}, {}, {}, "", true},
      {"immediate-unbound-pvc,delayed-mode-bound",
       {kImmediateUnboundPVC, kBoundPVC},
       {kPvBound},
       {},
       {},
       "",
       true},
      {"immediate-unbound-pvc,delayed-mode-unbound",
       {kImmediateUnboundPVC, kUnboundPVC},
       {},
       {},
       {},
       "",
       true},
  });
}

TEST(VolumeBindingTest, FindPodVolumesWithProvisioning) {
  RunScenarios({
      {"one-provisioned", {kProvisionedPVC}, {}, {}, {"provisioned-pvc"}, ""},
      {"two-unbound-pvcs,one-matched,one-provisioned",
       {kUnboundPVC, kProvisionedPVC},
       {kPvNode1a},
       {{"unbound-pvc", "pv-node1a"}},
       {"provisioned-pvc"},
       ""},
      {"one-bound,one-provisioned",
       {kBoundPVC, kProvisionedPVC},
       {kPvBound},
       {},
       {"provisioned-pvc"},
       ""},
      {"one-binding,one-selected-node",
       {kBoundPVC, kSelectedNodePVC},
       {kPvBound},
       {},
       {"provisioned-pvc"},
       ""},
      {"immediate-unbound-pvc", {kImmediateUnboundPVC}, {}, {}, {}, "", true},
      {"one-immediate-bound,one-provisioned",
       {kImmediateBoundPVC, kProvisionedPVC},
       {kPvBoundImmediate},
       {},
       {"provisioned-pvc"},
       ""},
      {"invalid-provisioner", {kNoProvisionerPVC}, {}, {}, {}, kReasonBindConflict},
      {"volume-topology-unsatisfied", {kTopoMismatchPVC}, {}, {}, {}, kReasonBindConflict},
  });
}

TEST(VolumeBindingTest, SelectedNodeElsewhereIsABindConflict) {
  Env env;
  env.view.UpsertPvc(kSelectedNodePVC);
  const api::Pod pod = PodWith({kSelectedNodePVC});
  framework::CycleState state;
  ASSERT_TRUE(env.pl->PreFilter(state, pod, framework::Snapshot()).ok());
  EXPECT_TRUE(env.pl->Filter(state, pod, Node("node1")).ok());
  EXPECT_EQ(env.pl->Filter(state, pod, Node("node2")).reason(), kReasonBindConflict);
}

// volume_binding_test.go's PreFilter cases.
TEST(VolumeBindingTest, PreFilterMessages) {
  struct Case {
    std::string name;
    std::vector<api::PersistentVolumeClaimPtr> cached;
    std::vector<api::PersistentVolumeClaimPtr> pod_pvcs;
    std::string reason;
  };
  auto lost = std::make_shared<api::PersistentVolumeClaim>(
      *Pvc("pvc-a", "1G", ClaimState::kBound, "pv-a", kWait));
  lost->phase = api::PersistentVolumeClaim::Phase::kLost;
  auto deleting = std::make_shared<api::PersistentVolumeClaim>(*kUnboundPVC);
  deleting->meta.deletion_timestamp = common::TimePoint();
  const auto pvc_a = Pvc("pvc-a", "1G", ClaimState::kBound, "pv-a", kWait);
  const auto pvc_b = Pvc("pvc-b", "1G", ClaimState::kBound, "pv-b", kWait);
  const std::vector<Case> cases = {
      {"PVC does not exist", {}, {pvc_a}, "persistentvolumeclaim \"pvc-a\" not found"},
      {"Part of PVCs do not exist",
       {pvc_a},
       {pvc_a, pvc_b},
       "persistentvolumeclaim \"pvc-b\" not found"},
      {"immediate claims not bound",
       {kImmediateUnboundPVC},
       {kImmediateUnboundPVC},
       std::string(kReasonUnboundImmediate)},
      {"pv not found claim lost",
       {lost},
       {lost},
       "persistentvolumeclaim \"pvc-a\" bound to non-existent persistentvolume \"pv-a\""},
      {"claim being deleted",
       {deleting},
       {deleting},
       "persistentvolumeclaim \"unbound-pvc\" is being deleted"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Env env;
    for (const auto& pvc : c.cached) env.view.UpsertPvc(pvc);
    framework::CycleState state;
    framework::Status s = env.pl->PreFilter(state, PodWith(c.pod_pvcs), framework::Snapshot());
    EXPECT_EQ(s.code(), framework::Code::kUnschedulableAndUnresolvable);
    EXPECT_EQ(s.reason(), c.reason);
  }
}

TEST(VolumeBindingTest, GenericEphemeralVolumes) {
  auto make_pvc = [](bool owned) {
    auto pvc = std::make_shared<api::PersistentVolumeClaim>(
        *Pvc("test-pod-test-volume", "1G", ClaimState::kBound, "pv-bound", kWait));
    api::OwnerReference ref;
    ref.kind = "Pod";
    ref.name = "test-pod";
    ref.uid = owned ? "pod-uid" : "other-uid";
    ref.controller = true;
    pvc->meta.owner_references.push_back(ref);
    return pvc;
  };
  api::Pod pod = testing::MakePod("testns", "test-pod").Uid("pod-uid").Obj();
  auto volumes = std::make_shared<api::PodVolumes>();
  api::PodVolume v;
  v.name = "test-volume";
  v.claim_name = "test-pod-test-volume";
  v.ephemeral = true;
  volumes->volumes.push_back(v);
  volumes->has_claims = true;
  pod.volumes = volumes;
  {
    SCOPED_TRACE("generic-ephemeral,no-pvc");
    Env env;
    framework::CycleState state;
    EXPECT_EQ(env.pl->PreFilter(state, pod, framework::Snapshot()).reason(),
              "waiting for ephemeral volume controller to create the persistentvolumeclaim "
              "\"test-pod-test-volume\"");
  }
  {
    SCOPED_TRACE("generic-ephemeral,with-pvc");
    Env env;
    auto pvc = make_pvc(true);
    env.view.UpsertPvc(pvc);
    env.view.UpsertPv(Pv("pv-bound", "node1", "1G", pvc, kWait));
    framework::CycleState state;
    ASSERT_TRUE(env.pl->PreFilter(state, pod, framework::Snapshot()).ok());
    EXPECT_TRUE(env.pl->Filter(state, pod, Node("node1")).ok());
  }
  {
    SCOPED_TRACE("generic-ephemeral,wrong-pvc");
    Env env;
    env.view.UpsertPvc(make_pvc(false));
    framework::CycleState state;
    EXPECT_EQ(env.pl->PreFilter(state, pod, framework::Snapshot()).reason(),
              "PVC testns/test-pod-test-volume was not created for pod testns/test-pod (pod is "
              "not owner)");
  }
}

// A writer that stands in for the API server and the PV controller: each write is applied to the
// view at once, and (when `controller`) the claim is then reported bound.
class FakeWriter final : public framework::VolumeWriter {
 public:
  FakeWriter(cache::VolumeStore& view, bool controller) : view_(view), controller_(controller) {}
  common::StatusOr<std::string> BindPersistentVolume(const api::PersistentVolume& pv,
                                                     bool bound_by_controller) override {
    calls.push_back("bind " + pv.name() + " to " + pv.claim_ref->name +
                    (bound_by_controller ? " (bound-by-controller)" : ""));
    if (!fail.ok()) return fail;
    auto written = std::make_shared<api::PersistentVolume>(pv);
    written->meta.resource_version = "100";
    view_.UpsertPv(written);
    if (controller_) {
      auto pvc = std::make_shared<api::PersistentVolumeClaim>(
          *view_.InformerPvc(pv.claim_ref->namespace_, pv.claim_ref->name));
      pvc->volume_name = pv.name();
      pvc->bind_completed = true;
      pvc->meta.resource_version = "101";
      view_.UpsertPvc(pvc);
    }
    return std::string("100");
  }
  common::StatusOr<std::string> SetSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                std::string_view node) override {
    calls.push_back("select " + std::string(node) + " for " + pvc.name());
    if (!fail.ok()) return fail;
    auto written = std::make_shared<api::PersistentVolumeClaim>(pvc);
    written->selected_node = std::string(node);
    written->meta.resource_version = "100";
    if (controller_) {
      auto pv = Pv("pvc-" + pvc.name(), "node1", "1Gi", written, pvc.storage_class.c_str());
      view_.UpsertPv(pv);
      written->volume_name = pv->name();
      written->bind_completed = true;
    }
    view_.UpsertPvc(written);
    return std::string("100");
  }
  std::vector<std::string> calls;
  common::Status fail;

 private:
  cache::VolumeStore& view_;
  bool controller_;
};

TEST(VolumeBindingTest, PreBindWritesAndWaitsForTheController) {
  Env env;
  FakeWriter writer(env.view, /*controller=*/true);
  env.view.set_writer(&writer);
  env.view.UpsertPvc(kUnboundPVC);
  env.view.UpsertPvc(kProvisionedPVC);
  env.view.UpsertPv(kPvNode1a);
  const api::Pod pod = PodWith({kUnboundPVC, kProvisionedPVC});
  framework::CycleState state;
  ASSERT_TRUE(env.pl->PreFilter(state, pod, framework::Snapshot()).ok());
  ASSERT_TRUE(env.pl->Reserve(state, pod, Node("node1")).ok());
  framework::Status s = env.pl->PreBind(state, pod, "node1");
  EXPECT_TRUE(s.ok()) << s.reason();
  EXPECT_EQ(writer.calls,
            (std::vector<std::string>{"bind pv-node1a to unbound-pvc (bound-by-controller)",
                                      "select node1 for provisioned-pvc"}));
  EXPECT_TRUE(env.view.GetPvc("testns", "unbound-pvc")->FullyBound());
}

TEST(VolumeBindingTest, PreBindTimesOutWithoutTheController) {
  Env env(boost::json::object{{"bindTimeoutSeconds", 0}});
  FakeWriter writer(env.view, /*controller=*/false);
  env.view.set_writer(&writer);
  env.view.UpsertPvc(kProvisionedPVC);
  const api::Pod pod = PodWith({kProvisionedPVC});
  framework::CycleState state;
  ASSERT_TRUE(env.pl->PreFilter(state, pod, framework::Snapshot()).ok());
  ASSERT_TRUE(env.pl->Reserve(state, pod, Node("node1")).ok());
  framework::Status s = env.pl->PreBind(state, pod, "node1");
  EXPECT_TRUE(s.IsError());
  EXPECT_EQ(s.reason(), "binding volumes: context deadline exceeded");
  // The selected node was written: the external provisioner would now create the volume.
  EXPECT_EQ(env.view.InformerPvc("testns", "provisioned-pvc")->selected_node, "node1");
}

TEST(VolumeBindingTest, PreBindWriteFailureRestoresTheAssumedObjects) {
  Env env;
  FakeWriter writer(env.view, /*controller=*/true);
  writer.fail = common::UnavailableError("connection refused");
  env.view.set_writer(&writer);
  env.view.UpsertPvc(kUnboundPVC);
  env.view.UpsertPv(kPvNode1a);
  const api::Pod pod = PodWith({kUnboundPVC});
  framework::CycleState state;
  ASSERT_TRUE(env.pl->PreFilter(state, pod, framework::Snapshot()).ok());
  ASSERT_TRUE(env.pl->Reserve(state, pod, Node("node1")).ok());
  EXPECT_TRUE(env.view.GetPv("pv-node1a")->claim_ref.has_value());
  framework::Status s = env.pl->PreBind(state, pod, "node1");
  EXPECT_TRUE(s.IsError());
  EXPECT_EQ(s.reason(), "binding volumes: connection refused");
  EXPECT_FALSE(env.view.GetPv("pv-node1a")->claim_ref.has_value());
}

TEST(VolumeBindingTest, AllBoundNeedsNoWrites) {
  Env env;
  FakeWriter writer(env.view, true);
  env.view.set_writer(&writer);
  env.view.UpsertPvc(kBoundPVC);
  env.view.UpsertPv(kPvBound);
  const api::Pod pod = PodWith({kBoundPVC});
  framework::CycleState state;
  ASSERT_TRUE(env.pl->PreFilter(state, pod, framework::Snapshot()).ok());
  ASSERT_TRUE(env.pl->Reserve(state, pod, Node("node1")).ok());
  ASSERT_TRUE(env.pl->PreBind(state, pod, "node1").ok());
  EXPECT_TRUE(writer.calls.empty());
}

TEST(VolumeBindingTest, SkipsWithoutVolumeData) {
  testing::FakeHandle handle;
  auto plugin = VolumeBinding::Create(boost::json::value(), handle);
  ASSERT_TRUE(plugin.ok());
  auto* pl = dynamic_cast<VolumeBinding*>(plugin->get());
  framework::CycleState state;
  EXPECT_TRUE(pl->PreFilter(state, PodWith({kBoundPVC}), framework::Snapshot()).IsSkip());
  EXPECT_TRUE(pl->PreBind(state, PodWith({kBoundPVC}), "n").ok());
  EXPECT_EQ(pl->Name(), names::kVolumeBinding);
}

TEST(VolumeBindingTest, Args) {
  struct Case {
    std::string name;
    boost::json::value args;
    std::string error;  // "" = valid
  };
  const std::vector<Case> cases = {
      {"defaults", boost::json::value(), ""},
      {"a timeout", boost::json::object{{"bindTimeoutSeconds", 30}}, ""},
      {"a negative timeout", boost::json::object{{"bindTimeoutSeconds", -1}},
       "bindTimeoutSeconds: must not be negative, got -1"},
      {"a shape (StorageCapacityScoring is off)",
       boost::json::object{{"shape", boost::json::array{boost::json::object{}}}},
       "shape: not supported: StorageCapacityScoring is off (as upstream's default)"},
      {"an unknown field", boost::json::object{{"x", 1}}, "x: unknown field"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    common::StatusOr<Args> args = ParseArgs(c.args);
    if (c.error.empty()) {
      EXPECT_TRUE(args.ok()) << args.status().ToString();
    } else {
      ASSERT_FALSE(args.ok());
      EXPECT_EQ(args.status().message(), c.error);
    }
  }
  EXPECT_EQ(ParseArgs(boost::json::value())->bind_timeout, std::chrono::seconds(600));
}

framework::QueueingHint Hint(const VolumeBinding& pl, framework::EventResource resource,
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

TEST(VolumeBindingTest, QueueingHints) {
  VolumeBinding pl(Args{}, nullptr);
  using framework::EventResource;
  using framework::QueueingHint;
  const api::Pod pod = PodWith({kUnboundPVC});
  EXPECT_EQ(Hint(pl, EventResource::kPersistentVolumeClaim, pod, nullptr, kUnboundPVC.get()),
            QueueingHint::kQueue);
  EXPECT_EQ(Hint(pl, EventResource::kPersistentVolumeClaim, pod, nullptr, kBoundPVC.get()),
            QueueingHint::kSkip);
  api::PersistentVolumeClaim other_ns = *kUnboundPVC;
  other_ns.meta.namespace_ = "other";
  EXPECT_EQ(Hint(pl, EventResource::kPersistentVolumeClaim, pod, nullptr, &other_ns),
            QueueingHint::kSkip);

  const auto sc1 = Class("c", true, "p", "node1");
  const auto sc2 = Class("c", true, "p", "node2");
  const auto sc1_other = Class("c", false, "other", "node1");
  EXPECT_EQ(Hint(pl, EventResource::kStorageClass, pod, nullptr, sc1.get()), QueueingHint::kQueue);
  EXPECT_EQ(Hint(pl, EventResource::kStorageClass, pod, sc1.get(), sc2.get()),
            QueueingHint::kQueue);
  EXPECT_EQ(Hint(pl, EventResource::kStorageClass, pod, sc1.get(), sc1_other.get()),
            QueueingHint::kSkip);

  api::CSINode a;
  api::CSINode b;
  b.migrated_plugins = {"kubernetes.io/gce-pd"};
  EXPECT_EQ(Hint(pl, EventResource::kCSINode, pod, nullptr, &a), QueueingHint::kQueue);
  EXPECT_EQ(Hint(pl, EventResource::kCSINode, pod, &a, &a), QueueingHint::kSkip);
  EXPECT_EQ(Hint(pl, EventResource::kCSINode, pod, &a, &b), QueueingHint::kQueue);

  api::Pod csi_pod = testing::MakePod("testns", "p").Obj();
  auto volumes = std::make_shared<api::PodVolumes>();
  api::PodVolume v;
  v.name = "inline";
  v.source = api::InlineSource::kCsi;
  v.csi_driver = "d";
  volumes->volumes.push_back(v);
  csi_pod.volumes = volumes;
  api::CSIDriver with_capacity;
  with_capacity.name = "d";
  with_capacity.storage_capacity = true;
  api::CSIDriver without_capacity = with_capacity;
  without_capacity.storage_capacity = false;
  EXPECT_EQ(Hint(pl, EventResource::kCSIDriver, csi_pod, &with_capacity, &without_capacity),
            QueueingHint::kQueue);
  EXPECT_EQ(Hint(pl, EventResource::kCSIDriver, csi_pod, &without_capacity, &with_capacity),
            QueueingHint::kSkip);
  EXPECT_EQ(Hint(pl, EventResource::kPersistentVolume, pod, nullptr, kPvBound.get()),
            QueueingHint::kQueue);
}

}  // namespace
}  // namespace gpusched::plugins::volume_binding
