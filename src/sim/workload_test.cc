// SPDX-License-Identifier: Apache-2.0
// Manifests as a platform engineer writes them (issue #20): workload objects expanded as their
// controllers would, bad objects reported and skipped, unknown fields and node GPU facts warned
// about, and the per-pod table in text and CSV. Real decoder, real scheduler, default profile.
#include "src/sim/workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/common/clock.h"
#include "src/common/strings.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/checks.h"
#include "src/sim/compare.h"
#include "src/sim/controllers.h"
#include "src/sim/replay.h"
#include "src/sim/report.h"
#include "src/sim/simulator.h"
#include "src/sim/test_simulate.h"

namespace gpusched::sim {
namespace {

Workload Load(const std::string& yaml, const std::string& file = "in.yaml") {
  return LoadForTest(yaml, file);
}
std::unique_ptr<Simulator> Simulate(const Workload& w) {
  return SimulateForTest(w, plugins::InTreeRegistry());
}

std::string GpuNode(const std::string& name, int gpus, const std::string& extra_labels = "") {
  return "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name +
         "\n  labels:\n    kubernetes.io/hostname: " + name +
         "\n    nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB\n" + extra_labels +
         "status:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", nvidia.com/gpu: \"" +
         std::to_string(gpus) + "\"}\n---\n";
}

const char* kTemplate = R"(
    metadata:
      labels: {app: APP}
    spec:
      RESTART
      containers:
      - name: main
        image: busybox
        resources:
          limits: {nvidia.com/gpu: "1", cpu: "1", memory: 1Gi}
)";

std::string Template(const std::string& app, const std::string& restart = "") {
  std::string t = kTemplate;
  t.replace(t.find("APP"), 3, app);
  t.replace(t.find("RESTART"), 7, restart.empty() ? "" : "restartPolicy: " + restart);
  return t;
}

std::string Deployment(const std::string& name, int replicas) {
  return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name +
         ", namespace: ml}\nspec:\n  replicas: " + std::to_string(replicas) +
         "\n  selector: {matchLabels: {app: " + name + "}}\n  template:" + Template(name) + "---\n";
}

std::string StatefulSet(const std::string& name, int replicas) {
  return "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: " + name +
         ", namespace: ml}\nspec:\n  replicas: " + std::to_string(replicas) +
         "\n  serviceName: " + name + "\n  selector: {matchLabels: {app: " + name +
         "}}\n  template:" + Template(name) + "---\n";
}

std::string IndexedJob(const std::string& name, int n) {
  return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: " + name +
         ", namespace: ml}\nspec:\n  completionMode: Indexed\n  completions: " + std::to_string(n) +
         "\n  parallelism: " + std::to_string(n) + "\n  template:" + Template(name, "Never") +
         "---\n";
}

const PlacementRow* Row(const Report& r, const std::string& pod) {
  for (const auto& p : r.placements) {
    if (p.pod == pod) return &p;
  }
  return nullptr;
}

// --- workload objects ------------------------------------------------------------------------

TEST(ControllersTest, DeploymentStatefulSetAndIndexedJobGiveNinePodsInThePerPodTable) {
  const std::string yaml = GpuNode("gpu-0", 8) + GpuNode("gpu-1", 8) + Deployment("web", 3) +
                           StatefulSet("db", 2) + IndexedJob("train", 4);
  Workload w = Load(yaml);
  EXPECT_TRUE(w.rejected.empty()) << w.rejected.front().ToString();
  EXPECT_TRUE(w.warnings.empty()) << w.warnings.front();
  ASSERT_EQ(w.pods.size(), 9u);

  auto sim = Simulate(w);
  ASSERT_NE(sim, nullptr);
  const Report r = BuildReport(*sim, "in.yaml");
  ASSERT_EQ(r.placements.size(), 9u);
  EXPECT_EQ(sim->Stats().scheduled, 9);
  // StatefulSet pods have ordinal names; Indexed Job pods carry their index.
  EXPECT_NE(Row(r, "ml/db-0"), nullptr);
  EXPECT_NE(Row(r, "ml/db-1"), nullptr);
  int deployment_pods = 0;
  int job_pods = 0;
  for (const auto& p : r.placements) {
    EXPECT_EQ(p.state, "Scheduled") << p.pod;
    EXPECT_EQ(p.gpu_devices.size(), 1u) << p.pod;
    if (p.pod.starts_with("ml/web-")) ++deployment_pods;
    if (p.pod.starts_with("ml/train-")) ++job_pods;
  }
  EXPECT_EQ(deployment_pods, 3);
  EXPECT_EQ(job_pods, 4);
  const std::string text = FormatReportText(r);
  EXPECT_NE(text.find("\nPods:\n  POD "), std::string::npos) << text;
  EXPECT_NE(text.find("ml/db-1"), std::string::npos) << text;
}

TEST(ControllersTest, PodsCarryOwnerReferencesAndTheControllersLabels) {
  Workload w = Load(GpuNode("gpu-0", 8) + Deployment("web", 2) + StatefulSet("db", 1) +
                    IndexedJob("train", 2));
  ASSERT_EQ(w.pods.size(), 5u);
  std::map<std::string, api::PodPtr> by_prefix;
  for (const auto& p : w.pods) by_prefix[p->meta.name.substr(0, p->meta.name.find('-'))] = p;

  const api::Pod& web = *w.pods[0];
  ASSERT_EQ(web.meta.owner_references.size(), 1u);
  EXPECT_EQ(web.meta.owner_references[0].kind, "ReplicaSet");
  EXPECT_TRUE(web.meta.owner_references[0].controller);
  EXPECT_TRUE(web.meta.owner_references[0].name.starts_with("web-"));
  EXPECT_TRUE(web.meta.name.starts_with(web.meta.owner_references[0].name + "-"));
  EXPECT_EQ(web.meta.name.size(), web.meta.owner_references[0].name.size() + 6);
  EXPECT_TRUE(web.meta.labels.Has(common::Intern("pod-template-hash")));
  EXPECT_TRUE(web.meta.labels.Has(common::Intern("app")));
  EXPECT_EQ(web.meta.namespace_, "ml");
  EXPECT_NE(w.pods[0]->meta.name, w.pods[1]->meta.name);

  const api::Pod& db = *w.pods[2];
  EXPECT_EQ(db.meta.name, "db-0");
  ASSERT_EQ(db.meta.owner_references.size(), 1u);
  EXPECT_EQ(db.meta.owner_references[0].kind, "StatefulSet");
  common::Atom v;
  ASSERT_TRUE(db.meta.labels.Get(common::Intern("statefulset.kubernetes.io/pod-name"), &v));
  EXPECT_EQ(common::Str(v), "db-0");

  const api::Pod& job1 = *w.pods[4];
  EXPECT_TRUE(job1.meta.name.starts_with("train-1-"));
  ASSERT_EQ(job1.meta.owner_references.size(), 1u);
  EXPECT_EQ(job1.meta.owner_references[0].kind, "Job");
  ASSERT_NE(job1.meta.Annotation("batch.kubernetes.io/job-completion-index"), nullptr);
  EXPECT_EQ(*job1.meta.Annotation("batch.kubernetes.io/job-completion-index"), "1");
  ASSERT_TRUE(job1.meta.labels.Get(common::Intern("job-name"), &v));
  EXPECT_EQ(common::Str(v), "train");

  // Expansion is deterministic: the same input gives the same names.
  Workload again = Load(GpuNode("gpu-0", 8) + Deployment("web", 2) + StatefulSet("db", 1) +
                        IndexedJob("train", 2));
  for (size_t i = 0; i < w.pods.size(); ++i) EXPECT_EQ(w.pods[i]->Key(), again.pods[i]->Key());
}

TEST(ControllersTest, JobRunsMinOfParallelismAndCompletionsAndNoneWhenSuspended) {
  struct Case {
    std::string name;
    std::string spec;
    size_t pods;
  };
  const std::vector<Case> cases = {
      {"parallelism below completions runs parallelism pods", "parallelism: 2\n  completions: 5",
       2},
      {"completions below parallelism runs completions pods", "parallelism: 4\n  completions: 3",
       3},
      {"no completions runs parallelism pods", "parallelism: 3", 3},
      {"neither runs one pod", "backoffLimit: 1", 1},
      {"a suspended job runs none", "parallelism: 3\n  suspend: true", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Workload w = Load(GpuNode("gpu-0", 8) +
                      "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  " + c.spec +
                      "\n  template:" + Template("j", "OnFailure"));
    EXPECT_TRUE(w.rejected.empty());
    EXPECT_EQ(w.pods.size(), c.pods);
  }
}

TEST(ControllersTest, DaemonSetGetsOnePodPerEligibleNodeBoundThere) {
  const std::string tainted =
      "apiVersion: v1\nkind: Node\nmetadata:\n  name: tainted\n  labels: {pool: gpu}\n"
      "spec:\n  taints: [{key: dedicated, value: infer, effect: NoSchedule}]\n"
      "status:\n  allocatable: {cpu: \"8\", memory: 32Gi, pods: \"110\"}\n---\n";
  const std::string other_pool =
      "apiVersion: v1\nkind: Node\nmetadata:\n  name: cpu-0\n  labels: {pool: cpu}\n"
      "status:\n  allocatable: {cpu: \"8\", memory: 32Gi, pods: \"110\"}\n---\n";
  const std::string ds =
      "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: dcgm, namespace: mon}\nspec:\n"
      "  selector: {matchLabels: {app: dcgm}}\n  template:\n    metadata: {labels: {app: dcgm}}\n"
      "    spec:\n      nodeSelector: {pool: gpu}\n"
      "      containers: [{name: c, resources: {requests: {cpu: 100m}}}]\n";
  Workload w = Load(GpuNode("gpu-0", 8, "    pool: gpu\n") +
                    GpuNode("gpu-1", 8, "    pool: gpu\n") + tainted + other_pool + ds);
  ASSERT_EQ(w.pods.size(), 2u);  // not on the tainted node, not on the cpu pool
  auto sim = Simulate(w);
  ASSERT_NE(sim, nullptr);
  std::vector<std::string> nodes;
  for (const auto& o : sim->outcomes()) {
    EXPECT_EQ(o.state, PodState::kScheduled) << o.pod->Key() << ": " << o.message;
    nodes.push_back(o.node);
    ASSERT_EQ(o.pod->meta.owner_references.size(), 1u);
    EXPECT_EQ(o.pod->meta.owner_references[0].kind, "DaemonSet");
  }
  std::sort(nodes.begin(), nodes.end());
  EXPECT_EQ(nodes, (std::vector<std::string>{"gpu-0", "gpu-1"}));
}

TEST(ControllersTest, ObjectsTheApiServerWouldRefuseAreRejectedNamingTheField) {
  struct Case {
    std::string name;
    std::string yaml;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"a Job whose template restarts Always",
       "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:" +
           Template("j", "Always"),
       "spec.template.spec.restartPolicy: Unsupported value: \"Always\""},
      {"a Deployment whose selector does not match its template",
       "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: "
       "{matchLabels: {app: other}}\n  template:" +
           Template("d"),
       "spec.template.metadata.labels: Invalid value: `selector` does not match template"},
      {"a Deployment without a template",
       "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n",
       "spec.template: Required value"},
      {"a negative replica count",
       "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  replicas: -1\n"
       "  selector: {matchLabels: {app: s}}\n  template:" +
           Template("s"),
       "spec.replicas"},
      {"an Indexed Job without completions",
       "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  completionMode: Indexed\n"
       "  template:" +
           Template("j", "Never"),
       "spec.completions: Required value"},
      {"a template with a bad quantity",
       "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: r}\nspec:\n  selector: "
       "{matchLabels: {app: r}}\n  template:\n    metadata: {labels: {app: r}}\n    spec:\n"
       "      containers: [{name: c, resources: {requests: {cpu: \"1.2.3\"}}}]\n",
       "spec.template.spec.containers[0].resources.requests.cpu: invalid quantity \"1.2.3\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Workload w = Load(GpuNode("gpu-0", 8) + c.yaml);
    EXPECT_TRUE(w.pods.empty());
    ASSERT_EQ(w.rejected.size(), 1u);
    EXPECT_EQ(w.rejected[0].document, 2u);
    EXPECT_NE(w.rejected[0].error.find(c.error), std::string::npos) << w.rejected[0].error;
  }
}

TEST(ControllersTest, MalformedWorkloadObjectsAreRejectedNeverCrash) {
  const std::string head = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n";
  struct Case {
    std::string name;
    std::string yaml;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"spec is a list", head + "spec: []\n", "spec"},
      {"template is a string", head + "spec: {template: x}\n", "spec.template"},
      {"replicas is a string",
       head +
           "spec:\n  replicas: \"3\"\n  selector: {matchLabels: "
           "{app: d}}\n  template:" +
           Template("d"),
       "spec.replicas"},
      {"millions of replicas",
       head + "spec:\n  replicas: 3000000\n  selector: {matchLabels: {app: d}}\n  template:" +
           Template("d"),
       "spec.replicas: 3000000 pods exceed the simulator's limit of 100000 per object"},
      {"metadata is a number", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: 5\nspec: {}\n",
       "metadata"},
      {"a DaemonSet whose nodeSelector is a number",
       "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  selector: "
       "{matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n    spec: "
       "{nodeSelector: 3, containers: [{name: c}]}\n",
       "spec.template.spec.nodeSelector"},
      {"a Job with negative parallelism",
       "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: -1\n"
       "  template:" +
           Template("j", "Never"),
       "spec.parallelism"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Workload w = Load(GpuNode("gpu-0", 8) + c.yaml);
    EXPECT_TRUE(w.pods.empty());
    ASSERT_EQ(w.rejected.size(), 1u);
    EXPECT_NE(w.rejected[0].error.find(c.error), std::string::npos) << w.rejected[0].error;
  }
}

// --- bad objects isolated --------------------------------------------------------------------

TEST(RejectionsTest, OneMalformedPodAmongGoodOnesIsRejectedAndTheRestSimulated) {
  const std::string pod =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: NAME, namespace: ml}\n"
      "spec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: "
      "GPUS}}}]\n---\n";
  auto make = [&](const std::string& name, const std::string& gpus) {
    std::string p = pod;
    p.replace(p.find("NAME"), 4, name);
    p.replace(p.find("GPUS"), 4, gpus);
    return p;
  };
  Workload w = Load(GpuNode("gpu-0", 8) + make("a", "\"1\"") + make("bad", "\"two\"") +
                        make("b", "\"2\"") + make("half", "\"0.5\"") + make("a", "\"1\""),
                    "pods.yaml");
  ASSERT_EQ(w.rejected.size(), 2u);
  EXPECT_EQ(w.rejected[0].ToString(),
            "pods.yaml: document 3: Pod ml/bad: spec.containers[0].resources.limits[nvidia.com/"
            "gpu]: invalid quantity \"two\": no digits");
  EXPECT_EQ(w.rejected[1].ToString(),
            "pods.yaml: document 5: Pod ml/half: spec.containers[0].resources.limits[nvidia.com/"
            "gpu]: Invalid value: \"0.5\": must be an integer");
  ASSERT_EQ(w.pods.size(), 3u);  // a, b and the duplicate a

  auto sim = Simulate(w);
  ASSERT_NE(sim, nullptr);
  const Report r = BuildReport(*sim, "pods.yaml", w.warnings, w.rejected);
  EXPECT_EQ(r.stats.scheduled, 2);
  EXPECT_EQ(r.stats.rejected, 1);  // the second ml/a
  ASSERT_EQ(r.placements.size(), 3u);
  EXPECT_EQ(r.placements[2].state, "Rejected");
  EXPECT_EQ(r.placements[2].message, "pods \"a\" already exists");
  const std::string text = FormatReportText(r);
  EXPECT_NE(text.find("Rejected objects (not simulated): 2\n  pods.yaml: document 3: Pod ml/bad"),
            std::string::npos)
      << text;
  const boost::json::value j = ReportToJson(r);
  EXPECT_EQ(j.at("rejected").as_array().size(), 2u);
  EXPECT_EQ(j.at("rejected").at(1).at("kind").as_string(), "Pod");
}

TEST(RejectionsTest, ResourceRulesOfTheApiServer) {
  struct Case {
    std::string name;
    std::string resources;
    std::string error;  // "" = accepted
  };
  const std::vector<Case> cases = {
      {"a whole GPU limit is accepted", "limits: {nvidia.com/gpu: 1}", ""},
      {"a fractional GPU is refused", "limits: {nvidia.com/gpu: 0.5}",
       "limits[nvidia.com/gpu]: Invalid value: \"0.5\": must be an integer"},
      {"an extended request without a limit is refused", "requests: {nvidia.com/gpu: 1}",
       "limits[nvidia.com/gpu]: Required value: Limit must be set for non overcommitable"},
      {"an extended request other than its limit is refused",
       "requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}",
       "requests[nvidia.com/gpu]: Invalid value: \"1\": must be equal to nvidia.com/gpu limit of "
       "2"},
      {"a cpu request above its limit is refused", "requests: {cpu: 2}, limits: {cpu: 1}",
       "requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1"},
      {"a negative memory request is refused", "requests: {memory: -1Gi}",
       "requests[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0"},
      {"fractional cpu is fine", "requests: {cpu: 0.5}, limits: {cpu: 1}", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Workload w;
    ASSERT_TRUE(AppendManifests("kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: "
                                "c\n    resources: {" +
                                    c.resources + "}\n",
                                "p.yaml", w)
                    .ok());
    if (c.error.empty()) {
      EXPECT_TRUE(w.rejected.empty()) << w.rejected.front().ToString();
      EXPECT_EQ(w.pods.size(), 1u);
    } else {
      ASSERT_EQ(w.rejected.size(), 1u);
      EXPECT_NE(w.rejected[0].error.find("spec.containers[0].resources." + c.error),
                std::string::npos)
          << w.rejected[0].error;
      EXPECT_TRUE(w.pods.empty());
    }
  }
}

TEST(RejectionsTest, UnknownFieldsAreWarnedWithASuggestion) {
  Workload w = Load(
      "kind: Pod\nmetadata: {name: p, labbels: {a: b}}\nspec:\n  nodeselector: {a: b}\n"
      "  containers:\n  - name: c\n    resource: {limits: {nvidia.com/gpu: 1}}\n"
      "    image: x\n    zzzzzzzz: 1\n");
  ASSERT_EQ(w.pods.size(), 1u);  // warned, not rejected
  ASSERT_EQ(w.warnings.size(), 4u);
  EXPECT_EQ(w.warnings[0],
            "in.yaml: document 1: Pod default/p: metadata.labbels: unknown field (did "
            "you mean \"labels\"?); ignored");
  EXPECT_NE(w.warnings[1].find("spec.nodeselector: unknown field (did you mean "
                               "\"nodeSelector\"?)"),
            std::string::npos)
      << w.warnings[1];
  EXPECT_NE(w.warnings[2].find("spec.containers[0].resource: unknown field (did you "
                               "mean \"resources\"?)"),
            std::string::npos)
      << w.warnings[2];
  EXPECT_NE(w.warnings[3].find("zzzzzzzz: unknown field; ignored"), std::string::npos)
      << w.warnings[3];
  const std::vector<std::string_view> known = {"replicas", "selector"};
  EXPECT_EQ(common::ClosestName("replica", known), "replicas");
  EXPECT_EQ(common::ClosestName("x", known), "");
}

TEST(RejectionsTest, UnknownKindsAreSkippedWithAWarningAndSyntaxErrorsStopTheFile) {
  Workload w = Load(GpuNode("gpu-0", 8) + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n");
  EXPECT_TRUE(w.rejected.empty());
  ASSERT_EQ(w.warnings.size(), 1u);
  EXPECT_NE(w.warnings[0].find("skipped ConfigMap \"c\""), std::string::npos);
  Workload bad;
  EXPECT_FALSE(AppendManifests("kind: Pod\n  metadata: [\n", "broken.yaml", bad).ok());
}

// --- node GPU facts and pods bound elsewhere -------------------------------------------------

TEST(NodeFactsTest, ClampsAndDisagreementsAreWarnings) {
  const std::string labelled =
      "apiVersion: v1\nkind: Node\nmetadata:\n  name: big\n  labels: {gpu.nvidia.com/count: "
      "\"17\", gpu.nvidia.com/model: A100}\nstatus:\n  allocatable: {nvidia.com/gpu: \"17\"}\n"
      "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: words\n  labels: "
      "{gpu.nvidia.com/count: eight}\nstatus:\n  allocatable: {nvidia.com/gpu: \"8\"}\n";
  Workload w = Load(labelled);
  const std::vector<std::string> warnings = NodeGpuWarnings(w);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("node big: GPU count 17 exceeds 16; clamped"), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find("node words: label gpu.nvidia.com/count: invalid value \"eight\""),
            std::string::npos)
      << warnings[1];
}

TEST(NodeFactsTest, PodsThatArriveBoundCountInTheGpuAllocationTable) {
  const std::string bound =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: other, namespace: ml}\nspec:\n"
      "  nodeName: gpu-0\n  schedulerName: someone-else\n"
      "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]\n";
  Workload w = Load(GpuNode("gpu-0", 8) + bound);
  auto sim = Simulate(w);
  ASSERT_NE(sim, nullptr);
  const Report r = BuildReport(*sim, "in.yaml");
  ASSERT_EQ(r.models.size(), 1u);
  EXPECT_EQ(r.models[0].gpus_allocated, 8);
  EXPECT_EQ(r.models[0].milli_allocated, 8000);
  EXPECT_NE(FormatReportText(r).find("8/8"), std::string::npos) << FormatReportText(r);
  ASSERT_EQ(r.placements.size(), 1u);
  EXPECT_EQ(r.placements[0].state, "PreBound");
}

// --- sharing dialects under the default profile ---------------------------------------------

TEST(SharingDialectsTest, DefaultProfileAcceptsEveryDocumentedSharingDialect) {
  // Nodes that advertise only nvidia.com/gpu, as most clusters' nodes do.
  const std::string nodes = GpuNode("gpu-0", 8, "    nvidia.com/gpu.memory: \"40960\"\n") +
                            GpuNode("gpu-1", 8, "    nvidia.com/gpu.memory: \"40960\"\n");
  struct Case {
    std::string dialect;
    std::string annotations;
    std::string limits;
  };
  const std::vector<Case> cases = {
      {"hami-memory", "", "{nvidia.com/gpu: 1, nvidia.com/gpumem: 4096, nvidia.com/gpucores: 30}"},
      {"hami-percentage", "", "{nvidia.com/gpu: 1, nvidia.com/gpumem-percentage: 25}"},
      {"gpushare", "", "{aliyun.com/gpu-mem: 8}"},
      {"koordinator", "", "{koordinator.sh/gpu-core: 50, koordinator.sh/gpu-memory-ratio: 50}"},
      {"kai", "{gpu-fraction: \"0.5\"}", "{cpu: 1}"},
      {"gpusched", "{gpusched.io/gpu-milli: \"250\"}", "{cpu: 1}"},
  };
  std::string pods;
  for (const Case& c : cases) {
    pods += "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + c.dialect +
            (c.annotations.empty() ? "" : "\n  annotations: " + c.annotations) +
            "\nspec:\n  containers: [{name: c, resources: {limits: " + c.limits + "}}]\n---\n";
  }
  Workload w = Load(nodes + pods);
  EXPECT_TRUE(w.rejected.empty()) << w.rejected.front().ToString();
  ASSERT_EQ(w.pods.size(), cases.size());
  auto sim = Simulate(w);
  ASSERT_NE(sim, nullptr);
  for (const auto& o : sim->outcomes()) {
    SCOPED_TRACE(o.pod->Key());
    EXPECT_EQ(o.state, PodState::kScheduled) << o.message;
    EXPECT_EQ(o.gpu.devices.size(), 1u);
    EXPECT_LT(o.gpu.milli, 1000);
  }
}

// --- time replay -------------------------------------------------------------------------------

std::string TimedPod(const std::string& name, int gpus, const std::string& arrival,
                     const std::string& duration) {
  std::string annotations = "{gpusched.io/arrival: \"" + arrival + "\"";
  if (!duration.empty()) annotations += ", gpusched.io/duration: \"" + duration + "\"";
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
         "\n  annotations: " + annotations +
         "}\nspec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: " +
         std::to_string(gpus) + "}}}]\n---\n";
}

TEST(ReplayTest, PodsLeaveAfterTheirDurationAndWaitingPodsTakeTheirPlace) {
  Workload w = Load(GpuNode("gpu-0", 8) + TimedPod("a", 8, "0s", "2h") +
                    TimedPod("b", 8, "30m", "1h") + TimedPod("c", 4, "4h", ""));
  static const common::FakeClock wall;
  SimOptions opts;
  opts.check_invariants = true;
  opts.arrival_interval = common::Duration(0);
  auto sim = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall}, opts);
  ASSERT_TRUE(sim.ok());
  auto r = RunReplay(**sim, w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // a 0-2 h, b waits until a leaves and runs 1 h from its placement (within its 10 s backoff
  // after 2 h); c from 4 h on, never leaves.
  const double settle_h = 11.0 / 3600;
  EXPECT_EQ(r->departed, 2);
  EXPECT_DOUBLE_EQ(r->span_hours, 4.0);
  EXPECT_DOUBLE_EQ(r->peak_gpu_allocation, 100.0);
  // (100 x 2 h + 100 x (1 h + settle) + 0 x the rest) / 4 h
  EXPECT_NEAR(r->mean_gpu_allocation, (200 + 100 * (1 + settle_h)) / 4, 1e-6);
  std::vector<std::pair<double, double>> want = {
      {0, 100}, {0.5, 100}, {2, 100}, {3 + settle_h, 0}, {4, 50}};
  ASSERT_EQ(r->samples.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_NEAR(r->samples[i].hours, want[i].first, 1e-9);
    EXPECT_DOUBLE_EQ(r->samples[i].gpu_allocation, want[i].second);
  }
  EXPECT_EQ(r->samples[1].waiting, 1);
  EXPECT_EQ(r->samples[2].waiting, 0);
  using Named = std::vector<std::pair<std::string, double>>;
  EXPECT_EQ(r->samples[4].by_model, (Named{{"A100-SXM4-40GB", 50}}));
  EXPECT_EQ(r->samples[4].by_group, (Named{{"(none)", 50}}));
  const PodOutcome* b = nullptr;
  for (const auto& o : (*sim)->outcomes()) {
    if (o.pod->meta.name == "b") b = &o;
  }
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->state, PodState::kScheduled);
  EXPECT_TRUE(b->deleted);
  const Report report = BuildReport(**sim, "in.yaml");
  EXPECT_EQ(report.placements[1].state, "Completed");
  EXPECT_EQ(report.placements[1].node, "gpu-0");
  EXPECT_EQ(report.placements[2].state, "Scheduled");  // c never leaves
  EXPECT_NE(ReplayCurveCsv(*r).find("3.003056,0.000,0,0\n"), std::string::npos)
      << ReplayCurveCsv(*r);
}

