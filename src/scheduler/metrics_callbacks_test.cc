// SPDX-License-Identifier: Apache-2.0
// The scheduler's metrics end to end in process: a Scheduler with SchedulerMetrics, the real
// in-tree plugins, then a Gather of the registry.
#include "src/scheduler/metrics_callbacks.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "src/kube/accepting_api_client.h"
#include "src/metrics/exposition.h"
#include "src/plugins/in_tree_registry.h"
#include "src/scheduler/scheduler.h"
#include "src/testing/builders.h"

namespace gpusched::scheduler {
namespace {

using testing::MakeNode;
using testing::MakePod;

// Confirms binds synchronously (as an informer would).
class BindingApi final : public kube::AcceptingApiClient {
 public:
  kube::ClusterEventHandler* handler = nullptr;
  common::Status BindPod(
      const api::Pod& pod, std::string_view node,
      const std::vector<std::pair<std::string, std::string>>& annotations) override {
    auto updated = std::make_shared<api::Pod>(pod);
    updated->node_name = std::string(node);
    for (const auto& a : annotations) updated->meta.annotations.push_back(a);
    handler->OnPodUpdate(std::make_shared<api::Pod>(pod), updated);
    return common::Status::Ok();
  }
};

// name{labels} -> value, counters and gauges only; histograms as name_count{labels}.
std::map<std::string, double> Flatten(const metrics::Registry& r) {
  std::map<std::string, double> out;
  for (const auto& f : r.Gather()) {
    for (const auto& s : f.series) {
      std::string key = f.type == metrics::Type::kHistogram ? f.name + "_count" : f.name;
      std::string labels;
      for (size_t i = 0; i < s.label_values.size(); ++i) {
        labels += (i ? "," : "") + f.label_names[i] + "=" + s.label_values[i];
      }
      if (!labels.empty()) key += "{" + labels + "}";
      out[key] =
          f.type == metrics::Type::kHistogram ? static_cast<double>(s.histogram.count) : s.value;
    }
  }
  return out;
}

class MetricsCallbacksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterInTreePlugins(registry_).ok());
    auto cfg = config::DefaultSchedulerConfig();
    cfg.percentage_of_nodes_to_score = 100;
    SchedulerDeps deps{clock_, random_, api_, executor_, registry_};
    deps.metrics = &metrics_;
    deps.node_group_labels = {"eks.amazonaws.com/nodegroup"};
    auto s = Scheduler::Create(cfg, deps);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    sched_ = std::move(s).value();
    api_.handler = &sched_->events();
  }
  void Drain() {
    while (sched_->ScheduleOne()) {
    }
  }
  static api::PodPtr GpuPod(const std::string& name, int gpus,
                            const std::string& model = "A100-SXM4-40GB") {
    return MakePod("default", name)
        .SchedulerName("gpu-scheduler")
        .Cpu("1")
        .Memory("1Gi")
        .Gpus(gpus)
        .GpuModel(model)
        .Ptr();
  }
  static api::NodePtr GpuNode(const std::string& name, int gpus, const std::string& model,
                              const std::string& group) {
    return MakeNode(name)
        .Cpu("64")
        .Memory("512Gi")
        .Pods(110)
        .Gpus(gpus)
        .GpuModel(model)
        .GpuMemoryMiB(40960)
        .Label("eks.amazonaws.com/nodegroup", group)
        .Ptr();
  }

  common::FakeClock clock_;
  common::Random random_{42};
  BindingApi api_;
  common::InlineExecutor executor_;
  framework::Registry registry_;
  metrics::Registry metrics_registry_;
  metrics::SchedulerMetrics metrics_{metrics_registry_};
  std::unique_ptr<Scheduler> sched_;
};

