// SPDX-License-Identifier: Apache-2.0
#include "src/addons/network/watch/crd_watch.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/api/network_crd.h"

namespace gpusched::addons::network::watch {

class CrdWatch::Sink final : public kube::informer::ReflectorSink {
 public:
  enum class Kind { kAppGroup, kTopology };
  Sink(Kind kind, cache::NetworkStore& store) : kind_(kind), store_(store) {}

  void Replace(std::vector<boost::json::value> items, std::string_view /*rv*/) override {
    std::set<std::pair<std::string, std::string>> seen;
    for (const boost::json::value& item : items) {
      if (auto key = Upsert(item)) seen.insert(*key);
    }
    // Objects gone since the last list.
    auto catalog = store_.CurrentSnapshot();
    if (kind_ == Kind::kAppGroup) {
      for (const auto& [k, ag] : catalog->app_groups) {
        if (!seen.count({ag->namespace_, ag->name}))
          store_.DeleteAppGroup(ag->namespace_, ag->name);
      }
    } else {
      for (const auto& [k, nt] : catalog->topologies) {
        if (!seen.count({nt->namespace_, nt->name}))
          store_.DeleteTopology(nt->namespace_, nt->name);
      }
    }
    synced_.store(true);
  }

  void Apply(kube::informer::EventType type, const boost::json::value& object) override {
    if (type != kube::informer::EventType::kDeleted) {
      (void)Upsert(object);
      return;
    }
    const boost::json::object* o = object.if_object();
    const boost::json::value* meta = o ? o->if_contains("metadata") : nullptr;
    if (meta == nullptr || !meta->is_object()) return;
    auto str = [&](std::string_view k) -> std::string {
      const boost::json::value* v = meta->get_object().if_contains(k);
      return v && v->is_string() ? std::string(v->get_string()) : std::string();
    };
    if (kind_ == Kind::kAppGroup) {
      store_.DeleteAppGroup(str("namespace"), str("name"));
    } else {
      store_.DeleteTopology(str("namespace"), str("name"));
    }
  }

  bool synced() const { return synced_.load(); }

 private:
  std::optional<std::pair<std::string, std::string>> Upsert(const boost::json::value& item) {
    if (kind_ == Kind::kAppGroup) {
      auto ag = api::DecodeAppGroup(item);
      if (!ag.ok()) {
        spdlog::warn("NetworkLocality: ignoring {}", ag.status().message());
        return std::nullopt;
      }
      std::pair<std::string, std::string> key(ag->namespace_, ag->name);
      store_.UpsertAppGroup(std::move(*ag));
      return key;
    }
    auto nt = api::DecodeNetworkTopology(item);
    if (!nt.ok()) {
      spdlog::warn("NetworkLocality: ignoring {}", nt.status().message());
      return std::nullopt;
    }
    std::pair<std::string, std::string> key(nt->namespace_, nt->name);
    store_.UpsertTopology(std::move(*nt));
    return key;
  }

  Kind kind_;
  cache::NetworkStore& store_;
  std::atomic<bool> synced_{false};
};

CrdWatch::CrdWatch(kube::RestClient& client, cache::NetworkStore& store, const common::Clock& clock)
    : client_(client),
      app_groups_(std::make_unique<Sink>(Sink::Kind::kAppGroup, store)),
      topologies_(std::make_unique<Sink>(Sink::Kind::kTopology, store)) {
  kube::informer::ReflectorOptions ag;
  ag.name = "appgroups";
  ag.path = std::string(kAppGroupsPath);
  ag_reflector_ = std::make_unique<kube::informer::Reflector>(client, *app_groups_, clock, ag);
  kube::informer::ReflectorOptions nt;
  nt.name = "networktopologies";
  nt.path = std::string(kNetworkTopologiesPath);
  nt.seed = 2;
  nt_reflector_ = std::make_unique<kube::informer::Reflector>(client, *topologies_, clock, nt);
}

CrdWatch::~CrdWatch() {
  Stop();
  if (ag_thread_.joinable()) ag_thread_.join();
  if (nt_thread_.joinable()) nt_thread_.join();
}

void CrdWatch::Probe() {
  for (std::string_view path : {kAppGroupsPath, kNetworkTopologiesPath}) {
    kube::Request req;
    req.path = std::string(path);
    req.query = {{"limit", "1"}};
    auto resp = client_.Do(req);
    if (!resp.ok()) {
      spdlog::warn("NetworkLocality: cannot list {}: {}", path, resp.status().message());
    } else if (resp->status == 404) {
      spdlog::warn(
          "NetworkLocality: {} is not served (CRD not installed); AppGroup/NetworkTopology "
          "declarations are ignored until it is, gpusched.io/traffic annotations still work",
          path);
    } else if (resp->status >= 300) {
      spdlog::warn("NetworkLocality: listing {}: HTTP {}", path, resp->status);
    }
  }
}

void CrdWatch::Start() {
  ag_thread_ = std::thread([this] { ag_reflector_->Run(); });
  nt_thread_ = std::thread([this] { nt_reflector_->Run(); });
}

void CrdWatch::Stop() {
  ag_reflector_->Stop();
  nt_reflector_->Stop();
}

bool CrdWatch::HasSynced() const { return app_groups_->synced() && topologies_->synced(); }

kube::informer::ReflectorSink& CrdWatch::app_group_sink_for_test() { return *app_groups_; }
kube::informer::ReflectorSink& CrdWatch::topology_sink_for_test() { return *topologies_; }

}  // namespace gpusched::addons::network::watch
