// SPDX-License-Identifier: Apache-2.0
// SchedulerConfig: the typed KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1; v1beta1
// is accepted with a deprecation warning). Field names, defaults and validation follow
// kube-scheduler (docs/kube-scheduler-compat.md §1–2); gpusched adds nothing to the
// schema except its own plugins and their args.
//
// Parsing and validation report every error found, each naming the YAML path, e.g.
//   profiles[0].plugins.score.enabled[1].weight: must be in 1..100, got 0
// Plugin names are checked against the registry when the runtime builds a profile (the config
// library does not know which plugins exist); the runtime's errors use PluginRef::path.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/status.h"

namespace gpusched::config {

inline constexpr std::string_view kDefaultSchedulerName = "gpu-scheduler";

struct PluginRef {
  std::string name;
  int32_t weight = 0;  // 1..100; 0 = unset (score: defaults to the plugin's default weight, or 1)
  std::string path;    // YAML path, for error messages; "<profile>.plugins.<point> (default)" for
                       // entries that EffectivePlugins took from DefaultPlugins()
};

struct PluginSet {
  std::vector<PluginRef> enabled;
  std::vector<PluginRef> disabled;  // name "*" disables every default of the point
};

// The extension points in config order.
enum class Point : int {
  kPreEnqueue = 0,
  kQueueSort,
  kPreFilter,
  kFilter,
  kPostFilter,
  kPreScore,
  kScore,
  kReserve,
  kPermit,
  kPreBind,
  kBind,
  kPostBind,
  kMultiPoint,
  kCount
};
std::string_view PointName(Point p);  // "queueSort", ...

struct Plugins {
  PluginSet points[static_cast<int>(Point::kCount)];
  PluginSet& at(Point p) { return points[static_cast<int>(p)]; }
  const PluginSet& at(Point p) const { return points[static_cast<int>(p)]; }
};

struct PluginConfig {
  std::string name;
  // An object; empty object when absent or null. An optional `kind` must be "<name>Args"; it and
  // `apiVersion` are checked by the parser and removed, so plugins see only their own fields.
  boost::json::value args = boost::json::object();
  std::string path;
};

struct Profile {
  std::string scheduler_name = std::string(kDefaultSchedulerName);
  std::optional<int32_t> percentage_of_nodes_to_score;  // overrides the top-level value
  Plugins plugins;  // as written by the user (merged with defaults by EffectivePlugins)
  std::vector<PluginConfig> plugin_config;
  std::string path;    // "profiles[0]"
  std::string source;  // the file it was read from (ParseSchedulerConfig's source); "" for built-in

  // The pluginConfig entry for `plugin`, or nullptr; its args object, or nullptr.
  const PluginConfig* ConfigFor(std::string_view plugin) const;
  const boost::json::value* ArgsFor(std::string_view plugin) const;
};

// As upstream, an explicit 0 (qps, burst) or "" (content_type) in the YAML means "use the default".
struct ClientConnection {
  std::string kubeconfig;
  std::string accept_content_types;  // "" = content_type only
  std::string content_type = "application/json";
  double qps = 50;
  int32_t burst = 100;
};

// Durations are written as Go duration strings ("15s", "1m30s", "500ms") and held in milliseconds
// (truncated). As upstream, "0s" and "" mean "use the default". Checked only when leader_elect.
struct LeaderElection {
  bool leader_elect = true;
  int64_t lease_duration_ms = 15000;
  int64_t renew_deadline_ms = 10000;
  int64_t retry_period_ms = 2000;
  std::string resource_lock = "leases";
  std::string resource_name = "gpu-scheduler";
  std::string resource_namespace = "kube-system";
};

struct Extender {
  std::string url_prefix;
  std::string filter_verb, prioritize_verb, bind_verb, preempt_verb;
  int64_t weight = 1;              // > 0 when prioritize_verb is set
  int64_t http_timeout_ms = 5000;  // httpTimeout; "0s" means the default
  bool node_cache_capable = false;
  bool ignorable = false;
  std::vector<std::string> managed_resources;     // extended resource names, e.g. nvidia.com/gpu
  std::vector<std::string> ignored_by_scheduler;  // managedResources with ignoredByScheduler: true
};

struct SchedulerConfig {
  std::string api_version = "kubescheduler.config.k8s.io/v1";
  int32_t parallelism = 16;
  int32_t percentage_of_nodes_to_score = 0;  // 0 = adaptive (upstream formula)
  int64_t pod_initial_backoff_seconds = 1;
  int64_t pod_max_backoff_seconds = 10;
  bool delay_cache_until_active = false;  // start informers only once leader
  ClientConnection client_connection;
  LeaderElection leader_election;
  std::vector<Profile> profiles;  // defaulted to one profile named gpu-scheduler
  std::vector<Extender> extenders;

