// SPDX-License-Identifier: Apache-2.0
#include "src/extender/extender.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "src/api/decode.h"
#include "src/common/clock.h"
#include "src/plugins/in_tree_registry.h"

namespace gpusched::extender {
namespace {

namespace json = boost::json;

std::string NodeJson(const std::string& name, const std::string& model, int64_t mem_mib,
                     int count) {
  json::object n = {{"apiVersion", "v1"},
                    {"kind", "Node"},
                    {"metadata",
                     {{"name", name},
                      {"labels",
                       {{"gpu.nvidia.com/model", model},
                        {"gpu.nvidia.com/memory", std::to_string(mem_mib)},
                        {"gpu.nvidia.com/count", std::to_string(count)}}}}},
                    {"status",
                     {{"allocatable",
                       {{"cpu", "64"},
                        {"memory", "512Gi"},
                        {"pods", "110"},
                        {"nvidia.com/gpu", std::to_string(count)}}},
                      {"capacity",
                       {{"cpu", "64"},
                        {"memory", "512Gi"},
                        {"pods", "110"},
                        {"nvidia.com/gpu", std::to_string(count)}}}}}};
  return json::serialize(n);
}

// A v1 Pod asking for `gpus` whole GPUs (0: none), with optional model/memory annotations.
std::string PodJson(const std::string& name, int gpus, const std::string& model = "",
                    int64_t mem = 0) {
  json::object annotations;
  if (!model.empty()) annotations["gpu.nvidia.com/model"] = model;
  if (mem > 0) annotations["gpu.nvidia.com/memory"] = std::to_string(mem);
  json::object limits;
  json::object requests = {{"cpu", "100m"}};
  if (gpus > 0) limits["nvidia.com/gpu"] = std::to_string(gpus);
  json::object pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "default"},
        {"uid", "uid-" + name},
        {"annotations", annotations}}},
      {"spec",
       {{"containers",
         json::array{json::object{{"name", "main"},
                                  {"resources", {{"limits", limits}, {"requests", requests}}}}}}}}};
  return json::serialize(pod);
}

std::string ArgsNames(const std::string& pod, const std::vector<std::string>& names,
                      bool lower = false) {
  json::array arr;
  for (const auto& n : names) arr.emplace_back(n);
  json::object o;
  o[lower ? "pod" : "Pod"] = json::parse(pod);
  o[lower ? "nodenames" : "NodeNames"] = arr;
  return json::serialize(o);
}

std::string ArgsNodes(const std::string& pod, const std::vector<std::string>& node_jsons) {
  json::array items;
  for (const auto& n : node_jsons) items.push_back(json::parse(n));
  json::object o;
  o["Pod"] = json::parse(pod);
  o["Nodes"] = json::object{{"items", items}};
  return json::serialize(o);
}

class ExtenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterInTreePlugins(registry_).ok());
    ExtenderOptions o;
    o.assumed_ttl = std::chrono::seconds(30);
    o.workers = 4;
    auto cfg = config::DefaultSchedulerConfig();
    auto e = Extender::Create(cfg.profiles.front(), cfg.percentage_of_nodes_to_score, o,
                              ExtenderDeps{clock_, registry_,
                                           [this](const api::Pod& p, std::string_view node,
                                                  const framework::Allocation&) {
                                             binds_.fetch_add(1);
                                             if (fail_binds_)
                                               return common::UnavailableError("api down");
                                             (void)p;
                                             (void)node;
                                             return common::Status::Ok();
                                           }});
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ext_ = std::move(e).value();
    AddNode("a100", "A100-SXM4-80GB", 81920, 2);
    AddNode("t4", "Tesla-T4", 16384, 1);
    AddNode("h100", "H100-SXM5-80GB", 81920, 8);
  }

  void AddNode(const std::string& name, const std::string& model, int64_t mem, int count) {
    auto n = api::DecodeNode(json::parse(NodeJson(name, model, mem, count)));
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ext_->events().OnNodeAdd(std::make_shared<const api::Node>(std::move(n).value()));
  }

  json::value Call(http::Response r, int want_status = 200) {
    EXPECT_EQ(r.status, want_status) << r.body;
    if (r.status != 200) return nullptr;
    return json::parse(r.body);
  }

  common::FakeClock clock_;
  framework::Registry registry_;
  ExtenderPtr ext_;
  std::atomic<int> binds_{0};
  bool fail_binds_ = false;
};

