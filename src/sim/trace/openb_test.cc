// SPDX-License-Identifier: Apache-2.0
#include "src/sim/trace/openb.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/gpu.h"
#include "src/common/interner.h"

namespace gpusched::sim::trace {
namespace {

constexpr std::string_view kNodes =
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "openb-node-0000,64000,262144,2,P100\n"
    "openb-node-0001,96000,393216,8,G2\n"
    "openb-node-0002,32000,131072,4,V100M16\n"
    "openb-node-0003,8000,32768,0,\n";

constexpr std::string_view kPods =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
    "openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061\n"
    "openb-pod-0002,88000,327680,8,1000,,BE,Failed,1,2,\n"
    "openb-pod-0003,32000,49152,0,0,,BE,Running,1,2,1\n"
    "openb-pod-0004,4000,8192,1,500,V100M16|V100M32|V100M32,LS,Pending,1,2,\n";

TEST(OpenbTest, ParsesNodes) {
  auto nodes = ParseOpenbNodes(kNodes, "nodes.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 4u);
  struct Case {
    size_t i;
    std::string name;
    int64_t milli_cpu;
    int64_t memory;
    int32_t gpus;
    std::string model;
    int64_t gpu_memory_mib;
  };
  const std::vector<Case> cases = {
      {0, "openb-node-0000", 64000, int64_t{262144} << 20, 2, "P100", 16280},
      {1, "openb-node-0001", 96000, int64_t{393216} << 20, 8, "G2", 20000},
      {2, "openb-node-0002", 32000, int64_t{131072} << 20, 4, "V100M16", 16160},
      {3, "openb-node-0003", 8000, int64_t{32768} << 20, 0, "", 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const api::Node& n = *(*nodes)[c.i];
    EXPECT_EQ(n.meta.name, c.name);
    EXPECT_EQ(n.allocatable.milli_cpu, c.milli_cpu);
    EXPECT_EQ(n.allocatable.memory, c.memory);
    EXPECT_EQ(n.allocatable.pods, 1001);
    EXPECT_EQ(n.gpu.count, c.gpus);
    EXPECT_EQ(common::Str(n.gpu.model), c.model);
    EXPECT_EQ(n.gpu.memory_mib, c.gpu_memory_mib);
    EXPECT_EQ(n.allocatable.Get(api::Names().nvidia_gpu), c.gpus);
    // The labels a kubelet sets, as on every node of a cluster.
    const std::pair<std::string_view, std::string_view> kubelet[] = {
        {"kubernetes.io/hostname", c.name},
        {"kubernetes.io/os", "linux"},
        {"kubernetes.io/arch", "amd64"},
        {"beta.kubernetes.io/os", "linux"},
        {"beta.kubernetes.io/arch", "amd64"}};
    for (const auto& [key, want] : kubelet) {
      common::Atom value;
      ASSERT_TRUE(n.meta.labels.Get(common::Intern(key), &value)) << key;
      EXPECT_EQ(common::Str(value), want) << key;
    }
  }
}

TEST(OpenbTest, ParsesPods) {
  auto pods = ParseOpenbPods(kPods, "pods.csv");
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_EQ(pods->size(), 5u);
  struct Case {
    size_t i;
    std::string name;
    int64_t milli_cpu;
    int32_t count;
    int32_t milli;
    std::vector<std::string> models;
  };
  const std::vector<Case> cases = {
      {0, "openb-pod-0000", 12000, 1, 1000, {}},
      {1, "openb-pod-0001", 6000, 1, 460, {}},
      {2, "openb-pod-0002", 88000, 8, 1000, {}},
      {3, "openb-pod-0003", 32000, 0, 0, {}},
      {4, "openb-pod-0004", 4000, 1, 500, {"V100M16", "V100M32"}},  // repeats collapse
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const api::Pod& p = *(*pods)[c.i];
    EXPECT_EQ(p.meta.name, c.name);
    EXPECT_EQ(p.requests.milli_cpu, c.milli_cpu);
    EXPECT_EQ(p.requests.pods, 1);
    EXPECT_EQ(p.requests.Get(api::Names().nvidia_gpu), 0) << "GPUs are in pod.gpu, not resources";
    EXPECT_EQ(p.gpu.count, c.count);
    EXPECT_EQ(p.gpu.milli, c.milli);
    std::vector<std::string> models;
    for (common::Atom m : p.gpu.models) models.emplace_back(common::Str(m));
    EXPECT_EQ(models, c.models);
    EXPECT_EQ(common::Str(p.scheduler_name), "gpu-scheduler");
    EXPECT_FALSE(p.meta.uid.empty());
  }
}

TEST(OpenbTest, FiveColumnPodListsAreAccepted) {
  auto pods = ParseOpenbPods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\r\np0,1000,1024,2,1000\r\n\r\n", "multigpu.csv");
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_EQ(pods->size(), 1u);
  EXPECT_EQ((*pods)[0]->gpu.count, 2);
}

TEST(OpenbTest, KeepTimesGivesTheReplayArrivalAndDuration) {
  OpenbOptions opts;
  opts.keep_times = true;
  auto pods = ParseOpenbPods(kPods, "pods.csv", opts);
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  const api::Pod& p = *(*pods)[1];
  ASSERT_NE(p.meta.Annotation("gpusched.io/arrival"), nullptr);
  EXPECT_EQ(*p.meta.Annotation("gpusched.io/arrival"), "427061s");
  ASSERT_NE(p.meta.Annotation("gpusched.io/duration"), nullptr);
  EXPECT_EQ(*p.meta.Annotation("gpusched.io/duration"), "12475899s");  // deletion - creation
  // Without keep_times the times are dropped, as the FGD protocol wants.
  auto plain = ParseOpenbPods(kPods, "pods.csv");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)[1]->meta.Annotation("gpusched.io/arrival"), nullptr);
  // A bad time names the line, the column and the value.
  auto bad = ParseOpenbPods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\np0,1,1,0,0,x,5\n",
      "t.csv", opts);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("t.csv:2: column creation_time: invalid value \"x\""),
            std::string::npos)
      << bad.status().message();
}

