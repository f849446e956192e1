// SPDX-License-Identifier: Apache-2.0
// ExplainClaims: each device of a node with the reason it is or is not used for a request, from
// the DynamicResources plugin's own selector matching and allocator, on a cluster built by the
// simulator from manifests; ExplainLookahead: the plugin's lookahead per feasible node.
#include "src/explain/dra_claims.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/common/clock.h"
#include "src/common/interner.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::explain {
namespace {

// Node n1 and the DeviceClass both clusters below start with.
constexpr std::string_view kNodeAndClass = R"(
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "32", memory: 64Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com'"}
---)";

constexpr std::string_view kInput = R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpu}
spec:
  driver: gpu.nvidia.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {productName: {string: H100}, cliqueId: {string: c0}}}
  - {name: gpu-1, attributes: {productName: {string: H100}, cliqueId: {string: c0}}}
  - {name: gpu-2, attributes: {productName: {string: H100}, cliqueId: {string: c0}}}
  - {name: gpu-3, attributes: {productName: {string: H100}, cliqueId: {string: c0}}}
  - {name: gpu-4, attributes: {productName: {string: H100}, cliqueId: {string: c1}}}
  - {name: gpu-5, attributes: {productName: {string: H100}, cliqueId: {string: c1}}}
  - {name: gpu-6, attributes: {productName: {string: A100}, cliqueId: {string: c1}}}
  - name: gpu-7
    attributes: {productName: {string: H100}, cliqueId: {string: c1}}
    taints: [{key: broken, value: "true", effect: NoSchedule}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-other}
spec:
  driver: other.example.com
  nodeName: n1
  pool: {name: n1-other, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: dev-0}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n2-gpu}
spec:
  driver: gpu.nvidia.com
  nodeName: n2
  pool: {name: n2, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {productName: {string: H100}, cliqueId: {string: c9}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: held, namespace: ml, resourceVersion: "3"}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
status:
  allocation:
    devices:
      results:
      - {request: gpu, driver: gpu.nvidia.com, pool: n1, device: gpu-0}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: want, namespace: ml}
spec:
  devices:
    requests:
    - name: gpus
      exactly:
        deviceClassName: gpu.nvidia.com
        count: 2
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].productName == 'H100'"}
    constraints:
    - matchAttribute: gpu.nvidia.com/cliqueId
)";

// The simulator run on kNodeAndClass + an input, and a pod "ml/p" naming one claim.
class ExplainDraTest : public ::testing::Test {
 protected:
  void Simulate(std::string_view input) {
    ASSERT_TRUE(plugins::RegisterInTreePlugins(registry_).ok());
    auto sim = sim::Simulator::Create(sim::SimulationDefaultConfig(), {registry_, clock_});
    ASSERT_TRUE(sim.ok()) << sim.status().ToString();
    sim_ = std::move(*sim);
    sim::Workload w;
    ASSERT_TRUE(
        sim::AppendManifests(std::string(kNodeAndClass) + std::string(input), "test.yaml", w).ok());
    ASSERT_TRUE(w.rejected.empty()) << w.rejected.front().ToString();
    ASSERT_TRUE(sim_->Run(w).ok());
  }

  static api::Pod PodNaming(const std::string& pod_claim, const std::string& claim) {
    api::Pod pod;
    pod.meta.name = "p";
    pod.meta.namespace_ = "ml";
    pod.meta.uid = "uid-p";
    pod.scheduler_name =
        common::Intern(sim::SimulationDefaultConfig().profiles.front().scheduler_name);
    auto claims = std::make_shared<api::PodResourceClaims>();
    claims->claims.push_back(api::PodClaimSource{pod_claim, claim, ""});
    pod.resource_claims = std::move(claims);
    return pod;
  }

  framework::Registry registry_;
  common::FakeClock clock_;
  std::unique_ptr<sim::Simulator> sim_;
};

