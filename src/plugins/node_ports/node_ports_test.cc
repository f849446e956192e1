// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_ports/node_ports.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/plugin_fixture.h"

GPUSCHED_TESTING_COUNT_ALLOCATIONS();

namespace gpusched::plugins::node_ports {
namespace {

using common::Intern;
using testing::MakeNode;
using testing::MakePod;

// "UDP/127.0.0.1/8080" -> a port (upstream's test notation; an empty protocol reads as TCP, as
// the decoder leaves it).
api::ContainerPort Port(std::string_view spec) {
  const size_t a = spec.find('/');
  const size_t b = spec.rfind('/');
  api::ContainerPort p;
  const std::string_view protocol = spec.substr(0, a);
  p.protocol = Intern(protocol.empty() ? "TCP" : protocol);
  p.host_ip = std::string(spec.substr(a + 1, b - a - 1));
  p.host_port = std::stoi(std::string(spec.substr(b + 1)));
  p.container_port = p.host_port;
  return p;
}

// A pod on `node` ("" for none) whose one container binds `ports`.
api::PodPtr PodWithPorts(std::string_view node, std::vector<std::string_view> ports,
                         std::string_view name = "p") {
  api::Pod pod = MakePod("ns", name).Container("c", {}).Obj();
  pod.node_name = std::string(node);
  for (std::string_view s : ports) pod.containers[0].ports.push_back(Port(s));
  return std::make_shared<const api::Pod>(std::move(pod));
}

// A pod whose one init container (a sidecar when `sidecar`) binds TCP 8001.
api::PodPtr InitContainerPod(bool sidecar) {
  api::Pod pod = MakePod("ns", "p").Obj();
  api::Container c;
  c.name = "init";
  c.restartable = sidecar;
  c.ports.push_back(Port("TCP//8001"));
  pod.init_containers.push_back(c);
  return std::make_shared<const api::Pod>(std::move(pod));
}

// A node running `pods`, charged through NodeInfo::AddPod as the cache does.
framework::NodeInfo NodeWith(const std::vector<api::PodPtr>& pods) {
  framework::NodeInfo info;
  info.node = MakeNode("n").Ptr();
  info.index = 0;
  for (const api::PodPtr& p : pods) info.AddPod(p, api::GpuAssignment{});
  return info;
}

// Upstream's TestNodePorts, case for case.
TEST(NodePortsTest, FilterAsUpstream) {
  auto plugin = testing::MustCreate<NodePorts>();
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(plugin->Name(), names::kNodePorts);
  EXPECT_TRUE(plugin->NodeLocal());
  struct Case {
    std::string name;
    api::PodPtr pod;
    std::vector<api::PodPtr> on_node;
    framework::Code prefilter;  // kSkip: Filter is not run
    framework::Code filter;
  };
  using framework::Code;
  const std::vector<Case> cases = {
      {"a pod without host ports is skipped",
       PodWithPorts("", {}),
       {},
       Code::kSkip,
       Code::kSuccess},
      {"another port",
       PodWithPorts("m1", {"UDP/127.0.0.1/8080"}),
       {PodWithPorts("m1", {"UDP/127.0.0.1/9090"})},
       Code::kSuccess,
       Code::kSuccess},
      {"the same udp port",
       PodWithPorts("m1", {"UDP/127.0.0.1/8080"}),
       {PodWithPorts("m1", {"UDP/127.0.0.1/8080"})},
       Code::kSuccess,
       Code::kUnschedulable},
      {"the same tcp port",
       PodWithPorts("m1", {"TCP/127.0.0.1/8080"}),
       {PodWithPorts("m1", {"TCP/127.0.0.1/8080"})},
       Code::kSuccess,
       Code::kUnschedulable},
      {"a different host ip",
       PodWithPorts("m1", {"TCP/127.0.0.1/8080"}),
       {PodWithPorts("m1", {"TCP/127.0.0.2/8080"})},
       Code::kSuccess,
       Code::kSuccess},
      {"a different protocol",
       PodWithPorts("m1", {"UDP/127.0.0.1/8080"}),
       {PodWithPorts("m1", {"TCP/127.0.0.1/8080"})},
       Code::kSuccess,
       Code::kSuccess},
      {"the second udp port conflicts",
       PodWithPorts("m1", {"UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"}),
       {PodWithPorts("m1", {"UDP/127.0.0.1/8080"})},
       Code::kSuccess,
       Code::kUnschedulable},
      {"the first tcp port conflicts",
       PodWithPorts("m1", {"TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"}),
       {PodWithPorts("m1", {"TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"})},
       Code::kSuccess,
       Code::kUnschedulable},
      {"a tcp port conflicts because the pod binds 0.0.0.0",
       PodWithPorts("m1", {"TCP/0.0.0.0/8001"}),
       {PodWithPorts("m1", {"TCP/127.0.0.1/8001"})},
       Code::kSuccess,
       Code::kUnschedulable},
      {"a tcp port conflicts because the pod's second port binds 0.0.0.0",
       PodWithPorts("m1", {"TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"}),
       {PodWithPorts("m1", {"TCP/127.0.0.1/8001"})},
       Code::kSuccess,
       Code::kUnschedulable},
      {"a tcp port conflicts because the node's port binds 0.0.0.0",
       PodWithPorts("m1", {"TCP/127.0.0.1/8001"}),
       {PodWithPorts("m1", {"TCP/0.0.0.0/8001"})},
       Code::kSuccess,
       Code::kUnschedulable},
      {"a different protocol against 0.0.0.0",
       PodWithPorts("m1", {"UDP/127.0.0.1/8001"}),
       {PodWithPorts("m1", {"TCP/0.0.0.0/8001"})},
       Code::kSuccess,
       Code::kSuccess},
      {"a udp port conflicts with 0.0.0.0",
       PodWithPorts("m1", {"UDP/127.0.0.1/8001"}),
       {PodWithPorts("m1", {"TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"})},
       Code::kSuccess,
       Code::kUnschedulable},
      {"an empty hostIP is 0.0.0.0 and an empty protocol TCP",
       PodWithPorts("m1", {"//8001"}),
       {PodWithPorts("m1", {"TCP/127.0.0.1/8001"})},
       Code::kSuccess,
       Code::kUnschedulable},
      {"a non-sidecar init container's host port does not count",
       InitContainerPod(false),
       {PodWithPorts("m1", {"TCP/0.0.0.0/8001"})},
       Code::kSkip,
       Code::kSuccess},
      {"a sidecar init container's host port conflicts",
       InitContainerPod(true),
       {PodWithPorts("m1", {"TCP/0.0.0.0/8001"})},
       Code::kSuccess,
       Code::kUnschedulable},
      {"a sidecar on the node holds its port",
       PodWithPorts("m1", {"TCP/0.0.0.0/8001"}),
       {InitContainerPod(true)},
       Code::kSuccess,
       Code::kUnschedulable},
      {"a non-sidecar init container on the node holds no port",
       PodWithPorts("m1", {"TCP/0.0.0.0/8001"}),
       {InitContainerPod(false)},
       Code::kSuccess,
       Code::kSuccess},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const framework::NodeInfo node = NodeWith(c.on_node);
    const framework::Snapshot snapshot;
    framework::CycleState state;
    const framework::Status pre = plugin->PreFilter(state, *c.pod, snapshot);
    EXPECT_EQ(pre.code(), c.prefilter);
    if (pre.IsSkip()) continue;
    g_counting = true;
    g_allocations = 0;
    const framework::Status got = plugin->Filter(state, *c.pod, node);
    g_counting = false;
    EXPECT_EQ(g_allocations, 0) << "Filter must not allocate";
    EXPECT_EQ(got.code(), c.filter);
    if (c.filter == Code::kUnschedulable) {
      EXPECT_EQ(got.reason(), kReasonPortsInUse);
    }
    EXPECT_EQ(Fits(*c.pod, node), c.filter == Code::kSuccess);
  }
}

TEST(NodePortsTest, RemovingAPodFreesItsPorts) {
  const api::PodPtr a = PodWithPorts("n", {"TCP//80", "UDP/10.0.0.1/53"}, "a");
  const api::PodPtr b = PodWithPorts("n", {"TCP//8080"}, "b");
  framework::NodeInfo node = NodeWith({a, b});
  EXPECT_EQ(node.used_ports.size(), 3u);
  EXPECT_FALSE(Fits(*PodWithPorts("", {"TCP//80"}), node));
  node.RemovePodAt(static_cast<size_t>(node.IndexOfPod(*a)));
  EXPECT_TRUE(Fits(*PodWithPorts("", {"TCP//80"}), node));
  EXPECT_TRUE(Fits(*PodWithPorts("", {"UDP//53"}), node));
  EXPECT_FALSE(Fits(*PodWithPorts("", {"TCP/10.1.1.1/8080"}), node));
  ASSERT_EQ(node.used_ports.size(), 1u);
  EXPECT_EQ(node.used_ports[0].port, 8080);
}

TEST(NodePortsTest, RejectsUnknownArgs) {
  testing::FakeHandle handle;
  auto bad = NodePorts::Create(boost::json::parse(R"({"ports": 1})"), handle);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ports: unknown field"), std::string::npos)
      << bad.status().ToString();
}

TEST(NodePortsTest, RegistersUpstreamEvents) {
  auto plugin = testing::MustCreate<NodePorts>();
  ASSERT_NE(plugin, nullptr);
  const std::vector<framework::ClusterEventWithHint> events = plugin->EventsToRegister();
  ASSERT_EQ(events.size(), 3u);
  using framework::EventResource;
  EXPECT_EQ(events[0].event.resource, EventResource::kAssignedPod);
  EXPECT_EQ(events[0].event.actions, framework::kDelete);
  EXPECT_TRUE(events[0].hint);
  EXPECT_EQ(events[1].event.resource, EventResource::kUnscheduledPod);
  EXPECT_EQ(events[1].event.actions, framework::kDelete);
  EXPECT_TRUE(events[1].hint);
  EXPECT_EQ(events[2].event.resource, EventResource::kNode);
  EXPECT_EQ(events[2].event.actions, framework::kAdd);
  EXPECT_FALSE(events[2].hint);  // every added node is worth a retry
  // Node updates (labels, taints, allocatable) never free a port.
  EXPECT_FALSE(events[2].event.Matches({EventResource::kNode, framework::kUpdateNodeLabel}));
}

// Upstream's Test_isSchedulableAfterPodDeleted, plus a nominated pod.
TEST(NodePortsTest, HintAfterPodDeleted) {
  const api::PodPtr pod = PodWithPorts("", {"TCP//8080"});
  api::Pod nominated = *PodWithPorts("", {"TCP//8080"}, "nominated");
  nominated.nominated_node_name = "n";
  struct Case {
    std::string name;
    const api::Pod* deleted;
    framework::QueueingHint want;
  };
  using framework::QueueingHint;
  const api::PodPtr unscheduled = PodWithPorts("", {"TCP//8080"}, "d");
  const api::PodPtr no_ports = PodWithPorts("fake-node", {}, "d");
  const api::PodPtr unrelated = PodWithPorts("fake-node", {"TCP//8081"}, "d");
  const api::PodPtr released = PodWithPorts("fake-node", {"TCP//8080"}, "d");
  const api::PodPtr other_protocol = PodWithPorts("fake-node", {"UDP//8080"}, "d");
  const std::vector<Case> cases = {
      {"no old object: queue (never strand the pod)", nullptr, QueueingHint::kQueue},
      {"an unscheduled pod frees nothing", unscheduled.get(), QueueingHint::kSkip},
      {"a bound pod without host ports frees nothing", no_ports.get(), QueueingHint::kSkip},
      {"an unrelated host port", unrelated.get(), QueueingHint::kSkip},
      {"the same port over another protocol", other_protocol.get(), QueueingHint::kSkip},
      {"the released host port", released.get(), QueueingHint::kQueue},
      {"a nominated pod releases its port too", &nominated, QueueingHint::kQueue},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    framework::EventObjects objects;
    objects.old_pod = c.deleted;
    const framework::ClusterEvent event{framework::EventResource::kAssignedPod, framework::kDelete};
    EXPECT_EQ(HintAfterPodDeleted(*pod, event, objects), c.want);
  }
}

}  // namespace
}  // namespace gpusched::plugins::node_ports
