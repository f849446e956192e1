// SPDX-License-Identifier: Apache-2.0
// The HorizontalPodAutoscaler's replica decisions (autoscaling/v2), reproduced from
// kubernetes/kubernetes pkg/controller/podautoscaler (horizontal.go, replica_calculator.go) as
// written up in docs/hpa-algorithm.md (the § numbers below are its sections):
//
//   per metric (§3): classify pods ─► usage ratio ─► tolerance ─► missing/unready dampening
//                    ─► proposal                    (ResourceReplicas, PlainMetricReplicas,
//                                                    ObjectValueReplicas, ...)
//   all metrics (§4): max over the proposals; no scale-down on partial data (CombineProposals)
//   Autoscaler::Reconcile (§2): min/max short-cuts, then
//       no behavior (§5):  down-only stabilization over the flag window, cap max(2×cur, 4)
//       behavior   (§6):  up/down stabilization windows over the RAW proposals, then the
//                         Pods/Percent policies over scale events in each period, selectPolicy
//
// Replica counts are int32; Percent arithmetic is IEEE double; metric values are int64 milli-units
// (millicores for cpu, milli-units for Pods/Object/External metrics), as the metrics client
// delivers them. Time is an argument: nothing here reads a clock. Thread-compatible.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/clock.h"
#include "src/common/status.h"

namespace gpusched::addons::hpa {

// kube-controller-manager flags (§1).
struct Settings {
  common::Duration sync_period = std::chrono::seconds(15);
  double tolerance = 0.1;
  common::Duration downscale_stabilization = std::chrono::minutes(5);
  common::Duration cpu_initialization_period = std::chrono::minutes(5);
  common::Duration initial_readiness_delay = std::chrono::seconds(30);
};

enum class MetricType : uint8_t { kResource, kContainerResource, kPods, kObject, kExternal };
enum class TargetType : uint8_t { kUtilization, kAverageValue, kValue };

struct MetricSpec {
  MetricType type = MetricType::kResource;
  std::string name;       // resource name ("cpu", "memory") or metric name
  std::string container;  // ContainerResource
  std::string object;     // Object: describedObject "Kind/name"
  TargetType target = TargetType::kUtilization;
  int32_t average_utilization = 0;  // percent
  int64_t average_value_milli = 0;
  int64_t value_milli = 0;

