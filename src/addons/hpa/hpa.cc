// SPDX-License-Identifier: Apache-2.0
#include "src/addons/hpa/hpa.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <limits>

#include "src/api/fields.h"
#include "src/api/quantity.h"
#include "src/common/strings.h"

namespace gpusched::addons::hpa {
namespace {

namespace json = boost::json;

using api::FieldPath;

// The HPA's integer fields are int32 in the API.
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// A quantity member in milli-units.
std::optional<int64_t> QuantityMilli(api::JsonReader& r, const json::object& o,
                                     std::string_view key, const FieldPath& p) {
  std::optional<api::Quantity> q = r.QuantityOf(o, key, p);
  if (!q) return std::nullopt;
  return q->MilliValue();
}

// behavior.scaleUp/scaleDown.policies[i].
ScalingPolicy DecodePolicy(api::JsonReader& r, const json::object& po, const FieldPath& pp) {
  ScalingPolicy sp;
  const std::string_view type = r.StringOr(po, "type", pp);
  if (type == "Pods") {
    sp.type = PolicyType::kPods;
  } else if (type == "Percent") {
    sp.type = PolicyType::kPercent;
  } else {
    r.Error(pp.Key("type"), "unsupported value " + common::Quote(type) + " (want Pods or Percent)");
  }
  const auto value = r.Int(po, "value", pp, kInt32Min, kInt32Max);
  if (!value || *value <= 0) {
    if (value || !po.contains("value")) r.Error(pp.Key("value"), "must be greater than zero");
  } else {
    sp.value = static_cast<int32_t>(*value);
  }
  const auto period = r.Int(po, "periodSeconds", pp, kInt32Min, kInt32Max);
  if (!period || *period < 1 || *period > 1800) {
    if (period || !po.contains("periodSeconds")) {
      r.Error(pp.Key("periodSeconds"), "must be in [1, 1800]");
    }
  } else {
    sp.period_seconds = static_cast<int32_t>(*period);
  }
  return sp;
}

void DecodeRules(api::JsonReader& r, const json::object& o, const FieldPath& p, ScalingRules& out) {
  if (auto w = r.Int(o, "stabilizationWindowSeconds", p, kInt32Min, kInt32Max)) {
    if (*w < 0 || *w > 3600) {
      r.Error(p.Key("stabilizationWindowSeconds"),
              "must be in [0, 3600], got " + std::to_string(*w));
    } else {
      out.stabilization_window_seconds = static_cast<int32_t>(*w);
    }
  }
  if (auto s = r.String(o, "selectPolicy", p)) {
    if (*s == "Max") {
      out.select_policy = SelectPolicy::kMax;
    } else if (*s == "Min") {
      out.select_policy = SelectPolicy::kMin;
    } else if (*s == "Disabled") {
      out.select_policy = SelectPolicy::kDisabled;
    } else {
      r.Error(p.Key("selectPolicy"),
              "unsupported value " + common::Quote(*s) + " (want Max, Min or Disabled)");
    }
  }
  if (const json::array* ps = r.Array(o, "policies", p)) {
    out.policies.clear();
    if (ps->empty()) r.Error(p.Key("policies"), "must specify at least one Policy");
    r.ForEachObject(o, "policies", p, [&](const json::object& po, const FieldPath& pp) {
      out.policies.push_back(DecodePolicy(r, po, pp));
    });
  }
  if (auto t = QuantityMilli(r, o, "tolerance", p)) {
    if (*t < 0) {
      r.Error(p.Key("tolerance"), "must be >= 0");
    } else {
      out.tolerance = static_cast<double>(*t) / 1000.0;
    }
  }
}

void DecodeTarget(api::JsonReader& r, const json::object& o, const FieldPath& p, MetricSpec& m,
                  bool allow_util) {
  const json::object* t = r.Object(o, "target", p);
  const FieldPath tp = p.Key("target");
  if (t == nullptr) {
    r.Error(tp, "required");
    return;
  }
  const std::string_view type = r.StringOr(*t, "type", tp);
  if (type == "Utilization") {
    if (!allow_util) {
      r.Error(tp.Key("type"), "Utilization is only for Resource and ContainerResource metrics");
    }
    m.target = TargetType::kUtilization;
    auto u = r.Int(*t, "averageUtilization", tp, kInt32Min, kInt32Max);
    if (!u || *u <= 0) {
      r.Error(tp.Key("averageUtilization"), "must be greater than 0");
    } else {
      m.average_utilization = static_cast<int32_t>(*u);
    }
  } else if (type == "AverageValue") {
    m.target = TargetType::kAverageValue;
    auto v = QuantityMilli(r, *t, "averageValue", tp);
    if (!v || *v <= 0) {
      r.Error(tp.Key("averageValue"), "must be positive");
    } else {
      m.average_value_milli = *v;
    }
  } else if (type == "Value") {
    if (m.type != MetricType::kObject && m.type != MetricType::kExternal) {
      r.Error(tp.Key("type"), "Value is only for Object and External metrics");
    }
    m.target = TargetType::kValue;
    auto v = QuantityMilli(r, *t, "value", tp);
    if (!v || *v <= 0) {
      r.Error(tp.Key("value"), "must be positive");
    } else {
      m.value_milli = *v;
    }
  } else {
    r.Error(tp.Key("type"), "unsupported value " + common::Quote(type) +
                                " (want Utilization, AverageValue or Value)");
  }
}

// metric.name of a Pods, Object or External source at `sp`.
void DecodeMetricName(api::JsonReader& r, const json::object& src, const FieldPath& sp,
                      MetricSpec& m) {
  const FieldPath mp = sp.Key("metric");
  if (const json::object* mi = r.Object(src, "metric", sp)) m.name = r.StringOr(*mi, "name", mp);
  if (m.name.empty()) r.Error(mp.Key("name"), "required");
}

// A Resource or ContainerResource source at `sp`.
void DecodeResourceSource(api::JsonReader& r, const json::object& src, const FieldPath& sp,
                          bool container, MetricSpec& m) {
  m.name = r.StringOr(src, "name", sp);
  if (m.name.empty()) r.Error(sp.Key("name"), "required");
  if (container) {
    m.container = r.StringOr(src, "container", sp);
    if (m.container.empty()) r.Error(sp.Key("container"), "required");
  }
  DecodeTarget(r, src, sp, m, true);
}

void DecodeMetric(api::JsonReader& r, const json::object& o, const FieldPath& p, MetricSpec& m) {
  const std::string_view type = r.StringOr(o, "type", p);
  struct Source {
    std::string_view type;
    std::string_view key;
    MetricType metric;
  };
  constexpr Source kSources[] = {
      {"Resource", "resource", MetricType::kResource},
      {"ContainerResource", "containerResource", MetricType::kContainerResource},
      {"Pods", "pods", MetricType::kPods},
      {"Object", "object", MetricType::kObject},
      {"External", "external", MetricType::kExternal},
  };
  const Source* source = nullptr;
  for (const Source& s : kSources) {
    if (s.type == type) source = &s;
  }
  if (source == nullptr) {
    r.Error(p.Key("type"), "unsupported value " + common::Quote(type) +
                               " (want Resource, ContainerResource, Pods, Object or External)");
    return;
  }
  m.type = source->metric;
  const FieldPath sp = p.Key(source->key);
  const json::object* src = r.Object(o, source->key, p);
  if (src == nullptr) {
    r.Error(sp, "required for type " + std::string(type));
    return;
  }
  switch (m.type) {
    case MetricType::kResource:
    case MetricType::kContainerResource:
      DecodeResourceSource(r, *src, sp, m.type == MetricType::kContainerResource, m);
      return;
    case MetricType::kObject:
      DecodeMetricName(r, *src, sp, m);
      if (const json::object* d = r.Object(*src, "describedObject", sp)) {
        const FieldPath dp = sp.Key("describedObject");
        m.object =
            std::string(r.StringOr(*d, "kind", dp)) + "/" + std::string(r.StringOr(*d, "name", dp));
      }
      DecodeTarget(r, *src, sp, m, false);
      return;
    case MetricType::kPods:
    case MetricType::kExternal:
      DecodeMetricName(r, *src, sp, m);
      DecodeTarget(r, *src, sp, m, false);
      if (m.type == MetricType::kPods && m.target != TargetType::kAverageValue) {
        const FieldPath tp = sp.Key("target");
        r.Error(tp.Key("type"), "must be AverageValue");
      }
      return;
  }
}

// getReplicasChangePerPeriod: events strictly newer than now − period.
template <typename Events>
int32_t ChangedInPeriod(const Events& events, common::TimePoint now, int32_t period_seconds) {
  const common::TimePoint cutoff = now - std::chrono::seconds(period_seconds);
  int64_t sum = 0;
  for (const auto& e : events) {
    if (e.at > cutoff) sum += e.change;
  }
  return static_cast<int32_t>(std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX));
}

int32_t SatCast(double v) {
  if (std::isnan(v)) return 0;
  if (v >= static_cast<double>(INT32_MAX)) return INT32_MAX;
  if (v <= static_cast<double>(INT32_MIN)) return INT32_MIN;
  return static_cast<int32_t>(v);
}

// metricsclient.GetResourceUtilizationRatio over (usage, request) pairs.
common::StatusOr<std::pair<double, int64_t>> UtilizationRatio(
    const std::vector<std::pair<int64_t, int64_t>>& usage_request, int32_t target) {
  int64_t usage = 0;
  int64_t request = 0;
  for (const auto& [u, r] : usage_request) {
    usage += u;
    request += r;
  }
  if (request == 0)
    return common::FailedPreconditionError("no metrics returned matched known pods");
  const int64_t util = usage * 100 / request;  // int64 division, truncates
  return std::make_pair(static_cast<double>(static_cast<int32_t>(util)) / target, util);
}

// metricsclient.GetMetricUsageRatio: integer average, then the ratio.
std::pair<double, int64_t> UsageRatio(const std::vector<int64_t>& values, int64_t target) {
  int64_t total = 0;
  for (int64_t v : values) total += v;
  const int64_t avg = values.empty() ? 0 : total / static_cast<int64_t>(values.size());
  return {static_cast<double>(avg) / static_cast<double>(target), avg};
}

bool Flipped(double before, double after) {
  return (before < 1.0 && after > 1.0) || (before > 1.0 && after < 1.0);
}

}  // namespace