TEST_F(ExplainDraTest, EveryDeviceOfTheNodeWithItsVerdict) {
  ASSERT_NO_FATAL_FAILURE(Simulate(kInput));
  const api::Pod pod = PodNaming("gpus", "want");

  const std::optional<DraRow> row = ExplainClaims(sim_->dra(), pod, *sim_->cluster().GetNode("n1"));
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->node, "n1");
  EXPECT_EQ(row->message, "");
  ASSERT_EQ(row->requests.size(), 1u);
  const DraRequestRow& r = row->requests[0];
  EXPECT_EQ(r.claim, "ml/want");
  EXPECT_EQ(r.request, "gpus");
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.unreachable, 1);  // n2's GPU
  std::vector<std::pair<std::string, std::string>> verdicts;
  for (const DraDeviceRow& d : r.devices) verdicts.emplace_back(d.device, d.verdict);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"gpu.nvidia.com/n1/gpu-0", "held by claim ml/held"},
      {"gpu.nvidia.com/n1/gpu-1", "selected"},
      {"gpu.nvidia.com/n1/gpu-2", "selected"},
      {"gpu.nvidia.com/n1/gpu-3", "matches, not needed"},
      {"gpu.nvidia.com/n1/gpu-4", "constraint mismatch: gpu.nvidia.com/cliqueId c1, picked c0"},
      {"gpu.nvidia.com/n1/gpu-5", "constraint mismatch: gpu.nvidia.com/cliqueId c1, picked c0"},
      {"gpu.nvidia.com/n1/gpu-6", "request selector false"},
      {"gpu.nvidia.com/n1/gpu-7", "tainted broken=true:NoSchedule"},
      {"other.example.com/n1-other/dev-0", "class selector false"},
  };
  EXPECT_EQ(verdicts, want);

  // No claims: nothing to explain.
  api::Pod plain;
  EXPECT_FALSE(ExplainClaims(sim_->dra(), plain, *sim_->cluster().GetNode("n1")).has_value());
}

// One GPU as a counter set (compute 2) with a whole-GPU device (draws 2) and two halves (1 each);
// a claim holds one half. A second pool's device draws on a counter set nobody publishes.
constexpr std::string_view kCountersInput = R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpu}
spec:
  driver: gpu.nvidia.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  sharedCounters:
  - {name: gpu-0, counters: {compute: {value: "2"}}}
  devices:
  - {name: whole, consumesCounters: [{counterSet: gpu-0, counters: {compute: {value: "2"}}}]}
  - {name: half-0, consumesCounters: [{counterSet: gpu-0, counters: {compute: {value: "1"}}}]}
  - {name: half-1, consumesCounters: [{counterSet: gpu-0, counters: {compute: {value: "1"}}}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-bad}
spec:
  driver: gpu.nvidia.com
  nodeName: n1
  pool: {name: n1-bad, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: odd, consumesCounters: [{counterSet: missing, counters: {compute: {value: "1"}}}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: held, namespace: ml, resourceVersion: "3"}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
status:
  allocation:
    devices:
      results:
      - {request: gpu, driver: gpu.nvidia.com, pool: n1, device: half-0}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: want, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
)";

TEST_F(ExplainDraTest, PartitionsShortOfCountersAndInvalidPoolsAreNamed) {
  ASSERT_NO_FATAL_FAILURE(Simulate(kCountersInput));
  const std::optional<DraRow> row =
      ExplainClaims(sim_->dra(), PodNaming("gpu", "want"), *sim_->cluster().GetNode("n1"));
  ASSERT_TRUE(row.has_value());
  ASSERT_EQ(row->requests.size(), 1u);
  std::vector<std::pair<std::string, std::string>> verdicts;
  for (const DraDeviceRow& d : row->requests[0].devices) verdicts.emplace_back(d.device, d.verdict);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"gpu.nvidia.com/n1-bad/odd",
       "pool invalid: device \"odd\" draws on counter \"compute\" of counter set \"missing\", "
       "which the pool does not publish"},
      {"gpu.nvidia.com/n1/whole", "counters short: gpu-0/compute needs 2, has 1 left"},
      {"gpu.nvidia.com/n1/half-0", "held by claim ml/held"},
      {"gpu.nvidia.com/n1/half-1", "selected"},
  };  // in the index's order: by slice name
  EXPECT_EQ(verdicts, want);
}

// Two nodes: n1 has four A100s, two of them held; n2 four T4s. A claim waits for two A100s.
constexpr std::string_view kLookaheadInput = R"(
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "32", memory: 64Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpu}
spec:
  driver: gpu.nvidia.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {productName: {string: A100}}}
  - {name: gpu-1, attributes: {productName: {string: A100}}}
  - {name: gpu-2, attributes: {productName: {string: A100}}}
  - {name: gpu-3, attributes: {productName: {string: A100}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n2-gpu}
spec:
  driver: gpu.nvidia.com
  nodeName: n2
  pool: {name: n2, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {productName: {string: T4}}}
  - {name: gpu-1, attributes: {productName: {string: T4}}}
  - {name: gpu-2, attributes: {productName: {string: T4}}}
  - {name: gpu-3, attributes: {productName: {string: T4}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: held, namespace: ml, resourceVersion: "3"}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com, count: 2}
status:
  allocation:
    devices:
      results:
      - {request: gpu, driver: gpu.nvidia.com, pool: n1, device: gpu-0}
      - {request: gpu, driver: gpu.nvidia.com, pool: n1, device: gpu-1}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: pair, namespace: ml}
