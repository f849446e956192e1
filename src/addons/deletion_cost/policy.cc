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

using api::FieldPath;
using api::ObjectFields;

// A Go duration string member ("30s", "5m"): not negative, and not zero unless `allow_zero`.
std::optional<common::Duration> Duration(ObjectFields& f, std::string_view key, bool allow_zero) {
  const json::value* v = f.Value(key);
  if (v != nullptr && v->is_number()) {
    f.Error(key, "want a duration string such as \"30s\", got " + api::DescribeValue(*v));
    return std::nullopt;
  }
  const std::optional<std::string_view> s = f.String(key);
  if (!s) return std::nullopt;
  std::optional<common::Duration> d = ParseDuration(*s);
  if (!d || d->count() < 0 || (!allow_zero && d->count() == 0)) {
    f.Error(key, "invalid duration " + common::Quote(*s) + " (want e.g. \"30s\", \"5m\"" +
                     (allow_zero ? ", >= 0)" : ", > 0)"));
    return std::nullopt;
  }
  return d;
}

// The members of the object member `key` of `f`, read by `read(fields)`; nothing when absent.
// Returns whether it was there.
template <typename Read>
bool ReadObject(ObjectFields& f, std::string_view key, Read&& read) {
  const json::object* o = f.Object(key);
  if (o == nullptr) return false;
  const FieldPath p = f.path().Key(key);
  ObjectFields fields(f.reader(), *o, p);
  read(fields);
  return true;
}

// read(fields) for each element of the array member `key` of `f` that is an object; other
// elements are errors.
template <typename Read>
void ReadObjects(ObjectFields& f, std::string_view key, Read&& read) {
  f.ForEachObject(key, [&](const json::object& o, const FieldPath& p) {
    ObjectFields fields(f.reader(), o, p);
    read(fields);
  });
}

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

void DecodeController(ObjectFields& f, ControllerSettings& c) {
  if (auto v = Duration(f, "resyncPeriod", false)) c.resync_period = *v;
  if (auto v = f.Int("workers", 1, 256)) c.workers = static_cast<int>(*v);
  if (auto v = f.Number("qps")) {
    if (*v < 0) {
      f.Error("qps", "must be >= 0 (0 disables the client rate limit)");
    } else {
      c.qps = *v;
    }
  }
  if (auto v = f.Int("burst", 1, 100000)) c.burst = static_cast<int>(*v);
  if (auto v = f.Bool("dryRun")) c.dry_run = *v;
  if (auto v = Duration(f, "scrapeTimeout", false)) c.scrape_timeout = *v;
  if (auto v = Duration(f, "retryBackoff", false)) c.retry_backoff = *v;
  if (auto v = f.String("events")) {
    if (*v == "None") {
      c.events = EventMode::kNone;
    } else if (*v == "Warnings") {
      c.events = EventMode::kWarnings;
    } else if (*v == "All") {
      c.events = EventMode::kAll;
    } else {
      f.Error("events", "invalid value " + common::Quote(*v) + " (want None, Warnings or All)");
    }
  }
  if (auto v = f.String("namespace")) c.namespace_ = std::string(*v);
  if (auto v = f.Int("minCost", INT32_MIN, INT32_MAX)) c.min_cost = *v;
  if (auto v = f.Int("maxCost", INT32_MIN, INT32_MAX)) c.max_cost = *v;
  if (c.min_cost > c.max_cost) f.reader().Error(f.path(), "minCost must not exceed maxCost");
}