TEST(ReplayTest, InvalidTimesAreRejectedAllAtOnceAndTheRestReplays) {
  Workload w = Load(GpuNode("gpu-0", 8) + TimedPod("a", 1, "0s", "two hours") +
                        TimedPod("b", 1, "-5m", "1h") + TimedPod("c", 1, "1m", "1h"),
                    "timed.yaml");
  ASSERT_EQ(w.rejected.size(), 2u);
  EXPECT_EQ(w.rejected[0].ToString(),
            "timed.yaml: document 2: Pod default/a: metadata.annotations[gpusched.io/duration]: "
            "Invalid value: \"two hours\": want a duration such as \"90m\" or \"2h30m\"");
  EXPECT_EQ(w.rejected[1].ToString().find("timed.yaml: document 3: Pod default/b: "
                                          "metadata.annotations[gpusched.io/arrival]: Invalid "
                                          "value: \"-5m\""),
            0u);
  ASSERT_EQ(w.pods.size(), 1u);
  static const common::FakeClock wall;
  SimOptions opts;
  opts.arrival_interval = common::Duration(0);
  auto sim = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall}, opts);
  ASSERT_TRUE(sim.ok());
  auto r = RunReplay(**sim, w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->arrivals, 1);
  // A pod that reaches the replay unchecked (not read from a manifest) is still named.
  auto unchecked = std::make_shared<api::Pod>(*w.pods[0]);
  for (auto& [key, value] : unchecked->meta.annotations) {
    if (key == kDurationAnnotation) value = "soon";
  }
  Workload direct;
  direct.nodes = w.nodes;
  direct.pods.push_back(unchecked);
  auto again =
      Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall}, opts);
  ASSERT_TRUE(again.ok());
  auto failed = RunReplay(**again, direct);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("annotation gpusched.io/duration: invalid value "
                                           "\"soon\""),
            std::string::npos)
      << failed.status().message();
}

