// SPDX-License-Identifier: Apache-2.0
// KubeApiClient: kube::ApiClient for a real API server, over any kube::RestClient (the libcurl
// HttpRestClient in production, a fake in tests). Builds the requests kube-scheduler sends:
//
//   BindPod              POST /api/v1/namespaces/{ns}/pods/{name}/binding
//                        v1 Binding {metadata: {name, namespace, uid, annotations}, target: Node}.
//                        The annotations ride on the Binding, which the API server merges into
//                        the pod in the same update that sets spec.nodeName: one write, atomic
//                        (no pod ever carries a placement annotation without its node, or the
//                        reverse), instead of a PATCH followed by the POST.
//                        409 Conflict (a retried POST, or a bind by someone else) -> GET the pod:
//                          same uid, bound to `node`      -> OK (missing annotations are patched)
//                          bound elsewhere                -> kAborted "already bound to X"
//                          replaced (other uid)           -> kAborted
//                          gone (404)                     -> kNotFound
//                          not bound (being deleted, schedulingGates) -> kAborted, server message
//   SetPodUnschedulable  PATCH .../pods/{name}/status, application/strategic-merge-patch+json:
//                        conditions merge by type, so only PodScheduled changes. Skipped when the
//                        pod already carries the same condition (as kube-scheduler does);
//                        lastTransitionTime is kept while the status stays False.
//   CreateEvent          POST /apis/events.k8s.io/v1/namespaces/{ns}/events, named
//                        "<pod>.<eventTime in unix nanos, hex>" like client-go's recorder (the API
//                        server rejects generateName "<pod>.", which is not a DNS-1123 name).
//                        eventTime is the record's event_time (now when unset), so a resend of
//                        the same record has the same name: 409 AlreadyExists -> OK (the first
//                        send was written; its answer was lost).
//   PatchPodCondition    PATCH .../pods/{name}/status, strategic merge patch of one condition
//                        (merged by type; e.g. DisruptionTarget on a preemption victim), with
//                        lastTransitionTime (now unless given or kept, see ApiClient). Skipped
//                        when the pod already carries it. 404 -> kNotFound.
//   DeletePod            DELETE .../pods/{name} with DeleteOptions {"preconditions":{"uid":...}}
//                        (default grace period, as kube-scheduler's util.DeletePod). 404 ->
//                        kNotFound; 409 (the uid precondition failed: the pod was re-created)
//                        -> kNotFound too, since the pod we meant is gone.
//   EvictPod             POST .../pods/{name}/eviction, a policy/v1 Eviction whose deleteOptions
//                        carry the uid precondition; 429 (a PodDisruptionBudget forbids it) is
//                        not retried -> kResourceExhausted; 404 and 409 -> kNotFound.
//   SetNominatedNodeName PATCH .../pods/{name}/status, strategic merge patch
//                        {"status":{"nominatedNodeName": node}} (null clears it). Skipped when
//                        pod.nominated_node_name already equals node. 404 -> kNotFound.
//   BindPersistentVolume PATCH /api/v1/persistentvolumes/{name}, merge patch of spec.claimRef
//                        (and bound-by-controller), guarded by metadata.resourceVersion (409 ->
//                        kAborted). Returns the new resourceVersion.
//   SetPvcSelectedNode   PATCH .../persistentvolumeclaims/{name}, merge patch of the
//                        volume.kubernetes.io/selected-node annotation, guarded the same way.
//   UpdateResourceClaimStatus
//                        GET /apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}
//                        (another resourceVersion than the claim's -> kAborted, as upstream's
//                        Update would be); without the finalizer
//                        resource.kubernetes.io/delete-protection, PATCH the claim (merge patch
//                        of metadata.finalizers, the stored list plus it, guarded by
//                        resourceVersion); then PATCH .../resourceclaims/{name}/status, merge
//                        patch of status.allocation (left out when the stored claim is already
//                        allocated: it is immutable) and status.reservedFor, guarded by the
//                        resourceVersion the previous answer carried. Returns the decoded answer.
//
// JSON is built with Boost.JSON and serialised with boost::json::serialize; no user value is
// ever concatenated into JSON text. Names used in paths are checked to be DNS-1123 names.
//
// Thread safety: thread-safe if the RestClient is (HttpRestClient is); no state of its own.
#pragma once

#include <boost/json/fwd.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/kube/api_client.h"
#include "src/kube/rest_client.h"