TEST_F(MetricsCallbacksTest, AttemptsQueueCacheAndGpuAllocationAreExported) {
  sched_->events().OnNodeAdd(GpuNode("a100-1", 8, "A100-SXM4-40GB", "train"));
  sched_->events().OnNodeAdd(GpuNode("a100-2", 8, "A100-SXM4-40GB", "train"));
  sched_->events().OnNodeAdd(GpuNode("t4-1", 4, "Tesla-T4", "infer"));
  sched_->events().OnPodAdd(GpuPod("p2", 2));
  sched_->events().OnPodAdd(GpuPod("p3", 3));
  sched_->events().OnPodAdd(GpuPod("p1", 1));
  sched_->events().OnPodAdd(GpuPod("huge", 9));  // fits nowhere
  Drain();
  auto m = Flatten(metrics_registry_);
  const std::string profile = "profile=gpu-scheduler";
  EXPECT_EQ(m["scheduler_schedule_attempts_total{result=scheduled," + profile + "}"], 3);
  EXPECT_EQ(m["scheduler_schedule_attempts_total{result=unschedulable," + profile + "}"], 1);
  EXPECT_EQ(m["scheduler_schedule_attempts_total{result=error," + profile + "}"], 0);
  EXPECT_EQ(
      m["scheduler_scheduling_attempt_duration_seconds_count{result=scheduled," + profile + "}"],
      3);
  EXPECT_EQ(m["scheduler_scheduling_algorithm_duration_seconds_count"], 4);
  EXPECT_EQ(m["scheduler_pod_scheduling_attempts_count"], 3);
  EXPECT_EQ(m["scheduler_pod_scheduling_sli_duration_seconds_count{attempts=1}"], 3);
  EXPECT_EQ(m["scheduler_pending_pods{queue=unschedulable}"], 1);
  EXPECT_EQ(m["scheduler_pending_pods{queue=active}"], 0);
  EXPECT_EQ(m["scheduler_cache_size{type=nodes}"], 3);
  EXPECT_EQ(m["scheduler_cache_size{type=pods}"], 3);
  // The one unschedulable pod ran PostFilter once (DefaultPreemption found no victims).
  EXPECT_EQ(m["scheduler_preemption_attempts_total"], 1);
  EXPECT_EQ(m["scheduler_preemption_victims_count"], 0);
  EXPECT_GE(m["scheduler_queue_incoming_pods_total{event=PodAdd,queue=active}"] +
                m["scheduler_queue_incoming_pods_total{queue=active,event=PodAdd}"],
            4);
  // The 9-GPU pod was rejected by a GPU filter on all three nodes.
  double unsched_plugins = 0;
  double reasons = 0;
  for (const auto& [k, v] : m) {
    if (k.starts_with("scheduler_unschedulable_pods{")) unsched_plugins += v;
    if (k.starts_with("gpusched_scheduler_unschedulable_reasons_total{")) reasons += v;
  }
  EXPECT_GE(unsched_plugins, 1);
  EXPECT_GE(reasons, 1);
  // PreFilter ran once per plugin per attempt; Filter ran per node.
  double filter_evals = 0;
  for (const auto& [k, v] : m) {
    if (k.starts_with("scheduler_plugin_evaluation_total{") &&
        k.find("extension_point=Filter") != std::string::npos) {
      filter_evals += v;
    }
  }
  EXPECT_GE(filter_evals, 4 * 3);
  EXPECT_GT(m["scheduler_framework_extension_point_duration_seconds_count{extension_point=Bind,"
              "status=Success," +
              profile + "}"],
            0);
  // GPU allocation per model and group matches the bindings: 6 A100s in "train".
  EXPECT_EQ(m["gpusched_cluster_gpus{model=A100-SXM4-40GB,node_group=train}"], 16);
  EXPECT_EQ(m["gpusched_cluster_gpus_allocated{model=A100-SXM4-40GB,node_group=train}"], 6);
  EXPECT_EQ(m["gpusched_cluster_gpus{model=T4,node_group=infer}"], 4);
  EXPECT_EQ(m["gpusched_cluster_gpus_allocated{model=T4,node_group=infer}"], 0);
  EXPECT_EQ(m["gpusched_cluster_gpu_fragmentation_ratio"], 0);  // whole GPUs only
  std::string text = metrics::WriteText(metrics_registry_);
  EXPECT_NE(text.find("scheduler_scheduling_attempt_duration_seconds_bucket{result=\"scheduled\","
                      "profile=\"gpu-scheduler\",le=\"0.001\"}"),
            std::string::npos);
}

TEST(SummariseGpusTest, FragmentationCountsFreeCapacityOnPartlyUsedGpus) {
  common::FakeClock clock;
  cache::Cache cache(clock);
  cache.AddNode(MakeNode("n1").Cpu("8").Memory("64Gi").Pods(110).Gpus(2).GpuModel("A100").Ptr());
  api::GpuAssignment half;
  half.devices = {0};
  half.milli = 500;
  auto pod =
      MakePod("default", "share").Cpu("1").Gpus(1).Annotation("gpusched.io/gpu-milli", "500").Ptr();
  ASSERT_TRUE(cache.AssumePod(pod, "n1", half).ok());
  ClusterGpuUsage u = SummariseGpus(cache, {});
  ASSERT_EQ(u.groups.size(), 1u);
  EXPECT_EQ(u.groups[0].gpus, 2);
  EXPECT_DOUBLE_EQ(u.groups[0].allocated, 0.5);
  EXPECT_EQ(u.groups[0].shared_gpus, 1);
  EXPECT_EQ(u.groups[0].node_group, "");
  // Free: 500 (stranded) + 1000 (whole) -> 1/3 stranded.
  EXPECT_NEAR(u.fragmentation, 500.0 / 1500.0, 1e-9);
}

}  // namespace
}  // namespace gpusched::scheduler