  // "cpu", "pods/requests_per_second", "object/Ingress/main/hits", "external/queue_len".
  std::string Describe() const;
};

enum class PolicyType : uint8_t { kPods, kPercent };
enum class SelectPolicy : uint8_t { kMax, kMin, kDisabled };

struct ScalingPolicy {
  PolicyType type = PolicyType::kPods;
  int32_t value = 0;
  int32_t period_seconds = 0;
};

struct ScalingRules {
  // nullopt (scaleDown only): the controller's --horizontal-pod-autoscaler-downscale-stabilization.
  std::optional<int32_t> stabilization_window_seconds;
  SelectPolicy select_policy = SelectPolicy::kMax;
  std::vector<ScalingPolicy> policies;
  // behavior.scale{Up,Down}.tolerance (HPAConfigurableTolerance); nullopt: the flag.
  std::optional<double> tolerance;
};

struct Behavior {
  ScalingRules scale_up;
  ScalingRules scale_down;
};

// The API defaults of §6.1, field by field.
ScalingRules DefaultScaleUp();
ScalingRules DefaultScaleDown();

struct HpaSpec {
  std::string namespace_;
  std::string name;
  std::string target_kind;  // scaleTargetRef
  std::string target_name;
  int32_t min_replicas = 1;
  int32_t max_replicas = 0;
  std::vector<MetricSpec> metrics;   // defaulted to CPU Utilization 80 % when empty
  std::optional<Behavior> behavior;  // nullopt: the legacy path (§5)
};

// Decodes an autoscaling/v2 HorizontalPodAutoscaler, applies the API defaults and validates it
// (§6.2). Every error is reported with its field path, joined by "; ".
common::StatusOr<HpaSpec> DecodeHpa(const boost::json::value& json);

// --- §3: one metric ---------------------------------------------------------------------------

struct Tolerances {
  double scale_down = 0.1;
  double scale_up = 0.1;
  // (1 − down) <= ratio <= (1 + up), inclusive.
  bool IsWithin(double ratio) const {
    return (1.0 - scale_down) <= ratio && ratio <= (1.0 + scale_up);
  }
};

// One pod matched by the target's selector, and its metric sample if any.
struct PodSample {
  std::string name;
  std::string phase = "Running";  // Pending, Running, Succeeded, Failed, Unknown
  bool deleting = false;
  // The Ready condition: absent, or its status and lastTransitionTime.
  std::optional<bool> ready;
  common::TimePoint ready_transition{};
  std::optional<common::TimePoint> start_time;
  std::optional<int64_t> value_milli;  // the sample; nullopt = MISSING
  common::TimePoint sample_time{};
  common::Duration sample_window = std::chrono::seconds(30);
  int64_t request_milli = 0;  // Σ container requests of the resource (Utilization targets)
};

enum class PodClass : uint8_t { kReady, kUnready, kMissing, kIgnored };
// §3.2. `cpu`: the metric is the cpu resource (readiness-aware classification).
PodClass ClassifyPod(const PodSample& pod, bool cpu, common::TimePoint now,
                     const Settings& settings);

struct MetricResult {
  int32_t replicas = 0;
  int64_t usage = 0;  // utilization percent, or the average/total value in milli-units
  double ratio = 0;   // the first usage ratio
};

// Resource or ContainerResource with a Utilization target (§3.3).
common::StatusOr<MetricResult> ResourceUtilizationReplicas(
    int32_t current, std::span<const PodSample> pods, int32_t target_utilization, bool cpu,
    const Tolerances& tol, common::TimePoint now, const Settings& settings);
// Pods metrics and Resource AverageValue targets (§3.4): `cpu` only for the cpu resource.
common::StatusOr<MetricResult> PlainMetricReplicas(int32_t current, std::span<const PodSample> pods,
                                                   int64_t target_milli, bool cpu,
                                                   const Tolerances& tol, common::TimePoint now,
                                                   const Settings& settings);
// Object/External Value (§3.5): `ready_pods` = Running and Ready pods of the target.
common::StatusOr<MetricResult> ValueReplicas(int32_t current, int64_t usage_milli,
                                             int64_t target_milli, int32_t ready_pods,
                                             const Tolerances& tol);
// Object/External AverageValue (§3.5).
common::StatusOr<MetricResult> AverageValueReplicas(int32_t status_replicas, int64_t usage_milli,
                                                    int64_t target_milli, const Tolerances& tol);

// §4: the maximum valid proposal; an error when all failed, or when some failed and the
// maximum is below `current` (no scale-down on partial data).
common::StatusOr<int32_t> CombineProposals(int32_t current,
                                           std::span<const common::StatusOr<int32_t>> proposals);

// --- §2, §5, §6: the stateful per-HPA part -----------------------------------------------------

struct Decision {
  int32_t current = 0;
  std::optional<int32_t> proposal;  // the combined metric proposal (raw)
  int32_t stabilized = 0;           // after the stabilization window(s)
  int32_t desired = 0;              // what the HPA writes (== current: no scale)
  // "ScalingDisabled", "TooManyReplicas", "TooFewReplicas", "ScaleUpLimit", "ScaleDownLimit",
  // "DesiredWithinRange", "MetricsFailed" (proposal error), "AboveMax", "BelowMin".
  std::string reason;
  std::string error;  // the metric error, when the proposal failed
  bool scaled() const { return desired != current; }
};

// The HPA controller's memory for one HPA: recommendations and scale events (lost on restart,
// as upstream). Reconcile is one sync.
class Autoscaler {
 public:
  Autoscaler(HpaSpec spec, Settings settings = {});

  // One reconcile at `now` with the target's current spec.replicas and the combined proposal.
  // Records the recommendation and, on the behavior path, the scale event.
  Decision Reconcile(common::TimePoint now, int32_t current,
                     const common::StatusOr<int32_t>& proposal);

  const HpaSpec& spec() const { return spec_; }
  // Tolerances for the replica calculator (per direction with behavior tolerances).
  Tolerances tolerances() const;

 private:
  struct Recommendation {
    int32_t value;
    common::TimePoint at;
  };
  struct ScaleEvent {
    int32_t change;
    common::TimePoint at;
  };
  int32_t Legacy(common::TimePoint now, int32_t current, int32_t proposal, Decision& d);
  int32_t WithBehavior(common::TimePoint now, int32_t current, int32_t proposal, Decision& d);
  int32_t UpLimit(common::TimePoint now, int32_t current) const;
  int32_t DownLimit(common::TimePoint now, int32_t current) const;
  void StoreEvent(common::TimePoint now, int32_t from, int32_t to);

  HpaSpec spec_;
  Settings settings_;
  std::vector<Recommendation> recommendations_;
  bool initialized_ = false;
  std::vector<ScaleEvent> up_events_;
  std::vector<ScaleEvent> down_events_;
};

}  // namespace gpusched::addons::hpa