TEST(OpenbTest, MovableQosMakesOneReplicaReplicaSetsMarkedMovable) {
  OpenbOptions opts;
  opts.movable_qos = {"LS"};
  auto pods = ParseOpenbPods(kPods, "pods.csv", opts);
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  for (const api::PodPtr& p : *pods) {
    const bool ls = p->meta.name != "openb-pod-0002" && p->meta.name != "openb-pod-0003";
    const std::string* movable = p->meta.Annotation("gpusched.io/movable");
    if (!ls) {
      EXPECT_EQ(movable, nullptr) << p->meta.name;
      EXPECT_TRUE(p->meta.owner_references.empty()) << p->meta.name;
      continue;
    }
    ASSERT_NE(movable, nullptr) << p->meta.name;
    EXPECT_EQ(*movable, "true");
    ASSERT_EQ(p->meta.owner_references.size(), 1u);
    EXPECT_EQ(p->meta.owner_references[0].kind, "ReplicaSet");
    EXPECT_EQ(p->meta.owner_references[0].name, p->meta.name);
    EXPECT_TRUE(p->meta.owner_references[0].controller);
  }
  // Without the qos column nothing can be read as movable: an error, not a silent no-op.
  auto five = ParseOpenbPods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,2,1000\n",
                             "multigpu.csv", opts);
  ASSERT_FALSE(five.ok());
  EXPECT_NE(five.status().message().find("multigpu.csv: no qos column"), std::string::npos);
}