std::string MetricSpec::Describe() const {
  switch (type) {
    case MetricType::kResource: return name;
    case MetricType::kContainerResource: return name + "/" + container;
    case MetricType::kPods: return "pods/" + name;
    case MetricType::kObject: return "object/" + object + "/" + name;
    case MetricType::kExternal: return "external/" + name;
  }
  return name;
}

ScalingRules DefaultScaleUp() {
  ScalingRules r;
  r.stabilization_window_seconds = 0;
  r.select_policy = SelectPolicy::kMax;
  r.policies = {{PolicyType::kPods, 4, 15}, {PolicyType::kPercent, 100, 15}};
  return r;
}

ScalingRules DefaultScaleDown() {
  ScalingRules r;
  r.select_policy = SelectPolicy::kMax;
  r.policies = {{PolicyType::kPercent, 100, 15}};
  return r;
}

namespace {

// spec.minReplicas and spec.maxReplicas.
void DecodeReplicaBounds(api::JsonReader& r, const json::object& spec, const FieldPath& sp,
                         HpaSpec& h) {
  if (auto m = r.Int(spec, "minReplicas", sp, kInt32Min, kInt32Max)) {
    if (*m < 1) {
      r.Error(sp.Key("minReplicas"),
              "must be greater than or equal to 1 (scale to zero needs the HPAScaleToZero gate)");
    } else {
      h.min_replicas = static_cast<int32_t>(*m);
    }
  }
  if (auto m = r.Int(spec, "maxReplicas", sp, kInt32Min, kInt32Max)) {
    if (*m < 1) {
      r.Error(sp.Key("maxReplicas"), "must be greater than 0");
    } else {
      h.max_replicas = static_cast<int32_t>(*m);
    }
  } else if (!spec.contains("maxReplicas")) {
    r.Error(sp.Key("maxReplicas"), "required");
  }
  if (h.max_replicas > 0 && h.max_replicas < h.min_replicas) {
    r.Error(sp.Key("maxReplicas"), "must be greater than or equal to minReplicas");
  }
}

void DecodeSpec(api::JsonReader& r, const json::object& spec, const FieldPath& sp, HpaSpec& h) {
  const FieldPath rp = sp.Key("scaleTargetRef");
  if (const json::object* ref = r.Object(spec, "scaleTargetRef", sp)) {
    h.target_kind = r.StringOr(*ref, "kind", rp);
    h.target_name = r.StringOr(*ref, "name", rp);
  }
  if (h.target_name.empty()) r.Error(rp.Key("name"), "required");
  DecodeReplicaBounds(r, spec, sp, h);
  r.ForEachObject(spec, "metrics", sp, [&](const json::object& mo, const FieldPath& mp) {
    MetricSpec m;
    DecodeMetric(r, mo, mp, m);
    h.metrics.push_back(std::move(m));
  });
  if (h.metrics.empty()) {
    MetricSpec cpu;
    cpu.type = MetricType::kResource;
    cpu.name = "cpu";
    cpu.target = TargetType::kUtilization;
    cpu.average_utilization = 80;
    h.metrics.push_back(cpu);
  }
  if (const json::object* b = r.Object(spec, "behavior", sp)) {
    const FieldPath bp = sp.Key("behavior");
    Behavior behavior{DefaultScaleUp(), DefaultScaleDown()};
    if (const json::object* up = r.Object(*b, "scaleUp", bp)) {
      DecodeRules(r, *up, bp.Key("scaleUp"), behavior.scale_up);
    }
    if (const json::object* down = r.Object(*b, "scaleDown", bp)) {
      DecodeRules(r, *down, bp.Key("scaleDown"), behavior.scale_down);
    }
    h.behavior = std::move(behavior);
  }
}

}  // namespace