std::vector<std::string> Strings(const json::value& v) {
  std::vector<std::string> out;
  if (v.is_array()) {
    for (const auto& s : v.as_array()) out.emplace_back(s.as_string());
  }
  return out;
}

std::map<std::string, std::string> Reasons(const json::value& v) {
  std::map<std::string, std::string> out;
  if (v.is_object()) {
    for (const auto& kv : v.as_object())
      out[std::string(kv.key())] = std::string(kv.value().as_string());
  }
  return out;
}

TEST_F(ExtenderTest, FilterHonoursModelAndMemory) {
  const std::vector<std::string> all = {"a100", "t4", "h100"};
  struct Case {
    std::string name;
    std::string pod;
    std::vector<std::string> want_pass;
    std::map<std::string, std::string> want_unresolvable;
    std::map<std::string, std::string> want_failed;
  };
  std::vector<Case> cases = {
      {"a pod without GPUs passes everywhere without evaluation", PodJson("cpu", 0), all, {}, {}},
      {"a model constraint keeps only that model",
       PodJson("m", 1, "A100"),
       {"a100"},
       {{"t4", "GPU model mismatch"}, {"h100", "GPU model mismatch"}},
       {}},
      {"a memory constraint rejects the small GPU as unresolvable",
       PodJson("mem", 1, "", 40000),
       {"a100", "h100"},
       {{"t4", "Insufficient GPU memory"}},
       {}},
      {"more GPUs than a node has fails there resolvably (NodeResourcesFit runs first)",
       PodJson("many", 4),
       {"h100"},
       {},
       {{"a100", "Insufficient nvidia.com/gpu"}, {"t4", "Insufficient nvidia.com/gpu"}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    json::value got = Call(ext_->Filter(ArgsNames(c.pod, all)));
    ASSERT_TRUE(got.is_object());
    EXPECT_EQ(Strings(got.at("NodeNames")), c.want_pass);
    EXPECT_EQ(Reasons(got.at("FailedAndUnresolvableNodes")), c.want_unresolvable);
    EXPECT_EQ(Reasons(got.at("FailedNodes")), c.want_failed);
    EXPECT_EQ(got.at("Error").as_string(), "");
  }
}

TEST_F(ExtenderTest, LowerCaseKeysAreAccepted) {
  json::value got =
      Call(ext_->Filter(ArgsNames(PodJson("m", 1, "T4"), {"a100", "t4"}, /*lower=*/true)));
  EXPECT_EQ(Strings(got.at("NodeNames")), std::vector<std::string>{"t4"});
}

TEST_F(ExtenderTest, UnknownNodeNameFailsResolvably) {
  json::value got = Call(ext_->Filter(ArgsNames(PodJson("p", 1), {"a100", "ghost"})));
  EXPECT_EQ(Strings(got.at("NodeNames")), std::vector<std::string>{"a100"});
  EXPECT_EQ(Reasons(got.at("FailedNodes")).count("ghost"), 1u);
}

TEST_F(ExtenderTest, FullNodeObjectsWhenNotNodeCacheCapable) {
  // "v100" is not in the cache: it is judged from the request's Node object.
  json::value got = Call(ext_->Filter(
      ArgsNodes(PodJson("m", 1, "V100"), {NodeJson("a100", "A100-SXM4-80GB", 81920, 2),
                                          NodeJson("v100", "Tesla-V100-SXM2-32GB", 32768, 4)})));
  ASSERT_TRUE(got.at("Nodes").is_object());
  const auto& items = got.at("Nodes").at("items").as_array();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].at("metadata").at("name").as_string(), "v100");
  EXPECT_TRUE(got.at("NodeNames").is_null());
  EXPECT_EQ(Reasons(got.at("FailedAndUnresolvableNodes")).count("a100"), 1u);
}

TEST_F(ExtenderTest, PrioritizeScalesToMaxExtenderPriority) {
  json::value got = Call(ext_->Prioritize(ArgsNames(PodJson("p", 1), {"a100", "t4", "h100"})));
  ASSERT_TRUE(got.is_array());
  ASSERT_EQ(got.as_array().size(), 3u);
  int64_t best = 0;
  for (const auto& hp : got.as_array()) {
    int64_t s = hp.at("Score").as_int64();
    EXPECT_GE(s, 0);
    EXPECT_LE(s, 10);
    best = std::max(best, s);
  }
  EXPECT_EQ(best, 10);
  // A pod without GPUs is not evaluated: every node scores 0.
  got = Call(ext_->Prioritize(ArgsNames(PodJson("cpu", 0), {"a100", "t4"})));
  for (const auto& hp : got.as_array()) EXPECT_EQ(hp.at("Score").as_int64(), 0);
}

