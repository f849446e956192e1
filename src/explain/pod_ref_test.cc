// SPDX-License-Identifier: Apache-2.0
#include "src/explain/pod_ref.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "src/common/interner.h"

namespace gpusched::explain {
namespace {

using Kind = PodRef::Kind;

TEST(PodRefTest, ParsesKubectlForms) {
  struct Case {
    std::string arg, ns_flag;
    Kind kind;
    std::string ns, name;
  };
  const std::vector<Case> cases = {
      {"train-0", "", Kind::kPod, "default", "train-0"},
      {"ml/train-0", "", Kind::kPod, "ml", "train-0"},
      {"ml/train-0", "ml", Kind::kPod, "ml", "train-0"},
      {"train-0", "ml", Kind::kPod, "ml", "train-0"},
      {"pod/train-0", "ml", Kind::kPod, "ml", "train-0"},
      {"deployment/web", "ml", Kind::kDeployment, "ml", "web"},
      {"deploy/web", "", Kind::kDeployment, "default", "web"},
      {"Deployments/web", "", Kind::kDeployment, "default", "web"},
      {"rs/web-6f7c9", "", Kind::kReplicaSet, "default", "web-6f7c9"},
      {"sts/db", "", Kind::kStatefulSet, "default", "db"},
      {"ds/agent", "", Kind::kDaemonSet, "default", "agent"},
      {"job/finetune", "ml", Kind::kJob, "ml", "finetune"},
      {"pg/llama", "ml", Kind::kPodGroup, "ml", "llama"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.arg + " -n " + c.ns_flag);
    auto ref = ParsePodRef(c.arg, c.ns_flag);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    EXPECT_EQ(ref->kind, c.kind);
    EXPECT_EQ(ref->ns, c.ns);
    EXPECT_EQ(ref->name, c.name);
  }
  for (const char* bad : {"", "ml/", "/x", "a/b/c", "deployment/"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ParsePodRef(bad, "").ok());
  }
  auto conflict = ParsePodRef("ml/train-0", "prod");
  ASSERT_FALSE(conflict.ok());
  EXPECT_NE(conflict.status().message().find("namespace \"ml\" disagrees with -n \"prod\""),
            std::string::npos)
      << conflict.status().message();
}

api::PodPtr MakePod(const std::string& ns, const std::string& name, const std::string& owner_kind,
                    const std::string& owner, const std::string& hash = "",
                    const std::string& node = "", const std::string& gang = "") {
  auto p = std::make_shared<api::Pod>();
  p->meta.namespace_ = ns;
  p->meta.name = name;
  if (!owner_kind.empty()) {
    p->meta.owner_references.push_back({"apps/v1", owner_kind, owner, "uid-" + owner, true});
  }
  if (!hash.empty()) p->meta.labels.Set("pod-template-hash", hash);
  p->node_name = node;
  p->gang.name = gang;
  return p;
}

TEST(PodRefTest, SelectsAWorkloadsPodsAndPrefersOneStillWaiting) {
  const std::vector<api::PodPtr> pods = {
      MakePod("ml", "web-6f7c9-b", "ReplicaSet", "web-6f7c9", "6f7c9", "gpu-1"),
      MakePod("ml", "web-6f7c9-a", "ReplicaSet", "web-6f7c9", "6f7c9", "gpu-0"),
      MakePod("ml", "web-6f7c9-c", "ReplicaSet", "web-6f7c9", "6f7c9"),
      MakePod("ml", "web-api-5d4-a", "ReplicaSet", "web-api-5d4", "5d4"),  // another Deployment
      MakePod("prod", "web-6f7c9-z", "ReplicaSet", "web-6f7c9", "6f7c9"),  // another namespace
      MakePod("ml", "finetune-0", "Job", "finetune", "", "gpu-2"),
      MakePod("ml", "llama-0", "", "", "", "", "llama"),
  };
  size_t n = 0;
  api::PodPtr web = ChooseTarget(*ParsePodRef("deployment/web", "ml"), pods, &n);
  ASSERT_NE(web, nullptr);
  EXPECT_EQ(web->meta.name, "web-6f7c9-c");  // the one not bound
  EXPECT_EQ(n, 3u);
  api::PodPtr api_pod = ChooseTarget(*ParsePodRef("deploy/web-api", "ml"), pods, &n);
  ASSERT_NE(api_pod, nullptr);
  EXPECT_EQ(api_pod->meta.name, "web-api-5d4-a");
  EXPECT_EQ(n, 1u);
  api::PodPtr job = ChooseTarget(*ParsePodRef("job/finetune", "ml"), pods, &n);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->meta.name, "finetune-0");  // all bound: the first
  EXPECT_EQ(ChooseTarget(*ParsePodRef("pg/llama", "ml"), pods)->meta.name, "llama-0");
  EXPECT_EQ(ChooseTarget(*ParsePodRef("rs/web-6f7c9", "ml"), pods)->meta.name, "web-6f7c9-c");
  EXPECT_EQ(ChooseTarget(*ParsePodRef("ml/web-6f7c9-a", ""), pods)->meta.name, "web-6f7c9-a");
  EXPECT_EQ(ChooseTarget(*ParsePodRef("deployment/db", "ml"), pods, &n), nullptr);
  EXPECT_EQ(n, 0u);
}

}  // namespace
}  // namespace gpusched::explain