common::StatusOr<HpaSpec> DecodeHpa(const boost::json::value& value) {
  const json::object* root = value.if_object();
  if (root == nullptr)
    return common::InvalidArgumentError("HorizontalPodAutoscaler: want a JSON object");
  api::JsonReader r(api::PlainDialect());
  const FieldPath p;
  HpaSpec h;
  const std::string_view api_version = r.StringOr(*root, "apiVersion", p);
  const std::string_view kind = r.StringOr(*root, "kind", p);
  if (const json::object* meta = r.Object(*root, "metadata", p)) {
    const FieldPath mp = p.Key("metadata");
    h.name = r.StringOr(*meta, "name", mp);
    h.namespace_ = r.String(*meta, "namespace", mp).value_or("default");
  }
  if (kind != "HorizontalPodAutoscaler") {
    r.Error(p.Key("kind"), "want HorizontalPodAutoscaler, got " + common::Quote(kind));
  }
  if (api_version != "autoscaling/v2") {
    r.Error(p.Key("apiVersion"), "want autoscaling/v2, got " + common::Quote(api_version));
  }
  if (const json::object* spec = r.Object(*root, "spec", p)) {
    DecodeSpec(r, *spec, p.Key("spec"), h);
  } else {
    r.Error(p.Key("spec"), "required");
  }
  GPUSCHED_RETURN_IF_ERROR(
      r.errors().ToStatus("HorizontalPodAutoscaler " + h.namespace_ + "/" + h.name));
  return h;
}

