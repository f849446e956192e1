// SPDX-License-Identifier: Apache-2.0
// One read-only listing of a live cluster for the commands that read one without scheduling in it
// (`gpusched explain POD`, `gpusched simulate --from-cluster`): every kind the scheduler's
// informers read, listed once through those informers and delivered to one
// kube::ClusterEventHandler, so a kind the scheduler reads is read here too:
//
//   nodes, pods (non-terminal)                        required: an error when not listed in time
//   poddisruptionbudgets                              policy/v1
//   podgroups.scheduling.x-k8s.io, podgroups.scheduling.volcano.sh, workloads.scheduling.k8s.io
//   podgroups.scheduling.k8s.io                       the served version (discovery)
//   persistentvolumes, persistentvolumeclaims, storageclasses, csinodes, csidrivers
//   deviceclasses, resourceslices, resourceclaims     resource.k8s.io/v1
//   devicetaintrules                                  resource.k8s.io/v1 (Kubernetes 1.37+)
//   appgroups, networktopologies                      diktyo.x-k8s.io/v1alpha1 CRDs, listed once
//                                                     (NetworkLocality; the scheduler's CRD watch)
//
// Given AdmissionObjects, it also lists, once and without a watch, what creating a pod reads
// besides the scheduler's kinds (for `simulate --from-cluster`, whose input pods are created in
// the simulation):
//
//   priorityclasses                                   scheduling.k8s.io/v1 (Priority admission)
//   resourceclaimtemplates                            resource.k8s.io/v1 (the resourceclaim
//   controller)
//
// A collection the server answers 404 for (a CRD not installed, resource.k8s.io before 1.34,
// devicetaintrules before 1.37) is `not_served`; one the credentials may not list (403) is
// `forbidden`; neither is waited for. One still unlisted at the deadline is `not_listed`. Nothing
// is written: the only requests are lists (and the informers' first watches, ended once every
// collection is settled). Runs on the calling thread plus one thread per informer, all joined
// before ListCluster returns; `handler` is called from them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/api/dra.h"
#include "src/api/gang.h"
#include "src/api/types.h"
#include "src/common/status.h"
#include "src/config/config.h"
#include "src/kube/api_client.h"

namespace gpusched::cmd {

struct ClusterListing {
  std::string description;              // "cluster https://127.0.0.1:6443 (context ...)"
  std::vector<std::string> not_served;  // resource names, as in the table above
  std::vector<std::string> forbidden;
  std::vector<std::string> not_listed;
  // "<resource>: <why>" of a listed object that does not decode, or of a list-once collection
  // that failed otherwise (the informers skip such objects, and retry, themselves).
  std::vector<std::string> skipped;

  // True when `resource` was not read (not served, forbidden or not listed).
  bool Missing(std::string_view resource) const;
  // One line per forbidden or unlisted collection: "persistentvolumes: forbidden (403) for these
  // credentials; read without them", then the skipped lines ("...; skipped"). Collections the
  // cluster does not serve say nothing.
  std::vector<std::string> Notes() const;
};

// The list-once kinds (table above).
struct AdmissionObjects {
  std::vector<api::PriorityClass> priority_classes;
  std::vector<api::ResourceClaimTemplatePtr> claim_templates;  // all namespaces
};

// The collection of a gang policy API: "podgroups.scheduling.x-k8s.io", ...
std::string_view GangPolicyResource(api::GangApi api);

// Lists the cluster named by `kubeconfig` ("" for the config's clientConnection.kubeconfig, then
// KUBECONFIG, in-cluster, ~/.kube/config) into `handler`. Returns once every collection is settled
// or `sync_timeout_s` passed; with `admission`, also lists the list-once kinds into it. Errors:
// the connection's; kUnavailable when nodes or pods were not listed in time.
common::StatusOr<ClusterListing> ListCluster(const std::string& kubeconfig,
                                             const config::SchedulerConfig& config,
                                             int sync_timeout_s, kube::ClusterEventHandler& handler,
                                             AdmissionObjects* admission = nullptr);

}  // namespace gpusched::cmd
