// SPDX-License-Identifier: Apache-2.0
// ParseSchedulerConfig: YAML -> boost::json (api::ParseYamlDocuments) -> SchedulerConfig.
//
// Decoding is strict, like kube-scheduler's: unknown fields are errors, and so are values of the
// wrong type. Every error found is collected (each naming its path) before defaults are applied
// and Validate() runs; the caller gets all of them at once. Nothing here throws: Boost.JSON is
// used only through its non-throwing accessors (is_*, if_*, get_* after a kind check).
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

#include "src/api/decode.h"
#include "src/common/strings.h"
#include "src/config/config.h"
#include "src/config/duration.h"

namespace gpusched::config {
namespace {

namespace json = boost::json;

constexpr std::string_view kKind = "KubeSchedulerConfiguration";

// Versions of the API group, oldest first; all but v1 are deprecated.
enum class Version { kV1beta1, kV1beta2, kV1beta3, kV1 };

std::string Describe(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return v.get_bool() ? "true" : "false";
    case json::kind::int64: return std::to_string(v.get_int64());
    case json::kind::uint64: return std::to_string(v.get_uint64());
    case json::kind::double_: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", v.get_double());
      return buf;
    }
    case json::kind::string: {
      const json::string& s = v.get_string();
      return common::Quote(std::string_view(s.data(), s.size()));
    }
    case json::kind::array: return "a list";
    case json::kind::object: return "a map";
  }
  return "?";
}

std::string_view View(const json::string& s) { return {s.data(), s.size()}; }

std::string Child(const std::string& path, std::string_view key) {
  bool plain = !key.empty();
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    plain = plain && ok;
  }
  std::string k = plain ? std::string(key) : common::Quote(key);
  return path.empty() ? k : path + "." + k;
}

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// Levenshtein distance, for "did you mean" hints on unknown fields (keys are short).
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

class Decoder {
 public:
  Decoder(Version version, std::vector<std::string>* warnings)
      : version_(version), warnings_(warnings) {}

  std::vector<std::string>& errors() { return errors_; }

  void Error(const std::string& path, std::string message) {
    errors_.push_back(path.empty() ? std::move(message) : path + ": " + message);
  }
  void Warn(const std::string& path, std::string_view message) {
    if (warnings_ != nullptr) warnings_->push_back(path + ": " + std::string(message));
  }

  void DecodeRoot(const json::object& root, SchedulerConfig& c) {
    std::vector<std::string_view> known = {
        "apiVersion", "kind", "parallelism", "percentageOfNodesToScore",
        "podInitialBackoffSeconds", "podMaxBackoffSeconds", "clientConnection", "leaderElection",
        "profiles", "extenders", "delayCacheUntilActive", "enableProfiling",
        "enableContentionProfiling"};
    const bool legacy_addresses = version_ == Version::kV1beta1 || version_ == Version::kV1beta2;
    if (legacy_addresses) {
      known.push_back("healthzBindAddress");
      known.push_back("metricsBindAddress");
    }
    CheckFields(root, "", known);
    Int32(root, "", "parallelism", c.parallelism);
    Int32(root, "", "percentageOfNodesToScore", c.percentage_of_nodes_to_score);
    Int64(root, "", "podInitialBackoffSeconds", c.pod_initial_backoff_seconds);
    Int64(root, "", "podMaxBackoffSeconds", c.pod_max_backoff_seconds);
    Bool(root, "", "delayCacheUntilActive", c.delay_cache_until_active);
    for (std::string_view ignored : {"enableProfiling", "enableContentionProfiling"}) {
      bool unused = false;
      if (Bool(root, "", ignored, unused)) {
        Warn(std::string(ignored), "ignored (gpusched serves no profiling endpoints)");
      }
    }
    if (legacy_addresses) {
      for (std::string_view ignored : {"healthzBindAddress", "metricsBindAddress"}) {
        std::string unused;
        if (String(root, "", ignored, unused)) {
          Warn(std::string(ignored), "ignored (removed in kubescheduler.config.k8s.io/v1)");
        }
      }
    }
    if (const json::object* o = Object(root, "", "clientConnection")) {
      DecodeClientConnection(*o, "clientConnection", c.client_connection);
    }
    if (const json::object* o = Object(root, "", "leaderElection")) {
      DecodeLeaderElection(*o, "leaderElection", c.leader_election);
    }
    if (const json::array* a = Array(root, "", "profiles")) {
      for (size_t i = 0; i < a->size(); ++i) {
        Profile p;
        p.path = Index("profiles", i);
        bool name_set = true;
        if (const json::object* o = AsObject((*a)[i], p.path)) name_set = DecodeProfile(*o, p);
        // The name defaults only when there is exactly one profile.
        if (!name_set && a->size() == 1) p.scheduler_name = std::string(kDefaultSchedulerName);
        c.profiles.push_back(std::move(p));
      }
    }
    if (const json::array* a = Array(root, "", "extenders")) {
      for (size_t i = 0; i < a->size(); ++i) {
        Extender e;
        const std::string path = Index("extenders", i);
        if (const json::object* o = AsObject((*a)[i], path)) DecodeExtender(*o, path, e);
        c.extenders.push_back(std::move(e));
      }
    }
    if (c.profiles.empty()) c.profiles = DefaultSchedulerConfig().profiles;
  }