PodClass ClassifyPod(const PodSample& pod, bool cpu, common::TimePoint now, const Settings& s) {
  if (pod.deleting || pod.phase == "Failed" || pod.phase == "Succeeded") return PodClass::kIgnored;
  if (pod.phase == "Pending") return PodClass::kUnready;
  if (!pod.value_milli) return PodClass::kMissing;
  if (cpu) {
    bool unready;
    if (!pod.ready.has_value() || !pod.start_time) {
      unready = true;
    } else if (*pod.start_time + s.cpu_initialization_period > now) {
      unready = !*pod.ready || pod.sample_time < pod.ready_transition + pod.sample_window;
    } else {
      unready = !*pod.ready && *pod.start_time + s.initial_readiness_delay > pod.ready_transition;
    }
    if (unready) return PodClass::kUnready;
  }
  return PodClass::kReady;
}

common::StatusOr<MetricResult> ResourceUtilizationReplicas(
    int32_t current, std::span<const PodSample> pods, int32_t target, bool cpu,
    const Tolerances& tol, common::TimePoint now, const Settings& settings) {
  if (pods.empty())
    return common::FailedPreconditionError(
        "no pods returned by selector while calculating replica count");
  if (target <= 0) return common::InvalidArgumentError("target utilization must be positive");
  std::vector<std::pair<int64_t, int64_t>> used;  // READY pods: (usage, request)
  std::vector<const PodSample*> unready;
  std::vector<const PodSample*> missing;
  int32_t ready_count = 0;
  for (const PodSample& p : pods) {
    if (p.request_milli <= 0) {
      return common::FailedPreconditionError("missing request for the resource in pod " + p.name);
    }
    switch (ClassifyPod(p, cpu, now, settings)) {
      case PodClass::kIgnored: break;
      case PodClass::kUnready: unready.push_back(&p); break;
      case PodClass::kMissing: missing.push_back(&p); break;
      case PodClass::kReady:
        ++ready_count;
        used.emplace_back(*p.value_milli, p.request_milli);
        break;
    }
  }
  if (used.empty()) {
    return common::FailedPreconditionError(
        "did not receive metrics for targeted pods (pods might be unready)");
  }
  GPUSCHED_ASSIGN_OR_RETURN(auto first, UtilizationRatio(used, target));
  MetricResult r;
  r.ratio = first.first;
  r.usage = first.second;
  const bool up_with_unready = !unready.empty() && r.ratio > 1.0;
  if (!up_with_unready && missing.empty()) {
    r.replicas = tol.IsWithin(r.ratio) ? current : SatCast(std::ceil(r.ratio * ready_count));
    return r;
  }
  if (!missing.empty()) {
    if (r.ratio < 1.0) {
      const int64_t fallback = std::max<int64_t>(100, target);
      for (const PodSample* p : missing)
        used.emplace_back(p->request_milli * fallback / 100, p->request_milli);
    } else if (r.ratio > 1.0) {
      for (const PodSample* p : missing) used.emplace_back(0, p->request_milli);
    }
  }
  if (up_with_unready) {
    for (const PodSample* p : unready) used.emplace_back(0, p->request_milli);
  }
  GPUSCHED_ASSIGN_OR_RETURN(auto second, UtilizationRatio(used, target));
  const double nr = second.first;
  if (tol.IsWithin(nr) || Flipped(r.ratio, nr)) {
    r.replicas = current;
    return r;
  }
  const int32_t n = SatCast(std::ceil(nr * static_cast<double>(used.size())));
  r.replicas = ((nr < 1.0 && n > current) || (nr > 1.0 && n < current)) ? current : n;
  return r;
}