// The term's source: exactly one of metric, query, label, annotation. False when there is not
// exactly one, or it is not a valid name.
bool DecodeTermSource(ObjectFields& f, Term& t) {
  constexpr std::pair<std::string_view, Term::Kind> kSources[] = {
      {"metric", Term::Kind::kMetric},
      {"query", Term::Kind::kQuery},
      {"label", Term::Kind::kLabel},
      {"annotation", Term::Kind::kAnnotation}};
  int kinds = 0;
  for (const auto& [key, kind] : kSources) {
    if (f.Value(key) != nullptr) ++kinds;
  }
  if (kinds != 1) {
    f.reader().Error(f.path(), "set exactly one of metric, query, label, annotation");
    return false;
  }
  for (const auto& [key, kind] : kSources) {
    if (f.Value(key) == nullptr) continue;
    const std::optional<std::string_view> name = f.String(key);
    if (!name) return false;  // the type error is reported
    t.kind = kind;
    t.name = std::string(*name);
    if (kind == Term::Kind::kMetric && !IsMetricName(*name)) {
      f.Error(key, "invalid metric name " + common::Quote(*name));
    } else if (name->empty()) {
      f.Error(key, "must not be empty");
    }
  }
  return true;
}

// labels: the series label matchers of a metric term, sorted.
void DecodeTermLabels(ObjectFields& f, Term& t) {
  const json::object* ls = f.Object("labels");
  if (ls == nullptr) return;
  if (t.kind != Term::Kind::kMetric) f.Error("labels", "only for metric terms");
  const FieldPath lp = f.path().Key("labels");
  for (const auto& kv : *ls) {
    if (std::optional<std::string_view> v = f.reader().AsString(kv.value(), lp.Key(kv.key()))) {
      t.labels.emplace_back(std::string(kv.key()), std::string(*v));
    }
  }
  std::sort(t.labels.begin(), t.labels.end());
}

// thresholds: [{below, cost}], instead of weight.
void DecodeThresholds(ObjectFields& f, Term& t) {
  const json::array* th = f.Array("thresholds");
  if (th == nullptr) return;
  if (f.Value("weight") != nullptr) {
    f.reader().Error(f.path(), "set weight or thresholds, not both");
  }
  if (th->empty()) f.Error("thresholds", "must not be empty");
  ReadObjects(f, "thresholds", [&](ObjectFields& tf) {
    const std::optional<double> below = tf.Number("below");
    const std::optional<double> cost = tf.Number("cost");
    if (tf.Value("below") == nullptr) tf.Error("below", "required");
    if (tf.Value("cost") == nullptr) tf.Error("cost", "required");
    if (below && cost) t.thresholds.push_back({*below, *cost});
  });
}

void DecodeTerm(ObjectFields& f, Term& t) {
  const bool source_ok = DecodeTermSource(f, t);
  DecodeTermLabels(f, t);
  const bool fixed = t.kind == Term::Kind::kLabel || t.kind == Term::Kind::kAnnotation;
  // What the other kind of term has: reported only for a term whose kind is known.
  for (std::string_view k : fixed ? std::initializer_list<std::string_view>{"weight", "thresholds"}
                                  : std::initializer_list<std::string_view>{"cost", "value"}) {
    if (source_ok && f.Value(k) != nullptr) {
      f.Error(k, fixed ? "only for metric and query terms" : "only for label and annotation terms");
    }
  }
  if (fixed) {
    if (auto c = f.Number("cost")) {
      t.cost = *c;
    } else if (source_ok && f.object().if_contains("cost") == nullptr) {
      f.Error("cost", "required for label and annotation terms");
    }
    if (auto v = f.String("value")) t.equals = std::string(*v);
  } else {
    if (auto w = f.Number("weight")) t.weight = *w;
    DecodeThresholds(f, t);
  }
  t.min = f.Number("min");
  t.max = f.Number("max");
  if (t.min && t.max && *t.min > *t.max) f.reader().Error(f.path(), "min must not exceed max");
}

// selector: namespaces, and matchLabels/matchExpressions as a label selector.
void DecodeSelector(ObjectFields& f, PolicySpec& s) {
  s.has_selector = true;
  f.ForEachString("namespaces",
                  [&](std::string_view ns, const FieldPath&) { s.namespaces.emplace_back(ns); });
  f.Allow({"matchLabels", "matchExpressions"});  // read by api::DecodeLabelSelector
  auto ls = api::DecodeLabelSelector(json::value(f.object()));
  if (!ls.ok()) {
    f.reader().Error(f.path(), ls.status().message());
  } else {
    s.selector = std::move(ls).value();
  }
}

