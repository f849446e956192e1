// SPDX-License-Identifier: Apache-2.0
#include "src/addons/deletion_cost/policy.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <set>

#include "src/addons/deletion_cost/workload.h"
#include "src/api/decode.h"
#include "src/api/fields.h"
#include "src/common/strings.h"

namespace gpusched::addons::deletion_cost {
namespace {

namespace json = boost::json;

// The policy file's field reader: api::FieldReader plus durations ("30s", "5m").
class Decoder : public api::FieldReader {
 public:
  std::optional<common::Duration> Duration(const json::object& o, std::string_view key,
                                           const std::string& path, bool allow_zero) {
    std::optional<std::string> s = String(o, key, path);
    if (!s) {
      if (const json::value* v = o.if_contains(key); v && v->is_number()) {
        Error(Join(path, key), "want a duration string such as \"30s\", got " + Describe(*v));
      }
      return std::nullopt;
    }
    std::optional<common::Duration> d = ParseDuration(*s);
    if (!d || d->count() < 0 || (!allow_zero && d->count() == 0)) {
      Error(Join(path, key), "invalid duration " + common::Quote(*s) +
                                 " (want e.g. \"30s\", \"5m\"" +
                                 (allow_zero ? ", >= 0)" : ", > 0)"));
      return std::nullopt;
    }
    return d;
  }
};

bool IsMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool IsPolicyName(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'))
      return false;
  }
  return true;
}

void DecodeController(Decoder& d, const json::object& o, ControllerSettings& c) {
  const std::string p = "controller";
  d.Known(o, p,
          {"resyncPeriod", "workers", "qps", "burst", "dryRun", "scrapeTimeout", "events",
           "namespace", "minCost", "maxCost", "retryBackoff"});
  if (auto v = d.Duration(o, "resyncPeriod", p, false)) c.resync_period = *v;
  if (auto v = d.Int(o, "workers", p, 1, 256)) c.workers = static_cast<int>(*v);
  if (auto v = d.Number(o, "qps", p)) {
    if (*v < 0) {
      d.Error(p + ".qps", "must be >= 0 (0 disables the client rate limit)");
    } else {
      c.qps = *v;
    }
  }
  if (auto v = d.Int(o, "burst", p, 1, 100000)) c.burst = static_cast<int>(*v);
  if (auto v = d.Bool(o, "dryRun", p)) c.dry_run = *v;
  if (auto v = d.Duration(o, "scrapeTimeout", p, false)) c.scrape_timeout = *v;
  if (auto v = d.Duration(o, "retryBackoff", p, false)) c.retry_backoff = *v;
  if (auto v = d.String(o, "events", p)) {
    if (*v == "None") {
      c.events = EventMode::kNone;
    } else if (*v == "Warnings") {
      c.events = EventMode::kWarnings;
    } else if (*v == "All") {
      c.events = EventMode::kAll;
    } else {
      d.Error(p + ".events",
              "invalid value " + common::Quote(*v) + " (want None, Warnings or All)");
    }
  }
  if (auto v = d.String(o, "namespace", p)) c.namespace_ = *v;
  if (auto v = d.Int(o, "minCost", p, INT32_MIN, INT32_MAX)) c.min_cost = *v;
  if (auto v = d.Int(o, "maxCost", p, INT32_MIN, INT32_MAX)) c.max_cost = *v;
  if (c.min_cost > c.max_cost) d.Error(p, "minCost must not exceed maxCost");
}

void DecodeTerm(Decoder& d, const json::object& o, const std::string& p, Term& t) {
  d.Known(o, p,
          {"metric", "query", "label", "annotation", "labels", "weight", "thresholds", "value",
           "cost", "min", "max"});
  int kinds = 0;
  for (std::string_view k : {"metric", "query", "label", "annotation"}) {
    if (o.contains(k)) ++kinds;
  }
  if (kinds != 1) {
    d.Error(p, "set exactly one of metric, query, label, annotation");
    return;
  }
  if (auto v = d.String(o, "metric", p)) {
    t.kind = Term::Kind::kMetric;
    t.name = *v;
    if (!IsMetricName(*v)) d.Error(p + ".metric", "invalid metric name " + common::Quote(*v));
  } else if (auto q = d.String(o, "query", p)) {
    t.kind = Term::Kind::kQuery;
    t.name = *q;
    if (q->empty()) d.Error(p + ".query", "must not be empty");
  } else if (auto l = d.String(o, "label", p)) {
    t.kind = Term::Kind::kLabel;
    t.name = *l;
    if (l->empty()) d.Error(p + ".label", "must not be empty");
  } else if (auto a = d.String(o, "annotation", p)) {
    t.kind = Term::Kind::kAnnotation;
    t.name = *a;
    if (a->empty()) d.Error(p + ".annotation", "must not be empty");
  } else {
    return;  // the type error is reported
  }
  const bool fixed = t.kind == Term::Kind::kLabel || t.kind == Term::Kind::kAnnotation;
  if (const json::object* ls = d.Object(o, "labels", p)) {
    if (t.kind != Term::Kind::kMetric) d.Error(p + ".labels", "only for metric terms");
    for (const auto& kv : *ls) {
      if (!kv.value().is_string()) {
        d.Error(p + ".labels." + std::string(kv.key()), "want a string");
        continue;
      }
      t.labels.emplace_back(std::string(kv.key()), std::string(kv.value().get_string()));
    }
    std::sort(t.labels.begin(), t.labels.end());
  }
  if (fixed) {
    for (std::string_view k : {"weight", "thresholds"}) {
      if (o.contains(k)) d.Error(p + "." + std::string(k), "only for metric and query terms");
    }
    if (auto c = d.Number(o, "cost", p)) {
      t.cost = *c;
    } else if (!o.contains("cost")) {
      d.Error(p + ".cost", "required for label and annotation terms");
    }
    t.equals = d.String(o, "value", p);
  } else {
    for (std::string_view k : {"cost", "value"}) {
      if (o.contains(k)) d.Error(p + "." + std::string(k), "only for label and annotation terms");
    }
    if (auto w = d.Number(o, "weight", p)) t.weight = *w;
    if (const json::array* th = d.Array(o, "thresholds", p)) {
      if (o.contains("weight")) d.Error(p, "set weight or thresholds, not both");
      if (th->empty()) d.Error(p + ".thresholds", "must not be empty");
      for (size_t k = 0; k < th->size(); ++k) {
        const std::string tp = p + ".thresholds[" + std::to_string(k) + "]";
        const json::object* to = (*th)[k].if_object();
        if (to == nullptr) {
          d.Error(tp, "want an object {below, cost}");
          continue;
        }
        d.Known(*to, tp, {"below", "cost"});
        auto below = d.Number(*to, "below", tp);
        auto cost = d.Number(*to, "cost", tp);
        if (!to->contains("below")) d.Error(tp + ".below", "required");
        if (!to->contains("cost")) d.Error(tp + ".cost", "required");
        if (below && cost) t.thresholds.push_back({*below, *cost});
      }
    }
  }
  t.min = d.Number(o, "min", p);
  t.max = d.Number(o, "max", p);
  if (t.min && t.max && *t.min > *t.max) d.Error(p, "min must not exceed max");
}

// selector: namespaces, and matchLabels/matchExpressions as a label selector.
void DecodeSelector(Decoder& d, const json::object& sel, const std::string& p, PolicySpec& s) {
  const std::string sp = p + ".selector";
  d.Known(sel, sp, {"namespaces", "matchLabels", "matchExpressions"});
  s.has_selector = true;
  if (const json::array* ns = d.Array(sel, "namespaces", sp)) {
    for (size_t k = 0; k < ns->size(); ++k) {
      if (!(*ns)[k].is_string()) {
        d.Error(sp + ".namespaces[" + std::to_string(k) + "]", "want a string");
        continue;
      }
      s.namespaces.emplace_back((*ns)[k].get_string());
    }
  }
  // matchLabels and matchExpressions (namespaces is not a label selector field).
  auto ls = api::DecodeLabelSelector(json::value(sel));
  if (!ls.ok()) {
    d.Error(p, "selector." + std::string(ls.status().message()));
  } else {
    s.selector = std::move(ls).value();
  }
}

// metrics.pod: a url template, or port/path/scheme to build one.
void DecodePodMetrics(Decoder& d, const json::object& pod, const std::string& pp, PolicySpec& s) {
  d.Known(pod, pp, {"url", "port", "path", "scheme"});
  if (auto url = d.String(pod, "url", pp)) {
    if (pod.contains("port") || pod.contains("path") || pod.contains("scheme")) {
      d.Error(pp, "set url, or port/path/scheme, not both");
    }
    s.pod_url_template = *url;
  } else {
    auto port = d.Int(pod, "port", pp, 1, 65535);
    std::string path = d.String(pod, "path", pp).value_or("/metrics");
    std::string scheme = d.String(pod, "scheme", pp).value_or("http");
    if (scheme != "http" && scheme != "https") d.Error(pp + ".scheme", "want http or https");
    if (!port) {
      if (!pod.contains("port")) d.Error(pp, "set url or port");
    } else {
      if (path.empty() || path[0] != '/') path = "/" + path;
      s.pod_url_template = scheme + "://{podIP}:" + std::to_string(*port) + path;
    }
  }
  if (!s.pod_url_template.empty() && !common::StartsWith(s.pod_url_template, "http://") &&
      !common::StartsWith(s.pod_url_template, "https://")) {
    d.Error(pp + ".url", "must start with http:// or https://");
  }
}

// metrics.prometheus: the API's base url, without trailing '/'.
void DecodePrometheusMetrics(Decoder& d, const json::object& prom, const std::string& pp,
                             PolicySpec& s) {
  d.Known(prom, pp, {"url"});
  s.prometheus_url = d.String(prom, "url", pp).value_or("");
  while (!s.prometheus_url.empty() && s.prometheus_url.back() == '/') s.prometheus_url.pop_back();
  if (s.prometheus_url.empty()) {
    d.Error(pp + ".url", "required");
  } else if (!common::StartsWith(s.prometheus_url, "http://") &&
             !common::StartsWith(s.prometheus_url, "https://")) {
    d.Error(pp + ".url", "must start with http:// or https://");
  }
}

void DecodeMetrics(Decoder& d, const json::object& m, const std::string& p, PolicySpec& s) {
  const std::string mp = p + ".metrics";
  d.Known(m, mp, {"pod", "prometheus"});
  if (const json::object* pod = d.Object(m, "pod", mp)) DecodePodMetrics(d, *pod, mp + ".pod", s);
  if (const json::object* prom = d.Object(m, "prometheus", mp)) {
    DecodePrometheusMetrics(d, *prom, mp + ".prometheus", s);
  }
}

// terms: each decoded by DecodeTerm; metric and query terms need their metrics source.
void DecodeTerms(Decoder& d, const json::array& terms, const std::string& p, PolicySpec& s) {
  for (size_t k = 0; k < terms.size(); ++k) {
    const std::string tp = p + ".terms[" + std::to_string(k) + "]";
    const json::object* to = terms[k].if_object();
    if (to == nullptr) {
      d.Error(tp, "want an object");
      continue;
    }
    Term t;
    DecodeTerm(d, *to, tp, t);
    if (t.kind == Term::Kind::kMetric && !t.name.empty() && s.pod_url_template.empty()) {
      d.Error(tp + ".metric", "needs metrics.pod (where to scrape the pods)");
    }
    if (t.kind == Term::Kind::kQuery && !t.name.empty() && s.prometheus_url.empty()) {
      d.Error(tp + ".query", "needs metrics.prometheus.url");
    }
    s.terms.push_back(std::move(t));
  }
}

// How the cost is bounded and written: band, hysteresis and onMetricError.
void DecodeCostSettings(Decoder& d, const json::object& o, const std::string& p,
                        const PolicyConfig& cfg, PolicySpec& s) {
  if (auto b = d.String(o, "band", p)) {
    s.band = *b;
    if (!cfg.bands.contains(*b)) {
      std::string names;
      for (const auto& [name, _] : cfg.bands) names += (names.empty() ? "" : ", ") + name;
      d.Error(p + ".band", "unknown band " + common::Quote(*b) + " (bands: " + names + ")");
    }
  }
  if (auto h = d.Int(o, "hysteresis", p, 0, INT32_MAX)) s.hysteresis = *h;
  if (auto e = d.String(o, "onMetricError", p)) {
    if (*e == "Zero") {
      s.on_metric_error = OnMetricError::kZero;
    } else if (*e == "Skip") {
      s.on_metric_error = OnMetricError::kSkip;
    } else {
      d.Error(p + ".onMetricError", "invalid value " + common::Quote(*e) + " (want Zero or Skip)");
    }
  }
}

void DecodePolicy(Decoder& d, const json::object& o, const std::string& p, const PolicyConfig& cfg,
                  PolicySpec& s) {
  d.Known(o, p,
          {"name", "selector", "metrics", "terms", "warmup", "min", "max", "band", "hysteresis",
           "onMetricError"});
  if (auto n = d.String(o, "name", p)) s.name = *n;
  if (!IsPolicyName(s.name)) {
    d.Error(p + ".name", s.name.empty()
                             ? "required"
                             : "invalid name " + common::Quote(s.name) +
                                   " (lower-case letters, digits, '-', '.', '_'; at most 63)");
  }
  if (const json::object* sel = d.Object(o, "selector", p)) DecodeSelector(d, *sel, p, s);
  if (const json::object* m = d.Object(o, "metrics", p)) DecodeMetrics(d, *m, p, s);
  if (const json::array* terms = d.Array(o, "terms", p)) DecodeTerms(d, *terms, p, s);
  if (const json::object* w = d.Object(o, "warmup", p)) {
    const std::string wp = p + ".warmup";
    d.Known(*w, wp, {"cost", "readyFor"});
    Warmup warm;
    if (auto c = d.Int(*w, "cost", wp, INT32_MIN, INT32_MAX)) warm.cost = *c;
    if (auto r = d.Duration(*w, "readyFor", wp, true)) warm.ready_for = *r;
    s.warmup = warm;
  }
  s.min = d.Int(o, "min", p, INT32_MIN, INT32_MAX);
  s.max = d.Int(o, "max", p, INT32_MIN, INT32_MAX);
  if (s.min && s.max && *s.min > *s.max) d.Error(p, "min must not exceed max");
  DecodeCostSettings(d, o, p, cfg, s);
  if (s.terms.empty() && !s.warmup) d.Error(p, "needs at least one term or a warmup");
}

int64_t ClampI64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return static_cast<int64_t>(v);  // toward zero
}