TEST_F(ExtenderTest, MalformedRequestsAre400) {
  const std::string good = ArgsNames(PodJson("p", 1), {"a100"});
  struct Case {
    std::string name;
    std::string body;
  };
  std::vector<Case> cases = {
      {"an empty body", ""},
      {"not JSON", "hello"},
      {"truncated JSON", good.substr(0, good.size() / 2)},
      {"a JSON array", "[]"},
      {"no Pod", R"({"NodeNames":["a100"]})"},
      {"a Pod that is not an object", R"({"Pod":1,"NodeNames":["a100"]})"},
      {"no nodes at all", "{\"Pod\":" + PodJson("p", 1) + "}"},
      {"NodeNames not an array", "{\"Pod\":" + PodJson("p", 1) + ",\"NodeNames\":\"a100\"}"},
      {"NodeNames with a number", "{\"Pod\":" + PodJson("p", 1) + ",\"NodeNames\":[1]}"},
      {"Nodes.items not an array", "{\"Pod\":" + PodJson("p", 1) + ",\"Nodes\":{\"items\":3}}"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ext_->Filter(c.body).status, 400);
    EXPECT_EQ(ext_->Prioritize(c.body).status, 400);
    EXPECT_EQ(ext_->Preempt(c.body).status, 400);
    EXPECT_EQ(ext_->Bind(c.body).status, 400);
  }
}

std::string BindArgs(const std::string& pod, const std::string& node) {
  return json::serialize(json::object{
      {"PodName", pod}, {"PodNamespace", "default"}, {"PodUID", "uid-" + pod}, {"Node", node}});
}

TEST_F(ExtenderTest, BindAssumesAndNeverOvercommits) {
  // a100 has two GPUs: two one-GPU pods bind, the third is refused, and filter then rejects it.
  for (std::string p : {"b1", "b2", "b3"}) {
    Call(ext_->Filter(ArgsNames(PodJson(p, 1, "A100"), {"a100"})));
  }
  EXPECT_EQ(Call(ext_->Bind(BindArgs("b1", "a100"))).at("Error").as_string(), "");
  EXPECT_EQ(Call(ext_->Bind(BindArgs("b2", "a100"))).at("Error").as_string(), "");
  EXPECT_NE(Call(ext_->Bind(BindArgs("b3", "a100"))).at("Error").as_string(), "");
  EXPECT_EQ(binds_.load(), 2);
  json::value got = Call(ext_->Filter(ArgsNames(PodJson("b3", 1, "A100"), {"a100"})));
  EXPECT_EQ(Reasons(got.at("FailedNodes")).count("a100"), 1u);
  EXPECT_TRUE(ext_->IsAssumed("uid-b1"));
  EXPECT_TRUE(ext_->CheckCacheInvariants().ok());
  // Binding an unknown pod is an Error, not a crash.
  EXPECT_NE(Call(ext_->Bind(BindArgs("never-filtered", "a100"))).at("Error").as_string(), "");
}

TEST_F(ExtenderTest, FailedBindIsForgotten) {
  fail_binds_ = true;
  Call(ext_->Filter(ArgsNames(PodJson("f", 1), {"t4"})));
  EXPECT_NE(Call(ext_->Bind(BindArgs("f", "t4"))).at("Error").as_string(), "");
  EXPECT_FALSE(ext_->InCache("uid-f"));
}

TEST_F(ExtenderTest, UnconfirmedAssumptionsExpire) {
  Call(ext_->Filter(ArgsNames(PodJson("e", 1), {"t4"})));
  EXPECT_EQ(Call(ext_->Bind(BindArgs("e", "t4"))).at("Error").as_string(), "");
  EXPECT_EQ(ext_->Tick(), 0);
  clock_.Advance(std::chrono::seconds(31));
  EXPECT_EQ(ext_->Tick(), 1);
  EXPECT_FALSE(ext_->InCache("uid-e"));
  // Now the GPU is free again.
  json::value got = Call(ext_->Filter(ArgsNames(PodJson("e2", 1), {"t4"})));
  EXPECT_EQ(Strings(got.at("NodeNames")), std::vector<std::string>{"t4"});
}