spec:
  devices:
    requests:
    - name: gpus
      exactly:
        deviceClassName: gpu.nvidia.com
        count: 2
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].productName == 'A100'"}
)";

// Beside kInput: node n2 (one H100), node a0 (no devices), and a claim for four H100s of one
// clique, which no node has: n1 comes closest (seven H100s, one held, one tainted).
constexpr std::string_view kNoFitNodes = R"(---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "32", memory: 64Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: a0}
status: {allocatable: {cpu: "32", memory: 64Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: four, namespace: ml}
spec:
  devices:
    requests:
    - name: gpus
      exactly:
        deviceClassName: gpu.nvidia.com
        count: 4
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].productName == 'H100'"}
    constraints:
    - matchAttribute: gpu.nvidia.com/cliqueId
)";

TEST_F(ExplainDraTest, TheClosestRejectedNodeHasTheMostDevicesTheRequestsSelect) {
  ASSERT_NO_FATAL_FAILURE(Simulate(std::string(kInput) + std::string(kNoFitNodes)));
  const api::Pod pod = PodNaming("gpus", "four");
  scheduler::Scheduler& sched = sim_->scheduler();
  auto result = sched.Explain(pod);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  Explanation ex = Build(Subject{"ml/p", "", "", "", "test"}, *result, sched.snapshot());
  ASSERT_EQ(ex.chosen, "");
  EXPECT_EQ(DraNodeOf(ex), "");  // no node to place on: only the closest rejected one is shown
  const std::optional<DraRow> best = ExplainBestRejected(sim_->dra(), pod, sched.snapshot(), ex);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->node, "n1");  // a0 reaches no device, n2 one; n1 seven H100s and an A100
  // A pod that fits: the chosen node's claims, and the closest rejected node beside them.
  const api::Pod fits = PodNaming("gpus", "want");
  auto placed = sched.Explain(fits);
  ASSERT_TRUE(placed.ok());
  Explanation ok = Build(Subject{"ml/p", "", "", "", "test"}, *placed, sched.snapshot());
  EXPECT_EQ(DraNodeOf(ok), "n1");
  ok.dra = ExplainClaims(sim_->dra(), fits, *sim_->cluster().GetNode("n1"));
  ok.dra_rejected = ExplainBestRejected(sim_->dra(), fits, sched.snapshot(), ok);
  ASSERT_TRUE(ok.dra_rejected.has_value());
  EXPECT_EQ(ok.dra_rejected->node, "n2");
  const std::string text = FormatText(ok);
  EXPECT_NE(text.find("\nCLAIMS on n1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nCLAIMS on n2 (the closest node DynamicResources rejected)"),
            std::string::npos)
      << text;
  EXPECT_EQ(ToJson(ok).at("claimsOnClosestRejected").at("node"), "n2");
}

TEST_F(ExplainDraTest, LookaheadCountsWaitingPodsServedPerFeasibleNode) {
  ASSERT_NO_FATAL_FAILURE(Simulate(kLookaheadInput));
  const api::Pod pod = PodNaming("gpu", "one");
  scheduler::Scheduler& sched = sim_->scheduler();
  auto result = sched.Explain(pod);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  Explanation ex = Build(Subject{"ml/p", "", "", "", "test"}, *result, sched.snapshot());
  ex.dra = ExplainClaims(sim_->dra(), pod, *sim_->cluster().GetNode(ex.chosen));
  ASSERT_TRUE(ex.dra.has_value());
  ExplainLookahead(sim_->dra(), pod, sched.snapshot(), ex);
  ASSERT_TRUE(ex.dra->lookahead.has_value());
  EXPECT_EQ(ex.dra->lookahead->waiting_claims, 1);
  EXPECT_EQ(ex.dra->lookahead->replays, 18);
  // On n1 the pod would take one of the two A100s "pair" needs; on n2 it leaves them.
  using Nodes = std::vector<std::pair<std::string, int32_t>>;
  EXPECT_EQ(ex.dra->lookahead->nodes, (Nodes{{"n2", 1}, {"n1", 0}}));
  EXPECT_EQ(ex.chosen, "n2");
  EXPECT_NE(FormatText(ex).find("lookahead: 1 waiting claim(s), 18 replays; waiting pods still "
                                "served after placing here: n2=1 n1=0"),
            std::string::npos)
      << FormatText(ex);
}

}  // namespace
}  // namespace gpusched::explain
