// SPDX-License-Identifier: Apache-2.0
// BuildExtendedResourceRequests against upstream's rules (createRequestsAndMappings in
// k8s.io/kubernetes pkg/scheduler/framework/plugins/dynamicresources, v1.37.2).
#include "src/plugins/dynamic_resources/extended_resources.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpusched::plugins::dynamic_resources {
namespace {

api::Container C(std::string name, std::vector<std::pair<std::string, int64_t>> requests,
                 bool sidecar = false) {
  api::Container c;
  c.name = std::move(name);
  c.requests.milli_cpu = 100;  // "cpu" sorts before the extended resources
  for (const auto& [r, q] : requests) c.requests.Set(common::Intern(r), q);
  c.restartable = sidecar;
  return c;
}

std::vector<BackedResource> Backed(std::vector<std::pair<std::string, std::string>> rs) {
  std::vector<BackedResource> out;
  for (auto& [r, cls] : rs) out.push_back({common::Intern(r), cls});
  return out;
}

// "<name>:<class>x<count>" per request, "<container>/<resource>-><request>" per mapping.
std::string Show(const ExtendedResourceRequests& r) {
  std::string out;
  for (const api::DeviceRequest& q : r.requests) {
    out += q.name + ":" + q.exactly->device_class + "x" + std::to_string(q.exactly->count) + " ";
  }
  out += "|";
  for (const api::ContainerExtendedResourceRequest& m : r.mappings) {
    out += " " + m.container_name + "/" + m.resource_name + "->" + m.request_name;
  }
  return out;
}

TEST(ExtendedResourceRequestsTest, OneRequestPerContainerAndResource) {
  api::Pod pod;
  pod.containers = {C("a", {{"example.com/gpu", 1}, {"example.com/gpu1", 2}}),
                    C("b", {{"example.com/gpu1", 3}})};
  const auto backed = Backed({{"example.com/gpu", "class"}, {"example.com/gpu1", "class1"}});
  // Resource index j counts the container's sorted requests: cpu is 0.
  EXPECT_EQ(Show(BuildExtendedResourceRequests(pod, backed)),
            "container-0-request-1:classx1 container-0-request-2:class1x2 "
            "container-1-request-1:class1x3 | a/example.com/gpu->container-0-request-1 "
            "a/example.com/gpu1->container-0-request-2 b/example.com/gpu1->container-1-request-1");
}

TEST(ExtendedResourceRequestsTest, OnlyTheResourcesLeftToDra) {
  api::Pod pod;
  pod.containers = {C("a", {{"example.com/gpu", 1}, {"example.com/nic", 1}})};
  EXPECT_EQ(Show(BuildExtendedResourceRequests(pod, Backed({{"example.com/nic", "nic"}}))),
            "container-0-request-2:nicx1 | a/example.com/nic->container-0-request-2");
}

TEST(ExtendedResourceRequestsTest, InitContainerReusesTheLongLivedRequests) {
  api::Pod pod;
  pod.init_containers = {C("init", {{"example.com/gpu", 2}})};
  pod.containers = {C("main", {{"example.com/gpu", 3}})};
  EXPECT_EQ(Show(BuildExtendedResourceRequests(pod, Backed({{"example.com/gpu", "class"}}))),
            "container-1-request-1:classx3 | main/example.com/gpu->container-1-request-1 "
            "init/example.com/gpu->container-1-request-1");
}

TEST(ExtendedResourceRequestsTest, InitContainerAsksForWhatTheOthersDoNotCover) {
  api::Pod pod;
  pod.init_containers = {C("init", {{"example.com/gpu", 3}})};
  pod.containers = {C("main", {{"example.com/gpu", 1}})};
  EXPECT_EQ(Show(BuildExtendedResourceRequests(pod, Backed({{"example.com/gpu", "class"}}))),
            "container-0-request-1:classx2 container-1-request-1:classx1 | "
            "main/example.com/gpu->container-1-request-1 "
            "init/example.com/gpu->container-1-request-1 "
            "init/example.com/gpu->container-0-request-1");
}

TEST(ExtendedResourceRequestsTest, InitContainersShareTheLargestRequest) {
  api::Pod pod;
  pod.init_containers = {C("i1", {{"example.com/gpu", 1}}), C("i2", {{"example.com/gpu", 2}})};
  pod.containers = {C("main", {{"example.com/cpu-thing", 1}})};
  EXPECT_EQ(Show(BuildExtendedResourceRequests(pod, Backed({{"example.com/gpu", "class"}}))),
            "container-1-request-1:classx2 | i1/example.com/gpu->container-1-request-1 "
            "i2/example.com/gpu->container-1-request-1");
}

TEST(ExtendedResourceRequestsTest, SidecarsAreLongLived) {
  api::Pod pod;
  pod.init_containers = {C("init", {{"example.com/gpu", 1}}),
                         C("sidecar", {{"example.com/gpu", 1}}, /*sidecar=*/true)};
  pod.containers = {C("main", {{"example.com/gpu", 1}})};
  // The init container (index 0) reuses the sidecar's request (index 1, after it).
  EXPECT_EQ(Show(BuildExtendedResourceRequests(pod, Backed({{"example.com/gpu", "class"}}))),
            "container-1-request-1:classx1 container-2-request-1:classx1 | "
            "sidecar/example.com/gpu->container-1-request-1 "
            "main/example.com/gpu->container-2-request-1 "
            "init/example.com/gpu->container-1-request-1");
}

TEST(ExtendedResourceRequestsTest, RequestsSortByNameAsStrings) {
  api::Pod pod;
  for (int i = 0; i < 11; ++i) pod.containers.push_back(C("c" + std::to_string(i), {}));
  pod.containers[2] = C("c2", {{"example.com/gpu", 1}});
  pod.containers[10] = C("c10", {{"example.com/gpu", 1}});
  const ExtendedResourceRequests r =
      BuildExtendedResourceRequests(pod, Backed({{"example.com/gpu", "class"}}));
  ASSERT_EQ(r.requests.size(), 2u);
  EXPECT_EQ(r.requests[0].name, "container-10-request-1");
  EXPECT_EQ(r.requests[1].name, "container-2-request-1");
}

}  // namespace
}  // namespace gpusched::plugins::dynamic_resources
