// SPDX-License-Identifier: Apache-2.0
#include "cmd/gpusched/cluster_list.h"

#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cmd/gpusched/wiring.h"
#include "src/addons/network/watch/crd_watch.h"
#include "src/api/decode.h"
#include "src/api/decode_dra.h"
#include "src/api/network_crd.h"
#include "src/common/clock.h"
#include "src/common/random.h"
#include "src/kube/informer/informer.h"
#include "src/kube/rest_client.h"

namespace gpusched::cmd {
namespace {

using kube::informer::InformerPtr;

struct NamedInformer {
  std::string_view resource;
  bool required = false;  // nodes and pods
  InformerPtr informer;
};

// Every informer the scheduler runs, in the order of the table in the header.
std::vector<NamedInformer> AllInformers(kube::RestClient& rest, kube::ClusterEventHandler& h,
                                        const common::Clock& clock) {
  namespace inf = kube::informer;
  std::vector<NamedInformer> out;
  out.push_back({"nodes", true, inf::NewNodeInformer(rest, h, clock)});
  out.push_back({"pods", true, inf::NewPodInformer(rest, h, clock)});
  out.push_back({"poddisruptionbudgets", false, inf::NewPdbInformer(rest, h, clock)});
  for (auto [api, gang] : {std::pair{inf::GangPolicyApi::kPodGroup, api::GangApi::kPodGroup},
                           std::pair{inf::GangPolicyApi::kVolcano, api::GangApi::kVolcano},
                           std::pair{inf::GangPolicyApi::kWorkload, api::GangApi::kWorkload}}) {
    out.push_back({GangPolicyResource(gang), false, inf::NewPodGroupInformer(rest, h, clock, api)});
  }
  inf::InformerOptions native;
  native.reflector.path = inf::NativePodGroupPath(rest);
  out.push_back(
      {GangPolicyResource(api::GangApi::kNative), false,
       inf::NewPodGroupInformer(rest, h, clock, inf::GangPolicyApi::kNative, std::move(native))});
  using inf::StorageKind;
  for (auto [kind, name] :
       {std::pair{StorageKind::kPersistentVolume, "persistentvolumes"},
        std::pair{StorageKind::kPersistentVolumeClaim, "persistentvolumeclaims"},
        std::pair{StorageKind::kStorageClass, "storageclasses"},
        std::pair{StorageKind::kCSINode, "csinodes"},
        std::pair{StorageKind::kCSIDriver, "csidrivers"}}) {
    out.push_back({name, false, inf::NewStorageInformer(rest, h, clock, kind)});
  }
  using inf::DraKind;
  for (auto [kind, name] : {std::pair{DraKind::kDeviceClass, "deviceclasses"},
                            std::pair{DraKind::kResourceSlice, "resourceslices"},
                            std::pair{DraKind::kResourceClaim, "resourceclaims"},
                            std::pair{DraKind::kDeviceTaintRule, "devicetaintrules"}}) {
    out.push_back({name, false, inf::NewDraInformer(rest, h, clock, kind)});
  }
  return out;
}

// Records why a collection was not read: 404, 403, or `why` for anything else.
void NoteRefused(std::string_view resource, const common::Status& why, ClusterListing& out) {
  switch (why.code()) {
    case common::StatusCode::kNotFound: out.not_served.emplace_back(resource); break;
    case common::StatusCode::kPermissionDenied: out.forbidden.emplace_back(resource); break;
    default: out.skipped.push_back(std::string(resource) + ": " + std::string(why.message()));
  }
}

// One LIST of `path` (a list-once kind): each item decoded with `decode` and given to `add`.
template <class Decode, class Add>
void ListOnce(kube::RestClient& rest, std::string_view resource, const std::string& path,
              Decode decode, Add add, ClusterListing& out) {
  common::StatusOr<std::vector<boost::json::value>> items = kube::ListAll(rest, path);
  if (!items.ok()) {
    NoteRefused(resource, items.status(), out);
    return;
  }
  for (const boost::json::value& item : *items) {
    auto decoded = decode(item);
    if (decoded.ok()) {
      add(*std::move(decoded));
    } else {
      out.skipped.push_back(std::string(resource) + ": " + std::string(decoded.status().message()));
    }
  }
}

void ListAdmissionObjects(kube::RestClient& rest, AdmissionObjects& into, ClusterListing& out) {
  ListOnce(
      rest, "priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses",
      api::DecodePriorityClass,
      [&](api::PriorityClass c) { into.priority_classes.push_back(std::move(c)); }, out);
  ListOnce(
      rest, "resourceclaimtemplates", "/apis/resource.k8s.io/v1/resourceclaimtemplates",
      api::DecodeResourceClaimTemplate,
      [&](api::ResourceClaimTemplate t) {
        into.claim_templates.push_back(
            std::make_shared<const api::ResourceClaimTemplate>(std::move(t)));
      },
      out);
}

// The NetworkAware CRDs NetworkLocality reads (AppGroups, NetworkTopologies), listed once and
// delivered to `handler` (the scheduler's informers have no watch for them: the CRD watch of
// `gpusched scheduler` is an add-on).
void ListNetworkObjects(kube::RestClient& rest, kube::ClusterEventHandler& handler,
                        ClusterListing& out) {
  ListOnce(
      rest, "appgroups.appgroup.diktyo.x-k8s.io",
      std::string(addons::network::watch::kAppGroupsPath), api::DecodeAppGroup,
      [&](api::AppGroup ag) {
        handler.OnNetworkUpsert(std::make_shared<const api::AppGroup>(std::move(ag)));
      },
      out);
  ListOnce(
      rest, "networktopologies.networktopology.diktyo.x-k8s.io",
      std::string(addons::network::watch::kNetworkTopologiesPath), api::DecodeNetworkTopology,
      [&](api::NetworkTopology nt) {
        handler.OnNetworkUpsert(std::make_shared<const api::NetworkTopology>(std::move(nt)));
      },
      out);
}

// Listed, or refused for good (404, 403).
bool Settled(NamedInformer& n) {
  if (n.informer->HasSynced()) return true;
  const common::StatusCode code = n.informer->reflector().last_list_error();
  return !n.required &&
         (code == common::StatusCode::kNotFound || code == common::StatusCode::kPermissionDenied);
}

}  // namespace

bool ClusterListing::Missing(std::string_view resource) const {
  for (const auto* list : {&not_served, &forbidden, &not_listed}) {
    for (const std::string& r : *list) {
      if (r == resource) return true;
    }
  }
  return false;
}

std::vector<std::string> ClusterListing::Notes() const {
  std::vector<std::string> out;
  for (const std::string& r : forbidden) {
    out.push_back(r + ": forbidden (403) for these credentials; read without them");
  }
  for (const std::string& r : not_listed) {
    out.push_back(r + ": not listed within the sync timeout; read without them");
  }
  for (const std::string& s : skipped) out.push_back(s + "; skipped");
  return out;
}

std::string_view GangPolicyResource(api::GangApi api) {
  switch (api) {
    case api::GangApi::kPodGroup: return "podgroups.scheduling.x-k8s.io";
    case api::GangApi::kVolcano: return "podgroups.scheduling.volcano.sh";
    case api::GangApi::kWorkload: return "workloads.scheduling.k8s.io";
    case api::GangApi::kNative: return "podgroups.scheduling.k8s.io";
    case api::GangApi::kNone: break;
  }
  return "";
}

common::StatusOr<ClusterListing> ListCluster(const std::string& kubeconfig,
                                             const config::SchedulerConfig& config,
                                             int sync_timeout_s, kube::ClusterEventHandler& handler,
                                             AdmissionObjects* admission) {
  common::SystemClock clock;
  GPUSCHED_ASSIGN_OR_RETURN(
      Connection conn,
      Connect(kubeconfig.empty() ? config.client_connection.kubeconfig : kubeconfig));
  common::Random http_random(TimeSeed());
  Stopper http_stop;
  GPUSCHED_ASSIGN_OR_RETURN(
      auto rest, NewRestClient(conn,
                               RestClientOptions{config.client_connection.qps,
                                                 config.client_connection.burst, nullptr},
                               clock, http_random, http_stop));
  std::vector<NamedInformer> informers = AllInformers(*rest, handler, clock);
  for (NamedInformer& n : informers) n.informer->Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(sync_timeout_s);
  for (NamedInformer& n : informers) {
    while (!Settled(n) && std::chrono::steady_clock::now() < deadline) {
      n.informer->WaitForSync(std::chrono::milliseconds(50));
    }
  }
  ClusterListing out;
  ListNetworkObjects(*rest, handler, out);
  if (admission != nullptr) ListAdmissionObjects(*rest, *admission, out);
  for (NamedInformer& n : informers) n.informer->Stop();
  rest->Cancel();
  http_stop.Stop();
  for (NamedInformer& n : informers) n.informer->Join();

  out.description = "cluster " + conn.cluster.Describe();
  for (NamedInformer& n : informers) {
    if (n.informer->HasSynced()) continue;
    if (n.required) {
      return common::UnavailableError("listing nodes and pods from " + conn.cluster.Describe() +
                                      " did not finish within " + std::to_string(sync_timeout_s) +
                                      "s (see --sync-timeout)");
    }
    switch (n.informer->reflector().last_list_error()) {
      case common::StatusCode::kNotFound: out.not_served.emplace_back(n.resource); break;
      case common::StatusCode::kPermissionDenied: out.forbidden.emplace_back(n.resource); break;
      default: out.not_listed.emplace_back(n.resource); break;
    }
  }
  return out;
}

}  // namespace gpusched::cmd