bool Matches(const Term& t, const PodView& pod) {
  if (t.kind == Term::Kind::kLabel) {
    if (pod.labels == nullptr) return false;
    common::Atom key;
    if (!common::Symbols().Find(t.name, &key)) return false;
    common::Atom value;
    if (!pod.labels->Get(key, &value)) return false;
    return !t.equals || common::Str(value) == *t.equals;
  }
  if (pod.annotations == nullptr) return false;
  for (const auto& [k, v] : *pod.annotations) {
    if (k == t.name) return !t.equals || v == *t.equals;
  }
  return false;
}

}  // namespace

std::string Term::Describe() const {
  switch (kind) {
    case Kind::kMetric: return "metric " + name;
    case Kind::kQuery: return "query " + common::Quote(name);
    case Kind::kLabel: return "label " + name;
    case Kind::kAnnotation: return "annotation " + name;
  }
  return "term";
}

bool PolicySpec::NeedsPodScrape() const {
  return std::any_of(terms.begin(), terms.end(), [](const Term& t) { return t.NeedsPodScrape(); });
}

bool PolicySpec::NeedsPrometheus() const {
  return std::any_of(terms.begin(), terms.end(), [](const Term& t) { return t.NeedsPrometheus(); });
}

const PolicySpec* PolicyConfig::Find(std::string_view name) const {
  for (const PolicySpec& p : policies) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::map<std::string, Band, std::less<>> DefaultBands() {
  return {{"delete-first", {-100, -1}},
          {"default", {0, 0}},
          {"medium", {1, 100}},
          {"high", {100, 1000}}};
}

std::optional<common::Duration> ParseDuration(std::string_view text) {
  if (text == "0") return common::Duration(0);
  if (text.empty()) return std::nullopt;
  double total_ns = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    if (start == i) return std::nullopt;
    std::optional<double> num = common::ParseDouble(text.substr(start, i - start));
    if (!num) return std::nullopt;
    size_t ustart = i;
    while (i < text.size() && !((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    const std::string_view unit = text.substr(ustart, i - ustart);
    double scale = 0;
    if (unit == "ns") {
      scale = 1;
    } else if (unit == "us" || unit == "µs") {
      scale = 1e3;
    } else if (unit == "ms") {
      scale = 1e6;
    } else if (unit == "s") {
      scale = 1e9;
    } else if (unit == "m") {
      scale = 60e9;
    } else if (unit == "h") {
      scale = 3600e9;
    } else {
      return std::nullopt;
    }
    total_ns += *num * scale;
  }
  if (total_ns > 9e18) return std::nullopt;
  return common::Duration(static_cast<int64_t>(total_ns));
}

std::string ExpandTemplate(std::string_view tmpl, const PodRef& pod) {
  std::string out;
  out.reserve(tmpl.size() + 32);
  size_t i = 0;
  while (i < tmpl.size()) {
    if (tmpl[i] == '{') {
      const size_t close = tmpl.find('}', i);
      if (close != std::string_view::npos) {
        const std::string_view key = tmpl.substr(i + 1, close - i - 1);
        const std::string_view* value = nullptr;
        if (key == "podIP") value = &pod.pod_ip;
        if (key == "name") value = &pod.name;
        if (key == "namespace") value = &pod.namespace_;
        if (key == "uid") value = &pod.uid;
        if (key == "node") value = &pod.node;
        if (value != nullptr) {
          out.append(*value);
          i = close + 1;
          continue;
        }
      }
    }
    out.push_back(tmpl[i]);
    ++i;
  }
  return out;
}

common::StatusOr<PolicyConfig> ParsePolicyConfig(std::string_view text, std::string_view source) {
  auto docs = api::ParseYamlDocuments(text, source);
  if (!docs.ok()) return docs.status();
  const std::string src(source);
  if (docs->size() != 1) {
    return common::InvalidArgumentError(src + ": want exactly one YAML document, got " +
                                        std::to_string(docs->size()));
  }
  const json::object* root = (*docs)[0].if_object();
  if (root == nullptr) return common::InvalidArgumentError(src + ": want a mapping at the top");
  Decoder d;
  PolicyConfig cfg;
  cfg.bands = DefaultBands();
  d.Known(*root, "", {"apiVersion", "kind", "controller", "bands", "policies"});
  const std::string api_version = d.String(*root, "apiVersion", "").value_or("");
  if (api_version != "gpusched.io/v1alpha1") {
    d.Error("apiVersion", "want gpusched.io/v1alpha1, got " + common::Quote(api_version));
  }
  const std::string kind = d.String(*root, "kind", "").value_or("");
  if (kind != "DeletionCostPolicy")
    d.Error("kind", "want DeletionCostPolicy, got " + common::Quote(kind));
  if (const json::object* c = d.Object(*root, "controller", ""))
    DecodeController(d, *c, cfg.controller);
  if (const json::object* bands = d.Object(*root, "bands", "")) {
    for (const auto& kv : *bands) {
      const std::string bp = "bands." + std::string(kv.key());
      const json::object* b = kv.value().if_object();
      if (b == nullptr) {
        d.Error(bp, "want {min, max}");
        continue;
      }
      d.Known(*b, bp, {"min", "max"});
      auto lo = d.Int(*b, "min", bp, INT32_MIN, INT32_MAX);
      auto hi = d.Int(*b, "max", bp, INT32_MIN, INT32_MAX);
      if (!b->contains("min") || !b->contains("max")) d.Error(bp, "needs min and max");
      if (lo && hi) {
        if (*lo > *hi) {
          d.Error(bp, "min must not exceed max");
        } else {
          cfg.bands[std::string(kv.key())] = Band{*lo, *hi};
        }
      }
    }
  }
  const json::array* policies = d.Array(*root, "policies", "");
  if (policies == nullptr || policies->empty()) {
    d.Error("policies", "at least one policy is required");
  } else {
    std::set<std::string> names;
    for (size_t k = 0; k < policies->size(); ++k) {
      const std::string pp = "policies[" + std::to_string(k) + "]";
      const json::object* po = (*policies)[k].if_object();
      if (po == nullptr) {
        d.Error(pp, "want an object");
        continue;
      }
      PolicySpec s;
      DecodePolicy(d, *po, pp, cfg, s);
      if (!s.name.empty() && !names.insert(s.name).second) {
        d.Error(pp + ".name", "duplicate policy name " + common::Quote(s.name));
      }
      cfg.policies.push_back(std::move(s));
    }
  }
  if (!d.errors().empty()) {
    std::string msg = src + ": ";
    for (size_t k = 0; k < d.errors().size(); ++k) msg += (k ? "; " : "") + d.errors()[k];
    return common::InvalidArgumentError(msg);
  }
  return cfg;
}

CostResult EvaluateCost(const PolicyConfig& config, const PolicySpec& policy, const PodView& pod,
                        common::TimePoint now, const TermValueFn& values) {
  CostResult r;
  const auto final_clamp = [&](int64_t v) {
    const int64_t lo = std::max<int64_t>(config.controller.min_cost, INT32_MIN);
    const int64_t hi = std::min<int64_t>(config.controller.max_cost, INT32_MAX);
    const int64_t c = std::clamp(v, lo, hi);
    if (c != v) r.clamped = true;
    return static_cast<int32_t>(c);
  };
  if (policy.warmup) {
    const bool warmed =
        pod.ready && (!pod.ready_since || now - *pod.ready_since >= policy.warmup->ready_for);
    if (!warmed) {
      r.warming_up = true;
      if (pod.ready && pod.ready_since) r.warmup_ends = *pod.ready_since + policy.warmup->ready_for;
      r.cost = final_clamp(policy.warmup->cost);
      return r;
    }
  }
  double sum = 0;
  r.contributions.assign(policy.terms.size(), 0.0);
  for (size_t k = 0; k < policy.terms.size(); ++k) {
    const Term& t = policy.terms[k];
    double c = 0;
    if (t.kind == Term::Kind::kMetric || t.kind == Term::Kind::kQuery) {
      common::StatusOr<double> v =
          values ? values(k)
                 : common::StatusOr<double>(common::UnavailableError("no metric source"));
      if (!v.ok()) {
        r.errors.push_back(t.Describe() + ": " + std::string(v.status().message()));
        r.failed_terms.push_back(k);
        continue;
      }
      if (!std::isfinite(*v)) {
        r.errors.push_back(t.Describe() + ": value is not a finite number (" + std::to_string(*v) +
                           ")");
        r.failed_terms.push_back(k);
        continue;
      }
      if (!t.thresholds.empty()) {
        for (const Threshold& th : t.thresholds) {
          if (*v < th.below) {
            c = th.cost;
            break;
          }
        }
      } else {
        c = *v * t.weight;
      }
    } else if (Matches(t, pod)) {
      c = t.cost;
    }
    if (t.min) c = std::max(c, *t.min);
    if (t.max) c = std::min(c, *t.max);
    if (!std::isfinite(c)) c = 0;
    r.contributions[k] = c;
    sum += c;
  }
  int64_t v = ClampI64(sum);
  const int64_t before = v;
  if (policy.min) v = std::max(v, *policy.min);
  if (policy.max) v = std::min(v, *policy.max);
  if (!policy.band.empty()) {
    if (auto it = config.bands.find(policy.band); it != config.bands.end()) {
      v = std::clamp(v, it->second.min, it->second.max);
    }
  }
  if (v != before) r.clamped = true;
  r.cost = final_clamp(v);
  return r;
}

}  // namespace gpusched::addons::deletion_cost
