// SPDX-License-Identifier: Apache-2.0
#include "src/addons/network/watch/crd_watch.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <vector>

#include "src/cache/network_store.h"
#include "src/events/event_handler.h"

namespace gpusched::addons::network::watch {
namespace {

// A RestClient that is never called (the test drives the sinks directly).
class NoClient final : public kube::RestClient {
 public:
  common::StatusOr<kube::Response> Do(const kube::Request&) override {
    return common::UnavailableError("no client in this test");
  }
  common::Status Stream(const kube::Request&,
                        const std::function<bool(std::string_view)>&) override {
    return common::UnavailableError("no client in this test");
  }
};

boost::json::value AppGroupJson(std::string_view name, std::string_view extra = "") {
  return boost::json::parse(std::string(R"({"metadata":{"namespace":"default","name":")") +
                            std::string(name) + R"("},"spec":{"numMembers":1)" +
                            std::string(extra) + "}}");
}

TEST(CrdWatchTest, ListsReplaceWatchEventsApplyAndBadObjectsAreSkipped) {
  NoClient client;
  common::FakeClock clock;
  // The scheduler's path: the watch delivers to the event handler, which keeps the store.
  cache::Cache cache(clock);
  cache::PdbStore pdbs;
  cache::NetworkStore store;
  events::EventHandler handler({.cache = cache, .pdbs = pdbs, .network = &store});
  CrdWatch watch(client, handler, clock);
  EXPECT_FALSE(watch.HasSynced());

  std::vector<boost::json::value> items = {
      AppGroupJson("a"), AppGroupJson("b"),
      AppGroupJson("bad", R"(,"topologySortingAlgorithm":"X")")};
  watch.app_group_sink_for_test().Replace(std::move(items), "1");
  EXPECT_NE(store.Current()->FindAppGroup("default", "a"), nullptr);
  EXPECT_NE(store.Current()->FindAppGroup("default", "b"), nullptr);
  EXPECT_EQ(store.Current()->FindAppGroup("default", "bad"), nullptr);

  watch.app_group_sink_for_test().Apply(kube::informer::EventType::kDeleted, AppGroupJson("a"));
  EXPECT_EQ(store.Current()->FindAppGroup("default", "a"), nullptr);

  // A relist without "b" deletes it.
  watch.app_group_sink_for_test().Replace({AppGroupJson("c")}, "2");
  EXPECT_EQ(store.Current()->FindAppGroup("default", "b"), nullptr);
  EXPECT_NE(store.Current()->FindAppGroup("default", "c"), nullptr);

  EXPECT_FALSE(watch.HasSynced());
  watch.topology_sink_for_test().Replace({}, "1");
  EXPECT_TRUE(watch.HasSynced());
}

}  // namespace
}  // namespace gpusched::addons::network::watch