 private:
  void DecodeClientConnection(const json::object& o, const std::string& path, ClientConnection& c) {
    CheckFields(o, path, {"kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"});
    String(o, path, "kubeconfig", c.kubeconfig);
    String(o, path, "acceptContentTypes", c.accept_content_types);
    NonEmptyString(o, path, "contentType", c.content_type);
    double qps = 0;
    if (Double(o, path, "qps", qps) && qps != 0) c.qps = qps;
    int32_t burst = 0;
    if (Int32(o, path, "burst", burst) && burst != 0) c.burst = burst;
  }

  void DecodeLeaderElection(const json::object& o, const std::string& path, LeaderElection& l) {
    CheckFields(o, path, {"leaderElect", "leaseDuration", "renewDeadline", "retryPeriod",
                          "resourceLock", "resourceName", "resourceNamespace"});
    Bool(o, path, "leaderElect", l.leader_elect);
    DurationMs(o, path, "leaseDuration", l.lease_duration_ms);
    DurationMs(o, path, "renewDeadline", l.renew_deadline_ms);
    DurationMs(o, path, "retryPeriod", l.retry_period_ms);
    NonEmptyString(o, path, "resourceLock", l.resource_lock);
    NonEmptyString(o, path, "resourceName", l.resource_name);
    NonEmptyString(o, path, "resourceNamespace", l.resource_namespace);
  }

