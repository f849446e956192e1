// SPDX-License-Identifier: Apache-2.0
#include "src/addons/deletion_cost/controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <sstream>

#include "src/addons/deletion_cost/workload.h"
#include "src/api/decode.h"
#include "src/common/backoff.h"
#include "src/common/logging.h"
#include "src/common/strings.h"
#include "src/metrics/catalog.h"
#include "src/metrics/exposition.h"

namespace gpusched::addons::deletion_cost {
namespace {

namespace json = boost::json;

// Warnings of one reason are recorded at most this often per pod.
constexpr common::Duration kWarningInterval = std::chrono::minutes(10);
// A pod whose ReplicaSet is unknown triggers a workload refresh at most this often.
constexpr common::Duration kMinRefreshInterval = std::chrono::seconds(5);

int Sign(int64_t v) { return (v > 0) - (v < 0); }

std::string KeyOf(const json::value& obj) {
  const std::string_view ns = api::MetaString(obj, "namespace");
  const std::string_view name = api::MetaString(obj, "name");
  if (ns.empty() || name.empty()) return {};
  return std::string(ns) + "/" + std::string(name);
}

// True when `b` differs from `a` in anything EvaluateCost or the policy choice reads, or its cost
// annotation changed (someone else wrote it): our own patch echoing back changes nothing else.
bool Relevant(const PodFacts& a, const PodFacts& b) {
  return a.uid != b.uid || a.ready != b.ready || a.ready_time != b.ready_time ||
         a.phase != b.phase || a.deleting != b.deleting || a.node_name != b.node_name ||
         a.pod_ip != b.pod_ip || !(a.labels == b.labels) || a.annotations != b.annotations ||
         a.owner_references.size() != b.owner_references.size();
}

}  // namespace

std::string BuildCostPatch(int32_t cost) {
  json::object annotations;
  annotations[kPodDeletionCostAnnotation] = std::to_string(cost);
  json::object meta;
  meta["annotations"] = std::move(annotations);
  json::object patch;
  patch["metadata"] = std::move(meta);
  return json::serialize(patch);
}

Controller::Controller(ControllerDeps deps, PolicyConfig config)
    : clock_(deps.clock),
      rest_(deps.rest),
      events_(deps.events),
      http_(deps.http),
      executor_(deps.executor),
      config_(std::move(config)) {
  RegisterMetrics();
}

void Controller::RegisterMetrics() {
  // A counter read from stats_ at scrape time, one series per (label value, field).
  using Field = int64_t ControllerStats::*;
  auto stat = [this](std::string_view name, std::vector<std::pair<std::string, Field>> series) {
    metrics::AddCallback(registry_, name, [this, series](std::vector<metrics::Sample>& out) {
      common::MutexLock l(mu_);
      for (const auto& [label, field] : series) {
        metrics::Sample s;
        if (!label.empty()) s.label_values.push_back(label);
        s.value = static_cast<double>(stats_.*field);
        out.push_back(std::move(s));
      }
    });
  };
  stat("gpusched_deletion_cost_reconciles_total", {{"", &ControllerStats::reconciles}});
  stat("gpusched_deletion_cost_patches_total", {{"success", &ControllerStats::patches_success},
                                                {"error", &ControllerStats::patches_error},
                                                {"dry_run", &ControllerStats::patches_dry_run}});
  stat("gpusched_deletion_cost_skipped_total",
       {{"unchanged", &ControllerStats::skipped_unchanged},
        {"hysteresis", &ControllerStats::skipped_hysteresis},
        {"metric_error", &ControllerStats::skipped_metric_error}});
  stat("gpusched_deletion_cost_metric_errors_total",
       {{"pod", &ControllerStats::metric_errors_pod},
        {"prometheus", &ControllerStats::metric_errors_prometheus}});
  stat("gpusched_deletion_cost_invalid_annotations_total",
       {{"", &ControllerStats::invalid_annotations}});
  stat("gpusched_deletion_cost_workload_refresh_errors_total",
       {{"", &ControllerStats::workload_refresh_errors}});
  stat("gpusched_deletion_cost_events_total", {{"", &ControllerStats::events_recorded}});
  cost_histogram_ =
      metrics::AddHistogram(registry_, "gpusched_deletion_cost_computed_cost").With({});
  metrics::AddCallback(registry_, "gpusched_deletion_cost_managed_pods",
                       [this](std::vector<metrics::Sample>& out) {
                         common::MutexLock l(mu_);
                         std::map<std::string, int64_t> per_band;
                         for (const auto& [name, _] : config_.bands) per_band[name] = 0;
                         per_band["other"] = 0;
                         for (const auto& [key, cost] : last_cost_) {
                           std::string band = "other";
                           for (const auto& [name, b] : config_.bands) {
                             if (cost >= b.min && cost <= b.max) {
                               band = name;
                               break;
                             }
                           }
                           ++per_band[band];
                         }
                         for (const auto& [band, n] : per_band)
                           out.push_back({{band}, static_cast<double>(n)});
                       });
  metrics::AddCallback(registry_, "gpusched_deletion_cost_queue_depth",
                       [this](std::vector<metrics::Sample>& out) {
                         common::MutexLock l(mu_);
                         out.push_back({{}, static_cast<double>(queue_.size() + waiting_.size())});
                       });
}

std::string Controller::PodsPath() const {
  if (config_.controller.namespace_.empty()) return "/api/v1/pods";
  return "/api/v1/namespaces/" + config_.controller.namespace_ + "/pods";
}

void Controller::UpsertLocked(PodFacts pod) {
  const std::string key = pod.Key();
  auto it = store_.find(key);
  const bool changed = it == store_.end() || Relevant(it->second, pod);
  if (it == store_.end()) {
    store_.emplace(key, std::move(pod));
  } else {
    it->second = std::move(pod);
  }
  if (changed) AddLocked(key);
}

void Controller::Replace(std::vector<boost::json::value> items,
                         std::string_view /*resource_version*/) {
  std::unordered_map<std::string, PodFacts> fresh;
  for (const json::value& item : items) {
    auto pod = DecodePodFacts(item);
    if (!pod.ok()) {
      spdlog::warn("deletion-cost: skipping pod {}: {}", KeyOf(item), pod.status().message());
      continue;
    }
    std::string key = pod->Key();
    fresh.emplace(std::move(key), std::move(pod).value());
  }
  common::MutexLock l(mu_);
  for (auto it = store_.begin(); it != store_.end();) {
    if (!fresh.contains(it->first)) {
      last_cost_.erase(it->first);
      it = store_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [key, pod] : fresh) UpsertLocked(std::move(pod));
}

void Controller::Apply(kube::informer::EventType type, const boost::json::value& object) {
  if (type == kube::informer::EventType::kDeleted) {
    const std::string key = KeyOf(object);
    common::MutexLock l(mu_);
    store_.erase(key);
    last_cost_.erase(key);
    last_warning_.erase(key +
                        "\x1f"
                        "InvalidDeletionCost");
    last_warning_.erase(key +
                        "\x1f"
                        "DeletionCostMetricsFailed");
    failures_.erase(key);
    return;
  }
  auto pod = DecodePodFacts(object);
  if (!pod.ok()) {
    spdlog::warn("deletion-cost: skipping pod {}: {}", KeyOf(object), pod.status().message());
    return;
  }
  common::MutexLock l(mu_);
  UpsertLocked(std::move(pod).value());
}

void Controller::AddLocked(const std::string& key) {
  if (processing_.contains(key)) {
    dirty_.insert(key);
    return;
  }
  if (queued_.insert(key).second) queue_.push_back(key);
}

void Controller::AddAfterLocked(const std::string& key, common::TimePoint when) {
  for (auto [it, end] = waiting_.equal_range(when); it != end; ++it) {
    if (it->second == key) return;
  }
  waiting_.emplace(when, key);
}

common::Status Controller::RefreshWorkloads() {
  const std::string scope = config_.controller.namespace_.empty()
                                ? "/apis/apps/v1/"
                                : "/apis/apps/v1/namespaces/" + config_.controller.namespace_ + "/";
  auto deployments = kube::ListAll(rest_, scope + "deployments");
  auto replicasets =
      deployments.ok() ? kube::ListAll(rest_, scope + "replicasets") : deployments.status();
  if (!deployments.ok() || !replicasets.ok()) {
    common::MutexLock l(mu_);
    ++stats_.workload_refresh_errors;
    last_refresh_ = clock_.Now();
    return !deployments.ok() ? deployments.status() : replicasets.status();
  }
  std::unordered_map<std::string, std::string> deployment_policy;  // Deployment UID -> policy
  for (json::value& v : *deployments) {
    if (json::object* o = v.if_object()) (*o)["kind"] = "Deployment";
    auto w = DecodeWorkload(v);
    if (!w.ok()) continue;
    if (const std::string* p = w->Annotation(kPolicyAnnotation)) deployment_policy[w->uid] = *p;
  }
  std::unordered_map<std::string, std::string> optin;
  std::set<std::string> known;
  for (json::value& v : *replicasets) {
    if (json::object* o = v.if_object()) (*o)["kind"] = "ReplicaSet";
    auto w = DecodeWorkload(v);
    if (!w.ok()) continue;
    known.insert(w->uid);
    if (const std::string* p = w->Annotation(kPolicyAnnotation)) {
      optin[w->uid] = *p;
    } else if (const api::OwnerReference* ref = w->ControllerRef();
               ref && ref->kind == "Deployment") {
      if (auto it = deployment_policy.find(ref->uid); it != deployment_policy.end())
        optin[w->uid] = it->second;
    }
  }
  int unknown = 0;
  for (const auto& [uid, name] : optin) {
    if (config_.Find(name) == nullptr) ++unknown;
  }
  common::MutexLock l(mu_);
  optin_ = std::move(optin);
  known_replicasets_ = std::move(known);
  last_refresh_ = clock_.Now();
  stats_.unknown_policy += unknown;
  for (const std::string& key : unknown_owner_keys_) AddLocked(key);
  unknown_owner_keys_.clear();
  return common::Status::Ok();
}

const PolicySpec* Controller::PolicyForLocked(const PodFacts& pod, bool* unknown_owner) {
  *unknown_owner = false;
  const api::OwnerReference* ref = pod.ControllerRef();
  if (ref != nullptr && ref->kind == "ReplicaSet") {
    if (auto it = optin_.find(ref->uid); it != optin_.end()) {
      const PolicySpec* p = config_.Find(it->second);
      if (p == nullptr) {
        spdlog::warn("deletion-cost: pod {}: its owner's {} names no policy {}", pod.Key(),
                     kPolicyAnnotation, common::Quote(it->second));
      }
      return p;
    }
    if (!known_replicasets_.contains(ref->uid)) *unknown_owner = true;
  }
  for (const PolicySpec& p : config_.policies) {
    if (!p.has_selector) continue;
    if (!p.namespaces.empty() &&
        std::find(p.namespaces.begin(), p.namespaces.end(), pod.namespace_) == p.namespaces.end()) {
      continue;
    }
    if (p.selector.Matches(pod.labels)) return &p;
  }
  return nullptr;
}

void Controller::Tick() {
  const common::TimePoint now = clock_.Now();
  bool resync = false;
  bool refresh_for_unknown = false;
  {
    common::MutexLock l(mu_);
    resync = now >= next_resync_;
    if (resync) next_resync_ = now + config_.controller.resync_period;
    refresh_for_unknown =
        !resync && !unknown_owner_keys_.empty() && now - last_refresh_ >= kMinRefreshInterval;
  }
  if (resync || refresh_for_unknown) {
    if (common::Status s = RefreshWorkloads(); !s.ok()) {
      spdlog::warn("deletion-cost: listing Deployments/ReplicaSets: {}", s.message());
    }
  }
  std::vector<std::string> batch;
  {
    common::MutexLock l(mu_);
    if (resync) {
      for (const auto& [key, _] : store_) AddLocked(key);
    }
    while (!waiting_.empty() && waiting_.begin()->first <= now) {
      AddLocked(waiting_.begin()->second);
      waiting_.erase(waiting_.begin());
    }
    while (!queue_.empty()) {
      std::string key = std::move(queue_.front());
      queue_.pop_front();
      queued_.erase(key);
      processing_.insert(key);
      batch.push_back(std::move(key));
    }
  }
  for (std::string& key : batch) {
    executor_.Post([this, key = std::move(key)] {
      common::Status s = Reconcile(key);
      Done(key, s);
    });
  }
}

void Controller::Done(const std::string& key, const common::Status& status) {
  common::MutexLock l(mu_);
  processing_.erase(key);
  if (!status.ok()) {
    int& f = failures_[key];
    f = std::min(f + 1, 30);
    AddAfterLocked(key,
                   clock_.Now() + common::ExponentialBackoff(config_.controller.retry_backoff,
                                                             config_.controller.resync_period, f));
  } else {
    failures_.erase(key);
  }
  if (dirty_.erase(key) > 0) AddLocked(key);
}

void Controller::Event(const PodFacts& pod, std::string_view type, std::string_view reason,
                       std::string note) {
  if (events_ == nullptr || config_.controller.events == EventMode::kNone) return;
  const bool warning = type == "Warning";
  if (!warning && config_.controller.events != EventMode::kAll) return;
  if (warning) {
    const std::string k = pod.Key() + "\x1f" + std::string(reason);
    const common::TimePoint now = clock_.Now();
    common::MutexLock l(mu_);
    auto it = last_warning_.find(k);
    if (it != last_warning_.end() && now - it->second < kWarningInterval) return;
    last_warning_[k] = now;
  }
  kube::EventRecord e;
  e.namespace_ = pod.namespace_;
  e.pod_name = pod.name;
  e.pod_uid = pod.uid;
  e.type = std::string(type);
  e.reason = std::string(reason);
  e.action = "UpdateDeletionCost";
  e.note = kube::TruncateEventNote(std::move(note));
  e.reporting_controller = std::string(kControllerName);
  if (common::Status s = events_->CreateEvent(e); !s.ok()) {
    if (common::V(2)) spdlog::info("deletion-cost: event for {}: {}", pod.Key(), s.message());
    return;
  }
  common::MutexLock l(mu_);
  ++stats_.events_recorded;
}

common::Status Controller::Patch(const PodFacts& pod, int32_t cost) {
  kube::Request req;
  req.method = "PATCH";
  req.path = "/api/v1/namespaces/" + pod.namespace_ + "/pods/" + pod.name;
  req.content_type = "application/merge-patch+json";
  req.body = BuildCostPatch(cost);
  GPUSCHED_ASSIGN_OR_RETURN(kube::Response resp, rest_.Do(req));
  if (resp.status == 404) return common::NotFoundError("pod " + pod.Key() + " is gone");
  if (!resp.ok()) return kube::StatusFromResponse(req, resp);
  return common::Status::Ok();
}

const PolicySpec* Controller::PolicyToReconcile(const std::string& key, PodFacts* pod) {
  common::MutexLock l(mu_);
  ++stats_.reconciles;
  auto it = store_.find(key);
  if (it == store_.end()) return nullptr;
  *pod = it->second;
  if (!pod->Active()) return nullptr;
  bool unknown_owner = false;
  const PolicySpec* policy = PolicyForLocked(*pod, &unknown_owner);
  if (unknown_owner) unknown_owner_keys_.insert(key);
  if (policy == nullptr) last_cost_.erase(key);
  return policy;
}

DeletionCost Controller::CurrentCost(const std::string& key, const PodFacts& pod) {
  // Parsed as the ReplicaSet controller parses it.
  const DeletionCost current =
      DeletionCostFromAnnotation(pod.cost_annotation ? &*pod.cost_annotation : nullptr);
  if (!current.error.empty()) {
    {
      common::MutexLock l(mu_);
      ++stats_.invalid_annotations;
    }
    spdlog::warn(
        "deletion-cost: pod {}: {}; the ReplicaSet controller treats it as 0, overwriting it", key,
        current.error);
    Event(pod, "Warning", "InvalidDeletionCost",
          current.error + "; the ReplicaSet controller treats it as 0");
  }
  return current;
}

CostResult Controller::ComputeCost(const std::string& key, const PodFacts& pod,
                                   const PolicySpec& policy, common::TimePoint now) {
  // Metric values, fetched lazily: one scrape per pod, one query per query term.
  std::optional<common::StatusOr<std::vector<Sample>>> scrape;
  const PodRef ref{pod.namespace_, pod.name, pod.uid, pod.pod_ip, pod.node_name};
  const TermValueFn values = [&](size_t k) -> common::StatusOr<double> {
    const Term& t = policy.terms[k];
    if (t.kind == Term::Kind::kMetric) {
      if (!scrape) {
        if (pod.pod_ip.empty() && policy.pod_url_template.find("{podIP}") != std::string::npos) {
          scrape = common::StatusOr<std::vector<Sample>>(
              common::UnavailableError("the pod has no IP yet"));
        } else {
          scrape = ScrapePod(http_, ExpandTemplate(policy.pod_url_template, ref),
                             config_.controller.scrape_timeout);
        }
      }
      if (!scrape->ok()) return scrape->status();
      return SumSeries(**scrape, t.name, t.labels);
    }
    return QueryPrometheus(http_, policy.prometheus_url, ExpandTemplate(t.name, ref),
                           config_.controller.scrape_timeout);
  };
  PodView view;
  view.ready = pod.ready;
  view.ready_since = pod.ready_time;
  view.labels = &pod.labels;
  view.annotations = &pod.annotations;
  CostResult result = EvaluateCost(config_, policy, view, now, values);

  common::MutexLock l(mu_);
  for (size_t k : result.failed_terms) {
    if (policy.terms[k].kind == Term::Kind::kMetric) {
      ++stats_.metric_errors_pod;
    } else {
      ++stats_.metric_errors_prometheus;
    }
  }
  if (result.warmup_ends) AddAfterLocked(key, *result.warmup_ends);
  return result;
}

bool Controller::ReportMetricErrors(const std::string& key, const PodFacts& pod,
                                    const PolicySpec& policy, const CostResult& result) {
  if (result.errors.empty()) return false;
  std::string note;
  for (const std::string& e : result.errors) note += (note.empty() ? "" : "; ") + e;
  spdlog::warn("deletion-cost: pod {} (policy {}): {} metric term(s) counted as 0: {}", key,
               policy.name, result.errors.size(), note);
  Event(pod, "Warning", "DeletionCostMetricsFailed",
        std::to_string(result.errors.size()) + " metric term(s) counted as 0: " + note);
  if (policy.on_metric_error != OnMetricError::kSkip) return false;
  common::MutexLock l(mu_);
  ++stats_.skipped_metric_error;
  return true;
}

bool Controller::SkipWrite(const std::string& key, const PolicySpec& policy,
                           const DeletionCost& current, int32_t cost) {
  // Write when the annotation is absent or invalid, when the sign changes (delete first /
  // default / keep), or when the value moved by more than the band.
  const bool valid = current.present && current.error.empty();
  const int64_t delta = static_cast<int64_t>(cost) - current.value;
  if (valid && delta == 0) {
    common::MutexLock l(mu_);
    ++stats_.skipped_unchanged;
    return true;
  }
  if (valid && Sign(cost) == Sign(current.value) && std::llabs(delta) <= policy.hysteresis) {
    common::MutexLock l(mu_);
    ++stats_.skipped_hysteresis;
    if (common::V(4)) {
      spdlog::info("deletion-cost: pod {}: {} -> {} within hysteresis {}", key, current.value, cost,
                   policy.hysteresis);
    }
    return true;
  }
  return false;
}

void Controller::ReflectWrittenCostLocked(const std::string& key, const std::string& uid,
                                          int32_t cost) {
  auto it = store_.find(key);
  if (it == store_.end() || it->second.uid != uid) return;
  const std::string value = std::to_string(cost);
  it->second.cost_annotation = value;
  auto& ann = it->second.annotations;
  auto a = std::find_if(ann.begin(), ann.end(),
                        [](const auto& kv) { return kv.first == kPodDeletionCostAnnotation; });
  if (a != ann.end()) {
    a->second = value;
  } else {
    ann.emplace_back(std::string(kPodDeletionCostAnnotation), value);
    std::sort(ann.begin(), ann.end());
  }
}

common::Status Controller::WriteCost(const std::string& key, const PodFacts& pod,
                                     const PolicySpec& policy, const DeletionCost& current,
                                     const CostResult& result) {
  const std::string from = !current.present         ? "unset"
                           : !current.error.empty() ? "invalid"
                                                    : std::to_string(current.value);
  if (config_.controller.dry_run) {
    {
      common::MutexLock l(mu_);
      ++stats_.patches_dry_run;
    }
    spdlog::info("deletion-cost: dry-run: pod {} (policy {}): would set {} -> {}{}", key,
                 policy.name, from, result.cost, result.warming_up ? " (warm-up)" : "");
    return common::Status::Ok();
  }
  common::Status s = Patch(pod, result.cost);
  if (s.code() == common::StatusCode::kNotFound) return common::Status::Ok();  // deleted meanwhile
  if (!s.ok()) {
    {
      common::MutexLock l(mu_);
      ++stats_.patches_error;
    }
    spdlog::warn("deletion-cost: pod {}: patch failed: {}", key, s.message());
    return s;
  }
  {
    common::MutexLock l(mu_);
    ++stats_.patches_success;
    // Reflect the write at once, so a reconcile before the watch event sees it.
    ReflectWrittenCostLocked(key, pod.uid, result.cost);
  }
  if (common::V(2)) {
    spdlog::info("deletion-cost: pod {} (policy {}): {} -> {}{}", key, policy.name, from,
                 result.cost, result.warming_up ? " (warm-up)" : "");
  }
  Event(pod, "Normal", "DeletionCostUpdated",
        "policy " + policy.name + ": " + from + " -> " + std::to_string(result.cost) +
            (result.warming_up ? " (warm-up)" : ""));
  return common::Status::Ok();
}

common::Status Controller::Reconcile(const std::string& key) {
  PodFacts pod;
  const PolicySpec* policy = PolicyToReconcile(key, &pod);
  if (policy == nullptr) return common::Status::Ok();
  const common::TimePoint now = clock_.Now();
  const DeletionCost current = CurrentCost(key, pod);
  const CostResult result = ComputeCost(key, pod, *policy, now);
  if (ReportMetricErrors(key, pod, *policy, result)) return common::Status::Ok();
  {
    common::MutexLock l(mu_);
    last_cost_[key] = result.cost;
  }
  cost_histogram_->Observe(static_cast<double>(result.cost));
  if (SkipWrite(key, *policy, current, result.cost)) return common::Status::Ok();
  return WriteCost(key, pod, *policy, current, result);
}

ControllerStats Controller::stats() const {
  common::MutexLock l(mu_);
  return stats_;
}

size_t Controller::QueueDepth() const {
  common::MutexLock l(mu_);
  return queue_.size() + waiting_.size();
}

size_t Controller::InFlight() const {
  common::MutexLock l(mu_);
  return processing_.size();
}

std::optional<int32_t> Controller::LastCostForTest(const std::string& key) const {
  common::MutexLock l(mu_);
  auto it = last_cost_.find(key);
  if (it == last_cost_.end()) return std::nullopt;
  return it->second;
}

std::string Controller::MetricsText() const { return metrics::WriteText(registry_); }

}  // namespace gpusched::addons::deletion_cost