  const Profile* FindProfile(std::string_view scheduler_name) const;
};

// Parses a KubeSchedulerConfiguration YAML (or JSON) document, applies defaults and validates.
// `source` names the file in errors. Deprecation notices (v1beta1, ...) go to `warnings`.
// Decoding is strict like kube-scheduler's: unknown fields are errors. Fields of upstream's schema
// that gpusched does not use (enableProfiling, ...) are accepted with a warning; HTTPS extenders
// (enableHTTPS: true, tlsConfig) are rejected. The error is "<source>: <path>: <message>; ..."
// with every decoding and validation error found. `warnings` may be null.
common::StatusOr<SchedulerConfig> ParseSchedulerConfig(std::string_view yaml,
                                                       std::string_view source,
                                                       std::vector<std::string>* warnings);

// The default configuration: one profile "gpu-scheduler" with the default plugins.
SchedulerConfig DefaultSchedulerConfig();

// Reports every validation error, joined by "; ".
common::Status Validate(const SchedulerConfig& config);

// Weights of the default profile's GpuFragmentation and NetworkLocality. GpuFragmentation's full
// range (100 points, one per Δ step of the pod: 250 milli-GPU for a one-GPU pod) outweighs every
// other default score plugin together (TaintToleration 3, NodeAffinity 2, PodTopologySpread 2,
// InterPodAffinity 2, NetworkLocality 2: 11), so a pod without a GPU request always prefers a
// fitting node without GPUs; a soft spread, affinity or locality preference (2 × 100) weighs as
// much as 17 points of fragmentation.
inline constexpr int32_t kGpuFragmentationWeight = 12;
inline constexpr int32_t kNetworkLocalityWeight = 2;

// The plugins enabled by default, as one multiPoint list like upstream's v1 defaults (each runs
// at every point it implements; weights apply at Score): PrioritySort, NodeUnschedulable,
// NodeName, TaintToleration (3), NodeAffinity (2), NodeResourcesFit (1), GpuFit (5),
// GpuFragmentation (kGpuFragmentationWeight), PodTopologySpread (2), InterPodAffinity (2),
// NetworkLocality (kNetworkLocalityWeight), DefaultBinder; and, point by point, NetworkLocality
// disabled at QueueSort, GpuFit and NodeResourcesFit at Score and GpuFit at Reserve
// (GpuFragmentation scores and chooses the devices; both still filter).
Plugins DefaultPlugins();

// Merges the profile's plugin sets into the defaults, with kube-scheduler's rule
// (docs/kube-scheduler-compat.md §1.2): drop the disabled ones (or all for "*"); a default also
// listed in enabled is replaced in place (keeping its position, taking the new weight); then
// append the other enabled ones in order. multiPoint entries expand to every point the plugin
// implements; `implements(name, point)` answers that.
//
// Precisely, per point P the list is built in three levels, each applied to the result of the
// previous one: (1) the defaults at P (less the defaults' own disables at P); (2) the profile's
// multiPoint set: its disabled names (or
// "*") drop defaults, its enabled entries that implement P replace a listed plugin in place or
// are appended; (3) the profile's P set: its disabled names (or "*") drop anything listed so far,
// its enabled entries replace in place or are appended. A plugin disabled at P is never expanded
// there from multiPoint. Replacing keeps the old weight when the new one is 0 (unset). Unlike
// upstream, a point entry overriding a multiPoint entry keeps the multiPoint position instead of
// moving to the front. The result has no multiPoint entries and no disabled lists. An empty
// `implements` means multiPoint expands nowhere. The input should have passed Validate();
// duplicates are not reported.
Plugins EffectivePlugins(const Profile& profile,
                         const std::function<bool(std::string_view, Point)>& implements);

// The number of feasible nodes to find before scoring, upstream's numFeasibleNodesToFind:
// all nodes below 100; otherwise `percentage` of them (0 = adaptive: max(5, 50 - n/125) percent),
// but at least 100. `percentage` is the profile's value if set, else the top-level one.
// REQUIRES: 0 <= percentage <= 100 (values outside are clamped); n < 0 yields 0.
int32_t NumNodesToScore(int32_t num_all_nodes, int32_t percentage);

}  // namespace gpusched::config
