// SPDX-License-Identifier: Apache-2.0
// ParseSchedulerConfig: YAML -> boost::json (api::ParseYamlDocuments) -> SchedulerConfig.
//
// Decoding is strict, like kube-scheduler's: unknown fields are errors, and so are values of the
// wrong type. Every error found is collected (each naming its path) before defaults are applied
// and Validate() runs; the caller gets all of them at once. Fields are read through
// api::JsonReader (src/api/fields.h) in this file's wording (kConfigDialect). Nothing here
// throws: Boost.JSON is used only through its non-throwing accessors (is_*, if_*, get_* after a
// kind check).
#include "src/api/decode.h"

#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

#include "src/api/fields.h"
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

// ---------------------------------------------------------------------------------------------
// The config's wording of api::JsonReader: "expected a map, got a list", "must be a 32-bit
// integer, got 99999999999", paths with odd keys quoted (PathStyle::kQuoted).

std::string_view Expected(api::JsonType want) {
  switch (want) {
    case api::JsonType::kObject: return "expected a map, got ";
    case api::JsonType::kArray: return "expected a list, got ";
    case api::JsonType::kString: return "expected a string, got ";
    case api::JsonType::kBool: return "expected true or false, got ";
    case api::JsonType::kInteger: return "expected an integer, got ";
    case api::JsonType::kNumber: return "expected a number, got ";
    case api::JsonType::kQuantity: return "expected a quantity, got ";
  }
  return "unexpected ";
}

std::string ConfigTypeError(api::JsonType want, const json::value& got) {
  if (want == api::JsonType::kNumber && got.is_double()) {
    return "must be a finite number, got " + Describe(got);
  }
  return std::string(Expected(want)) + Describe(got);
}

std::string ConfigRangeError(const json::value& got, std::optional<int64_t>, int64_t lo,
                             int64_t hi) {
  const bool int32 =
      lo == (std::numeric_limits<int32_t>::min)() && hi == (std::numeric_limits<int32_t>::max)();
  return std::string("must be a ") + (int32 ? "32-bit" : "64-bit") + " integer, got " +
         Describe(got);
}

constexpr api::Dialect kConfigDialect{api::PathStyle::kQuoted, &ConfigTypeError, &ConfigRangeError,
                                      nullptr};

using api::FieldPath;

class Decoder {
 public:
  Decoder(Version version, std::vector<std::string>* warnings)
      : version_(version), warnings_(warnings) {}

  std::vector<std::string> TakeErrors() { return r_.errors().Take(); }

  void DecodeRoot(const json::object& root, SchedulerConfig& c) {
    const FieldPath rp;
    CheckFields(root, rp, RootFields());
    if (auto v = Int32(root, rp, "parallelism")) c.parallelism = *v;
    if (auto v = Int32(root, rp, "percentageOfNodesToScore")) c.percentage_of_nodes_to_score = *v;
    if (auto v = r_.Int(root, "podInitialBackoffSeconds", rp)) c.pod_initial_backoff_seconds = *v;
    if (auto v = r_.Int(root, "podMaxBackoffSeconds", rp)) c.pod_max_backoff_seconds = *v;
    if (auto v = r_.Bool(root, "delayCacheUntilActive", rp)) c.delay_cache_until_active = *v;
    WarnIgnoredRootFields(root);
    if (const json::object* o = r_.Object(root, "clientConnection", rp)) {
      DecodeClientConnection(*o, rp.Key("clientConnection"), c.client_connection);
    }
    if (const json::object* o = r_.Object(root, "leaderElection", rp)) {
      DecodeLeaderElection(*o, rp.Key("leaderElection"), c.leader_election);
    }
    DecodeProfiles(root, c.profiles);
    if (const json::array* a = r_.Array(root, "extenders", rp)) {
      const FieldPath base = rp.Key("extenders");
      for (size_t i = 0; i < a->size(); ++i) {
        Extender& e = c.extenders.emplace_back();
        if (const json::object* o = r_.AsObject((*a)[i], base.At(i))) {
          DecodeExtender(*o, base.At(i), e);
        }
      }
    }
    if (c.profiles.empty()) c.profiles = DefaultSchedulerConfig().profiles;
  }

 private:
  bool LegacyAddresses() const {
    return version_ == Version::kV1beta1 || version_ == Version::kV1beta2;
  }