common::StatusOr<MetricResult> PlainMetricReplicas(int32_t current, std::span<const PodSample> pods,
                                                   int64_t target, bool cpu, const Tolerances& tol,
                                                   common::TimePoint now,
                                                   const Settings& settings) {
  if (pods.empty())
    return common::FailedPreconditionError(
        "no pods returned by selector while calculating replica count");
  if (target <= 0) return common::InvalidArgumentError("target value must be positive");
  std::vector<int64_t> values;
  size_t unready = 0;
  size_t missing = 0;
  int32_t ready_count = 0;
  for (const PodSample& p : pods) {
    switch (ClassifyPod(p, cpu, now, settings)) {
      case PodClass::kIgnored: break;
      case PodClass::kUnready: ++unready; break;
      case PodClass::kMissing: ++missing; break;
      case PodClass::kReady:
        ++ready_count;
        values.push_back(*p.value_milli);
        break;
    }
  }
  if (values.empty())
    return common::FailedPreconditionError("did not receive metrics for any ready pods");
  MetricResult r;
  std::tie(r.ratio, r.usage) = UsageRatio(values, target);
  const bool up_with_unready = unready > 0 && r.ratio > 1.0;
  if (!up_with_unready && missing == 0) {
    r.replicas = tol.IsWithin(r.ratio) ? current : SatCast(std::ceil(r.ratio * ready_count));
    return r;
  }
  if (missing > 0) {
    if (r.ratio < 1.0) {
      values.insert(values.end(), missing, target);
    } else {
      values.insert(values.end(), missing, 0);
    }
  }
  if (up_with_unready) values.insert(values.end(), unready, 0);
  const double nr = UsageRatio(values, target).first;
  if (tol.IsWithin(nr) || Flipped(r.ratio, nr)) {
    r.replicas = current;
    return r;
  }
  const int32_t n = SatCast(std::ceil(nr * static_cast<double>(values.size())));
  r.replicas = ((nr < 1.0 && n > current) || (nr > 1.0 && n < current)) ? current : n;
  return r;
}