// The replay's Simulator: invariants checked after every placement, the clock left to the replay.
std::unique_ptr<Simulator> ReplaySimulator() {
  static const common::FakeClock wall;
  SimOptions opts;
  opts.check_invariants = true;
  opts.arrival_interval = common::Duration(0);
  auto sim = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall}, opts);
  EXPECT_TRUE(sim.ok()) << sim.status().ToString();
  return sim.ok() ? std::move(*sim) : nullptr;
}

TEST(ReplayTest, WaitsArePerPodSizeFromArrivalToFirstPlacement) {
  // a 0-2 h and c (4 GPUs) at 4 h are placed at once; b waits from 30 m until a leaves and its
  // backoff lets it in (2 h + 11 s: 5,411 s x 8 GPUs); e (8 GPUs) arrives at 5 h beside c and
  // is never placed: it waits until the end, 6 h (1 h x 8 GPUs); d asks for 16 GPUs, more than
  // any node has: it fits no node even empty, so it is counted and waits for nothing.
  Workload w =
      Load(GpuNode("gpu-0", 8) + TimedPod("a", 8, "0s", "2h") + TimedPod("b", 8, "30m", "1h") +
           TimedPod("c", 4, "4h", "") + TimedPod("d", 16, "1h", "") + TimedPod("e", 8, "5h", "") +
           TimedPod("f", 0, "6h", ""));
  auto sim = ReplaySimulator();
  ASSERT_NE(sim, nullptr);
  auto r = RunReplay(*sim, w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->arrivals, 6);
  ASSERT_EQ(r->waits.size(), 5u);
  const ReplayWaits& four = r->waits[1];
  EXPECT_EQ(four.size, "4");
  EXPECT_EQ(four.pods, 1);
  EXPECT_EQ(four.waited, 0);
  EXPECT_DOUBLE_EQ(four.max_s, 0);
  const ReplayWaits& eight = r->waits[2];
  EXPECT_EQ(eight.size, "8");
  EXPECT_EQ(eight.pods, 3);
  EXPECT_EQ(eight.waited, 2);
  EXPECT_EQ(eight.never_placed, 1);
  EXPECT_EQ(eight.fit_no_node, 0);
  EXPECT_DOUBLE_EQ(eight.p50_s, 3600);  // nearest rank: the second of {0, 3600, 5411}
  EXPECT_DOUBLE_EQ(eight.p90_s, 5411);
  EXPECT_DOUBLE_EQ(eight.pending_gpu_hours, 5411.0 / 3600 * 8 + 8);
  const ReplayWaits& sixteen = r->waits[3];
  EXPECT_EQ(sixteen.size, "16");
  EXPECT_EQ(sixteen.pods, 0);
  EXPECT_EQ(sixteen.never_placed, 0);
  EXPECT_EQ(sixteen.fit_no_node, 1);
  EXPECT_DOUBLE_EQ(sixteen.pending_gpu_hours, 0);
  const ReplayWaits& total = r->waits[4];
  EXPECT_EQ(total.size, "total");
  EXPECT_EQ(total.pods, 5);
  EXPECT_EQ(total.waited, 2);
  EXPECT_EQ(total.fit_no_node, 1);
  EXPECT_DOUBLE_EQ(total.p50_s, 0);
  EXPECT_DOUBLE_EQ(total.p99_s, 5411);
  EXPECT_DOUBLE_EQ(total.pending_gpu_hours, 5411.0 / 3600 * 8 + 8);
  const std::string text = FormatReplayText(*r);
  EXPECT_NE(text.find("  8         3       2             1  1.0h  1.5h  1.5h  1.5h          20.02"
                      "            0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  16        0       0             0    0s    0s    0s    0s           0.00"
                      "            1\n"),
            std::string::npos)
      << text;
}