TEST_F(ExtenderTest, ConcurrentFilterPrioritizeAndBind) {
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) {
    names.push_back("n" + std::to_string(i));
    AddNode(names.back(), "A100-SXM4-80GB", 81920, 4);
  }
  std::atomic<int> bad{0};
  std::atomic<int> bound{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        std::string pod = "c" + std::to_string(t) + "-" + std::to_string(i);
        std::string args = ArgsNames(PodJson(pod, 1 + (i % 2)), names);
        if (ext_->Filter(args).status != 200) bad.fetch_add(1);
        auto pr = ext_->Prioritize(args);
        if (pr.status != 200) bad.fetch_add(1);
        auto b = ext_->Bind(BindArgs(pod, names[static_cast<size_t>((t * 7 + i) % 40)]));
        if (b.status != 200) bad.fetch_add(1);
        if (b.body.find("\"Error\":\"\"") != std::string::npos) bound.fetch_add(1);
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 50; ++i) AddNode("late" + std::to_string(i), "H100", 81920, 8);
  });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(bound.load(), 0);
  EXPECT_TRUE(ext_->CheckCacheInvariants().ok()) << ext_->CheckCacheInvariants().ToString();
  EXPECT_EQ(ext_->OvercommittedPods(), 0);
}

// POSTs `body` (or raw bytes announcing `announced` bytes) to the server and returns the reply.
std::string RawPost(uint16_t port, const std::string& path, const std::string& body,
                    size_t announced) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "";
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string raw = "POST " + path +
                    " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(announced) + "\r\nConnection: close\r\n\r\n" + body;
  size_t sent = 0;
  while (sent < raw.size()) {
    ssize_t n = ::send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

TEST_F(ExtenderTest, OverHttpMalformedOversizedAndTruncated) {
  http::ServerOptions o;
  o.max_body_bytes = 64 << 10;
  o.threads = 4;
  auto s = http::Server::Create(o);
  ASSERT_TRUE(s.ok());
  ext_->RegisterRoutes(**s, "/gpusched/");
  ASSERT_TRUE((*s)->Start().ok());
  const uint16_t port = (*s)->port();
  const std::string good = ArgsNames(PodJson("h", 1, "A100"), {"a100", "t4"});
  const std::string preempt =
      "{\"Pod\":" + PodJson("h", 1) + ",\"NodeNameToMetaVictims\":{\"a100\":{\"Pods\":[]}}}";
  struct Case {
    std::string name;
    std::string path;
    std::string body;
    size_t announced;
    std::string want;
  };
  std::vector<Case> cases = {
      {"a valid filter request", "/gpusched/filter", good, good.size(), "HTTP/1.1 200"},
      {"a valid prioritize request", "/gpusched/prioritize", good, good.size(), "HTTP/1.1 200"},
      {"a valid preempt request", "/gpusched/preempt", preempt, preempt.size(), "HTTP/1.1 200"},
      {"a preempt request without victims", "/gpusched/preempt", good, good.size(), "HTTP/1.1 400"},
      {"malformed JSON", "/gpusched/filter", "{\"Pod\":", 8, "HTTP/1.1 400"},
      {"a body cut short by the client", "/gpusched/filter", good.substr(0, 40), good.size(),
       "HTTP/1.1 400"},
      {"an oversized body", "/gpusched/prioritize", std::string(70 << 10, ' '), 70 << 10,
       "HTTP/1.1 413"},
      {"an oversized body announced only", "/gpusched/filter", "", 100 << 20, "HTTP/1.1 413"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string got = RawPost(port, c.path, c.body, c.announced);
    EXPECT_EQ(got.substr(0, c.want.size()), c.want) << got.substr(0, 300);
  }
  EXPECT_EQ(RawPost(port, "/gpusched/filter", good, good.size()).substr(0, 12), "HTTP/1.1 200");
  (*s)->Stop();
}

}  // namespace
}  // namespace gpusched::extender