common::StatusOr<MetricResult> ValueReplicas(int32_t current, int64_t usage, int64_t target,
                                             int32_t ready_pods, const Tolerances& tol) {
  if (target <= 0) return common::InvalidArgumentError("target value must be positive");
  MetricResult r;
  r.usage = usage;
  r.ratio = static_cast<double>(usage) / static_cast<double>(target);
  if (current != 0) {
    r.replicas = tol.IsWithin(r.ratio) ? current : SatCast(std::ceil(r.ratio * ready_pods));
  } else {
    r.replicas = SatCast(std::ceil(r.ratio));
  }
  return r;
}

common::StatusOr<MetricResult> AverageValueReplicas(int32_t status_replicas, int64_t usage,
                                                    int64_t target, const Tolerances& tol) {
  if (target <= 0) return common::InvalidArgumentError("target value must be positive");
  MetricResult r;
  r.replicas = status_replicas;
  r.ratio = static_cast<double>(usage) / (static_cast<double>(target) * status_replicas);
  if (!tol.IsWithin(r.ratio))
    r.replicas = SatCast(std::ceil(static_cast<double>(usage) / static_cast<double>(target)));
  r.usage = status_replicas > 0 ? SatCast(std::ceil(static_cast<double>(usage) / status_replicas))
                                : usage;
  return r;
}

common::StatusOr<int32_t> CombineProposals(int32_t current,
                                           std::span<const common::StatusOr<int32_t>> proposals) {
  std::optional<int32_t> best;
  std::string errors;
  int failed = 0;
  for (const auto& p : proposals) {
    if (!p.ok()) {
      ++failed;
      errors += (errors.empty() ? "" : "; ") + std::string(p.status().message());
      continue;
    }
    if (!best || *p > *best) best = *p;
  }
  if (!best) {
    return common::UnavailableError("invalid metrics (" + std::to_string(failed) +
                                    " invalid out of " + std::to_string(proposals.size()) +
                                    "): " + errors);
  }
  if (failed > 0 && *best < current) {
    return common::UnavailableError("not scaling down on partial metrics (" +
                                    std::to_string(failed) + " invalid out of " +
                                    std::to_string(proposals.size()) + "): " + errors);
  }
  return *best;
}

Autoscaler::Autoscaler(HpaSpec spec, Settings settings)
    : spec_(std::move(spec)), settings_(settings) {}