namespace gpusched::kube::client {

struct KubeApiClientOptions {
  // events.k8s.io reportingInstance (at most 128 bytes), e.g. "gpusched-<hostname>". Default:
  // the event's reporting controller.
  std::string reporting_instance;
  // reportingController for events whose EventRecord leaves it empty.
  std::string default_reporting_controller = "gpusched";
  // When a binding POST fails, BindPod reads the pod back before reporting the failure (see
  // BindPod); if that read fails too it is repeated up to bind_verify_reads times in all,
  // `bind_verify_interval` apart, waiting through `wait` (null: one read, no waiting).
  std::function<void(common::Duration)> wait;
  int bind_verify_reads = 10;
  common::Duration bind_verify_interval = std::chrono::seconds(1);
};

class KubeApiClient final : public ApiClient {
 public:
  // `rest` and `clock` are borrowed and must outlive the client.
  KubeApiClient(RestClient& rest, const common::Clock& clock, KubeApiClientOptions options = {});

  // POSTs the binding. A failed POST may still have bound the pod: the REST client retries a
  // POST whose connection broke after it was sent, and a later attempt can then fail for another
  // reason (409, or 403 while a restarted API server loads its RBAC roles). So on any failure the
  // pod is read back: bound to `node` is success (missing annotations are patched), bound
  // elsewhere is kAborted, unbound is the POST's error. Only then may the caller release the
  // node's resources.
  common::Status BindPod(
      const api::Pod& pod, std::string_view node,
      const std::vector<std::pair<std::string, std::string>>& annotations) override;
  // `pod.nominated_node_name`, when non-empty, is written to status.nominatedNodeName too.
  common::Status SetPodUnschedulable(const api::Pod& pod, std::string_view reason,
                                     std::string_view message) override;
  common::Status CreateEvent(const EventRecord& event) override;
  common::Status PatchPodCondition(const api::Pod& pod, const api::Condition& condition) override;
  common::Status DeletePod(const api::Pod& pod) override;
  common::Status EvictPod(const api::Pod& pod) override;
  common::Status SetNominatedNodeName(const api::Pod& pod, std::string_view node) override;
  common::Status UpdatePodGroupStatus(const api::PodGroup& group,
                                      const api::PodGroupStatus& status) override;
  // PATCH /api/v1/persistentvolumes/{name}, merge patch BuildBindPvPatch.
  common::StatusOr<std::string> BindPersistentVolume(const api::PersistentVolume& pv,
                                                     bool bound_by_controller) override;
  // PATCH /api/v1/namespaces/{ns}/persistentvolumeclaims/{name}, merge patch
  // BuildSelectedNodePatch.
  common::StatusOr<std::string> SetPvcSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                   std::string_view node) override;
  // GET, PATCH (finalizer, when missing), PATCH .../status; see the table above.
  common::StatusOr<api::ResourceClaimPtr> UpdateResourceClaimStatus(
      const api::ResourceClaim& claim) override;
  // POST .../resourceclaims, body EncodeClaimForCreate.
  common::StatusOr<api::ResourceClaimPtr> CreateResourceClaim(
      const api::ResourceClaim& claim) override;
  // GET; without its finalizer, PATCH it away (merge patch, guarded by resourceVersion); DELETE
  // with the uid as precondition. 404 at any step -> OK.
  common::Status DeleteResourceClaim(const api::ResourceClaim& claim) override;
  // PATCH .../pods/{name}/status, merge patch BuildExtendedResourceClaimStatusPatch.
  common::Status SetPodExtendedResourceClaimStatus(
      const api::Pod& pod, const api::PodExtendedResourceClaimStatus& status) override;

  // GET `path` (with `query`) and parse the JSON body; a non-2xx answer is StatusFromResponse.
  common::StatusOr<boost::json::value> GetJson(
      std::string_view path, const std::vector<std::pair<std::string, std::string>>& query = {});
  // PATCH `path` with an RFC 7386 merge patch; returns the updated object.
  common::StatusOr<boost::json::value> PatchMergeJson(std::string_view path,
                                                      const boost::json::value& patch);
  // PATCH with an explicit content type (strategic-merge-patch, json-patch).
  common::StatusOr<boost::json::value> PatchJson(std::string_view path,
                                                 const boost::json::value& patch,
                                                 std::string_view content_type);
  // POST `body` to `path`; returns the created object (or the API's Status for subresources).
  common::StatusOr<boost::json::value> PostJson(std::string_view path,
                                                const boost::json::value& body);

 private:
  // Sends `request`; a non-2xx answer is StatusFromResponse. Send parses the answer's body;
  // Write does not (the writes of the binding cycle need only the status: parsing the returned
  // object cost ~8 % of the client's CPU per request).
  common::StatusOr<boost::json::value> Send(Request request);
  common::Status Write(Request request);
  common::Status VerifyFailedBind(
      const api::Pod& pod, std::string_view node,
      const std::vector<std::pair<std::string, std::string>>& annotations,
      const common::Status& failure);

  RestClient& rest_;
  const common::Clock& clock_;
  const KubeApiClientOptions options_;
};