  // Returns whether schedulerName was given.
  bool DecodeProfile(const json::object& o, Profile& p) {
    CheckFields(o, p.path,
                {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"});
    p.scheduler_name.clear();
    const bool name_set = String(o, p.path, "schedulerName", p.scheduler_name);
    int32_t pct = 0;
    if (Int32(o, p.path, "percentageOfNodesToScore", pct)) p.percentage_of_nodes_to_score = pct;
    if (const json::object* plugins = Object(o, p.path, "plugins")) {
      DecodePlugins(*plugins, Child(p.path, "plugins"), p.plugins);
    }
    if (const json::array* a = Array(o, p.path, "pluginConfig")) {
      const std::string base = Child(p.path, "pluginConfig");
      for (size_t i = 0; i < a->size(); ++i) {
        PluginConfig pc;
        pc.path = Index(base, i);
        if (const json::object* e = AsObject((*a)[i], pc.path)) DecodePluginConfig(*e, pc);
        p.plugin_config.push_back(std::move(pc));
      }
    }
    return name_set;
  }

  void DecodePlugins(const json::object& o, const std::string& path, Plugins& plugins) {
    const bool has_multi_point = version_ >= Version::kV1beta3;
    const bool has_unreserve = version_ == Version::kV1beta1;
    std::vector<std::string_view> known;
    for (int i = 0; i < static_cast<int>(Point::kCount); ++i) {
      known.push_back(PointName(static_cast<Point>(i)));
    }
    if (has_unreserve) known.push_back("unreserve");
    CheckFields(o, path, known);
    if (!has_multi_point && o.contains("multiPoint")) {
      Error(Child(path, "multiPoint"),
            "unknown field in this apiVersion (multiPoint needs "
            "kubescheduler.config.k8s.io/v1beta3 or later)");
    }
    for (int i = 0; i < static_cast<int>(Point::kCount); ++i) {
      const auto point = static_cast<Point>(i);
      if (point == Point::kMultiPoint && !has_multi_point) continue;
      if (const json::object* set = Object(o, path, PointName(point))) {
        DecodePluginSet(*set, Child(path, PointName(point)), plugins.at(point));
      }
    }
    if (has_unreserve) {
      PluginSet unused;
      if (const json::object* set = Object(o, path, "unreserve")) {
        DecodePluginSet(*set, Child(path, "unreserve"), unused);
        Warn(Child(path, "unreserve"),
             "ignored (removed after v1beta1: reserve plugins are unreserved automatically)");
      }
    }
  }

  void DecodePluginSet(const json::object& o, const std::string& path, PluginSet& set) {
    CheckFields(o, path, {"enabled", "disabled"});
    for (std::string_view list : {"enabled", "disabled"}) {
      const json::array* a = Array(o, path, list);
      if (a == nullptr) continue;
      const std::string base = Child(path, list);
      std::vector<PluginRef>& out = list == "enabled" ? set.enabled : set.disabled;
      for (size_t i = 0; i < a->size(); ++i) {
        PluginRef ref;
        ref.path = Index(base, i);
        if (const json::object* e = AsObject((*a)[i], ref.path)) {
          CheckFields(*e, ref.path, {"name", "weight"});
          String(*e, ref.path, "name", ref.name);
          // Validate() cannot tell an explicit 0 from "unset", so it is rejected here.
          if (Int32(*e, ref.path, "weight", ref.weight) && ref.weight == 0 && list == "enabled") {
            Error(Child(ref.path, "weight"), "must be in 1..100, got 0");
          }
          if (list == "disabled") ref.weight = 0;  // weight means nothing when disabling
        }
        out.push_back(std::move(ref));
      }
    }
  }

  void DecodePluginConfig(const json::object& o, PluginConfig& pc) {
    CheckFields(o, pc.path, {"name", "args"});
    String(o, pc.path, "name", pc.name);
    const json::value* args = o.if_contains("args");
    if (args == nullptr || args->is_null()) return;
    const std::string path = Child(pc.path, "args");
    if (!args->is_object()) {
      Error(path, "must be a map, got " + Describe(*args));
      return;
    }
    json::object obj = args->get_object();
    if (const json::value* kind = obj.if_contains("kind")) {
      const std::string want = pc.name + "Args";
      if (!kind->is_string()) {
        Error(Child(path, "kind"), "expected a string, got " + Describe(*kind));
      } else if (View(kind->get_string()) != want) {
        Error(Child(path, "kind"), "args kind " + Describe(*kind) +
                                       " has to match plugin args kind " + common::Quote(want));
      }
      obj.erase("kind");
    }
    if (const json::value* api_version = obj.if_contains("apiVersion")) {
      if (!api_version->is_string()) {
        Error(Child(path, "apiVersion"), "expected a string, got " + Describe(*api_version));
      }
      obj.erase("apiVersion");
    }
    pc.args = std::move(obj);
  }

  void DecodeExtender(const json::object& o, const std::string& path, Extender& e) {
    CheckFields(o, path, {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight",
                          "bindVerb", "enableHTTPS", "tlsConfig", "httpTimeout",
                          "nodeCacheCapable", "managedResources", "ignorable"});
    String(o, path, "urlPrefix", e.url_prefix);
    String(o, path, "filterVerb", e.filter_verb);
    String(o, path, "preemptVerb", e.preempt_verb);
    String(o, path, "prioritizeVerb", e.prioritize_verb);
    String(o, path, "bindVerb", e.bind_verb);
    Int64(o, path, "weight", e.weight);
    bool https = false;
    if (Bool(o, path, "enableHTTPS", https) && https) {
      Error(Child(path, "enableHTTPS"), "not supported: gpusched calls extenders over plain HTTP");
    }
    if (const json::value* tls = o.if_contains("tlsConfig"); tls != nullptr && !tls->is_null()) {
      Error(Child(path, "tlsConfig"), "not supported: gpusched calls extenders over plain HTTP");
    }
    DurationMs(o, path, "httpTimeout", e.http_timeout_ms);
    Bool(o, path, "nodeCacheCapable", e.node_cache_capable);
    Bool(o, path, "ignorable", e.ignorable);
    if (const json::array* a = Array(o, path, "managedResources")) {
      const std::string base = Child(path, "managedResources");
      for (size_t i = 0; i < a->size(); ++i) {
        const std::string item = Index(base, i);
        std::string name;
        bool ignored = false;
        if (const json::object* r = AsObject((*a)[i], item)) {
          CheckFields(*r, item, {"name", "ignoredByScheduler"});
          String(*r, item, "name", name);
          Bool(*r, item, "ignoredByScheduler", ignored);
        }
        if (ignored) e.ignored_by_scheduler.push_back(name);
        e.managed_resources.push_back(std::move(name));
      }
    }
  }

  // --- field accessors. Each returns whether the field was present, non-null and well-typed;
  // on a type error it records the error and leaves `out` unchanged.

  void CheckFields(const json::object& o, const std::string& path,
                   const std::vector<std::string_view>& known) {
    for (const auto& kv : o) {
      const std::string_view key(kv.key().data(), kv.key().size());
      bool found = false;
      for (std::string_view k : known) found = found || k == key;
      if (found) continue;
      std::string message = "unknown field";
      std::string_view best;
      size_t best_distance = 3;  // suggest only close matches
      for (std::string_view k : known) {
        const size_t d = EditDistance(common::ToLower(key), common::ToLower(k));
        if (d < best_distance) {
          best_distance = d;
          best = k;
        }
      }
      if (!best.empty()) message += " (did you mean " + common::Quote(best) + "?)";
      Error(Child(path, key), message);
    }
  }

  const json::value* Field(const json::object& o, std::string_view key) {
    const json::value* v = o.if_contains(key);
    return (v == nullptr || v->is_null()) ? nullptr : v;
  }

  const json::object* AsObject(const json::value& v, const std::string& path) {
    if (v.is_object()) return &v.get_object();
    Error(path, "expected a map, got " + Describe(v));
    return nullptr;
  }

  const json::object* Object(const json::object& o, const std::string& path, std::string_view key) {
    const json::value* v = Field(o, key);
    return v == nullptr ? nullptr : AsObject(*v, Child(path, key));
  }

  const json::array* Array(const json::object& o, const std::string& path, std::string_view key) {
    const json::value* v = Field(o, key);
    if (v == nullptr) return nullptr;
    if (v->is_array()) return &v->get_array();
    Error(Child(path, key), "expected a list, got " + Describe(*v));
    return nullptr;
  }

  bool String(const json::object& o, const std::string& path, std::string_view key,
              std::string& out) {
    const json::value* v = Field(o, key);
    if (v == nullptr) return false;
    if (!v->is_string()) {
      Error(Child(path, key), "expected a string, got " + Describe(*v));
      return false;
    }
    out = std::string(View(v->get_string()));
    return true;
  }

  // Upstream treats "" as "use the default" for these fields.
  void NonEmptyString(const json::object& o, const std::string& path, std::string_view key,
                      std::string& out) {
    std::string s;
    if (String(o, path, key, s) && !s.empty()) out = std::move(s);
  }

  bool Bool(const json::object& o, const std::string& path, std::string_view key, bool& out) {
    const json::value* v = Field(o, key);
    if (v == nullptr) return false;
    if (!v->is_bool()) {
      Error(Child(path, key), "expected true or false, got " + Describe(*v));
      return false;
    }
    out = v->get_bool();
    return true;
  }

  std::optional<int64_t> Integer(const json::value& v, const std::string& path, int64_t lo,
                                 int64_t hi, std::string_view type) {
    int64_t x = 0;
    if (v.is_int64()) {
      x = v.get_int64();
    } else if (v.is_uint64() &&
               v.get_uint64() <= static_cast<uint64_t>((std::numeric_limits<int64_t>::max)())) {
      x = static_cast<int64_t>(v.get_uint64());
    } else if (v.is_uint64()) {
      Error(path, "must be a " + std::string(type) + " integer, got " + Describe(v));
      return std::nullopt;
    } else if (v.is_double() && std::isfinite(v.get_double()) &&
               std::trunc(v.get_double()) == v.get_double()) {
      // YAML 1e3 or 2.0: integral, so accepted as upstream does (sigs.k8s.io/yaml goes through
      // float64 and re-encodes it as 1000 or 2).
      const double d = v.get_double();
      if (d < -9.2e18 || d > 9.2e18) {
        Error(path, "must be a " + std::string(type) + " integer, got " + Describe(v));
        return std::nullopt;
      }
      x = static_cast<int64_t>(d);
    } else {
      Error(path, "expected an integer, got " + Describe(v));
      return std::nullopt;
    }
    if (x < lo || x > hi) {
      Error(path, "must be a " + std::string(type) + " integer, got " + Describe(v));
      return std::nullopt;
    }
    return x;
  }

  bool Int32(const json::object& o, const std::string& path, std::string_view key, int32_t& out) {
    const json::value* v = Field(o, key);
    if (v == nullptr) return false;
    std::optional<int64_t> x = Integer(*v, Child(path, key), (std::numeric_limits<int32_t>::min)(),
                                       (std::numeric_limits<int32_t>::max)(), "32-bit");
    if (!x) return false;
    out = static_cast<int32_t>(*x);
    return true;
  }

  bool Int64(const json::object& o, const std::string& path, std::string_view key, int64_t& out) {
    const json::value* v = Field(o, key);
    if (v == nullptr) return false;
    std::optional<int64_t> x = Integer(*v, Child(path, key), (std::numeric_limits<int64_t>::min)(),
                                       (std::numeric_limits<int64_t>::max)(), "64-bit");
    if (!x) return false;
    out = *x;
    return true;
  }

  bool Double(const json::object& o, const std::string& path, std::string_view key, double& out) {
    const json::value* v = Field(o, key);
    if (v == nullptr) return false;
    double x = 0;
    if (v->is_double()) {
      x = v->get_double();
    } else if (v->is_int64()) {
      x = static_cast<double>(v->get_int64());
    } else if (v->is_uint64()) {
      x = static_cast<double>(v->get_uint64());
    } else {
      Error(Child(path, key), "expected a number, got " + Describe(*v));
      return false;
    }
    if (!std::isfinite(x)) {
      Error(Child(path, key), "must be a finite number, got " + Describe(*v));
      return false;
    }
    out = x;
    return true;
  }

  // A Go duration string, stored in milliseconds; "0s" keeps the default (as upstream).
  void DurationMs(const json::object& o, const std::string& path, std::string_view key,
                  int64_t& out_ms) {
    const json::value* v = Field(o, key);
    if (v == nullptr) return;
    const std::string p = Child(path, key);
    if (!v->is_string()) {
      Error(p, "expected a duration string such as \"15s\", got " + Describe(*v));
      return;
    }
    const std::string_view text = View(v->get_string());
    std::optional<int64_t> ns = ParseGoDurationNanos(text);
    if (!ns) {
      Error(p, "invalid duration " + common::Quote(text) +
                   " (want a Go duration such as \"15s\", \"1m30s\" or \"500ms\")");
      return;
    }
    if (*ns != 0) out_ms = *ns / 1'000'000;
  }

  Version version_;
  std::vector<std::string>* warnings_;
  std::vector<std::string> errors_;
};

std::string JoinErrors(std::string_view source, const std::vector<std::string>& errors) {
  std::string out(source);
  out += ": ";
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i > 0) out += "; ";
    out += errors[i];
  }
  return out;
}

