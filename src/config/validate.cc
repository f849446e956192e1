// SPDX-License-Identifier: Apache-2.0
// Validate(): kube-scheduler's validation (pkg/scheduler/apis/config/validation) on the typed
// config, plus the component-base leader-election checks. Every error is collected; paths are
// rebuilt from indices so a config built in code gets the same messages as a parsed one.
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>

#include "src/api/names.h"
#include "src/common/strings.h"
#include "src/config/config.h"

namespace gpusched::config {
namespace {

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// The name part of a qualified name: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63.
bool IsQualifiedNamePart(std::string_view s) {
  if (s.empty() || s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// v1helper.IsExtendedResourceName: "<domain>/<name>", not in the kubernetes.io namespace, not
// "requests.*", and "requests.<domain>/<name>" still a qualified name.
bool IsExtendedResourceName(std::string_view s) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos || s.find('/', slash + 1) != std::string_view::npos) {
    return false;
  }
  if (s.find("kubernetes.io/") != std::string_view::npos) return false;
  if (common::StartsWith(s, "requests.")) return false;
  const std::string prefix = "requests." + std::string(s.substr(0, slash));
  return api::IsDns1123Subdomain(s.substr(0, slash)) && api::IsDns1123Subdomain(prefix) &&
         IsQualifiedNamePart(s.substr(slash + 1));
}

std::string Ms(int64_t ms) { return std::to_string(ms) + "ms"; }

std::string Number(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

class Validator {
 public:
  void Add(const std::string& path, std::string message) {
    errors_.push_back(path + ": " + std::move(message));
  }

  common::Status Result() const {
    if (errors_.empty()) return common::Status::Ok();
    std::string out;
    for (size_t i = 0; i < errors_.size(); ++i) {
      if (i > 0) out += "; ";
      out += errors_[i];
    }
    return common::InvalidArgumentError(std::move(out));
  }

  void Top(const SchedulerConfig& c) {
    if (c.parallelism <= 0) {
      Add("parallelism",
          "should be an integer value greater than zero, got " + std::to_string(c.parallelism));
    }
    Percentage("percentageOfNodesToScore", c.percentage_of_nodes_to_score);
    if (c.pod_initial_backoff_seconds <= 0) {
      Add("podInitialBackoffSeconds",
          "must be greater than 0, got " + std::to_string(c.pod_initial_backoff_seconds));
    }
    if (c.pod_max_backoff_seconds < c.pod_initial_backoff_seconds) {
      Add("podMaxBackoffSeconds", "must be greater than or equal to podInitialBackoffSeconds (" +
                                      std::to_string(c.pod_initial_backoff_seconds) + "), got " +
                                      std::to_string(c.pod_max_backoff_seconds));
    }
  }

  void Client(const ClientConnection& cc) {
    if (!std::isfinite(cc.qps) || cc.qps <= 0) {
      Add("clientConnection.qps", "must be greater than 0, got " + Number(cc.qps));
    }
    if (cc.burst <= 0) {
      Add("clientConnection.burst", "must be greater than 0, got " + std::to_string(cc.burst));
    }
    if (cc.content_type.empty()) Add("clientConnection.contentType", "required");
  }

  void Leader(const LeaderElection& le) {
    if (!le.leader_elect) return;  // nothing else matters without leader election (upstream)
    const struct {
      const char* path;
      int64_t ms;
    } durations[] = {{"leaderElection.leaseDuration", le.lease_duration_ms},
                     {"leaderElection.renewDeadline", le.renew_deadline_ms},
                     {"leaderElection.retryPeriod", le.retry_period_ms}};
    for (const auto& d : durations) {
      if (d.ms <= 0) Add(d.path, "must be greater than zero, got " + Ms(d.ms));
    }
    if (le.lease_duration_ms <= le.renew_deadline_ms) {
      Add("leaderElection.leaseDuration", "must be greater than renewDeadline (" +
                                              Ms(le.renew_deadline_ms) + "), got " +
                                              Ms(le.lease_duration_ms));
    }
    // client-go's leader elector refuses renewDeadline <= JitterFactor (1.2) x retryPeriod.
    const double jittered_retry = 1.2 * static_cast<double>(le.retry_period_ms);
    if (le.retry_period_ms > 0 && le.renew_deadline_ms > 0 &&
        static_cast<double>(le.renew_deadline_ms) <= jittered_retry) {
      Add("leaderElection.renewDeadline", "must be greater than 1.2 x retryPeriod (" +
                                              Ms(le.retry_period_ms) + "), got " +
                                              Ms(le.renew_deadline_ms));
    }
    if (le.resource_lock != "leases") {
      Add("leaderElection.resourceLock",
          "resourceLock value must be \"leases\", got " + common::Quote(le.resource_lock));
    }
    if (le.resource_name.empty()) Add("leaderElection.resourceName", "required");
    if (le.resource_namespace.empty()) Add("leaderElection.resourceNamespace", "required");
  }

  void Profiles(const std::vector<Profile>& profiles) {
    if (profiles.empty()) {
      Add("profiles", "at least one profile is required");
      return;
    }
    std::map<std::string, size_t> names;
    for (size_t i = 0; i < profiles.size(); ++i) {
      const Profile& p = profiles[i];
      const std::string path = "profiles[" + std::to_string(i) + "]";
      if (p.scheduler_name.empty()) {
        Add(path + ".schedulerName", "required");
      } else if (auto [it, inserted] = names.emplace(p.scheduler_name, i); !inserted) {
        Add(path + ".schedulerName", "duplicate scheduler name " + common::Quote(p.scheduler_name) +
                                         " (also profiles[" + std::to_string(it->second) + "])");
      }
      if (p.percentage_of_nodes_to_score) {
        Percentage(path + ".percentageOfNodesToScore", *p.percentage_of_nodes_to_score);
      }
      for (int k = 0; k < static_cast<int>(Point::kCount); ++k) {
        const auto point = static_cast<Point>(k);
        PluginSetErrors(path + ".plugins." + std::string(PointName(point)), p.plugins.at(point));
      }
      PluginConfigErrors(path, p.plugin_config);
    }
    QueueSort(profiles);
  }

  void Extenders(const std::vector<Extender>& extenders) {
    int binders = 0;
    std::map<std::string, std::string> managed;  // name -> first path
    for (size_t i = 0; i < extenders.size(); ++i) {
      const Extender& e = extenders[i];
      const std::string path = "extenders[" + std::to_string(i) + "]";
      if (e.url_prefix.empty()) Add(path + ".urlPrefix", "required");
      if (!e.prioritize_verb.empty() && e.weight <= 0) {
        Add(path + ".weight",
            "must have a positive weight applied to it, got " + std::to_string(e.weight));
      }
      // score x weight x 10 (MaxNodeScore / MaxExtenderPriority) x 10 must not overflow int64.
      if (e.weight > (std::numeric_limits<int64_t>::max)() / 100) {
        Add(path + ".weight", "too large, got " + std::to_string(e.weight));
      }
      if (e.http_timeout_ms <= 0) {
        Add(path + ".httpTimeout", "must be greater than zero, got " + Ms(e.http_timeout_ms));
      }
      if (!e.bind_verb.empty()) ++binders;
      for (size_t j = 0; j < e.managed_resources.size(); ++j) {
        const std::string& name = e.managed_resources[j];
        const std::string rpath = path + ".managedResources[" + std::to_string(j) + "].name";
        if (!IsExtendedResourceName(name)) {
          Add(rpath, common::Quote(name) +
                         " is an invalid extended resource name (want <domain>/<name> outside "
                         "kubernetes.io, e.g. nvidia.com/gpu)");
        }
        if (auto [it, inserted] = managed.emplace(name, rpath); !inserted) {
          Add(rpath, "duplicate extender managed resource name " + common::Quote(name) + " (also " +
                         it->second + ")");
        }
      }
    }
    if (binders > 1) {
      Add("extenders", "only one extender can implement bind, found " + std::to_string(binders));
    }
  }

 private:
  void Percentage(const std::string& path, int32_t v) {
    if (v < 0 || v > 100) Add(path, "not in valid range [0-100], got " + std::to_string(v));
  }

  void PluginSetErrors(const std::string& path, const PluginSet& set) {
    std::map<std::string, size_t> seen;
    for (size_t j = 0; j < set.enabled.size(); ++j) {
      const PluginRef& r = set.enabled[j];
      const std::string rpath = path + ".enabled[" + std::to_string(j) + "]";
      if (r.name.empty()) {
        Add(rpath + ".name", "required");
      } else if (r.name == "*") {
        Add(rpath + ".name", "\"*\" can only be disabled, not enabled");
      } else if (auto [it, inserted] = seen.emplace(r.name, j); !inserted) {
        Add(rpath, "plugin " + common::Quote(r.name) + " enabled twice (also enabled[" +
                       std::to_string(it->second) + "])");
      }
      // 0 means unset here; an explicit 0 is rejected by the parser.
      if (r.weight < 0 || r.weight > 100) {
        Add(rpath + ".weight", "must be in 1..100, got " + std::to_string(r.weight));
      }
    }
    for (size_t j = 0; j < set.disabled.size(); ++j) {
      if (set.disabled[j].name.empty()) {
        Add(path + ".disabled[" + std::to_string(j) + "].name", "required");
      }
    }
  }

  void PluginConfigErrors(const std::string& profile_path, const std::vector<PluginConfig>& pcs) {
    std::map<std::string, size_t> seen;
    for (size_t j = 0; j < pcs.size(); ++j) {
      const PluginConfig& pc = pcs[j];
      const std::string path = profile_path + ".pluginConfig[" + std::to_string(j) + "]";
      if (pc.name.empty()) {
        Add(path + ".name", "required");
      } else if (auto [it, inserted] = seen.emplace(pc.name, j); !inserted) {
        Add(path + ".name", "duplicate plugin config for " + common::Quote(pc.name) +
                                " (also pluginConfig[" + std::to_string(it->second) + "])");
      }
      if (!pc.args.is_object()) Add(path + ".args", "must be a map");
    }
  }

  // Upstream validateCommonQueueSort: at most one queueSort plugin enabled, and the queueSort set
  // (and its args) identical in every profile. Checked on the sets as written.
  void QueueSort(const std::vector<Profile>& profiles) {
    auto same_refs = [](const std::vector<PluginRef>& a, const std::vector<PluginRef>& b) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].name != b[i].name || a[i].weight != b[i].weight) return false;
      }
      return true;
    };
    const PluginSet& canon = profiles[0].plugins.at(Point::kQueueSort);
    std::string sort_plugin = "PrioritySort";
    if (!canon.enabled.empty()) sort_plugin = canon.enabled[0].name;
    for (size_t i = 0; i < profiles.size(); ++i) {
      const std::string path = "profiles[" + std::to_string(i) + "]";
      const PluginSet& set = profiles[i].plugins.at(Point::kQueueSort);
      if (set.enabled.size() > 1) {
        Add(path + ".plugins.queueSort.enabled",
            "only one queue sort plugin can be enabled, got " + std::to_string(set.enabled.size()));
      }
      if (i == 0) continue;
      if (!same_refs(set.enabled, canon.enabled) || !same_refs(set.disabled, canon.disabled)) {
        Add(path + ".plugins.queueSort", "must be the same for all profiles");
      }
      // Absent args equal an empty map.
      const boost::json::value empty = boost::json::object();
      const boost::json::value* args0 = profiles[0].ArgsFor(sort_plugin);
      const boost::json::value* args = profiles[i].ArgsFor(sort_plugin);
      if (*(args0 != nullptr ? args0 : &empty) != *(args != nullptr ? args : &empty)) {
        Add(path + ".pluginConfig", "args of queue sort plugin " + common::Quote(sort_plugin) +
                                        " must be the same for all profiles");
      }
    }
  }

  std::vector<std::string> errors_;
};

}  // namespace

common::Status Validate(const SchedulerConfig& config) {
  Validator v;
  v.Top(config);
  v.Client(config.client_connection);
  v.Leader(config.leader_election);
  v.Profiles(config.profiles);
  v.Extenders(config.extenders);
  return v.Result();
}

}  // namespace gpusched::config