TEST(ReplayTest, AReplacementOfAPreemptedPodRunsItsDurationAndLeaves) {
  // train (a Deployment's pod, 3 h) is preempted at 1 h by serve (1 h); the ReplicaSet's
  // replacement waits for serve to leave, then runs its 3 h and leaves too.
  Workload w = Load(GpuNode("gpu-0", 8) + R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: serving}
value: 1000
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: train}
spec:
  selector: {matchLabels: {app: train}}
  template:
    metadata:
      labels: {app: train}
      annotations: {gpusched.io/arrival: "0s", gpusched.io/duration: "3h"}
    spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: serve
  annotations: {gpusched.io/arrival: "1h", gpusched.io/duration: "1h"}
spec:
  priorityClassName: serving
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
)");
  auto sim = ReplaySimulator();
  ASSERT_NE(sim, nullptr);
  auto r = RunReplay(*sim, w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(sim->outcomes().size(), 3u);
  const PodOutcome& replacement = sim->outcomes()[2];
  EXPECT_EQ(replacement.replaces, sim->outcomes()[0].pod->Key());
  EXPECT_EQ(sim->outcomes()[0].state, PodState::kPreempted);
  EXPECT_EQ(replacement.state, PodState::kScheduled);
  EXPECT_TRUE(replacement.deleted) << "it left after its 3 h";
  EXPECT_EQ(r->departed, 2);
  EXPECT_NEAR(r->span_hours, 5, 0.01);
}