namespace gpusched::extender {
namespace {

// Latency of a filter+prioritize pair on 1,000 nodes (nodeCacheCapable: node names), at the
// handler level (JSON in, JSON out; no transport). Run by hand on a Release build:
//   extender_test --gtest_also_run_disabled_tests --gtest_filter='*Latency*'
TEST_F(ExtenderTest, DISABLED_FilterPrioritizeLatency1000Nodes) {
  std::vector<std::string> names;
  const char* models[] = {"A100-SXM4-80GB", "H100-SXM5-80GB", "Tesla-T4", "L40S"};
  for (int i = 0; i < 1000; ++i) {
    names.push_back("bench-" + std::to_string(i));
    AddNode(names.back(), models[i % 4], i % 4 == 2 ? 16384 : 81920, 8);
  }
  const std::string args = ArgsNames(PodJson("bench", 1, "A100|H100", 40000), names);
  // Wall time, and this thread's CPU time (which excludes time lost to other processes on a
  // shared machine).
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
  };
  std::vector<double> us;
  std::vector<double> cpu_us;
  for (int i = 0; i < 1200; ++i) {
    double c0 = cpu_now();
    auto t0 = std::chrono::steady_clock::now();
    auto f = ext_->Filter(args);
    auto p = ext_->Prioritize(args);
    auto t1 = std::chrono::steady_clock::now();
    double c1 = cpu_now();
    ASSERT_EQ(f.status, 200);
    ASSERT_EQ(p.status, 200);
    if (i >= 200) {
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      cpu_us.push_back(c1 - c0);
    }
  }
  for (auto* v : {&us, &cpu_us}) std::sort(v->begin(), v->end());
  auto pct = [](const std::vector<double>& v, double q) {
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
  };
  std::printf(
      "MEASURED filter+prioritize, 1000 nodes, %zu pairs: wall p50 %.0f us, p99 %.0f us, max %.0f "
      "us;"
      " thread CPU p50 %.0f us, p99 %.0f us\n",
      us.size(), pct(us, 0.5), pct(us, 0.99), us.back(), pct(cpu_us, 0.5), pct(cpu_us, 0.99));
}

// The bind verb runs the same binding cycle as the scheduler: Permit (and PostBind) included.
class GatePlugin final : public framework::PermitPlugin, public framework::PostBindPlugin {
 public:
  std::string_view Name() const override { return "Gate"; }
  framework::Status Permit(framework::CycleState&, const api::Pod&, std::string_view,
                           common::Duration*) override {
    return open->load() ? framework::Status::Success()
                        : framework::Status::Unschedulable("gate closed");
  }
  void PostBind(framework::CycleState&, const api::Pod&, std::string_view) override {
    post_binds->fetch_add(1);
  }
  std::atomic<bool>* open = nullptr;
  std::atomic<int>* post_binds = nullptr;
};

class ExtenderPermitTest : public ExtenderTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterInTreePlugins(registry_).ok());
    ASSERT_TRUE(registry_
                    .Register("Gate",
                              [this](const boost::json::value&,
                                     framework::Handle&) -> common::StatusOr<framework::PluginPtr> {
                                auto g = std::make_unique<GatePlugin>();
                                g->open = &open_;
                                g->post_binds = &post_binds_;
                                return framework::PluginPtr(std::move(g));
                              })
                    .ok());
    auto cfg = config::DefaultSchedulerConfig();
    cfg.profiles.front().plugins.at(config::Point::kPermit).enabled.push_back({"Gate", 0, ""});
    cfg.profiles.front().plugins.at(config::Point::kPostBind).enabled.push_back({"Gate", 0, ""});
    auto e = Extender::Create(
        cfg.profiles.front(), cfg.percentage_of_nodes_to_score, ExtenderOptions{},
        ExtenderDeps{clock_, registry_,
                     [this](const api::Pod&, std::string_view, const framework::Allocation&) {
                       binds_.fetch_add(1);
                       return common::Status::Ok();
                     }});
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ext_ = std::move(e).value();
    AddNode("t4", "Tesla-T4", 16384, 1);
  }
  std::atomic<bool> open_{false};
  std::atomic<int> post_binds_{0};
};

TEST_F(ExtenderPermitTest, BindRunsPermitAndARejectedPodIsNeitherBoundNorAssumed) {
  Call(ext_->Filter(ArgsNames(PodJson("g", 1), {"t4"})));
  std::string error(Call(ext_->Bind(BindArgs("g", "t4"))).at("Error").as_string());
  EXPECT_EQ(error, "pod default/g not reserved on t4: Unschedulable (Gate): gate closed");
  EXPECT_EQ(binds_.load(), 0) << "no API bind for a pod Permit rejected";
  EXPECT_FALSE(ext_->InCache("uid-g"));
  open_ = true;
  EXPECT_EQ(Call(ext_->Bind(BindArgs("g", "t4"))).at("Error").as_string(), "");
  EXPECT_EQ(binds_.load(), 1);
  EXPECT_EQ(post_binds_.load(), 1) << "PostBind runs after a bind through the extender";
  EXPECT_TRUE(ext_->IsAssumed("uid-g"));
}

}  // namespace
}  // namespace gpusched::extender