TEST(OpenbTest, MalformedCsvIsAnErrorNamingFileLineColumnAndValue) {
  const std::string pod_header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n";
  const std::string node_header = "sn,cpu_milli,memory_mib,gpu,model\n";
  struct Case {
    std::string name;
    bool pods;
    std::string csv;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"an empty file", true, "", "p.csv:1: empty file (want a header row)"},
      {"a missing column", true, "name,cpu_milli,memory_mib,num_gpu\np,1,1,0\n",
       "p.csv:1: header: missing column \"gpu_milli\""},
      {"a duplicate header column", true, "name,name,cpu_milli\n",
       "p.csv:1: header: duplicate column \"name\""},
      {"too few fields", true, pod_header + "p0,1000,1024,1\n",
       "p.csv:2: expected 6 columns, got 4"},
      {"a non-numeric cpu", true, pod_header + "p0,lots,1024,1,1000,\n",
       "p.csv:2: column cpu_milli: invalid value \"lots\" (want a non-negative integer)"},
      {"a negative memory", true, pod_header + "p0,1000,-5,1,1000,\n",
       "p.csv:2: column memory_mib: invalid value \"-5\""},
      {"a share above one GPU", true, pod_header + "p0,1000,1024,1,1500,\n",
       "p.csv:2: column gpu_milli: invalid value \"1500\" (want an integer 0..1000)"},
      {"a share on a multi-GPU pod", true, pod_header + "p0,1000,1024,2,500,\n",
       "p.csv:2: column gpu_milli: invalid value \"500\" (want 1000 when num_gpu > 1"},
      {"a share without GPUs", true, pod_header + "p0,1000,1024,0,500,\n",
       "p.csv:2: column gpu_milli: invalid value \"500\" (want 0 when num_gpu is 0)"},
      {"GPUs without a share", true, pod_header + "p0,1000,1024,1,0,\n",
       "p.csv:2: column gpu_milli: invalid value \"0\" (want 1..1000 when num_gpu > 0)"},
      {"too many GPUs", true, pod_header + "p0,1000,1024,17,1000,\n",
       "p.csv:2: column num_gpu: invalid value \"17\" (want an integer 0..16)"},
      {"an empty model in gpu_spec", true, pod_header + "p0,1000,1024,1,1000,T4||P100\n",
       "p.csv:2: column gpu_spec: invalid value \"T4||P100\""},
      {"a gpu_spec on a CPU pod", true, pod_header + "p0,1000,1024,0,0,T4\n",
       "p.csv:2: column gpu_spec: invalid value \"T4\" (want empty when num_gpu is 0)"},
      {"a duplicate pod name", true, pod_header + "p0,1,1,0,0,\np0,1,1,0,0,\n",
       "p.csv:3: column name: duplicate pod name \"p0\""},
      {"an empty pod name", true, pod_header + ",1,1,0,0,\n",
       "p.csv:2: column name: invalid value \"\" (want a pod name)"},
      {"a blank line in the middle", true, pod_header + "p0,1,1,0,0,\n\np1,1,1,0,0,\n",
       "p.csv:3: empty row"},
      {"a quoted field", true, pod_header + "\"p0\",1,1,0,0,\n",
       "p.csv:2: quoted fields are not supported"},
      {"a GPU node without a model", false, node_header + "n0,1000,1024,2,\n",
       "n.csv:2: column model: invalid value \"\" (want a GPU model for a node with GPUs)"},
      {"a model on a CPU node", false, node_header + "n0,1000,1024,0,T4\n",
       "n.csv:2: column model: invalid value \"T4\" (want empty for a node without GPUs)"},
      {"a fractional GPU count", false, node_header + "n0,1000,1024,1.5,T4\n",
       "n.csv:2: column gpu: invalid value \"1.5\" (want an integer 0..16)"},
      {"a duplicate node name", false, node_header + "n0,1,1,1,T4\nn0,1,1,1,T4\n",
       "n.csv:3: column sn: duplicate node name \"n0\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    common::Status s =
        c.pods ? ParseOpenbPods(c.csv, "p.csv").status() : ParseOpenbNodes(c.csv, "n.csv").status();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), common::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.message()).find(c.want), std::string::npos)
        << "got: " << s.message() << "\nwant: " << c.want;
  }
}

TEST(OpenbTest, MissingFilesAreNamed) {
  auto w = LoadOpenbTrace("/nonexistent/nodes.csv", "/nonexistent/pods.csv");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().ToString().find("/nonexistent/nodes.csv"), std::string::npos);
}

}  // namespace
}  // namespace gpusched::sim::trace