  std::vector<std::string_view> RootFields() const {
    std::vector<std::string_view> known = {"apiVersion",
                                           "kind",
                                           "parallelism",
                                           "percentageOfNodesToScore",
                                           "podInitialBackoffSeconds",
                                           "podMaxBackoffSeconds",
                                           "clientConnection",
                                           "leaderElection",
                                           "profiles",
                                           "extenders",
                                           "delayCacheUntilActive",
                                           "enableProfiling",
                                           "enableContentionProfiling"};
    if (LegacyAddresses()) {
      known.push_back("healthzBindAddress");
      known.push_back("metricsBindAddress");
    }
    return known;
  }

  void WarnIgnoredRootFields(const json::object& root) {
    const FieldPath rp;
    for (std::string_view ignored : {"enableProfiling", "enableContentionProfiling"}) {
      if (r_.Bool(root, ignored, rp)) {
        Warn(rp.Key(ignored), "ignored (gpusched serves no profiling endpoints)");
      }
    }
    if (!LegacyAddresses()) return;
    for (std::string_view ignored : {"healthzBindAddress", "metricsBindAddress"}) {
      if (r_.String(root, ignored, rp)) {
        Warn(rp.Key(ignored), "ignored (removed in kubescheduler.config.k8s.io/v1)");
      }
    }
  }

  void DecodeProfiles(const json::object& root, std::vector<Profile>& profiles) {
    const FieldPath rp;
    const json::array* a = r_.Array(root, "profiles", rp);
    if (a == nullptr) return;
    const FieldPath base = rp.Key("profiles");
    for (size_t i = 0; i < a->size(); ++i) {
      Profile& p = profiles.emplace_back();
      const FieldPath pp = base.At(i);
      p.path = r_.Spell(pp);
      bool name_set = true;
      if (const json::object* o = r_.AsObject((*a)[i], pp)) name_set = DecodeProfile(*o, pp, p);
      // The name defaults only when there is exactly one profile.
      if (!name_set && a->size() == 1) p.scheduler_name = std::string(kDefaultSchedulerName);
    }
  }

  void DecodeClientConnection(const json::object& o, const FieldPath& path, ClientConnection& c) {
    CheckFields(o, path, {"kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"});
    if (auto v = r_.String(o, "kubeconfig", path)) c.kubeconfig = *v;
    if (auto v = r_.String(o, "acceptContentTypes", path)) c.accept_content_types = *v;
    NonEmptyString(o, path, "contentType", c.content_type);
    if (auto qps = r_.Number(o, "qps", path); qps && *qps != 0) c.qps = *qps;
    if (auto burst = Int32(o, path, "burst"); burst && *burst != 0) c.burst = *burst;
  }

  void DecodeLeaderElection(const json::object& o, const FieldPath& path, LeaderElection& l) {
    CheckFields(o, path,
                {"leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock",
                 "resourceName", "resourceNamespace"});
    if (auto v = r_.Bool(o, "leaderElect", path)) l.leader_elect = *v;
    DurationMs(o, path, "leaseDuration", l.lease_duration_ms);
    DurationMs(o, path, "renewDeadline", l.renew_deadline_ms);
    DurationMs(o, path, "retryPeriod", l.retry_period_ms);
    NonEmptyString(o, path, "resourceLock", l.resource_lock);
    NonEmptyString(o, path, "resourceName", l.resource_name);
    NonEmptyString(o, path, "resourceNamespace", l.resource_namespace);
  }

