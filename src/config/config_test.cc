// SPDX-License-Identifier: Apache-2.0
#include "src/config/config.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "src/config/duration.h"

namespace gpusched::config {
namespace {

constexpr std::string_view kHeader =
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

common::StatusOr<SchedulerConfig> Parse(std::string_view body,
                                        std::vector<std::string>* warnings = nullptr) {
  return ParseSchedulerConfig(std::string(kHeader) + std::string(body), "test.yaml", warnings);
}

// "Name" or "Name:weight" for each entry.
std::vector<std::string> Names(const std::vector<PluginRef>& refs) {
  std::vector<std::string> out;
  for (const PluginRef& r : refs) {
    out.push_back(r.weight == 0 ? r.name : r.name + ":" + std::to_string(r.weight));
  }
  return out;
}

std::vector<PluginRef> Refs(std::initializer_list<std::pair<const char*, int32_t>> entries) {
  std::vector<PluginRef> out;
  for (const auto& [name, weight] : entries) out.push_back(PluginRef{name, weight, "test"});
  return out;
}

std::string ReadSourceFile(const std::string& relative) {
  const char* root = std::getenv("GPUSCHED_SOURCE_DIR");
  if (root == nullptr) return "";
  std::ifstream in(std::string(root) + "/" + relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---------------------------------------------------------------------------------------------
// Defaults

TEST(ConfigDefaultsTest, AMinimalDocumentGetsEveryUpstreamDefault) {
  auto r = Parse("");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const SchedulerConfig& c = *r;
  EXPECT_EQ(c.api_version, "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(c.parallelism, 16);
  EXPECT_EQ(c.percentage_of_nodes_to_score, 0);
  EXPECT_EQ(c.pod_initial_backoff_seconds, 1);
  EXPECT_EQ(c.pod_max_backoff_seconds, 10);
  EXPECT_FALSE(c.delay_cache_until_active);
  EXPECT_EQ(c.client_connection.kubeconfig, "");
  EXPECT_EQ(c.client_connection.accept_content_types, "");
  EXPECT_EQ(c.client_connection.content_type, "application/json");
  EXPECT_EQ(c.client_connection.qps, 50);
  EXPECT_EQ(c.client_connection.burst, 100);
  EXPECT_TRUE(c.leader_election.leader_elect);
  EXPECT_EQ(c.leader_election.lease_duration_ms, 15000);
  EXPECT_EQ(c.leader_election.renew_deadline_ms, 10000);
  EXPECT_EQ(c.leader_election.retry_period_ms, 2000);
  EXPECT_EQ(c.leader_election.resource_lock, "leases");
  EXPECT_EQ(c.leader_election.resource_name, "gpu-scheduler");
  EXPECT_EQ(c.leader_election.resource_namespace, "kube-system");
  ASSERT_EQ(c.profiles.size(), 1u);
  EXPECT_EQ(c.profiles[0].scheduler_name, kDefaultSchedulerName);
  EXPECT_EQ(c.profiles[0].path, "profiles[0]");
  EXPECT_FALSE(c.profiles[0].percentage_of_nodes_to_score.has_value());
  EXPECT_TRUE(c.profiles[0].plugin_config.empty());
  for (int i = 0; i < static_cast<int>(Point::kCount); ++i) {
    EXPECT_TRUE(c.profiles[0].plugins.points[i].enabled.empty());
    EXPECT_TRUE(c.profiles[0].plugins.points[i].disabled.empty());
  }
  EXPECT_TRUE(c.extenders.empty());
  EXPECT_NE(c.FindProfile("gpu-scheduler"), nullptr);
  EXPECT_EQ(c.FindProfile("default-scheduler"), nullptr);
}

TEST(ConfigDefaultsTest, DefaultSchedulerConfigIsValidAndMatchesAParsedEmptyConfig) {
  const SchedulerConfig d = DefaultSchedulerConfig();
  EXPECT_TRUE(Validate(d).ok()) << Validate(d).ToString();
  ASSERT_EQ(d.profiles.size(), 1u);
  EXPECT_EQ(d.profiles[0].scheduler_name, "gpu-scheduler");
  EXPECT_EQ(d.profiles[0].path, "profiles[0]");
  EXPECT_EQ(d.parallelism, 16);
}

TEST(ConfigDefaultsTest, ExtenderFieldsDefaultAsUpstream) {
  auto r = Parse("extenders:\n- urlPrefix: http://127.0.0.1:8888/\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->extenders.size(), 1u);
  const Extender& e = r->extenders[0];
  EXPECT_EQ(e.url_prefix, "http://127.0.0.1:8888/");
  EXPECT_EQ(e.weight, 1);
  EXPECT_EQ(e.http_timeout_ms, 5000);
  EXPECT_FALSE(e.node_cache_capable);
  EXPECT_FALSE(e.ignorable);
  EXPECT_TRUE(e.filter_verb.empty() && e.prioritize_verb.empty() && e.bind_verb.empty() &&
              e.preempt_verb.empty());
  EXPECT_TRUE(e.managed_resources.empty());
}

TEST(ConfigDefaultsTest, DefaultPluginsAreExactlyTheDocumentedSet) {
  const Plugins p = DefaultPlugins();
  const std::map<Point, std::vector<std::string>> want = {
      {Point::kMultiPoint,
       {"PrioritySort",        "NodeUnschedulable",   "NodeName",           "TaintToleration:3",
        "NodeAffinity:2",      "NodePorts",           "NodeResourcesFit:1", "VolumeRestrictions",
        "NodeVolumeLimits",    "VolumeBinding",       "VolumeZone",         "GpuFit:5",
        "GpuFragmentation:12", "PodTopologySpread:2", "InterPodAffinity:2", "DynamicResources:2",
        "DefaultPreemption",   "Consolidation",       "ImageLocality:1",    "NetworkLocality:2",
        "GangScheduling",      "DefaultBinder"}},
  };
  const std::map<Point, std::vector<std::string>> disabled = {
      {Point::kQueueSort, {"NetworkLocality"}},
      {Point::kScore, {"GpuFit", "NodeResourcesFit"}},
      {Point::kReserve, {"GpuFit"}},
  };
  for (int i = 0; i < static_cast<int>(Point::kCount); ++i) {
    const auto point = static_cast<Point>(i);
    SCOPED_TRACE(std::string(PointName(point)));
    auto it = want.find(point);
    const std::vector<std::string> expected =
        it == want.end() ? std::vector<std::string>{} : it->second;
    EXPECT_EQ(Names(p.at(point).enabled), expected);
    auto d = disabled.find(point);
    EXPECT_EQ(Names(p.at(point).disabled),
              d == disabled.end() ? std::vector<std::string>{} : d->second);
  }
}

TEST(ConfigDefaultsTest, PointNamesAreTheConfigKeys) {
  const std::vector<std::string> want = {
      "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore",  "score",
      "reserve",    "permit",    "preBind",   "bind",   "postBind",   "multiPoint"};
  for (int i = 0; i < static_cast<int>(Point::kCount); ++i) {
    EXPECT_EQ(PointName(static_cast<Point>(i)), want[static_cast<size_t>(i)]);
  }
}

// ---------------------------------------------------------------------------------------------
// Decoding of well-formed documents

TEST(ConfigParseTest, EveryFieldIsDecoded) {
  auto r = Parse(R"(
parallelism: 32
percentageOfNodesToScore: 40
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 60
delayCacheUntilActive: true
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
  acceptContentTypes: application/json
  contentType: application/json
  qps: 500.5
  burst: 1000
leaderElection:
  leaderElect: true
  leaseDuration: 1m30s
  renewDeadline: 1m
  retryPeriod: 500ms
  resourceLock: leases
  resourceName: cxx-scheduler
  resourceNamespace: sched
profiles:
- schedulerName: cxx-scheduler
  percentageOfNodesToScore: 20
  plugins:
    multiPoint:
      enabled: [{name: Gang, weight: 4}]
    score:
      disabled: [{name: NodeAffinity}]
      enabled: [{name: NodeResourcesFit, weight: 2}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      kind: NodeResourcesFitArgs
      apiVersion: kubescheduler.config.k8s.io/v1
      scoringStrategy: {type: MostAllocated}
  - name: GpuFit
- schedulerName: other
extenders:
- urlPrefix: http://ext:8080/scheduler
  filterVerb: filter
  prioritizeVerb: prioritize
  bindVerb: bind
  preemptVerb: preempt
  weight: 3
  httpTimeout: 30s
  nodeCacheCapable: true
  ignorable: true
  enableHTTPS: false
  managedResources:
  - name: example.com/foo
    ignoredByScheduler: true
  - name: nvidia.com/gpu
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const SchedulerConfig& c = *r;
  EXPECT_EQ(c.parallelism, 32);
  EXPECT_EQ(c.percentage_of_nodes_to_score, 40);
  EXPECT_EQ(c.pod_initial_backoff_seconds, 2);
  EXPECT_EQ(c.pod_max_backoff_seconds, 60);
  EXPECT_TRUE(c.delay_cache_until_active);
  EXPECT_EQ(c.client_connection.kubeconfig, "/etc/kubernetes/scheduler.conf");
  EXPECT_EQ(c.client_connection.accept_content_types, "application/json");
  EXPECT_DOUBLE_EQ(c.client_connection.qps, 500.5);
  EXPECT_EQ(c.client_connection.burst, 1000);
  EXPECT_EQ(c.leader_election.lease_duration_ms, 90000);
  EXPECT_EQ(c.leader_election.renew_deadline_ms, 60000);
  EXPECT_EQ(c.leader_election.retry_period_ms, 500);
  EXPECT_EQ(c.leader_election.resource_name, "cxx-scheduler");
  EXPECT_EQ(c.leader_election.resource_namespace, "sched");
  ASSERT_EQ(c.profiles.size(), 2u);
  const Profile& p = c.profiles[0];
  EXPECT_EQ(p.scheduler_name, "cxx-scheduler");
  EXPECT_EQ(p.percentage_of_nodes_to_score, 20);
  EXPECT_EQ(Names(p.plugins.at(Point::kMultiPoint).enabled), std::vector<std::string>{"Gang:4"});
  EXPECT_EQ(Names(p.plugins.at(Point::kScore).enabled),
            std::vector<std::string>{"NodeResourcesFit:2"});
  EXPECT_EQ(Names(p.plugins.at(Point::kScore).disabled), std::vector<std::string>{"NodeAffinity"});
  EXPECT_EQ(p.plugins.at(Point::kScore).enabled[0].path, "profiles[0].plugins.score.enabled[0]");
  ASSERT_EQ(p.plugin_config.size(), 2u);
  EXPECT_EQ(p.plugin_config[0].path, "profiles[0].pluginConfig[0]");
  // kind and apiVersion are checked and stripped; the plugin sees only its own fields.
  EXPECT_EQ(boost::json::serialize(p.plugin_config[0].args),
            R"({"scoringStrategy":{"type":"MostAllocated"}})");
  EXPECT_EQ(boost::json::serialize(p.plugin_config[1].args), "{}");
  ASSERT_NE(p.ArgsFor("GpuFit"), nullptr);
  EXPECT_EQ(p.ArgsFor("NodeAffinity"), nullptr);
  EXPECT_EQ(c.profiles[1].scheduler_name, "other");
  EXPECT_EQ(c.FindProfile("other"), &c.profiles[1]);
  ASSERT_EQ(c.extenders.size(), 1u);
  const Extender& e = c.extenders[0];
  EXPECT_EQ(e.url_prefix, "http://ext:8080/scheduler");
  EXPECT_EQ(e.filter_verb, "filter");
  EXPECT_EQ(e.prioritize_verb, "prioritize");
  EXPECT_EQ(e.bind_verb, "bind");
  EXPECT_EQ(e.preempt_verb, "preempt");
  EXPECT_EQ(e.weight, 3);
  EXPECT_EQ(e.http_timeout_ms, 30000);
  EXPECT_TRUE(e.node_cache_capable);
  EXPECT_TRUE(e.ignorable);
  EXPECT_EQ(e.managed_resources, (std::vector<std::string>{"example.com/foo", "nvidia.com/gpu"}));
  EXPECT_EQ(e.ignored_by_scheduler, std::vector<std::string>{"example.com/foo"});
}

TEST(ConfigParseTest, ZeroEmptyAndNullValuesMeanTheDefaultWhereUpstreamSaysSo) {
  auto r = Parse(R"(
parallelism: null
clientConnection: {qps: 0, burst: 0, contentType: ""}
leaderElection:
  leaseDuration: 0s
  renewDeadline: "0"
  retryPeriod: null
  resourceLock: ""
  resourceName: ""
  resourceNamespace: ""
profiles: null
extenders:
- {urlPrefix: "http://e", httpTimeout: 0s}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->parallelism, 16);
  EXPECT_EQ(r->client_connection.qps, 50);
  EXPECT_EQ(r->client_connection.burst, 100);
  EXPECT_EQ(r->client_connection.content_type, "application/json");
  EXPECT_EQ(r->leader_election.lease_duration_ms, 15000);
  EXPECT_EQ(r->leader_election.renew_deadline_ms, 10000);
  EXPECT_EQ(r->leader_election.retry_period_ms, 2000);
  EXPECT_EQ(r->leader_election.resource_lock, "leases");
  EXPECT_EQ(r->leader_election.resource_name, "gpu-scheduler");
  EXPECT_EQ(r->leader_election.resource_namespace, "kube-system");
  ASSERT_EQ(r->profiles.size(), 1u);
  EXPECT_EQ(r->profiles[0].scheduler_name, "gpu-scheduler");
  EXPECT_EQ(r->extenders[0].http_timeout_ms, 5000);
}

TEST(ConfigParseTest, ProfileListsAndNamesAreDefaultedLikeUpstream) {
  struct Case {
    const char* name;
    const char* body;
    std::vector<std::string> want_names;
  };
  const Case cases[] = {
      {"no profiles key gives one gpu-scheduler profile", "", {"gpu-scheduler"}},
      {"an empty profile list gives one gpu-scheduler profile",
       "profiles: []\n",
       {"gpu-scheduler"}},
      {"a single unnamed profile is named gpu-scheduler", "profiles:\n- {}\n", {"gpu-scheduler"}},
      {"a single named profile keeps its name", "profiles:\n- schedulerName: a\n", {"a"}},
      {"two named profiles keep their names",
       "profiles:\n- schedulerName: a\n- schedulerName: b\n",
       {"a", "b"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = Parse(c.body);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> names;
    for (const Profile& p : r->profiles) names.push_back(p.scheduler_name);
    EXPECT_EQ(names, c.want_names);
  }
}

TEST(ConfigParseTest, IntegralFloatsAreAcceptedForIntegersAsUpstream) {
  auto r = Parse("parallelism: 1e1\npodMaxBackoffSeconds: 20.0\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->parallelism, 10);
  EXPECT_EQ(r->pod_max_backoff_seconds, 20);
}

TEST(ConfigParseTest, JsonInputIsAccepted) {
  auto r = ParseSchedulerConfig(
      R"({"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"KubeSchedulerConfiguration",)"
      R"("parallelism":8,"profiles":[{"schedulerName":"j"}]})",
      "config.json", nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->parallelism, 8);
  EXPECT_EQ(r->profiles[0].scheduler_name, "j");
}

TEST(ConfigParseTest, DeprecatedVersionsAreAcceptedWithAWarning) {
  struct Case {
    const char* name;
    const char* api_version;
    std::vector<std::string> want_warnings;
  };
  const Case cases[] = {
      {"v1 has no warning", "kubescheduler.config.k8s.io/v1", {}},
      {"v1beta1 is deprecated",
       "kubescheduler.config.k8s.io/v1beta1",
       {"kubescheduler.config.k8s.io/v1beta1 is deprecated; use kubescheduler.config.k8s.io/v1"}},
      {"v1beta2 is deprecated",
       "kubescheduler.config.k8s.io/v1beta2",
       {"kubescheduler.config.k8s.io/v1beta2 is deprecated; use kubescheduler.config.k8s.io/v1"}},
      {"v1beta3 is deprecated",
       "kubescheduler.config.k8s.io/v1beta3",
       {"kubescheduler.config.k8s.io/v1beta3 is deprecated; use kubescheduler.config.k8s.io/v1"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> warnings;
    auto r = ParseSchedulerConfig(std::string("apiVersion: ") + c.api_version +
                                      "\nkind: KubeSchedulerConfiguration\nparallelism: 4\n",
                                  "test.yaml", &warnings);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->api_version, c.api_version);
    EXPECT_EQ(r->parallelism, 4);
    EXPECT_EQ(warnings, c.want_warnings);
  }
}

TEST(ConfigParseTest, FieldsOfOlderVersionsAndUnusedUpstreamFieldsAreIgnoredWithAWarning) {
  struct Case {
    const char* name;
    std::string yaml;
    std::vector<std::string> want_warnings;
  };
  const std::string v1beta1 =
      "apiVersion: kubescheduler.config.k8s.io/v1beta1\nkind: KubeSchedulerConfiguration\n";
  const std::string v1beta2 =
      "apiVersion: kubescheduler.config.k8s.io/v1beta2\nkind: KubeSchedulerConfiguration\n";
  const std::string deprecated1 =
      "kubescheduler.config.k8s.io/v1beta1 is deprecated; use kubescheduler.config.k8s.io/v1";
  const std::string deprecated2 =
      "kubescheduler.config.k8s.io/v1beta2 is deprecated; use kubescheduler.config.k8s.io/v1";
  const Case cases[] = {
      {"v1beta1 bind addresses are ignored",
       v1beta1 + "healthzBindAddress: 0.0.0.0:10251\nmetricsBindAddress: 0.0.0.0:10251\n",
       {deprecated1, "healthzBindAddress: ignored (removed in kubescheduler.config.k8s.io/v1)",
        "metricsBindAddress: ignored (removed in kubescheduler.config.k8s.io/v1)"}},
      {"v1beta2 bind addresses are ignored",
       v1beta2 + "healthzBindAddress: 0.0.0.0:10251\n",
       {deprecated2, "healthzBindAddress: ignored (removed in kubescheduler.config.k8s.io/v1)"}},
      {"the v1beta1 unreserve point is ignored",
       v1beta1 + "profiles:\n- plugins:\n    unreserve:\n      enabled: [{name: GpuFit}]\n",
       {deprecated1,
        "profiles[0].plugins.unreserve: ignored (removed after v1beta1: reserve plugins are "
        "unreserved automatically)"}},
      {"profiling switches are ignored in v1",
       std::string(kHeader) + "enableProfiling: true\nenableContentionProfiling: false\n",
       {"enableProfiling: ignored (gpusched serves no profiling endpoints)",
        "enableContentionProfiling: ignored (gpusched serves no profiling endpoints)"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> warnings;
    auto r = ParseSchedulerConfig(c.yaml, "test.yaml", &warnings);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(warnings, c.want_warnings);
  }
}

// ---------------------------------------------------------------------------------------------
// Rejections: each case names the exact substring(s) the error must contain.

struct ErrorCase {
  const char* name;
  std::string yaml;  // the whole document
  std::vector<std::string> want;
};

void RunErrorCases(const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = ParseSchedulerConfig(c.yaml, "test.yaml", nullptr);
    ASSERT_FALSE(r.ok()) << "parsed: " << c.yaml;
    EXPECT_EQ(r.status().code(), common::StatusCode::kInvalidArgument);
    const std::string msg(r.status().message());
    EXPECT_EQ(msg.rfind("test.yaml", 0), 0u) << msg;  // every error names the file first
    for (const std::string& w : c.want) EXPECT_NE(msg.find(w), std::string::npos) << msg;
  }
}

std::string V1(std::string_view body) { return std::string(kHeader) + std::string(body); }

TEST(ConfigErrorsTest, DocumentShapeAndTypeMetaErrors) {
  RunErrorCases({
      {"an unsupported apiVersion is named",
       "apiVersion: kubescheduler.config.k8s.io/v2\nkind: KubeSchedulerConfiguration\n",
       {"test.yaml: apiVersion: unsupported \"kubescheduler.config.k8s.io/v2\""}},
      {"another group's apiVersion is named",
       "apiVersion: v1\nkind: KubeSchedulerConfiguration\n",
       {"apiVersion: unsupported \"v1\""}},
      {"a missing apiVersion is an error",
       "kind: KubeSchedulerConfiguration\n",
       {"apiVersion: required"}},
      {"a numeric apiVersion is an error",
       "apiVersion: 1\nkind: KubeSchedulerConfiguration\n",
       {"apiVersion: expected a string, got 1"}},
      {"a wrong kind is named",
       "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n",
       {"kind: expected KubeSchedulerConfiguration, got \"Pod\""}},
      {"a missing kind is an error",
       "apiVersion: kubescheduler.config.k8s.io/v1\n",
       {"kind: required"}},
      {"a bad apiVersion and a bad kind are both reported",
       "apiVersion: x/v9\nkind: Deployment\n",
       {"apiVersion: unsupported \"x/v9\"",
        "kind: expected KubeSchedulerConfiguration, got "
        "\"Deployment\""}},
      {"two documents are rejected",
       V1("") + "---\n" + V1(""),
       {"test.yaml: expected exactly one KubeSchedulerConfiguration document, found 2"}},
      {"an empty file is rejected",
       "",
       {"test.yaml: expected exactly one KubeSchedulerConfiguration document, found 0"}},
      {"a scalar document is rejected",
       "hello\n",
       {"test.yaml: expected a KubeSchedulerConfiguration map, got \"hello\""}},
      {"a list document is rejected",
       "- a\n- b\n",
       {"test.yaml: expected a KubeSchedulerConfiguration map, got a list"}},
      {"malformed YAML names the file", "apiVersion: [unclosed\n", {"test.yaml"}},
      {"bad indentation names the file",
       V1("profiles:\n- schedulerName: a\n  plugins: x\n y: z\n"),
       {"test.yaml"}},
  });
}

TEST(ConfigErrorsTest, UnknownFieldsAreRejectedWithTheirPath) {
  RunErrorCases({
      {"an unknown top-level field", V1("foo: 1\n"), {"test.yaml: foo: unknown field"}},
      {"a misspelt top-level field gets a hint",
       V1("parallelsim: 4\n"),
       {"parallelsim: unknown field (did you mean \"parallelism\"?)"}},
      {"field names are case-sensitive",
       V1("Parallelism: 4\n"),
       {"Parallelism: unknown field (did you mean \"parallelism\"?)"}},
      {"an unknown profile field",
       V1("profiles:\n- plugin: {}\n"),
       {"profiles[0].plugin: unknown field"}},
      {"an unknown extension point",
       V1("profiles:\n- plugins: {unreserve: {}}\n"),
       {"profiles[0].plugins.unreserve: unknown field"}},
      {"an unknown plugin-set field",
       V1("profiles:\n- plugins: {score: {enable: []}}\n"),
       {"profiles[0].plugins.score.enable: unknown field (did you mean \"enabled\"?)"}},
      {"an unknown plugin field",
       V1("profiles:\n- plugins: {score: {enabled: [{name: A, wieght: 2}]}}\n"),
       {"profiles[0].plugins.score.enabled[0].wieght: unknown field"}},
      {"an unknown pluginConfig field",
       V1("profiles:\n- pluginConfig: [{name: A, arg: {}}]\n"),
       {"profiles[0].pluginConfig[0].arg: unknown field"}},
      {"an unknown clientConnection field",
       V1("clientConnection: {qsp: 5}\n"),
       {"clientConnection.qsp: unknown field"}},
      {"an unknown leaderElection field",
       V1("leaderElection: {leaseDurationSeconds: 5}\n"),
       {"leaderElection.leaseDurationSeconds: unknown field"}},
      {"an unknown extender field",
       V1("extenders:\n- {urlPrefix: 'http://e', verb: x}\n"),
       {"extenders[0].verb: unknown field"}},
      {"an unknown managed resource field",
       V1("extenders:\n- {urlPrefix: 'http://e', managedResources: [{name: a.com/b, x: 1}]}\n"),
       {"extenders[0].managedResources[0].x: unknown field"}},
      {"v1 bind addresses are unknown",
       V1("healthzBindAddress: 0.0.0.0:10251\n"),
       {"healthzBindAddress: unknown field"}},
      {"multiPoint does not exist before v1beta3",
       "apiVersion: kubescheduler.config.k8s.io/v1beta2\nkind: KubeSchedulerConfiguration\n"
       "profiles:\n- plugins: {multiPoint: {enabled: [{name: A}]}}\n",
       {"profiles[0].plugins.multiPoint: unknown field in this apiVersion (multiPoint needs "
        "kubescheduler.config.k8s.io/v1beta3 or later)"}},
      {"an odd key is quoted", V1("\"a b\": 1\n"), {"\"a b\": unknown field"}},
  });
}

TEST(ConfigErrorsTest, TypeMismatchesNameThePathAndTheValue) {
  RunErrorCases({
      {"a scalar where a map is expected",
       V1("clientConnection: 5\n"),
       {"clientConnection: expected a map, got 5"}},
      {"a list where a map is expected",
       V1("leaderElection: []\n"),
       {"leaderElection: expected a map, got a list"}},
      {"a map where a list is expected",
       V1("profiles: {}\n"),
       {"profiles: expected a list, got a map"}},
      {"a scalar profile", V1("profiles:\n- x\n"), {"profiles[0]: expected a map, got \"x\""}},
      {"a scalar plugins",
       V1("profiles:\n- plugins: 3\n"),
       {"profiles[0].plugins: expected a map, got 3"}},
      {"a scalar plugin set",
       V1("profiles:\n- plugins: {filter: on}\n"),
       {"profiles[0].plugins.filter: expected a map, got \"on\""}},
      {"a scalar plugin entry",
       V1("profiles:\n- plugins: {filter: {enabled: [GpuFit]}}\n"),
       {"profiles[0].plugins.filter.enabled[0]: expected a map, got \"GpuFit\""}},
      {"a numeric plugin name",
       V1("profiles:\n- plugins: {filter: {enabled: [{name: 5}]}}\n"),
       {"profiles[0].plugins.filter.enabled[0].name: expected a string, got 5"}},
      {"a string where an integer is expected",
       V1("parallelism: \"16\"\n"),
       {"parallelism: expected an integer, got \"16\""}},
      {"a fraction where an integer is expected",
       V1("parallelism: 1.5\n"),
       {"parallelism: expected an integer, got 1.5"}},
      {"a boolean where an integer is expected",
       V1("podMaxBackoffSeconds: true\n"),
       {"podMaxBackoffSeconds: expected an integer, got true"}},
      {"a number too large for int32",
       V1("parallelism: 99999999999\n"),
       {"parallelism: must be a 32-bit integer, got 99999999999"}},
      {"a negative number too large for int32",
       V1("percentageOfNodesToScore: -99999999999\n"),
       {"percentageOfNodesToScore: must be a 32-bit integer, got -99999999999"}},
      {"a number too large for int64",
       V1("podMaxBackoffSeconds: 18446744073709551615\n"),
       {"podMaxBackoffSeconds: ", "integer"}},
      {"a number too large for any integer",
       V1("podMaxBackoffSeconds: 1e400\n"),
       {"podMaxBackoffSeconds: "}},
      {"an integral float too large for int32",
       V1("parallelism: 99999999999999999999999\n"),
       {"parallelism: must be a 32-bit integer, got 1e+23"}},
      {"a huge plugin weight",
       V1("profiles:\n- plugins: {score: {enabled: [{name: A, weight: 4294967296}]}}\n"),
       {"profiles[0].plugins.score.enabled[0].weight: must be a 32-bit integer, got 4294967296"}},
      {"a string where a boolean is expected",
       V1("leaderElection: {leaderElect: \"yes\"}\n"),
       {"leaderElection.leaderElect: expected true or false, got \"yes\""}},
      {"a string qps",
       V1("clientConnection: {qps: fast}\n"),
       {"clientConnection.qps: expected a number, got \"fast\""}},
      {"an infinite qps",
       V1("clientConnection: {qps: .inf}\n"),
       {"clientConnection.qps: must be a finite number"}},
      {"a numeric duration",
       V1("leaderElection: {leaseDuration: 15}\n"),
       {"leaderElection.leaseDuration: expected a duration string such as \"15s\", got 15"}},
      {"a duration without a unit",
       V1("leaderElection: {renewDeadline: \"10\"}\n"),
       {"leaderElection.renewDeadline: invalid duration \"10\""}},
      {"a duration with an unknown unit",
       V1("leaderElection: {retryPeriod: 2d}\n"),
       {"leaderElection.retryPeriod: invalid duration \"2d\""}},
      {"a bad extender timeout",
       V1("extenders:\n- {urlPrefix: 'http://e', httpTimeout: soon}\n"),
       {"extenders[0].httpTimeout: invalid duration \"soon\""}},
      {"string args",
       V1("profiles:\n- pluginConfig: [{name: GpuFit, args: x}]\n"),
       {"profiles[0].pluginConfig[0].args: must be a map, got \"x\""}},
      {"list args",
       V1("profiles:\n- pluginConfig: [{name: GpuFit, args: [1]}]\n"),
       {"profiles[0].pluginConfig[0].args: must be a map, got a list"}},
      {"args of another plugin's kind",
       V1("profiles:\n- pluginConfig: [{name: GpuFit, args: {kind: NodeResourcesFitArgs}}]\n"),
       {"profiles[0].pluginConfig[0].args.kind: args kind \"NodeResourcesFitArgs\" has to match "
        "plugin args kind \"GpuFitArgs\""}},
  });
}

TEST(ConfigErrorsTest, EveryValidationErrorIsReported) {
  RunErrorCases({
      {"zero parallelism",
       V1("parallelism: 0\n"),
       {"parallelism: should be an integer value greater than zero, got 0"}},
      {"negative parallelism",
       V1("parallelism: -3\n"),
       {"parallelism: should be an integer value greater than zero, got -3"}},
      {"percentage above 100",
       V1("percentageOfNodesToScore: 101\n"),
       {"percentageOfNodesToScore: not in valid range [0-100], got 101"}},
      {"negative percentage",
       V1("percentageOfNodesToScore: -1\n"),
       {"percentageOfNodesToScore: not in valid range [0-100], got -1"}},
      {"profile percentage above 100",
       V1("profiles:\n- percentageOfNodesToScore: 150\n"),
       {"profiles[0].percentageOfNodesToScore: not in valid range [0-100], got 150"}},
      {"zero initial backoff",
       V1("podInitialBackoffSeconds: 0\n"),
       {"podInitialBackoffSeconds: must be greater than 0, got 0"}},
      {"negative initial backoff",
       V1("podInitialBackoffSeconds: -1\n"),
       {"podInitialBackoffSeconds: must be greater than 0, got -1"}},
      {"max backoff below initial",
       V1("podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 3\n"),
       {"podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds (5), "
        "got 3"}},
      {"negative qps",
       V1("clientConnection: {qps: -1}\n"),
       {"clientConnection.qps: must be greater than 0, got -1"}},
      {"negative burst",
       V1("clientConnection: {burst: -5}\n"),
       {"clientConnection.burst: must be greater than 0, got -5"}},
      {"a negative lease duration",
       V1("leaderElection: {leaseDuration: -5s}\n"),
       {"leaderElection.leaseDuration: must be greater than zero, got -5000ms"}},
      {"a lease no longer than the renew deadline",
       V1("leaderElection: {leaseDuration: 10s, renewDeadline: 10s}\n"),
       {"leaderElection.leaseDuration: must be greater than renewDeadline (10000ms), got 10000ms"}},
      {"a renew deadline within the retry jitter",
       V1("leaderElection: {renewDeadline: 2s, retryPeriod: 2s}\n"),
       {"leaderElection.renewDeadline: must be greater than 1.2 x retryPeriod (2000ms), got "
        "2000ms"}},
      {"a lock other than leases",
       V1("leaderElection: {resourceLock: endpoints}\n"),
       {"leaderElection.resourceLock: resourceLock value must be \"leases\", got \"endpoints\""}},
      {"two unnamed profiles",
       V1("profiles:\n- {}\n- {}\n"),
       {"profiles[0].schedulerName: required", "profiles[1].schedulerName: required"}},
      {"an explicitly empty scheduler name",
       V1("profiles:\n- schedulerName: \"\"\n"),
       {"profiles[0].schedulerName: required"}},
      {"duplicate scheduler names",
       V1("profiles:\n- schedulerName: a\n- schedulerName: b\n- schedulerName: a\n"),
       {"profiles[2].schedulerName: duplicate scheduler name \"a\" (also profiles[0])"}},
      {"an explicit zero weight",
       V1("profiles:\n- plugins: {score: {enabled: [{name: A, weight: 1}, "
          "{name: B, weight: 0}]}}\n"),
       {"profiles[0].plugins.score.enabled[1].weight: must be in 1..100, got 0"}},
      {"a weight above 100",
       V1("profiles:\n- plugins: {score: {enabled: [{name: A, weight: 101}]}}\n"),
       {"profiles[0].plugins.score.enabled[0].weight: must be in 1..100, got 101"}},
      {"a negative weight",
       V1("profiles:\n- plugins: {multiPoint: {enabled: [{name: A, weight: -2}]}}\n"),
       {"profiles[0].plugins.multiPoint.enabled[0].weight: must be in 1..100, got -2"}},
      {"a plugin enabled twice at one point",
       V1("profiles:\n- plugins: {filter: {enabled: [{name: A}, {name: B}, {name: A}]}}\n"),
       {"profiles[0].plugins.filter.enabled[2]: plugin \"A\" enabled twice (also enabled[0])"}},
      {"a plugin enabled twice in multiPoint",
       V1("profiles:\n- plugins: {multiPoint: {enabled: [{name: A}, {name: A}]}}\n"),
       {"profiles[0].plugins.multiPoint.enabled[1]: plugin \"A\" enabled twice (also enabled[0])"}},
      {"a plugin without a name",
       V1("profiles:\n- plugins: {filter: {enabled: [{weight: 2}]}}\n"),
       {"profiles[0].plugins.filter.enabled[0].name: required"}},
      {"enabling the wildcard",
       V1("profiles:\n- plugins: {filter: {enabled: [{name: '*'}]}}\n"),
       {"profiles[0].plugins.filter.enabled[0].name: \"*\" can only be disabled, not enabled"}},
      {"a disabled entry without a name",
       V1("profiles:\n- plugins: {filter: {disabled: [{}]}}\n"),
       {"profiles[0].plugins.filter.disabled[0].name: required"}},
      {"duplicate plugin configs",
       V1("profiles:\n- pluginConfig: [{name: GpuFit}, {name: GpuFit, args: {}}]\n"),
       {"profiles[0].pluginConfig[1].name: duplicate plugin config for \"GpuFit\" (also "
        "pluginConfig[0])"}},
      {"a plugin config without a name",
       V1("profiles:\n- pluginConfig: [{args: {}}]\n"),
       {"profiles[0].pluginConfig[0].name: required"}},
      {"two queue sort plugins",
       V1("profiles:\n- plugins: {queueSort: {enabled: [{name: A}, {name: B}]}}\n"),
       {"profiles[0].plugins.queueSort.enabled: only one queue sort plugin can be enabled, got 2"}},
      {"queue sort differing between profiles",
       V1("profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n"
          "      disabled: [{name: '*'}]\n      enabled: [{name: Fifo}]\n"),
       {"profiles[1].plugins.queueSort: must be the same for all profiles"}},
      {"queue sort args differing between profiles",
       V1("profiles:\n- schedulerName: a\n- schedulerName: b\n  pluginConfig:\n"
          "  - {name: PrioritySort, args: {x: 1}}\n"),
       {"profiles[1].pluginConfig: args of queue sort plugin \"PrioritySort\" must be the same "
        "for all profiles"}},
      {"a prioritizing extender without weight",
       V1("extenders:\n- {urlPrefix: 'http://e', prioritizeVerb: p, weight: 0}\n"),
       {"extenders[0].weight: must have a positive weight applied to it, got 0"}},
      {"an extender without a URL",
       V1("extenders:\n- {filterVerb: f}\n"),
       {"extenders[0].urlPrefix: required"}},
      {"two binding extenders",
       V1("extenders:\n- {urlPrefix: 'http://a', bindVerb: bind}\n- {urlPrefix: 'http://b', "
          "bindVerb: bind}\n"),
       {"extenders: only one extender can implement bind, found 2"}},
      {"a native resource as managed resource",
       V1("extenders:\n- {urlPrefix: 'http://e', managedResources: [{name: cpu}]}\n"),
       {"extenders[0].managedResources[0].name: \"cpu\" is an invalid extended resource name"}},
      {"a kubernetes.io resource as managed resource",
       V1("extenders:\n- {urlPrefix: 'http://e', managedResources: [{name: kubernetes.io/x}]}\n"),
       {"extenders[0].managedResources[0].name: \"kubernetes.io/x\" is an invalid extended "
        "resource name"}},
      {"a duplicate managed resource across extenders",
       V1("extenders:\n- {urlPrefix: 'http://a', managedResources: [{name: nvidia.com/gpu}]}\n"
          "- {urlPrefix: 'http://b', managedResources: [{name: nvidia.com/gpu}]}\n"),
       {"extenders[1].managedResources[0].name: duplicate extender managed resource name "
        "\"nvidia.com/gpu\" (also extenders[0].managedResources[0].name)"}},
      {"a negative extender timeout",
       V1("extenders:\n- {urlPrefix: 'http://e', httpTimeout: -1s}\n"),
       {"extenders[0].httpTimeout: must be greater than zero, got -1000ms"}},
      {"an HTTPS extender",
       V1("extenders:\n- {urlPrefix: 'https://e', enableHTTPS: true}\n"),
       {"extenders[0].enableHTTPS: not supported"}},
      {"an extender TLS config",
       V1("extenders:\n- {urlPrefix: 'http://e', tlsConfig: {insecure: true}}\n"),
       {"extenders[0].tlsConfig: not supported"}},
  });
}

TEST(ConfigErrorsTest, AllErrorsAreReportedTogetherDecodingFirstThenValidation) {
  auto r = Parse(R"(
parallelism: 0
bogus: 1
leaderElection: {resourceLock: configmaps, leaseDuration: forever}
profiles:
- schedulerName: a
  plugins: {score: {enabled: [{name: X, weight: 0}]}}
- schedulerName: a
)");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "test.yaml: bogus: unknown field; "
            "leaderElection.leaseDuration: invalid duration \"forever\" (want a Go duration "
            "such as \"15s\", \"1m30s\" or \"500ms\"); "
            "profiles[0].plugins.score.enabled[0].weight: must be in 1..100, got 0; "
            "parallelism: should be an integer value greater than zero, got 0; "
            "leaderElection.resourceLock: resourceLock value must be \"leases\", got "
            "\"configmaps\"; "
            "profiles[1].schedulerName: duplicate scheduler name \"a\" (also profiles[0])");
}

TEST(ConfigErrorsTest, LeaderElectionIsNotCheckedWhenDisabled) {
  auto r =
      Parse("leaderElection: {leaderElect: false, resourceLock: endpoints, leaseDuration: 1s}\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->leader_election.leader_elect);
}

TEST(ConfigErrorsTest, ExtenderWeightMayBeZeroWithoutPrioritize) {
  auto r = Parse("extenders:\n- {urlPrefix: 'http://e', filterVerb: f, weight: 0}\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

// ---------------------------------------------------------------------------------------------
// Validate() on configs built in code

TEST(ConfigValidateTest, CollectsEveryErrorJoinedBySemicolons) {
  SchedulerConfig c = DefaultSchedulerConfig();
  c.parallelism = -1;
  c.pod_initial_backoff_seconds = 0;
  c.pod_max_backoff_seconds = -1;
  c.client_connection.qps = 0;
  c.leader_election.resource_name.clear();
  Profile second;
  second.path = "profiles[1]";  // same default name: a duplicate
  second.plugins.at(Point::kScore).enabled = Refs({{"A", 200}});
  second.plugin_config.push_back(PluginConfig{"A", boost::json::value(3), "x"});
  c.profiles.push_back(second);
  c.extenders.push_back(Extender{});
  const common::Status s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), common::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "parallelism: should be an integer value greater than zero, got -1; "
            "podInitialBackoffSeconds: must be greater than 0, got 0; "
            "podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds (0), "
            "got -1; "
            "clientConnection.qps: must be greater than 0, got 0; "
            "leaderElection.resourceName: required; "
            "profiles[1].schedulerName: duplicate scheduler name \"gpu-scheduler\" (also "
            "profiles[0]); "
            "profiles[1].plugins.score.enabled[0].weight: must be in 1..100, got 200; "
            "profiles[1].pluginConfig[0].args: must be a map; "
            "extenders[0].urlPrefix: required");
}

TEST(ConfigValidateTest, NoProfilesIsAnError) {
  SchedulerConfig c;
  EXPECT_EQ(Validate(c).message(), "profiles: at least one profile is required");
}

TEST(ConfigValidateTest, AWeightOfZeroMeansUnsetInCode) {
  SchedulerConfig c = DefaultSchedulerConfig();
  c.profiles[0].plugins.at(Point::kScore).enabled = Refs({{"A", 0}, {"B", 100}, {"C", 1}});
  EXPECT_TRUE(Validate(c).ok()) << Validate(c).ToString();
}

TEST(ConfigValidateTest, ExtendedResourceNames) {
  struct Case {
    const char* name;
    const char* resource;
    bool valid;
  };
  const Case cases[] = {
      {"a vendor GPU", "nvidia.com/gpu", true},
      {"a name part with dots and dashes", "example.com/foo.bar-baz_1", true},
      {"a native resource", "cpu", false},
      {"the kubernetes.io namespace", "kubernetes.io/gpu", false},
      {"a kubernetes.io subdomain", "x.kubernetes.io/gpu", false},
      {"a requests. prefix", "requests.example.com/foo", false},
      {"an upper-case domain", "Example.com/foo", false},
      {"an empty name part", "example.com/", false},
      {"two slashes", "a.com/b/c", false},
      {"a name part over 63 characters",
       "a.com/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SchedulerConfig cfg = DefaultSchedulerConfig();
    Extender e;
    e.url_prefix = "http://e";
    e.managed_resources = {c.resource};
    cfg.extenders.push_back(e);
    EXPECT_EQ(Validate(cfg).ok(), c.valid) << Validate(cfg).ToString();
  }
}

// ---------------------------------------------------------------------------------------------
// EffectivePlugins: the merge rule

// Which points the fake plugins implement.
bool FakeImplements(std::string_view name, Point p) {
  static const std::map<std::string, std::set<Point>, std::less<>> kPoints = {
      {"PrioritySort", {Point::kQueueSort}},
      {"NodeUnschedulable", {Point::kFilter}},
      {"NodeName", {Point::kFilter}},
      {"DefaultBinder", {Point::kBind}},
      {"NodeResourcesFit", {Point::kPreFilter, Point::kFilter, Point::kScore}},
      {"GpuFit", {Point::kPreFilter, Point::kFilter, Point::kScore, Point::kReserve}},
      {"TaintToleration", {Point::kFilter, Point::kPreScore, Point::kScore}},
      {"NodeAffinity", {Point::kFilter, Point::kScore}},
      {"Gang", {Point::kPreEnqueue, Point::kFilter, Point::kPermit, Point::kScore}},
      {"Spread", {Point::kPreScore, Point::kScore}},
      {"Fifo", {Point::kQueueSort}},
  };
  auto it = kPoints.find(name);
  return it != kPoints.end() && it->second.count(p) > 0;
}

TEST(ConfigDefaultsTest, DefaultsExpandToEveryPointEachPluginImplements) {
  Profile profile;
  const Plugins got = EffectivePlugins(profile, FakeImplements);
  EXPECT_EQ(Names(got.at(Point::kPreFilter).enabled),
            (std::vector<std::string>{"NodeResourcesFit", "GpuFit"}));
  EXPECT_EQ(Names(got.at(Point::kPreScore).enabled), (std::vector<std::string>{"TaintToleration"}));
  EXPECT_EQ(Names(got.at(Point::kScore).enabled),
            (std::vector<std::string>{"TaintToleration:3", "NodeAffinity:2"}));
}

TEST(EffectivePluginsTest, MergeRule) {
  struct Case {
    const char* name;
    std::map<Point, PluginSet> plugins;  // the profile as written
    Point point;
    std::vector<std::string> want;
  };
  const std::vector<std::string> default_filter = {"NodeUnschedulable", "NodeName",
                                                   "TaintToleration",   "NodeAffinity",
                                                   "NodeResourcesFit",  "GpuFit"};
  // The fake implements-table knows neither GpuFragmentation nor NetworkLocality, so at score
  // the defaults are the two plugins left once GpuFit and NodeResourcesFit are disabled there.
  const std::vector<std::string> default_score = {"TaintToleration:3", "NodeAffinity:2"};
  const Case cases[] = {
      {"nothing written gives the default filter set", {}, Point::kFilter, default_filter},
      {"nothing written gives the default score set with weights",
       {},
       Point::kScore,
       default_score},
      {"nothing written leaves points without defaults empty", {}, Point::kPostFilter, {}},
      {"a new plugin is appended after the defaults",
       {{Point::kScore, {Refs({{"Spread", 4}}), {}}}},
       Point::kScore,
       {"TaintToleration:3", "NodeAffinity:2", "Spread:4"}},
      {"re-enabling a default replaces it in place and takes the new weight",
       {{Point::kScore, {Refs({{"TaintToleration", 10}}), {}}}},
       Point::kScore,
       {"TaintToleration:10", "NodeAffinity:2"}},
      {"re-enabling a default without a weight keeps the default weight",
       {{Point::kScore, {Refs({{"NodeAffinity", 0}}), {}}}},
       Point::kScore,
       default_score},
      {"replacements keep default order, new plugins follow in the order written",
       {{Point::kScore, {Refs({{"Spread", 1}, {"GpuFit", 7}, {"Gang", 2}}), {}}}},
       Point::kScore,
       {"TaintToleration:3", "NodeAffinity:2", "Spread:1", "GpuFit:7", "Gang:2"}},
      {"disabling a default drops it",
       {{Point::kFilter, {{}, Refs({{"NodeName", 0}, {"TaintToleration", 0}})}}},
       Point::kFilter,
       {"NodeUnschedulable", "NodeAffinity", "NodeResourcesFit", "GpuFit"}},
      {"disabling * drops every default of the point",
       {{Point::kScore, {{}, Refs({{"*", 0}})}}},
       Point::kScore,
       {}},
      {"disabling * and enabling keeps only the enabled, in order",
       {{Point::kFilter, {Refs({{"GpuFit", 0}, {"NodeName", 0}}), Refs({{"*", 0}})}}},
       Point::kFilter,
       {"GpuFit", "NodeName"}},
      {"disabling * at one point leaves the other points alone",
       {{Point::kScore, {{}, Refs({{"*", 0}})}}},
       Point::kFilter,
       default_filter},
      {"disabling and re-enabling a default moves it to the end",
       {{Point::kFilter, {Refs({{"NodeName", 0}}), Refs({{"NodeName", 0}})}}},
       Point::kFilter,
       {"NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit", "GpuFit",
        "NodeName"}},
      {"disabling a plugin that is not enabled is harmless",
       {{Point::kBind, {{}, Refs({{"Nope", 0}})}}},
       Point::kBind,
       {"DefaultBinder"}},
      {"multiPoint expands a plugin to a point it implements",
       {{Point::kMultiPoint, {Refs({{"Gang", 0}}), {}}}},
       Point::kPermit,
       {"Gang"}},
      {"multiPoint does not expand a plugin to a point it does not implement",
       {{Point::kMultiPoint, {Refs({{"Gang", 0}}), {}}}},
       Point::kReserve,
       {}},
      {"multiPoint entries follow the defaults",
       {{Point::kMultiPoint, {Refs({{"Gang", 0}}), {}}}},
       Point::kFilter,
       {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeResourcesFit",
        "GpuFit", "Gang"}},
      {"multiPoint carries its weight to score",
       {{Point::kMultiPoint, {Refs({{"Gang", 6}}), {}}}},
       Point::kScore,
       {"TaintToleration:3", "NodeAffinity:2", "Gang:6"}},
      {"multiPoint naming a default replaces it in place with its weight",
       {{Point::kMultiPoint, {Refs({{"TaintToleration", 9}}), {}}}},
       Point::kScore,
       {"TaintToleration:9", "NodeAffinity:2"}},
      {"multiPoint naming a default keeps it in place at its other points",
       {{Point::kMultiPoint, {Refs({{"GpuFit", 0}}), {}}}},
       Point::kPreFilter,
       {"NodeResourcesFit", "GpuFit"}},
      {"a point's weight beats the multiPoint weight",
       {{Point::kMultiPoint, {Refs({{"Gang", 6}}), {}}},
        {Point::kScore, {Refs({{"Gang", 2}}), {}}}},
       Point::kScore,
       {"TaintToleration:3", "NodeAffinity:2", "Gang:2"}},
      {"a point entry without weight keeps the multiPoint weight",
       {{Point::kMultiPoint, {Refs({{"Gang", 6}}), {}}},
        {Point::kScore, {Refs({{"Gang", 0}}), {}}}},
       Point::kScore,
       {"TaintToleration:3", "NodeAffinity:2", "Gang:6"}},
      {"a point entry overriding multiPoint keeps the multiPoint position",
       {{Point::kMultiPoint, {Refs({{"Gang", 0}, {"Spread", 0}}), {}}},
        {Point::kScore, {Refs({{"Spread", 3}, {"Gang", 4}}), Refs({{"*", 0}})}}},
       Point::kScore,
       {"Spread:3", "Gang:4"}},
      {"a point can disable a multiPoint plugin there",
       {{Point::kMultiPoint, {Refs({{"Gang", 0}}), {}}},
        {Point::kFilter, {{}, Refs({{"Gang", 0}})}}},
       Point::kFilter,
       default_filter},
      {"disabling at one point does not affect the multiPoint plugin elsewhere",
       {{Point::kMultiPoint, {Refs({{"Gang", 0}}), {}}},
        {Point::kFilter, {{}, Refs({{"Gang", 0}})}}},
       Point::kPreEnqueue,
       {"Gang"}},
      {"disabling * at a point skips multiPoint expansion there",
       {{Point::kMultiPoint, {Refs({{"Gang", 0}}), {}}},
        {Point::kFilter, {Refs({{"NodeName", 0}}), Refs({{"*", 0}})}}},
       Point::kFilter,
       {"NodeName"}},
      {"multiPoint disabling a default drops it at every point (filter)",
       {{Point::kMultiPoint, {{}, Refs({{"TaintToleration", 0}})}}},
       Point::kFilter,
       {"NodeUnschedulable", "NodeName", "NodeAffinity", "NodeResourcesFit", "GpuFit"}},
      {"multiPoint disabling a default drops it at every point (score)",
       {{Point::kMultiPoint, {{}, Refs({{"TaintToleration", 0}})}}},
       Point::kScore,
       {"NodeAffinity:2"}},
      {"multiPoint disabling * drops all defaults",
       {{Point::kMultiPoint, {{}, Refs({{"*", 0}})}}},
       Point::kBind,
       {}},
      {"multiPoint disabling * and enabling keeps only the enabled",
       {{Point::kMultiPoint, {Refs({{"Fifo", 0}}), Refs({{"*", 0}})}}},
       Point::kQueueSort,
       {"Fifo"}},
      {"a point enable beats a multiPoint disable",
       {{Point::kMultiPoint, {{}, Refs({{"*", 0}})}},
        {Point::kScore, {Refs({{"NodeAffinity", 0}}), {}}}},
       Point::kScore,
       {"NodeAffinity"}},
      {"within multiPoint, enabled beats disabled",
       {{Point::kMultiPoint, {Refs({{"TaintToleration", 0}}), Refs({{"TaintToleration", 0}})}}},
       Point::kScore,
       {"NodeAffinity:2", "TaintToleration"}},
      {"a custom queue sort replaces PrioritySort when it is disabled",
       {{Point::kQueueSort, {Refs({{"Fifo", 0}}), Refs({{"PrioritySort", 0}})}}},
       Point::kQueueSort,
       {"Fifo"}},
      {"the effective set has no multiPoint entries",
       {{Point::kMultiPoint, {Refs({{"Gang", 0}}), {}}}},
       Point::kMultiPoint,
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Profile profile;
    profile.path = "profiles[0]";
    for (const auto& [point, set] : c.plugins) profile.plugins.at(point) = set;
    const Plugins got = EffectivePlugins(profile, FakeImplements);
    EXPECT_EQ(Names(got.at(c.point).enabled), c.want);
    EXPECT_TRUE(got.at(c.point).disabled.empty());
  }
}

TEST(EffectivePluginsTest, PathsNameTheUserEntryOrTheDefault) {
  Profile profile;
  profile.path = "profiles[2]";
  profile.plugins.at(Point::kScore).enabled = {
      PluginRef{"GpuFit", 8, "profiles[2].plugins.score.enabled[0]"}};
  const Plugins got = EffectivePlugins(profile, FakeImplements);
  const auto& score = got.at(Point::kScore).enabled;
  ASSERT_EQ(score.size(), 3u);  // TaintToleration, NodeAffinity (defaults), GpuFit (re-enabled)
  EXPECT_EQ(score[0].path, "profiles[2].plugins.score (default)");
  EXPECT_EQ(score[2].path, "profiles[2].plugins.score.enabled[0]");
}

TEST(EffectivePluginsTest, AnEmptyImplementsCallbackExpandsMultiPointNowhere) {
  Profile profile;
  profile.plugins.at(Point::kMultiPoint).enabled = Refs({{"Gang", 0}});
  const Plugins got = EffectivePlugins(profile, nullptr);
  EXPECT_EQ(Names(got.at(Point::kPermit).enabled), std::vector<std::string>{});
  EXPECT_EQ(Names(got.at(Point::kBind).enabled), std::vector<std::string>{})
      << "the defaults are a multiPoint list too";
}

// ---------------------------------------------------------------------------------------------
// percentageOfNodesToScore

TEST(NumNodesToScoreTest, MatchesUpstreamFormula) {
  struct Case {
    const char* name;
    int32_t nodes;
    int32_t percentage;
    int32_t want;
  };
  const Case cases[] = {
      {"no nodes", 0, 0, 0},
      {"negative node count yields zero", -5, 0, 0},
      {"small clusters are scanned fully", 50, 0, 50},
      {"99 nodes are scanned fully even at 10%", 99, 10, 99},
      {"100 nodes adaptive: 50%, floored to 100", 100, 0, 100},
      {"500 nodes adaptive: 46%", 500, 0, 230},
      {"1000 nodes adaptive: 42%", 1000, 0, 420},
      {"2000 nodes adaptive: 34%", 2000, 0, 680},
      {"3000 nodes adaptive: 26%", 3000, 0, 780},
      {"4000 nodes adaptive: 18%", 4000, 0, 720},
      {"5000 nodes adaptive: 10%", 5000, 0, 500},
      {"6000 nodes adaptive: 5% floor", 6000, 0, 300},
      {"10000 nodes adaptive: 5%", 10000, 0, 500},
      {"20000 nodes adaptive: 5%", 20000, 0, 1000},
      {"an explicit percentage", 5000, 30, 1500},
      {"an explicit percentage never goes below 100 nodes", 500, 1, 100},
      {"100% scans everything", 5000, 100, 5000},
      {"percentages above 100 are clamped", 5000, 250, 5000},
      {"negative percentages are treated as adaptive", 5000, -4, 500},
      {"huge clusters do not overflow", 2000000000, 100, 2000000000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(NumNodesToScore(c.nodes, c.percentage), c.want);
  }
}

// ---------------------------------------------------------------------------------------------
// Go durations

TEST(GoDurationTest, ParsesLikeTimeParseDuration) {
  struct Case {
    const char* name;
    const char* in;
    std::optional<int64_t> want_ns;
  };
  const Case cases[] = {
      {"seconds", "15s", 15'000'000'000},
      {"minutes and seconds", "1m30s", 90'000'000'000},
      {"milliseconds", "500ms", 500'000'000},
      {"hours", "2h", 7'200'000'000'000},
      {"fractional hours", "1.5h", 5'400'000'000'000},
      {"a leading dot", ".5s", 500'000'000},
      {"a trailing dot", "1.s", 1'000'000'000},
      {"microseconds", "3us", 3'000},
      {"micro sign", "3\xC2\xB5s", 3'000},
      {"greek mu", "3\xCE\xBCs", 3'000},
      {"nanoseconds", "7ns", 7},
      {"negative", "-1m", -60'000'000'000},
      {"explicit plus", "+2s", 2'000'000'000},
      {"bare zero", "0", 0},
      {"signed zero", "-0", 0},
      {"the largest duration", "9223372036854775807ns", 9223372036854775807},
      {"the smallest duration", "-9223372036854775808ns", INT64_MIN},
      {"empty", "", std::nullopt},
      {"a bare number", "10", std::nullopt},
      {"an unknown unit", "2d", std::nullopt},
      {"upper-case unit", "2S", std::nullopt},
      {"a lone dot", ".s", std::nullopt},
      {"a lone sign", "-", std::nullopt},
      {"a space inside", "1 s", std::nullopt},
      {"a trailing number", "1s2", std::nullopt},
      {"overflow", "9223372036854775808ns", std::nullopt},
      {"overflow through the unit", "3000000h", std::nullopt},
      {"overflow through the sum", "2562047h2562047h", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ParseGoDurationNanos(c.in), c.want_ns);
  }
}

// ---------------------------------------------------------------------------------------------
// Example files under deploy/config

TEST(ExampleConfigTest, TheDefaultProfileFileParsesToTheDefaults) {
  const std::string text = ReadSourceFile("deploy/config/gpu-scheduler.yaml");
  ASSERT_FALSE(text.empty()) << "GPUSCHED_SOURCE_DIR not set or file missing";
  std::vector<std::string> warnings;
  auto r = ParseSchedulerConfig(text, "deploy/config/gpu-scheduler.yaml", &warnings);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(warnings.empty());
  const SchedulerConfig d = DefaultSchedulerConfig();
  EXPECT_EQ(r->parallelism, d.parallelism);
  EXPECT_EQ(r->percentage_of_nodes_to_score, d.percentage_of_nodes_to_score);
  EXPECT_EQ(r->pod_initial_backoff_seconds, d.pod_initial_backoff_seconds);
  EXPECT_EQ(r->pod_max_backoff_seconds, d.pod_max_backoff_seconds);
  EXPECT_EQ(r->client_connection.qps, d.client_connection.qps);
  EXPECT_EQ(r->client_connection.burst, d.client_connection.burst);
  EXPECT_EQ(r->client_connection.content_type, d.client_connection.content_type);
  EXPECT_EQ(r->leader_election.lease_duration_ms, d.leader_election.lease_duration_ms);
  EXPECT_EQ(r->leader_election.renew_deadline_ms, d.leader_election.renew_deadline_ms);
  EXPECT_EQ(r->leader_election.retry_period_ms, d.leader_election.retry_period_ms);
  EXPECT_EQ(r->leader_election.resource_name, d.leader_election.resource_name);
  EXPECT_EQ(r->leader_election.resource_namespace, d.leader_election.resource_namespace);
  ASSERT_EQ(r->profiles.size(), 1u);
  EXPECT_EQ(r->profiles[0].scheduler_name, "gpu-scheduler");
  // Written out in full, the plugins equal the defaults at every point.
  const Plugins got = EffectivePlugins(r->profiles[0], FakeImplements);
  const Plugins want = EffectivePlugins(Profile{}, FakeImplements);
  for (int i = 0; i < static_cast<int>(Point::kCount); ++i) {
    SCOPED_TRACE(std::string(PointName(static_cast<Point>(i))));
    EXPECT_EQ(Names(got.points[i].enabled), Names(want.points[i].enabled));
  }
}

TEST(ExampleConfigTest, TheSeedV1beta1FileParsesWithADeprecationWarning) {
  const std::string text = ReadSourceFile("deploy/config/seed-v1beta1.yaml");
  ASSERT_FALSE(text.empty()) << "GPUSCHED_SOURCE_DIR not set or file missing";
  std::vector<std::string> warnings;
  auto r = ParseSchedulerConfig(text, "deploy/config/seed-v1beta1.yaml", &warnings);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(warnings, std::vector<std::string>{"kubescheduler.config.k8s.io/v1beta1 is deprecated; "
                                               "use kubescheduler.config.k8s.io/v1"});
  ASSERT_EQ(r->profiles.size(), 1u);
  const Profile& p = r->profiles[0];
  EXPECT_EQ(p.scheduler_name, "gpu-scheduler");
  EXPECT_EQ(Names(p.plugins.at(Point::kFilter).enabled),
            std::vector<std::string>{"GPUTopologyPlugin"});
  ASSERT_EQ(p.plugins.at(Point::kScore).enabled.size(), 1u);
  EXPECT_EQ(p.plugins.at(Point::kScore).enabled[0].name, "GPUTopologyPlugin");
}

// ---------------------------------------------------------------------------------------------
// Robustness: no input crashes the parser (run under ASan/UBSan).

TEST(ConfigRobustnessTest, EveryPrefixOfTheExampleFilesIsHandled) {
  for (const char* file : {"deploy/config/gpu-scheduler.yaml", "deploy/config/seed-v1beta1.yaml"}) {
    const std::string text = ReadSourceFile(file);
    ASSERT_FALSE(text.empty()) << file;
    for (size_t n = 0; n <= text.size(); ++n) {
      auto r = ParseSchedulerConfig(std::string_view(text).substr(0, n), "prefix.yaml", nullptr);
      if (!r.ok()) {
        EXPECT_EQ(r.status().message().rfind("prefix.yaml", 0), 0u);
      }
    }
  }
}

TEST(ConfigRobustnessTest, ValuesOfEveryKindInEveryFieldAreHandled) {
  const char* values[] = {"null",
                          "true",
                          "-1",
                          "0",
                          "1",
                          "2147483648",
                          "-9223372036854775809",
                          "18446744073709551616",
                          "1.5",
                          "-.inf",
                          ".nan",
                          "\"s\"",
                          "[]",
                          "[1]",
                          "{}",
                          "{a: 1}",
                          "[{}]"};
  const char* templates[] = {
      "parallelism: %",
      "percentageOfNodesToScore: %",
      "podMaxBackoffSeconds: %",
      "clientConnection: %",
      "clientConnection: {qps: %}",
      "clientConnection: {burst: %}",
      "leaderElection: %",
      "leaderElection: {leaseDuration: %}",
      "profiles: %",
      "profiles: [%]",
      "profiles: [{schedulerName: %}]",
      "profiles: [{plugins: %}]",
      "profiles: [{plugins: {score: %}}]",
      "profiles: [{plugins: {score: {enabled: %}}}]",
      "profiles: [{plugins: {score: {enabled: [%]}}}]",
      "profiles: [{plugins: {score: {enabled: [{name: A, weight: %}]}}}]",
      "profiles: [{pluginConfig: %}]",
      "profiles: [{pluginConfig: [{name: A, args: %}]}]",
      "extenders: %",
      "extenders: [%]",
      "extenders: [{urlPrefix: u, weight: %}]",
      "extenders: [{urlPrefix: u, managedResources: %}]",
      "extenders: [{urlPrefix: u, managedResources: [%]}]",
  };
  for (const char* t : templates) {
    for (const char* v : values) {
      std::string body = t;
      body.replace(body.find('%'), 1, v);
      SCOPED_TRACE(body);
      auto r = Parse(body + "\n");
      if (!r.ok()) {
        EXPECT_EQ(r.status().message().rfind("test.yaml", 0), 0u);
      }
    }
  }
}

}  // namespace
}  // namespace gpusched::config
