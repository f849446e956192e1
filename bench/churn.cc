// SPDX-License-Identifier: Apache-2.0
// The churn phase. Waiting pods, in equal thirds (GPU pods tolerate the GPU taint):
//   h100   8 GPUs of model H100: the cluster has none (GpuFit); an H100 node added takes one.
//   huge   200 CPUs: no node is that large (NodeResourcesFit); never placed.
//   zonex  1 CPU with nodeSelector zone us-east-1x: no node is there (NodeAffinity); a node
//          relabelled into that zone takes some.
// Each simulated second brings `events` events from a fixed mix, per 20 events: 8 unrelated node
// label changes (a generation label, as node-feature-discovery relabels), 4 nodes' allocatable
// cpu nudged by 1m, 6 running CPU pods deleted, 2 running GPU pods deleted. Every R-th second
// (--churn-relevant-every R, default 10) a CPU node is added (zone us-east-1a) and one untainted
// node moves to zone us-east-1x; half-way between those an 8×H100 node is added: the events that
// let waiting pods in. All are events the scheduler reacted to before queueing hints (node add,
// label/allocatable update, assigned pod delete), so --hints off reproduces the old behaviour:
// every event moves every waiting pod.
#include "bench/churn.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "src/api/decode.h"
#include "src/common/interner.h"
#include "src/common/random.h"

namespace gpusched::bench {
namespace {

double CpuNow() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

common::StatusOr<api::PodPtr> WaitingPod(int32_t i) {
  const std::string name = "waiting-" + std::to_string(i);
  std::string spec;
  switch (i % 3) {
    case 0:
      spec =
          R"("tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}],)"
          R"("containers":[{"name":"main","resources":{"requests":{"cpu":"8","memory":"64Gi"},)"
          R"("limits":{"nvidia.com/gpu":"8"}}}])";
      break;
    case 1:
      spec = R"("containers":[{"name":"main","resources":{"requests":{"cpu":"200"}}}])";
      break;
    default:
      spec = R"("nodeSelector":{"topology.kubernetes.io/zone":"us-east-1x"},)"
             R"("containers":[{"name":"main","resources":{"requests":{"cpu":"1"}}}])";
      break;
  }
  const std::string annotations =
      i % 3 == 0 ? R"(,"annotations":{"gpu.nvidia.com/model":"H100"})" : "";
  GPUSCHED_ASSIGN_OR_RETURN(
      auto json, api::ParseJson(R"({"apiVersion":"v1","kind":"Pod","metadata":{"namespace":)"
                                R"("churn","name":")" +
                                    name + "\"" + annotations + R"(},"spec":{)" + spec + "}}",
                                "waiting pod"));
  GPUSCHED_ASSIGN_OR_RETURN(api::Pod pod, api::DecodePod(json));
  return api::PodPtr(std::make_shared<const api::Pod>(std::move(pod)));
}

common::StatusOr<api::NodePtr> ChurnNode(const std::string& name, bool h100) {
  std::string labels =
      R"("kubernetes.io/hostname":")" + name + R"(","topology.kubernetes.io/zone":"us-east-1a")";
  std::string res = R"("cpu":"47900m","memory":"195584Mi","pods":"110")";
  std::string taints;
  if (h100) {
    labels += R"(,"nvidia.com/gpu.count":"8","nvidia.com/gpu.memory":"81559",)"
              R"("nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3")";
    res = R"("cpu":"191900m","memory":"2047Gi","pods":"110","nvidia.com/gpu":"8")";
    taints = R"("taints":[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}])";
  }
  GPUSCHED_ASSIGN_OR_RETURN(
      auto json,
      api::ParseJson(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name +
                         R"(","labels":{)" + labels + R"(}},"spec":{)" + taints +
                         R"(},"status":{"capacity":{)" + res + R"(},"allocatable":{)" + res + "}}}",
                     "churn node"));
  GPUSCHED_ASSIGN_OR_RETURN(api::Node node, api::DecodeNode(json));
  return api::NodePtr(std::make_shared<const api::Node>(std::move(node)));
}

// The churn's state: the current node objects (updates replace them) and the running pods.
class Churn {
 public:
  Churn(sim::Simulator& s, uint64_t seed) : s_(s), rng_(seed) {
    for (const api::NodePtr& n : s.cluster().Nodes()) nodes_.push_back(n);
    for (const sim::PodOutcome& o : s.outcomes()) {
      if (o.state != sim::PodState::kScheduled || o.deleted) continue;
      (o.pod->gpu.empty() ? cpu_pods_ : gpu_pods_).push_back(o.pod->meta.uid);
    }
  }

