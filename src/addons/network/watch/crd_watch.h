// SPDX-License-Identifier: Apache-2.0
// CrdWatch: delivers the cluster's AppGroup and NetworkTopology objects (the scheduler-plugins
// NetworkAware CRDs) to a kube::ClusterEventHandler (the scheduler's events::EventHandler, which
// keeps its NetworkStore), through the generic list/watch Reflector on their collection paths:
//
//   /apis/appgroup.diktyo.x-k8s.io/v1alpha1/appgroups
//   /apis/networktopology.diktyo.x-k8s.io/v1alpha1/networktopologies
//
// Each object is decoded with api::DecodeAppGroup / DecodeNetworkTopology; one that fails to
// decode is logged with the decoder's message (object, field path, value) and skipped — its
// previous version, if any, stays in the store. A relist upserts the kind's objects and deletes
// those delivered before and no longer listed (deletions missed while the watch was away). A
// collection the API server does not serve (CRD not installed: 404) is a warning, not an error: the
// reflector keeps retrying with backoff, so installing the CRD later is picked up, and
// NetworkLocality works from annotations meanwhile.
//
// Threading: Start() spawns one thread per kind; Stop() asks them to finish and returns at once;
// the destructor stops and joins. The handler must be thread-safe (one thread per kind calls it).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/kube/api_client.h"
#include "src/kube/informer/reflector.h"
#include "src/kube/rest_client.h"

namespace gpusched::addons::network::watch {

inline constexpr std::string_view kAppGroupsPath =
    "/apis/appgroup.diktyo.x-k8s.io/v1alpha1/appgroups";
inline constexpr std::string_view kNetworkTopologiesPath =
    "/apis/networktopology.diktyo.x-k8s.io/v1alpha1/networktopologies";

class CrdWatch {
 public:
  // `client`, `store` and `clock` are borrowed and must outlive the watch.
  CrdWatch(kube::RestClient& client, kube::ClusterEventHandler& handler,
           const common::Clock& clock);
  ~CrdWatch();
  CrdWatch(const CrdWatch&) = delete;
  CrdWatch& operator=(const CrdWatch&) = delete;

  // GETs each collection once (limit=1) and logs a warning for a missing CRD (404) or any other
  // failure. Never fails the caller.
  void Probe();
  void Start();
  void Stop();
  // True once both kinds were listed at least once.
  bool HasSynced() const;

  // Test hooks: apply a list or an event as the reflector would.
  kube::informer::ReflectorSink& app_group_sink_for_test();
  kube::informer::ReflectorSink& topology_sink_for_test();

 private:
  class Sink;
  kube::RestClient& client_;
  std::unique_ptr<Sink> app_groups_;
  std::unique_ptr<Sink> topologies_;
  std::unique_ptr<kube::informer::Reflector> ag_reflector_;
  std::unique_ptr<kube::informer::Reflector> nt_reflector_;
  std::thread ag_thread_;
  std::thread nt_thread_;
};

}  // namespace gpusched::addons::network::watch
