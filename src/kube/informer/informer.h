// SPDX-License-Identifier: Apache-2.0
// Informer: a Reflector on its own thread, a store of the decoded objects (api::Pod, api::Node,
// api::PodDisruptionBudget or api::GangPolicyObject, decoded straight from the watch JSON with
// api::DecodePod/DecodeNode/DecodePodDisruptionBudget/DecodeGangPolicyObject) and the notifications
// to a kube::ClusterEventHandler — the Scheduler in real-cluster mode.
//
// Notifications, per object key (namespace/name for pods and PDBs, name for nodes):
//   not in store, listed or ADDED/MODIFIED        -> OnXAdd(new)
//   in store, same UID, new resourceVersion       -> OnXUpdate(old, new)
//   in store, same resourceVersion                -> nothing (a relist of an unchanged object)
//   in store, other UID (deleted and re-created
//     while the watch was away)                   -> OnXDelete(old), then OnXAdd(new)
//   DELETED event                                 -> OnXDelete(final object, or the last known
//                                                    one if the final object does not decode)
//   in store but missing from a relist            -> OnXDelete(last known object): client-go's
//                                                    DeletedFinalStateUnknown, where the final
//                                                    state was never seen
// On a relist, deletions are delivered first, then additions and updates, so freed capacity is
// visible before new demand. An object that fails to decode is logged and skipped: its previous
// version (if any) stays in the store and nothing is delivered. Nothing here crashes on bad input.
//
// Threading: Start() spawns the informer's thread, which runs the reflector and calls the handler
// (serially, for this informer's kind). Stop() asks the thread to finish (it does so after the
// request in progress; see reflector.h) and returns at once; the destructor stops and joins.
// HasSynced/WaitForSync/Size/Get are thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "src/api/types.h"
#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/kube/api_client.h"
#include "src/kube/informer/reflector.h"
#include "src/kube/rest_client.h"

