// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/helper/topology_domains.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/testing/builders.h"

namespace gpusched::plugins::helper {
namespace {

constexpr std::string_view kZone = "topology.kubernetes.io/zone";

// A snapshot with one slot per entry; an empty zone means a node without the label, and "-" an
// empty slot.
framework::Snapshot SnapshotOfZones(const std::vector<std::string>& zones) {
  framework::Snapshot snapshot;
  int32_t valid = 0;
  for (size_t i = 0; i < zones.size(); ++i) {
    framework::NodeInfo& info = snapshot.MutableSlotForCache(static_cast<framework::NodeIndex>(i));
    info.index = static_cast<framework::NodeIndex>(i);
    if (zones[i] == "-") continue;
    auto b = testing::MakeNode("n" + std::to_string(i));
    if (!zones[i].empty()) b.Label(kZone, zones[i]);
    info.node = b.Ptr();
    ++valid;
  }
  snapshot.SetNodeCountForCache(valid, 1);
  return snapshot;
}

TEST(BuildDomainIndexTest, Table) {
  struct Case {
    std::string name;
    std::vector<std::string> zones;
    int32_t want_domains;
  };
  const std::vector<Case> cases = {
      {"an empty snapshot has no domains", {}, 0},
      {"nodes without the key have no domain", {"", ""}, 0},
      {"equal values share one domain", {"a", "a", "a"}, 1},
      {"distinct values get distinct domains", {"a", "b", "c"}, 3},
      {"empty slots and unlabelled nodes are skipped", {"a", "-", "", "b", "a"}, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    framework::Snapshot snapshot = SnapshotOfZones(c.zones);
    const DomainIndex idx = BuildDomainIndex(snapshot.nodes(), common::Intern(kZone));
    EXPECT_EQ(idx.key, common::Intern(kZone));
    EXPECT_EQ(idx.num_domains, c.want_domains);
    ASSERT_EQ(idx.node_domain.size(), c.zones.size());
    for (size_t i = 0; i < c.zones.size(); ++i) {
      const bool has = c.zones[i] != "-" && !c.zones[i].empty();
      if (!has) {
        EXPECT_EQ(idx.node_domain[i], -1) << "slot " << i;
        continue;
      }
      EXPECT_GE(idx.node_domain[i], 0) << "slot " << i;
      EXPECT_LT(idx.node_domain[i], c.want_domains) << "slot " << i;
      for (size_t j = 0; j < c.zones.size(); ++j) {
        if (c.zones[j] == "-" || c.zones[j].empty()) continue;
        EXPECT_EQ(idx.node_domain[i] == idx.node_domain[j], c.zones[i] == c.zones[j])
            << "slots " << i << " and " << j;
      }
    }
  }
}

TEST(TopologyDomainsTest, MemoIsKeptOnlyForTheSameVersionedSnapshot) {
  framework::Snapshot snapshot = SnapshotOfZones({"a", "b"});
  const common::Atom zone = common::Intern(kZone);
  TopologyDomains memo;

  // A snapshot without a node-set version is never trusted.
  EXPECT_FALSE(memo.Refresh(snapshot));
  EXPECT_FALSE(memo.Refresh(snapshot));

  snapshot.BumpNodeSetVersionForCache();
  EXPECT_FALSE(memo.Refresh(snapshot));
  const DomainIndex* first = &memo.For(snapshot, zone);
  EXPECT_EQ(first->num_domains, 2);
  EXPECT_EQ(&memo.For(snapshot, zone), first) << "the same key is built once";
  const DomainIndex& rack = memo.For(snapshot, common::Intern("example.com/rack"));
  EXPECT_EQ(rack.num_domains, 0);
  EXPECT_EQ(rack.node_domain, (std::vector<int32_t>{-1, -1}));
  EXPECT_EQ(&memo.For(snapshot, zone), first) << "a later key does not move earlier ones";

  EXPECT_TRUE(memo.Refresh(snapshot));
  EXPECT_EQ(&memo.For(snapshot, zone), first);

  // A changed node set (new version, more slots) drops the memo and rebuilds from the snapshot.
  framework::NodeInfo& added = snapshot.MutableSlotForCache(2);
  added.index = 2;
  added.node = testing::MakeNode("n2").Label(kZone, "c").Ptr();
  snapshot.BumpNodeSetVersionForCache();
  EXPECT_FALSE(memo.Refresh(snapshot));
  EXPECT_EQ(memo.For(snapshot, zone).num_domains, 3);
  EXPECT_TRUE(memo.Refresh(snapshot));

  // Another snapshot with the same version is not the same memo.
  framework::Snapshot other = SnapshotOfZones({"a"});
  other.BumpNodeSetVersionForCache();
  other.BumpNodeSetVersionForCache();
  EXPECT_FALSE(memo.Refresh(other));
  EXPECT_EQ(memo.For(other, zone).num_domains, 1);
}

}  // namespace
}  // namespace gpusched::plugins::helper