TEST(ReplayTest, LoadRepeatsThePodsAsAPoissonProcessAtTheOfferedLoad) {
  // 8 GPUs; x asks 1 GPU for 1 h, y 2 GPUs for 30 m: 3,600,000 milli-GPU seconds per pod on
  // average. Load 0.5 over 100 h: 0.5 x 8000 / 3.6e6 arrivals per second, 400 expected.
  Workload w =
      Load(GpuNode("gpu-0", 8) + TimedPod("x", 1, "0s", "1h") + TimedPod("y", 2, "5h", "30m"));
  auto sim = ReplaySimulator();
  ASSERT_NE(sim, nullptr);
  ReplayOptions options;
  options.load = 0.5;
  options.window = std::chrono::hours(100);
  auto r = RunReplay(*sim, w, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->arrivals, 400 - 80);  // 4 standard deviations of a Poisson count
  EXPECT_LT(r->arrivals, 400 + 80);
  EXPECT_DOUBLE_EQ(r->span_hours, 100);  // the replay ends with the window
  EXPECT_NEAR(r->mean_gpu_allocation, 50, 10);
  const auto outcomes = sim->outcomes();
  ASSERT_GE(outcomes.size(), 4u);
  EXPECT_EQ(outcomes[0].pod->meta.name, "x");
  EXPECT_EQ(outcomes[1].pod->meta.name, "y");
  EXPECT_EQ(outcomes[2].pod->meta.name, "x-r1");
  EXPECT_EQ(outcomes[3].pod->meta.name, "y-r1");
  EXPECT_EQ(outcomes.size(), static_cast<size_t>(r->arrivals));
  // The live counts the samples read follow the outcomes.
  for (size_t state = 0; state < kPodStates; ++state) {
    const auto want = std::count_if(outcomes.begin(), outcomes.end(), [&](const PodOutcome& o) {
      return !o.deleted && o.state == static_cast<PodState>(state);
    });
    EXPECT_EQ(sim->LiveCount(static_cast<PodState>(state)), want) << state;
  }
  EXPECT_EQ(r->samples.back().waiting, sim->LiveCount(PodState::kUnschedulable));
  // Another seed draws other arrivals.
  auto again = ReplaySimulator();
  options.seed = 7;
  auto other = RunReplay(*again, w, options);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->arrivals, r->arrivals);
}