// metrics.pod: a url template, or port/path/scheme to build one.
void DecodePodMetrics(ObjectFields& f, PolicySpec& s) {
  const std::optional<int64_t> port = f.Int("port", 1, 65535);
  std::string path(f.String("path").value_or("/metrics"));
  const std::string_view scheme = f.String("scheme").value_or("http");
  if (auto url = f.String("url")) {
    if (f.Value("port") != nullptr || f.Value("path") != nullptr || f.Value("scheme") != nullptr) {
      f.reader().Error(f.path(), "set url, or port/path/scheme, not both");
    }
    s.pod_url_template = std::string(*url);
  } else {
    if (scheme != "http" && scheme != "https") f.Error("scheme", "want http or https");
    if (!port) {
      if (f.object().if_contains("port") == nullptr) f.reader().Error(f.path(), "set url or port");
    } else {
      if (path.empty() || path[0] != '/') path = "/" + path;
      s.pod_url_template = std::string(scheme) + "://{podIP}:" + std::to_string(*port) + path;
    }
  }
  if (!s.pod_url_template.empty() && !common::StartsWith(s.pod_url_template, "http://") &&
      !common::StartsWith(s.pod_url_template, "https://")) {
    f.Error("url", "must start with http:// or https://");
  }
}

// metrics.prometheus: the API's base url, without trailing '/'.
void DecodePrometheusMetrics(ObjectFields& f, PolicySpec& s) {
  s.prometheus_url = std::string(f.String("url").value_or(""));
  while (!s.prometheus_url.empty() && s.prometheus_url.back() == '/') s.prometheus_url.pop_back();
  if (s.prometheus_url.empty()) {
    f.Error("url", "required");
  } else if (!common::StartsWith(s.prometheus_url, "http://") &&
             !common::StartsWith(s.prometheus_url, "https://")) {
    f.Error("url", "must start with http:// or https://");
  }
}

// terms: each decoded by DecodeTerm; metric and query terms need their metrics source.
void DecodeTerms(ObjectFields& f, PolicySpec& s) {
  ReadObjects(f, "terms", [&](ObjectFields& tf) {
    Term t;
    DecodeTerm(tf, t);
    if (t.kind == Term::Kind::kMetric && !t.name.empty() && s.pod_url_template.empty()) {
      tf.Error("metric", "needs metrics.pod (where to scrape the pods)");
    }
    if (t.kind == Term::Kind::kQuery && !t.name.empty() && s.prometheus_url.empty()) {
      tf.Error("query", "needs metrics.prometheus.url");
    }
    s.terms.push_back(std::move(t));
  });
}

// How the cost is bounded and written: band, hysteresis and onMetricError.
void DecodeCostSettings(ObjectFields& f, const PolicyConfig& cfg, PolicySpec& s) {
  if (auto b = f.String("band")) {
    s.band = std::string(*b);
    if (!cfg.bands.contains(*b)) {
      std::string names;
      for (const auto& [name, _] : cfg.bands) names += (names.empty() ? "" : ", ") + name;
      f.Error("band", "unknown band " + common::Quote(*b) + " (bands: " + names + ")");
    }
  }
  if (auto h = f.Int("hysteresis", 0, INT32_MAX)) s.hysteresis = *h;
  if (auto e = f.String("onMetricError")) {
    if (*e == "Zero") {
      s.on_metric_error = OnMetricError::kZero;
    } else if (*e == "Skip") {
      s.on_metric_error = OnMetricError::kSkip;
    } else {
      f.Error("onMetricError", "invalid value " + common::Quote(*e) + " (want Zero or Skip)");
    }
  }
}

