// SPDX-License-Identifier: Apache-2.0
#include "src/addons/network/watch/crd_watch.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/api/decode.h"
#include "src/api/network_crd.h"

namespace gpusched::addons::network::watch {

class CrdWatch::Sink final : public kube::informer::ReflectorSink {
 public:
  enum class Kind { kAppGroup, kTopology };
  Sink(Kind kind, kube::ClusterEventHandler& handler) : kind_(kind), handler_(handler) {}

  // A relist: every object listed is an upsert, every one known before and not listed a delete.
  void Replace(std::vector<boost::json::value> items, std::string_view /*rv*/) override {
    std::set<Key> seen;
    for (const boost::json::value& item : items) {
      if (auto key = Upsert(item)) seen.insert(*key);
    }
    for (const Key& key : known_) {
      if (!seen.contains(key)) Delete(key);
    }
    known_ = std::move(seen);
    synced_.store(true);
  }

  void Apply(kube::informer::EventType type, const boost::json::value& object) override {
    if (type != kube::informer::EventType::kDeleted) {
      if (auto key = Upsert(object)) known_.insert(*key);
      return;
    }
    Key key{std::string(api::MetaString(object, "namespace")),
            std::string(api::MetaString(object, "name"))};
    known_.erase(key);
    Delete(key);
  }

  bool synced() const { return synced_.load(); }

 private:
  using Key = std::pair<std::string, std::string>;  // namespace, name

  std::optional<Key> Upsert(const boost::json::value& item) {
    if (kind_ == Kind::kAppGroup) {
      auto ag = api::DecodeAppGroup(item);
      if (!ag.ok()) {
        spdlog::warn("NetworkLocality: ignoring {}", ag.status().message());
        return std::nullopt;
      }
      Key key(ag->namespace_, ag->name);
      handler_.OnNetworkUpsert(std::make_shared<const api::AppGroup>(std::move(*ag)));
      return key;
    }
    auto nt = api::DecodeNetworkTopology(item);
    if (!nt.ok()) {
      spdlog::warn("NetworkLocality: ignoring {}", nt.status().message());
      return std::nullopt;
    }
    Key key(nt->namespace_, nt->name);
    handler_.OnNetworkUpsert(std::make_shared<const api::NetworkTopology>(std::move(*nt)));
    return key;
  }

  // A delete names the object only.
  void Delete(const Key& key) {
    if (kind_ == Kind::kAppGroup) {
      auto ag = std::make_shared<api::AppGroup>();
      ag->namespace_ = key.first;
      ag->name = key.second;
      handler_.OnNetworkDelete(api::AppGroupPtr(std::move(ag)));
    } else {
      auto nt = std::make_shared<api::NetworkTopology>();
      nt->namespace_ = key.first;
      nt->name = key.second;
      handler_.OnNetworkDelete(api::NetworkTopologyPtr(std::move(nt)));
    }
  }

  Kind kind_;
  kube::ClusterEventHandler& handler_;
  std::set<Key> known_;  // the reflector's thread only
  std::atomic<bool> synced_{false};
};

CrdWatch::CrdWatch(kube::RestClient& client, kube::ClusterEventHandler& handler,
                   const common::Clock& clock)
    : client_(client),
      app_groups_(std::make_unique<Sink>(Sink::Kind::kAppGroup, handler)),
      topologies_(std::make_unique<Sink>(Sink::Kind::kTopology, handler)) {
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