Tolerances Autoscaler::tolerances() const {
  Tolerances t{settings_.tolerance, settings_.tolerance};
  if (spec_.behavior) {
    if (spec_.behavior->scale_down.tolerance) t.scale_down = *spec_.behavior->scale_down.tolerance;
    if (spec_.behavior->scale_up.tolerance) t.scale_up = *spec_.behavior->scale_up.tolerance;
  }
  return t;
}

Decision Autoscaler::Reconcile(common::TimePoint now, int32_t current,
                               const common::StatusOr<int32_t>& proposal) {
  Decision d;
  d.current = current;
  d.stabilized = current;
  d.desired = current;
  if (!initialized_) {
    recommendations_.push_back({current, now});
    initialized_ = true;
  }
  const int32_t min = spec_.min_replicas;
  const int32_t max = spec_.max_replicas;
  if (current == 0 && min != 0) {
    d.reason = "ScalingDisabled";
    return d;
  }
  if (current > max) {
    d.desired = d.stabilized = max;
    d.reason = "AboveMax";
  } else if (current < min) {
    d.desired = d.stabilized = min;
    d.reason = "BelowMin";
  } else {
    if (!proposal.ok()) {
      d.reason = "MetricsFailed";
      d.error = std::string(proposal.status().message());
      return d;
    }
    d.proposal = *proposal;
    d.desired = spec_.behavior ? WithBehavior(now, current, *proposal, d)
                               : Legacy(now, current, *proposal, d);
  }
  if (d.desired != current) StoreEvent(now, current, d.desired);
  return d;
}

int32_t Autoscaler::Legacy(common::TimePoint now, int32_t current, int32_t proposal, Decision& d) {
  // stabilizeRecommendation: an entry at exactly the cutoff still counts.
  const common::TimePoint cutoff = now - settings_.downscale_stabilization;
  int32_t best = proposal;
  std::optional<size_t> old;
  for (size_t k = 0; k < recommendations_.size(); ++k) {
    if (recommendations_[k].at < cutoff) {
      old = k;
    } else if (recommendations_[k].value > best) {
      best = recommendations_[k].value;
    }
  }
  if (old) {
    recommendations_[*old] = {proposal, now};
  } else {
    recommendations_.push_back({proposal, now});
  }
  d.stabilized = best;
  // convertDesiredReplicasWithRules.
  const int32_t up_limit = SatCast(std::max(2.0 * current, 4.0));
  int32_t max_allowed = spec_.max_replicas;
  std::string limiting = "TooManyReplicas";
  if (spec_.max_replicas > up_limit) {
    max_allowed = up_limit;
    limiting = "ScaleUpLimit";
  }
  if (best < spec_.min_replicas) {
    d.reason = "TooFewReplicas";
    return spec_.min_replicas;
  }
  if (best > max_allowed) {
    d.reason = limiting;
    return max_allowed;
  }
  d.reason = "DesiredWithinRange";
  return best;
}

int32_t Autoscaler::WithBehavior(common::TimePoint now, int32_t current, int32_t proposal,
                                 Decision& d) {
  const Behavior& b = *spec_.behavior;
  const int64_t up_window = b.scale_up.stabilization_window_seconds.value_or(0);
  const int64_t down_window =
      b.scale_down.stabilization_window_seconds.value_or(static_cast<int64_t>(
          std::chrono::duration_cast<std::chrono::seconds>(settings_.downscale_stabilization)
              .count()));
  const common::TimePoint up_cut = now - std::chrono::seconds(up_window);
  const common::TimePoint down_cut = now - std::chrono::seconds(down_window);
  int32_t up_rec = proposal;
  int32_t down_rec = proposal;
  std::optional<size_t> old;
  for (size_t k = 0; k < recommendations_.size(); ++k) {
    const Recommendation& rec = recommendations_[k];
    if (rec.at > up_cut) up_rec = std::min(rec.value, up_rec);
    if (rec.at > down_cut) down_rec = std::max(rec.value, down_rec);
    if (rec.at < up_cut && rec.at < down_cut) old = k;
  }
  int32_t r = current;
  if (r < up_rec) r = up_rec;
  if (r > down_rec) r = down_rec;
  if (old) {
    recommendations_[*old] = {proposal, now};  // the RAW proposal is stored
  } else {
    recommendations_.push_back({proposal, now});
  }
  d.stabilized = r;
  // convertDesiredReplicasWithBehaviorRate.
  if (r > current) {
    int32_t limit = std::max(UpLimit(now, current), current);
    int32_t max_allowed = spec_.max_replicas;
    std::string reason = "TooManyReplicas";
    if (max_allowed > limit) {
      max_allowed = limit;
      reason = "ScaleUpLimit";
    }
    if (r > max_allowed) {
      d.reason = reason;
      return max_allowed;
    }
  } else if (r < current) {
    int32_t limit = std::min(DownLimit(now, current), current);
    int32_t min_allowed = spec_.min_replicas;
    std::string reason = "TooFewReplicas";
    if (min_allowed < limit) {
      min_allowed = limit;
      reason = "ScaleDownLimit";
    }
    if (r < min_allowed) {
      d.reason = reason;
      return min_allowed;
    }
  }
  d.reason = "DesiredWithinRange";
  return r;
}