  // Returns whether schedulerName was given.
  bool DecodeProfile(const json::object& o, const FieldPath& path, Profile& p) {
    CheckFields(o, path, {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"});
    p.scheduler_name.clear();
    const std::optional<std::string_view> name = r_.String(o, "schedulerName", path);
    if (name) p.scheduler_name = *name;
    if (auto pct = Int32(o, path, "percentageOfNodesToScore"))
      p.percentage_of_nodes_to_score = *pct;
    if (const json::object* plugins = r_.Object(o, "plugins", path)) {
      DecodePlugins(*plugins, path.Key("plugins"), p.plugins);
    }
    if (const json::array* a = r_.Array(o, "pluginConfig", path)) {
      const FieldPath base = path.Key("pluginConfig");
      for (size_t i = 0; i < a->size(); ++i) {
        PluginConfig& pc = p.plugin_config.emplace_back();
        pc.path = r_.Spell(base.At(i));
        if (const json::object* e = r_.AsObject((*a)[i], base.At(i))) {
          DecodePluginConfig(*e, base.At(i), pc);
        }
      }
    }
    return name.has_value();
  }

  void DecodePlugins(const json::object& o, const FieldPath& path, Plugins& plugins) {
    const bool has_multi_point = version_ >= Version::kV1beta3;
    const bool has_unreserve = version_ == Version::kV1beta1;
    std::vector<std::string_view> known;
    for (int i = 0; i < static_cast<int>(Point::kCount); ++i) {
      known.push_back(PointName(static_cast<Point>(i)));
    }
    if (has_unreserve) known.push_back("unreserve");
    CheckFields(o, path, known);
    if (!has_multi_point && o.contains("multiPoint")) {
      r_.Error(path.Key("multiPoint"),
               "unknown field in this apiVersion (multiPoint needs "
               "kubescheduler.config.k8s.io/v1beta3 or later)");
    }
    for (int i = 0; i < static_cast<int>(Point::kCount); ++i) {
      const auto point = static_cast<Point>(i);
      if (point == Point::kMultiPoint && !has_multi_point) continue;
      if (const json::object* set = r_.Object(o, PointName(point), path)) {
        DecodePluginSet(*set, path.Key(PointName(point)), plugins.at(point));
      }
    }
    if (!has_unreserve) return;
    if (const json::object* set = r_.Object(o, "unreserve", path)) {
      PluginSet unused;
      DecodePluginSet(*set, path.Key("unreserve"), unused);
      Warn(path.Key("unreserve"),
           "ignored (removed after v1beta1: reserve plugins are unreserved automatically)");
    }
  }

  void DecodePluginSet(const json::object& o, const FieldPath& path, PluginSet& set) {
    CheckFields(o, path, {"enabled", "disabled"});
    for (std::string_view list : {"enabled", "disabled"}) {
      const json::array* a = r_.Array(o, list, path);
      if (a == nullptr) continue;
      const FieldPath base = path.Key(list);
      std::vector<PluginRef>& out = list == "enabled" ? set.enabled : set.disabled;
      for (size_t i = 0; i < a->size(); ++i) {
        out.push_back(DecodePluginRef((*a)[i], base.At(i), list == "enabled"));
      }
    }
  }

  PluginRef DecodePluginRef(const json::value& v, const FieldPath& path, bool enabled) {
    PluginRef ref;
    ref.path = r_.Spell(path);
    const json::object* e = r_.AsObject(v, path);
    if (e == nullptr) return ref;
    CheckFields(*e, path, {"name", "weight"});
    if (auto name = r_.String(*e, "name", path)) ref.name = *name;
    if (auto weight = Int32(*e, path, "weight")) {
      ref.weight = *weight;
      // Validate() cannot tell an explicit 0 from "unset", so it is rejected here.
      if (ref.weight == 0 && enabled) r_.Error(path.Key("weight"), "must be in 1..100, got 0");
    }
    if (!enabled) ref.weight = 0;  // weight means nothing when disabling
    return ref;
  }

  void DecodePluginConfig(const json::object& o, const FieldPath& path, PluginConfig& pc) {
    CheckFields(o, path, {"name", "args"});
    if (auto name = r_.String(o, "name", path)) pc.name = *name;
    const json::value* args = api::JsonReader::Member(o, "args");
    if (args == nullptr) return;
    const FieldPath ap = path.Key("args");
    if (!args->is_object()) {
      r_.Error(ap, "must be a map, got " + Describe(*args));
      return;
    }
    json::object obj = args->get_object();
    if (const json::value* kind = obj.if_contains("kind")) {
      const std::string want = pc.name + "Args";
      if (r_.AsString(*kind, ap.Key("kind")) && View(kind->get_string()) != want) {
        r_.Error(ap.Key("kind"), "args kind " + Describe(*kind) +
                                     " has to match plugin args kind " + common::Quote(want));
      }
      obj.erase("kind");
    }
    if (const json::value* api_version = obj.if_contains("apiVersion")) {
      (void)r_.AsString(*api_version, ap.Key("apiVersion"));
      obj.erase("apiVersion");
    }
    pc.args = std::move(obj);
  }

  void DecodeExtender(const json::object& o, const FieldPath& path, Extender& e) {
    CheckFields(o, path,
                {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb",
                 "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources",
                 "ignorable"});
    for (auto [key, out] :
         {std::pair{"urlPrefix", &e.url_prefix}, std::pair{"filterVerb", &e.filter_verb},
          std::pair{"preemptVerb", &e.preempt_verb},
          std::pair{"prioritizeVerb", &e.prioritize_verb}, std::pair{"bindVerb", &e.bind_verb}}) {
      if (auto v = r_.String(o, key, path)) *out = *v;
    }
    if (auto v = r_.Int(o, "weight", path)) e.weight = *v;
    if (r_.Bool(o, "enableHTTPS", path).value_or(false)) {
      r_.Error(path.Key("enableHTTPS"), "not supported: gpusched calls extenders over plain HTTP");
    }
    if (api::JsonReader::Member(o, "tlsConfig") != nullptr) {
      r_.Error(path.Key("tlsConfig"), "not supported: gpusched calls extenders over plain HTTP");
    }
    DurationMs(o, path, "httpTimeout", e.http_timeout_ms);
    if (auto v = r_.Bool(o, "nodeCacheCapable", path)) e.node_cache_capable = *v;
    if (auto v = r_.Bool(o, "ignorable", path)) e.ignorable = *v;
    if (const json::array* a = r_.Array(o, "managedResources", path)) {
      const FieldPath base = path.Key("managedResources");
      for (size_t i = 0; i < a->size(); ++i) DecodeManagedResource((*a)[i], base.At(i), e);
    }
  }

  void DecodeManagedResource(const json::value& v, const FieldPath& path, Extender& e) {
    std::string name;
    bool ignored = false;
    if (const json::object* r = r_.AsObject(v, path)) {
      CheckFields(*r, path, {"name", "ignoredByScheduler"});
      if (auto n = r_.String(*r, "name", path)) name = *n;
      ignored = r_.Bool(*r, "ignoredByScheduler", path).value_or(false);
    }
    if (ignored) e.ignored_by_scheduler.push_back(name);
    e.managed_resources.push_back(std::move(name));
  }

  // --- field helpers beyond api::JsonReader's.

  void Warn(const FieldPath& path, std::string_view message) {
    if (warnings_ != nullptr) warnings_->push_back(r_.Spell(path) + ": " + std::string(message));
  }

  void CheckFields(const json::object& o, const FieldPath& path,
                   const std::vector<std::string_view>& known) {
    r_.CheckKnownFields(o, path, known);
  }

  std::optional<int32_t> Int32(const json::object& o, const FieldPath& path, std::string_view key) {
    std::optional<int64_t> v = r_.Int(o, key, path, (std::numeric_limits<int32_t>::min)(),
                                      (std::numeric_limits<int32_t>::max)());
    if (!v) return std::nullopt;
    return static_cast<int32_t>(*v);
  }

  // Upstream treats "" as "use the default" for these fields.
  void NonEmptyString(const json::object& o, const FieldPath& path, std::string_view key,
                      std::string& out) {
    if (auto s = r_.String(o, key, path); s && !s->empty()) out = *s;
  }

  // A Go duration string, stored in milliseconds; "0s" keeps the default (as upstream).
  void DurationMs(const json::object& o, const FieldPath& path, std::string_view key,
                  int64_t& out_ms) {
    const json::value* v = api::JsonReader::Member(o, key);
    if (v == nullptr) return;
    if (!v->is_string()) {
      r_.Error(path.Key(key), "expected a duration string such as \"15s\", got " + Describe(*v));
      return;
    }
    const std::string_view text = View(v->get_string());
    std::optional<int64_t> ns = ParseGoDurationNanos(text);
    if (!ns) {
      r_.Error(path.Key(key), "invalid duration " + common::Quote(text) +
                                  " (want a Go duration such as \"15s\", \"1m30s\" or \"500ms\")");
      return;
    }
    if (*ns != 0) out_ms = *ns / 1'000'000;
  }

  Version version_;
  std::vector<std::string>* warnings_;
  api::JsonReader r_{kConfigDialect};
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
  errors = decoder.TakeErrors();
  if (common::Status s = Validate(config); !s.ok()) errors.emplace_back(s.message());
  if (!errors.empty()) return common::InvalidArgumentError(JoinErrors(source, errors));
  for (Profile& p : config.profiles) p.source = std::string(source);
  return config;
}

}  // namespace gpusched::config