// Reads apiVersion and kind; returns the version or records an error.
std::optional<Version> CheckTypeMeta(const json::object& root, std::vector<std::string>& errors) {
  std::optional<Version> version;
  const json::value* api_version = root.if_contains("apiVersion");
  if (api_version == nullptr || api_version->is_null()) {
    errors.push_back("apiVersion: required (want kubescheduler.config.k8s.io/v1)");
  } else if (!api_version->is_string()) {
    errors.push_back("apiVersion: expected a string, got " + Describe(*api_version));
  } else {
    const std::string_view v = View(api_version->get_string());
    if (v == "kubescheduler.config.k8s.io/v1") {
      version = Version::kV1;
    } else if (v == "kubescheduler.config.k8s.io/v1beta1") {
      version = Version::kV1beta1;
    } else if (v == "kubescheduler.config.k8s.io/v1beta2") {
      version = Version::kV1beta2;
    } else if (v == "kubescheduler.config.k8s.io/v1beta3") {
      version = Version::kV1beta3;
    } else {
      errors.push_back("apiVersion: unsupported " + common::Quote(v) +
                       " (want kubescheduler.config.k8s.io/v1)");
    }
  }
  const json::value* kind = root.if_contains("kind");
  if (kind == nullptr || kind->is_null()) {
    errors.push_back("kind: required (want KubeSchedulerConfiguration)");
    return std::nullopt;
  }
  if (!kind->is_string() || View(kind->get_string()) != kKind) {
    errors.push_back("kind: expected KubeSchedulerConfiguration, got " + Describe(*kind));
    return std::nullopt;
  }
  return version;
}

}  // namespace