namespace gpusched::kube::informer {

// kube-scheduler's pod field selector: terminal pods hold no resources and are never scheduled.
inline constexpr std::string_view kNonTerminalPodsSelector =
    "status.phase!=Succeeded,status.phase!=Failed";

class Informer {
 public:
  virtual ~Informer() = default;
  // Starts the thread. REQUIRES: called once.
  virtual void Start() = 0;
  // Asks the thread to stop; returns at once. Idempotent.
  virtual void Stop() = 0;
  // Stops and joins the thread (the destructor does this too).
  virtual void Join() = 0;
  // True once the first complete list has been delivered to the handler.
  virtual bool HasSynced() const = 0;
  // Blocks until HasSynced() or `timeout` passed (real time). Returns HasSynced().
  virtual bool WaitForSync(common::Duration timeout) const = 0;
  // Objects in the store.
  virtual size_t Size() const = 0;
  // Runs one reflector step on the calling thread (tests; REQUIRES: Start() not called).
  virtual common::Status StepForTest() = 0;
  virtual Reflector& reflector() = 0;
};
using InformerPtr = std::unique_ptr<Informer>;

struct InformerOptions {
  // Pods: defaults to kNonTerminalPodsSelector; nodes, PDBs: none. Set to "-" for no selector.
  std::string field_selector;
  std::string label_selector;
  // Everything else of the reflector (name and selectors are set by the factory; so is the path
  // unless reflector.path is set, e.g. to another version of the collection).
  ReflectorOptions reflector;
};

// All pods of the cluster (GET /api/v1/pods), decoded with api::DecodePod.
// `client`, `handler` and `clock` are borrowed and must outlive the informer.
InformerPtr NewPodInformer(RestClient& client, ClusterEventHandler& handler,
                           const common::Clock& clock, InformerOptions options = {});
// All nodes (GET /api/v1/nodes), decoded with api::DecodeNode.
InformerPtr NewNodeInformer(RestClient& client, ClusterEventHandler& handler,
                            const common::Clock& clock, InformerOptions options = {});
// All PodDisruptionBudgets (GET /apis/policy/v1/poddisruptionbudgets), decoded with
// api::DecodePodDisruptionBudget and delivered to OnPdbAdd/OnPdbUpdate/OnPdbDelete.
InformerPtr NewPdbInformer(RestClient& client, ClusterEventHandler& handler,
                           const common::Clock& clock, InformerOptions options = {});
// Gang policies (api/gang.h), delivered to OnPodGroupAdd/Update/Delete, one call per policy:
//   kPodGroup  /apis/scheduling.x-k8s.io/v1alpha1/podgroups   (scheduler-plugins)
//   kVolcano   /apis/scheduling.volcano.sh/v1beta1/podgroups  (Volcano)
//   kWorkload  /apis/scheduling.k8s.io/v1alpha1/workloads     (one per pod group; an update
//              delivers the deletion of pod groups it no longer has)
//   kNative    /apis/scheduling.k8s.io/v1beta1/podgroups      (Kubernetes 1.37; another served
//              version through options.reflector.path: NativePodGroupPath)
// A collection the API server does not serve (CRD not installed, alpha API off) is retried with
// the reflector's backoff and never syncs; the scheduler does not wait for it.
enum class GangPolicyApi : uint8_t { kPodGroup, kVolcano, kWorkload, kNative };
InformerPtr NewPodGroupInformer(RestClient& client, ClusterEventHandler& handler,
                                const common::Clock& clock, GangPolicyApi api,
                                InformerOptions options = {});
// The collection of native PodGroups in the most preferred of api::kNativePodGroupApiVersions
// that the API server serves (discovery, one GET); the v1beta1 path when it serves none (or
// discovery fails: logged), so that the informer retries like any unserved collection.
std::string NativePodGroupPath(RestClient& client);

// Storage objects for the volume plugins (api/storage.h), decoded with api/decode_storage.h and
// delivered to OnStorageAdd/Update/Delete:
//   kPersistentVolume       /api/v1/persistentvolumes
//   kPersistentVolumeClaim  /api/v1/persistentvolumeclaims
//   kStorageClass           /apis/storage.k8s.io/v1/storageclasses
//   kCSINode                /apis/storage.k8s.io/v1/csinodes
//   kCSIDriver              /apis/storage.k8s.io/v1/csidrivers
enum class StorageKind : uint8_t {
  kPersistentVolume,
  kPersistentVolumeClaim,
  kStorageClass,
  kCSINode,
  kCSIDriver,
};
InformerPtr NewStorageInformer(RestClient& client, ClusterEventHandler& handler,
                               const common::Clock& clock, StorageKind kind,
                               InformerOptions options = {});

// Dynamic Resource Allocation objects for the DynamicResources plugin (api/dra.h), decoded with
// api/decode_dra.h and delivered to OnDraAdd/Update/Delete:
//   kDeviceClass      /apis/resource.k8s.io/v1/deviceclasses
//   kResourceSlice    /apis/resource.k8s.io/v1/resourceslices
//   kResourceClaim    /apis/resource.k8s.io/v1/resourceclaims    (all namespaces)
//   kDeviceTaintRule  /apis/resource.k8s.io/v1/devicetaintrules  (Kubernetes 1.37+: earlier
//                     releases serve it only in alpha and beta versions, so it never syncs there)
// DeviceClasses, ResourceSlices and DeviceTaintRules carry no uid in the model: one deleted and
// re-created while the watch was away arrives as an update. A cluster that does not serve
// resource.k8s.io/v1 (before Kubernetes 1.34) is retried with the reflector's backoff and never
// syncs, like the gang informers; the scheduler does not wait for it.
enum class DraKind : uint8_t { kDeviceClass, kResourceSlice, kResourceClaim, kDeviceTaintRule };
InformerPtr NewDraInformer(RestClient& client, ClusterEventHandler& handler,
                           const common::Clock& clock, DraKind kind, InformerOptions options = {});

}  // namespace gpusched::kube::informer