TEST(ReplayTest, ALoadNeedsPodsThatAskForGpus) {
  Workload w = Load(GpuNode("gpu-0", 8) + TimedPod("x", 0, "0s", "1h"));
  auto sim = ReplaySimulator();
  ASSERT_NE(sim, nullptr);
  ReplayOptions options;
  options.load = 1;
  auto r = RunReplay(*sim, w, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--load: none of the 1 pods asks for a GPU, so no arrival rate offers a GPU load");
}

TEST(CompareTest, RunsSideBySideOneColumnPerConfig) {
  Workload w = Load(GpuNode("gpu-0", 8) + GpuNode("gpu-1", 8) + Deployment("web", 3));
  std::vector<ComparedRun> runs;
  for (const char* name : {"a.yaml", "b.yaml"}) {
    auto sim = Simulate(w);
    ASSERT_NE(sim, nullptr);
    runs.push_back(ComparedRun{name, BuildReport(*sim, "in.yaml"), std::nullopt});
  }
  const std::string text = FormatComparisonText(runs);
  EXPECT_NE(text.find("Comparison on in.yaml\n"), std::string::npos) << text;
  EXPECT_NE(text.find("         a.yaml         b.yaml\n"
                      "  profile                    gpu-scheduler  gpu-scheduler\n"
                      "  pods scheduled                         3              3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  GPU allocation at the end          18.8%          18.8%\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("mean over time"), std::string::npos);  // no replay, no replay rows
  const boost::json::value j = ComparisonToJson(runs);
  ASSERT_EQ(j.at("runs").as_array().size(), 2u);
  EXPECT_EQ(j.at("runs").at(1).at("name").as_string(), "b.yaml");
}

// --- the per-pod table -------------------------------------------------------------------------

TEST(PerPodTest, TextTableAndCsvListEveryPodWithNodeDevicesStateAndReason) {
  const std::string pods =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: fits}\nspec:\n  containers: [{name: c, "
      "resources: {limits: {nvidia.com/gpu: 2}}}]\n---\n"
      "apiVersion: v1\nkind: Pod\nmetadata: {name: too-big}\nspec:\n  containers: [{name: c, "
      "resources: {limits: {nvidia.com/gpu: 16}}}]\n";
  Workload w = Load(GpuNode("gpu-0", 8) + pods);
  auto sim = Simulate(w);
  ASSERT_NE(sim, nullptr);
  const Report r = BuildReport(*sim, "in.yaml");
  const std::string text = FormatReportText(r);
  EXPECT_NE(text.find("  POD              NODE   DEVICES  STATE          REASON\n"
                      "  default/fits     gpu-0  0,1      Scheduled\n"
                      "  default/too-big  -      -        Unschedulable  0/1 nodes are available: "
                      "1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: 1 No "
                      "preemption victims found for incoming pod.\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(FormatPlacementsCsv(r),
            "pod,node,gpuDevices,state,message\n"
            "default/fits,gpu-0,0;1,Scheduled,\n"
            "default/too-big,,,Unschedulable,0/1 nodes are available: 1 Insufficient "
            "nvidia.com/gpu. preemption: 0/1 nodes are available: 1 No preemption victims found "
            "for incoming pod.\n");
  // At most N rows, then a pointer to the CSV.
  const std::string short_text = FormatReportText(r, 25, 1);
  EXPECT_NE(short_text.find("... and 1 more (-o csv lists every pod)"), std::string::npos);
  EXPECT_EQ(FormatReportText(r, 25, 0).find("\nPods:\n"), std::string::npos);
}

}  // namespace
}  // namespace gpusched::sim