// Request builders (exposed for tests).
std::string PodPath(std::string_view ns, std::string_view name);  // /api/v1/namespaces/ns/pods/name
boost::json::object BuildBinding(
    const api::Pod& pod, std::string_view node,
    const std::vector<std::pair<std::string, std::string>>& annotations);
// The strategic merge patch of SetPodUnschedulable; an empty object when nothing would change.
boost::json::object BuildUnschedulablePatch(const api::Pod& pod, std::string_view reason,
                                            std::string_view message, common::TimePoint now);
// The strategic merge patch of PatchPodCondition; an empty object when nothing would change.
boost::json::object BuildConditionPatch(const api::Pod& pod, const api::Condition& condition,
                                        common::TimePoint now);
// The DeleteOptions body of DeletePod: {"preconditions":{"uid":...}}, {} without a uid.
boost::json::object BuildDeleteOptions(const api::Pod& pod);
// The body of EvictPod: {"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name",
// "namespace"},"deleteOptions": BuildDeleteOptions(pod)}.
boost::json::object BuildEviction(const api::Pod& pod);
// The strategic merge patch of SetNominatedNodeName (an empty `node` is null).
boost::json::object BuildNominatedNodePatch(std::string_view node);
// The merge patch of BindPersistentVolume: {"metadata":{"resourceVersion", "annotations":
// {"pv.kubernetes.io/bound-by-controller":"yes"} when bound_by_controller}, "spec":{"claimRef":
// {"kind","apiVersion","namespace","name","uid"}}}.
boost::json::object BuildBindPvPatch(const api::PersistentVolume& pv, bool bound_by_controller);
// The merge patch of SetPvcSelectedNode: {"metadata":{"resourceVersion","annotations":
// {"volume.kubernetes.io/selected-node": node}}}.
boost::json::object BuildSelectedNodePatch(const api::PersistentVolumeClaim& pvc,
                                           std::string_view node);

// The finalizer a claim carries while it is allocated (resourceapi.Finalizer).
inline constexpr std::string_view kResourceClaimFinalizer =
    "resource.kubernetes.io/delete-protection";
// /apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}
std::string ResourceClaimPath(std::string_view ns, std::string_view name);
// The merge patch that adds kResourceClaimFinalizer to `stored` (the claim's JSON as read):
// {"metadata":{"resourceVersion": stored's, "finalizers": [stored's..., finalizer]}}; an empty
// object when `stored` already has it.
boost::json::object BuildClaimFinalizerPatch(const boost::json::value& stored);
// status.allocation as JSON: {"devices":{"results":[{"request","driver","pool","device",
// "adminAccess" (only when true)}]}, "nodeSelector": {"nodeSelectorTerms": [...]}}.
boost::json::object EncodeAllocation(const api::AllocationResult& allocation);
// The merge patch of the claim's status subresource: {"metadata":{"resourceVersion"},
// "status":{"allocation" (when `with_allocation` and the claim has one), "reservedFor":
// [{"apiGroup" (only when not the core group: a PodGroup's), "resource","name","uid"}]}}.
boost::json::object BuildClaimStatusPatch(const api::ResourceClaim& claim,
                                          std::string_view resource_version, bool with_allocation);

// A new claim as POST sends it: {"apiVersion","kind","metadata":{"name","namespace",
// "ownerReferences","annotations"},"spec":{"devices":{"requests":[{"name","exactly":
// {"deviceClassName","allocationMode","count"}}]}}} (the fields of an extended resource claim).
boost::json::object EncodeClaimForCreate(const api::ResourceClaim& claim);
// {"status":{"extendedResourceClaimStatus":{"requestMappings":[{"containerName","resourceName",
// "requestName"}],"resourceClaimName"}}}.
boost::json::object BuildExtendedResourceClaimStatusPatch(
    const api::PodExtendedResourceClaimStatus& status);

// The merge patch of a PodGroup's status subresource: {"status": {"phase", "running",
// "succeeded", "failed"}}, and for a Volcano PodGroup the Unschedulable condition (True with its
// reason and message while the gang waits, False once placed). A native PodGroup's is a
// strategic merge patch of one condition, PodGroupInitiallyScheduled: True (reason Scheduled)
// once placed, False with the status's reason and message while it waits.
boost::json::object BuildPodGroupStatusPatch(const api::PodGroup& group,
                                             const api::PodGroupStatus& status,
                                             common::TimePoint now);
// /apis/<group>/<version>/namespaces/<ns>/podgroups/<name>/status for the PodGroup's API (a
// native PodGroup's: the version it was read in).
std::string PodGroupStatusPath(const api::PodGroup& group);
boost::json::object BuildEvent(const EventRecord& event, std::string_view reporting_instance,
                               common::TimePoint now);

}  // namespace gpusched::kube::client