common::StatusOr<SchedulerConfig> ParseSchedulerConfig(std::string_view yaml,
                                                       std::string_view source,
                                                       std::vector<std::string>* warnings) {
  common::StatusOr<std::vector<json::value>> docs = api::ParseYamlDocuments(yaml, source);
  if (!docs.ok()) return docs.status();
  if (docs->size() != 1) {
    return common::InvalidArgumentError(
        std::string(source) + ": expected exactly one KubeSchedulerConfiguration document, found " +
        std::to_string(docs->size()));
  }
  const json::value& doc = (*docs)[0];
  if (!doc.is_object()) {
    return common::InvalidArgumentError(
        std::string(source) + ": expected a KubeSchedulerConfiguration map, got " + Describe(doc));
  }
  const json::object& root = doc.get_object();
  std::vector<std::string> errors;
  std::optional<Version> version = CheckTypeMeta(root, errors);
  if (!version) return common::InvalidArgumentError(JoinErrors(source, errors));
  SchedulerConfig config;
  config.api_version = std::string(View(root.if_contains("apiVersion")->get_string()));
  if (*version != Version::kV1 && warnings != nullptr) {
    warnings->push_back(config.api_version + " is deprecated; use kubescheduler.config.k8s.io/v1");
  }
  Decoder decoder(*version, warnings);
  decoder.DecodeRoot(root, config);
  errors = std::move(decoder.errors());
  if (common::Status s = Validate(config); !s.ok()) errors.emplace_back(s.message());
  if (!errors.empty()) return common::InvalidArgumentError(JoinErrors(source, errors));
  return config;
}

}  // namespace gpusched::config