void DecodePolicy(ObjectFields& f, const PolicyConfig& cfg, PolicySpec& s) {
  if (auto n = f.String("name")) s.name = std::string(*n);
  if (!IsPolicyName(s.name)) {
    f.Error("name", s.name.empty()
                        ? "required"
                        : "invalid name " + common::Quote(s.name) +
                              " (lower-case letters, digits, '-', '.', '_'; at most 63)");
  }
  ReadObject(f, "selector", [&](ObjectFields& sf) { DecodeSelector(sf, s); });
  ReadObject(f, "metrics", [&](ObjectFields& mf) {
    ReadObject(mf, "pod", [&](ObjectFields& pf) { DecodePodMetrics(pf, s); });
    ReadObject(mf, "prometheus", [&](ObjectFields& pf) { DecodePrometheusMetrics(pf, s); });
  });
  DecodeTerms(f, s);
  ReadObject(f, "warmup", [&](ObjectFields& wf) {
    Warmup warm;
    if (auto c = wf.Int("cost", INT32_MIN, INT32_MAX)) warm.cost = *c;
    if (auto r = Duration(wf, "readyFor", true)) warm.ready_for = *r;
    s.warmup = warm;
  });
  s.min = f.Int("min", INT32_MIN, INT32_MAX);
  s.max = f.Int("max", INT32_MIN, INT32_MAX);
  if (s.min && s.max && *s.min > *s.max) f.reader().Error(f.path(), "min must not exceed max");
  DecodeCostSettings(f, cfg, s);
  if (s.terms.empty() && !s.warmup)
    f.reader().Error(f.path(), "needs at least one term or a warmup");
}

// bands: name -> {min, max}, over the defaults.
void DecodeBands(ObjectFields& f, PolicyConfig& cfg) {
  const json::object* bands = f.Object("bands");
  if (bands == nullptr) return;
  const FieldPath bsp = f.path().Key("bands");
  for (const auto& kv : *bands) {
    const FieldPath bp = bsp.Key(kv.key());
    const json::object* b = kv.value().if_object();
    if (b == nullptr) {
      f.reader().Error(bp, "want {min, max}");
      continue;
    }
    ObjectFields bf(f.reader(), *b, bp);
    const auto lo = bf.Int("min", INT32_MIN, INT32_MAX);
    const auto hi = bf.Int("max", INT32_MIN, INT32_MAX);
    if (b->if_contains("min") == nullptr || b->if_contains("max") == nullptr) {
      f.reader().Error(bp, "needs min and max");
    }
    if (lo && hi) {
      if (*lo > *hi) {
        f.reader().Error(bp, "min must not exceed max");
      } else {
        cfg.bands[std::string(kv.key())] = Band{*lo, *hi};
      }
    }
  }
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
  api::JsonReader r(api::PlainDialect());
  PolicyConfig cfg;
  cfg.bands = DefaultBands();
  const FieldPath root_path;
  {
    ObjectFields f(r, *root, root_path);
    const std::string_view api_version = f.String("apiVersion").value_or("");
    if (api_version != "gpusched.io/v1alpha1") {
      f.Error("apiVersion", "want gpusched.io/v1alpha1, got " + common::Quote(api_version));
    }
    const std::string_view kind = f.String("kind").value_or("");
    if (kind != "DeletionCostPolicy") {
      f.Error("kind", "want DeletionCostPolicy, got " + common::Quote(kind));
    }
    ReadObject(f, "controller", [&](ObjectFields& cf) { DecodeController(cf, cfg.controller); });
    DecodeBands(f, cfg);
    const json::array* policies = f.Array("policies");
    if (policies == nullptr || policies->empty()) {
      f.Error("policies", "at least one policy is required");
    } else {
      std::set<std::string> names;
      ReadObjects(f, "policies", [&](ObjectFields& pf) {
        PolicySpec s;
        DecodePolicy(pf, cfg, s);
        if (!s.name.empty() && !names.insert(s.name).second) {
          pf.Error("name", "duplicate policy name " + common::Quote(s.name));
        }
        cfg.policies.push_back(std::move(s));
      });
    }
  }
  GPUSCHED_RETURN_IF_ERROR(r.errors().ToStatus(src));
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