  // Event k of the mix, per 20: 8 label changes, 4 allocatable nudges, 6 CPU pod deletes, 2 GPU
  // pod deletes.
  common::Status Event(int64_t k) {
    const int64_t slot = k % 20;
    if (slot < 8) return Relabel("churn.example.com/generation", std::to_string(k));
    if (slot < 12) return NudgeCpu(k);
    if (slot < 18) return DeleteOne(cpu_pods_);
    return DeleteOne(gpu_pods_);
  }
  common::Status Relabel(const std::string& key, const std::string& value) {
    const size_t i = Pick(nodes_.size());
    auto updated = std::make_shared<api::Node>(*nodes_[i]);
    updated->meta.labels.Set(common::Intern(key), common::Intern(value));
    return Update(i, std::move(updated));
  }
  // An untainted node (a CPU node) relabelled into zone us-east-1x.
  common::Status MoveToZoneX() {
    for (size_t tries = 0; tries < nodes_.size(); ++tries) {
      const size_t i = Pick(nodes_.size());
      if (!nodes_[i]->taints.empty()) continue;
      auto updated = std::make_shared<api::Node>(*nodes_[i]);
      updated->meta.labels.Set(common::Intern("topology.kubernetes.io/zone"),
                               common::Intern("us-east-1x"));
      return Update(i, std::move(updated));
    }
    return common::Status::Ok();
  }
  common::Status AddNode(bool h100) {
    GPUSCHED_ASSIGN_OR_RETURN(
        api::NodePtr n,
        ChurnNode((h100 ? "churn-h100-" : "churn-cpu-") + std::to_string(added_++), h100));
    nodes_.push_back(n);
    return s_.AddNode(std::move(n));
  }

 private:
  size_t Pick(size_t n) { return static_cast<size_t>(rng_.Uniform(n)); }
  common::Status Update(size_t i, api::NodePtr updated) {
    api::NodePtr old = nodes_[i];
    nodes_[i] = updated;
    s_.scheduler().events().OnNodeUpdate(std::move(old), std::move(updated));
    return common::Status::Ok();
  }
  common::Status NudgeCpu(int64_t k) {
    const size_t i = Pick(nodes_.size());
    auto updated = std::make_shared<api::Node>(*nodes_[i]);
    updated->allocatable.milli_cpu += k % 2 == 0 ? 1 : -1;
    return Update(i, std::move(updated));
  }
  common::Status DeleteOne(std::vector<std::string>& uids) {
    if (uids.empty()) return common::Status::Ok();
    const size_t i = Pick(uids.size());
    std::string uid = std::move(uids[i]);
    uids[i] = std::move(uids.back());
    uids.pop_back();
    return s_.RemovePod(uid);
  }

  sim::Simulator& s_;
  common::Random rng_;
  std::vector<api::NodePtr> nodes_;
  std::vector<std::string> cpu_pods_;
  std::vector<std::string> gpu_pods_;
  int32_t added_ = 0;
};

int Fail(const common::Status& st) {
  std::fprintf(stderr, "error: %s\n", st.ToString().c_str());
  return 1;
}

}  // namespace

int RunChurn(const ChurnFlags& f, sim::Simulator& s) {
  s.scheduler().SetQueueingHints(f.hints);
  s.SetRetry(true);
  const auto t0 = std::chrono::steady_clock::now();
  for (int32_t i = 0; i < f.unschedulable; ++i) {
    auto pod = WaitingPod(i);
    if (!pod.ok()) return Fail(pod.status());
    if (auto r = s.SubmitPod(*pod); !r.ok()) return Fail(r.status());
  }
  const double submit_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t decisions0 = s.Stats().decisions;
  const int64_t scheduled0 = s.Stats().scheduled;
  const int64_t waiting0 = s.scheduler().PendingCounts().unschedulable;
  Churn churn(s, f.seed);
  const double cpu0 = CpuNow();
  const auto start = std::chrono::steady_clock::now();
  int64_t k = 0;
  for (int32_t sec = 1; sec <= f.seconds; ++sec) {
    for (int32_t e = 0; e < f.events; ++e) {
      if (common::Status st = churn.Event(k++); !st.ok()) return Fail(st);
    }
    if (sec % f.relevant_every == 0) {
      if (common::Status st = churn.MoveToZoneX(); !st.ok()) return Fail(st);
      if (common::Status st = churn.AddNode(false); !st.ok()) return Fail(st);
    }
    if (sec % f.relevant_every == f.relevant_every / 2) {
      if (common::Status st = churn.AddNode(true); !st.ok()) return Fail(st);
    }
    if (common::Status st = s.AdvanceTo(s.sim_clock().Now() + std::chrono::seconds(1)); !st.ok())
      return Fail(st);
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = CpuNow() - cpu0;
  const int64_t attempts = s.Stats().decisions - decisions0;
  const int64_t bound = s.Stats().scheduled - scheduled0;
  std::printf(
      "  churn (hints %s): %d waiting pods (%lld in the pool; submitted in %.2f s), %lld events "
      "over %d simulated s: %lld attempts, %lld bound, %.1f attempts per bound pod, "
      "%.0f attempts/s, %.2f wall s, %.2f CPU s; %lld still waiting\n",
      f.hints ? "on" : "off", f.unschedulable, static_cast<long long>(waiting0), submit_s,
      static_cast<long long>(k), f.seconds, static_cast<long long>(attempts),
      static_cast<long long>(bound),
      bound > 0 ? static_cast<double>(attempts) / static_cast<double>(bound) : 0.0,
      static_cast<double>(attempts) / wall, wall, cpu,
      static_cast<long long>(s.scheduler().PendingCounts().unschedulable +
                             s.scheduler().PendingCounts().backoff +
                             s.scheduler().PendingCounts().active));
  return 0;
}

}  // namespace gpusched::bench
