// SPDX-License-Identifier: Apache-2.0
#include "src/api/types.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpusched::api {
namespace {

using common::Intern;

Toleration Tol(std::string_view key, Toleration::Op op, std::string_view value,
               TaintEffect effect) {
  Toleration t;
  t.key = Intern(key);
  t.op = op;
  t.value = Intern(value);
  t.effect = effect;
  return t;
}

TEST(TolerationTest, ToleratesWithKubernetesSemantics) {
  using Op = Toleration::Op;
  const Taint gpu{Intern("nvidia.com/gpu"), Intern("present"), TaintEffect::kNoSchedule};
  const Taint gpu_exec{Intern("nvidia.com/gpu"), Intern("present"), TaintEffect::kNoExecute};
  struct Case {
    std::string name;
    Toleration tol;
    Taint taint;
    bool want;
  };
  const std::vector<Case> cases = {
      {"an empty key with Exists tolerates every taint",
       Tol("", Op::kExists, "", TaintEffect::kAll), gpu, true},
      {"an empty key with Exists and an effect tolerates only that effect",
       Tol("", Op::kExists, "", TaintEffect::kNoExecute), gpu, false},
      {"Equal with the same key, value and effect tolerates",
       Tol("nvidia.com/gpu", Op::kEqual, "present", TaintEffect::kNoSchedule), gpu, true},
      {"Equal with another value does not tolerate",
       Tol("nvidia.com/gpu", Op::kEqual, "absent", TaintEffect::kNoSchedule), gpu, false},
      {"Equal with an empty value does not tolerate a valued taint",
       Tol("nvidia.com/gpu", Op::kEqual, "", TaintEffect::kAll), gpu, false},
      {"Exists ignores the value",
       Tol("nvidia.com/gpu", Op::kExists, "whatever", TaintEffect::kAll), gpu, true},
      {"an empty effect matches every effect",
       Tol("nvidia.com/gpu", Op::kEqual, "present", TaintEffect::kAll), gpu_exec, true},
      {"a different effect does not tolerate",
       Tol("nvidia.com/gpu", Op::kExists, "", TaintEffect::kPreferNoSchedule), gpu, false},
      {"a different key does not tolerate", Tol("dedicated", Op::kExists, "", TaintEffect::kAll),
       gpu, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.tol.Tolerates(c.taint), c.want);
  }
}

Container C(int64_t milli_cpu, int64_t memory, bool restartable = false) {
  Container c;
  c.requests.milli_cpu = milli_cpu;
  c.requests.memory = memory;
  c.restartable = restartable;
  return c;
}

TEST(EffectiveRequestsTest, FollowsKubeSchedulerPodRequests) {
  struct Case {
    std::string name;
    std::vector<Container> containers;
    std::vector<Container> init;
    ResourceList overhead;
    int64_t want_cpu;
    int64_t want_memory;
    bool want_sidecars;
  };
  ResourceList overhead;
  overhead.milli_cpu = 250;
  overhead.memory = 64;
  const std::vector<Case> cases = {
      {"a pod without containers requests only a pod slot", {}, {}, {}, 0, 0, false},
      {"containers are summed", {C(100, 10), C(200, 20)}, {}, {}, 300, 30, false},
      {"a larger init container dominates", {C(100, 10)}, {C(500, 5)}, {}, 500, 10, false},
      {"init containers are not summed with each other",
       {C(100, 10)},
       {C(300, 5), C(400, 5)},
       {},
       400,
       10,
       false},
      {"a sidecar adds to the running containers",
       {C(100, 10)},
       {C(50, 5, true)},
       {},
       150,
       15,
       true},
      {"an init container after a sidecar runs beside it",
       {C(100, 10)},
       {C(50, 5, true), C(500, 5)},
       {},
       550,
       15,
       true},
      {"an init container before a sidecar runs alone",
       {C(100, 10)},
       {C(500, 5), C(50, 5, true)},
       {},
       500,
       15,
       true},
      {"overhead is added last", {C(100, 10)}, {C(500, 5)}, overhead, 750, 74, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Pod pod;
    pod.containers = c.containers;
    pod.init_containers = c.init;
    pod.overhead = c.overhead;
    ComputeEffectiveRequests(pod);
    EXPECT_EQ(pod.requests.milli_cpu, c.want_cpu);
    EXPECT_EQ(pod.requests.memory, c.want_memory);
    EXPECT_EQ(pod.requests.pods, 1);
    EXPECT_EQ(pod.has_restartable_init_containers, c.want_sidecars);
  }
}

TEST(ObjectMetaTest, AnnotationLooksUpSortedKeys) {
  ObjectMeta meta;
  meta.annotations = {{"a", "1"}, {"gpu.nvidia.com/model", "A100"}, {"z", ""}};
  struct Case {
    std::string name;
    std::string key;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"a present key returns its value", "gpu.nvidia.com/model", "A100"},
      {"the first key is found", "a", "1"},
      {"an empty value is still present", "z", ""},
      {"an absent key returns null", "missing", nullptr},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string* v = meta.Annotation(c.key);
    if (c.want == nullptr) {
      EXPECT_EQ(v, nullptr);
    } else {
      ASSERT_NE(v, nullptr);
      EXPECT_EQ(*v, c.want);
    }
  }
}

TEST(PodTest, KeyPhaseNameAndTerminal) {
  Pod pod;
  pod.meta.namespace_ = "ns";
  pod.meta.name = "p";
  EXPECT_EQ(pod.Key(), "ns/p");
  struct Case {
    PodPhase phase;
    std::string name;
    bool terminal;
  };
  const std::vector<Case> cases = {
      {PodPhase::kPending, "Pending", false},    {PodPhase::kRunning, "Running", false},
      {PodPhase::kSucceeded, "Succeeded", true}, {PodPhase::kFailed, "Failed", true},
      {PodPhase::kUnknown, "Unknown", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    pod.phase = c.phase;
    EXPECT_EQ(PodPhaseName(c.phase), c.name);
    EXPECT_EQ(pod.Terminal(), c.terminal);
  }
}

TEST(ObjectMetaTest, ResourceVersionsCompareNumerically) {
  EXPECT_LT(CompareResourceVersions("9", "10"), 0);
  EXPECT_EQ(CompareResourceVersions("10", "10"), 0);
  EXPECT_GT(CompareResourceVersions("b", "a"), 0);
}

}  // namespace
}  // namespace gpusched::api