int32_t Autoscaler::UpLimit(common::TimePoint now, int32_t current) const {
  const ScalingRules& rules = spec_.behavior->scale_up;
  if (rules.select_policy == SelectPolicy::kDisabled) return current;
  const bool min_change = rules.select_policy == SelectPolicy::kMin;
  int32_t acc = min_change ? INT32_MAX : INT32_MIN;
  for (const ScalingPolicy& p : rules.policies) {
    const int64_t start = static_cast<int64_t>(current) -
                          ChangedInPeriod(up_events_, now, p.period_seconds) +
                          ChangedInPeriod(down_events_, now, p.period_seconds);
    const int32_t prop = p.type == PolicyType::kPods
                             ? SatCast(static_cast<double>(start + p.value))
                             : SatCast(std::ceil(static_cast<double>(start) *
                                                 (1 + static_cast<double>(p.value) / 100)));
    acc = min_change ? std::min(acc, prop) : std::max(acc, prop);
  }
  return acc;
}

int32_t Autoscaler::DownLimit(common::TimePoint now, int32_t current) const {
  const ScalingRules& rules = spec_.behavior->scale_down;
  if (rules.select_policy == SelectPolicy::kDisabled) return current;
  const bool min_change = rules.select_policy == SelectPolicy::kMin;
  int32_t acc = min_change ? INT32_MIN : INT32_MAX;
  for (const ScalingPolicy& p : rules.policies) {
    const int64_t start = static_cast<int64_t>(current) -
                          ChangedInPeriod(up_events_, now, p.period_seconds) +
                          ChangedInPeriod(down_events_, now, p.period_seconds);
    const int32_t prop =
        p.type == PolicyType::kPods
            ? SatCast(static_cast<double>(start - p.value))
            : SatCast(static_cast<double>(start) * (1 - static_cast<double>(p.value) / 100));
    acc = min_change ? std::max(acc, prop) : std::min(acc, prop);
  }
  return acc;
}

void Autoscaler::StoreEvent(common::TimePoint now, int32_t from, int32_t to) {
  if (!spec_.behavior) return;  // events only on the behavior path
  const bool up = to > from;
  const ScalingRules& rules = up ? spec_.behavior->scale_up : spec_.behavior->scale_down;
  int32_t longest = 0;
  for (const ScalingPolicy& p : rules.policies) longest = std::max(longest, p.period_seconds);
  std::vector<ScaleEvent>& events = up ? up_events_ : down_events_;
  // Events older than the longest period are outdated; a stale slot is reused.
  const common::TimePoint cutoff = now - std::chrono::seconds(longest);
  const ScaleEvent e{up ? to - from : from - to, now};
  for (ScaleEvent& old : events) {
    if (old.at < cutoff) {
      old = e;
      return;
    }
  }
  events.push_back(e);
}

}  // namespace gpusched::addons::hpa
