// SPDX-License-Identifier: Apache-2.0
#include "src/kube/informer/informer.h"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <condition_variable>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "src/api/decode.h"
#include "src/api/decode_dra.h"
#include "src/api/decode_storage.h"
#include "src/api/gang_object.h"
#include "src/common/check.h"
#include "src/common/logging.h"
#include "src/common/mutex.h"

namespace gpusched::kube::informer {
namespace {

namespace json = boost::json;

// What differs between the informers: the object type, its name and collection path, whether
// it is namespaced, its decoder and how a change is told to the handler.
struct PodKind {
  using Object = api::Pod;
  static constexpr std::string_view kName = "pods";
  static constexpr std::string_view kPath = "/api/v1/pods";
  static constexpr bool kNamespaced = true;
  static common::StatusOr<api::Pod> Decode(const json::value& v) { return api::DecodePod(v); }
  static void Add(ClusterEventHandler& h, api::PodPtr p) { h.OnPodAdd(std::move(p)); }
  static void Update(ClusterEventHandler& h, api::PodPtr o, api::PodPtr n) {
    h.OnPodUpdate(std::move(o), std::move(n));
  }
  static void Delete(ClusterEventHandler& h, api::PodPtr p) { h.OnPodDelete(std::move(p)); }
};

struct NodeKind {
  using Object = api::Node;
  static constexpr std::string_view kName = "nodes";
  static constexpr std::string_view kPath = "/api/v1/nodes";
  static constexpr bool kNamespaced = false;
  static common::StatusOr<api::Node> Decode(const json::value& v) { return api::DecodeNode(v); }
  static void Add(ClusterEventHandler& h, api::NodePtr n) { h.OnNodeAdd(std::move(n)); }
  static void Update(ClusterEventHandler& h, api::NodePtr o, api::NodePtr n) {
    h.OnNodeUpdate(std::move(o), std::move(n));
  }
  static void Delete(ClusterEventHandler& h, api::NodePtr n) { h.OnNodeDelete(std::move(n)); }
};

struct PdbKind {
  using Object = api::PodDisruptionBudget;
  static constexpr std::string_view kName = "poddisruptionbudgets";
  static constexpr std::string_view kPath = "/apis/policy/v1/poddisruptionbudgets";
  static constexpr bool kNamespaced = true;
  static common::StatusOr<api::PodDisruptionBudget> Decode(const json::value& v) {
    return api::DecodePodDisruptionBudget(v);
  }
  static void Add(ClusterEventHandler& h, api::PdbPtr p) { h.OnPdbAdd(std::move(p)); }
  static void Update(ClusterEventHandler& h, api::PdbPtr o, api::PdbPtr n) {
    h.OnPdbUpdate(std::move(o), std::move(n));
  }
  static void Delete(ClusterEventHandler& h, api::PdbPtr p) { h.OnPdbDelete(std::move(p)); }
};

// Gang policy objects: each delivers its policies (one, or one per Workload pod group). Their
// decoder tells the APIs apart by apiVersion, which a built-in kind's LIST items lack
// (kNeedsApiVersion: the informer fills in its collection's).
struct GangPolicyKindBase {
  using Object = api::GangPolicyObject;
  using Ptr = std::shared_ptr<const api::GangPolicyObject>;
  static constexpr bool kNamespaced = true;
  static constexpr bool kNeedsApiVersion = true;
  static common::StatusOr<api::GangPolicyObject> Decode(const json::value& v) {
    return api::DecodeGangPolicyObject(v);
  }
  static void Add(ClusterEventHandler& h, const Ptr& o) {
    for (const api::PodGroupPtr& g : o->groups) h.OnPodGroupAdd(g);
  }
  // Policies gone from the new object are deleted; the others are updates (or additions).
  static void Update(ClusterEventHandler& h, const Ptr& old_obj, const Ptr& obj) {
    for (const api::PodGroupPtr& g : old_obj->groups) {
      if (Find(*obj, g->Key()) == nullptr) h.OnPodGroupDelete(g);
    }
    for (const api::PodGroupPtr& g : obj->groups) {
      if (api::PodGroupPtr before = Find(*old_obj, g->Key())) {
        h.OnPodGroupUpdate(std::move(before), g);
      } else {
        h.OnPodGroupAdd(g);
      }
    }
  }
  static void Delete(ClusterEventHandler& h, const Ptr& o) {
    for (const api::PodGroupPtr& g : o->groups) h.OnPodGroupDelete(g);
  }
  static api::PodGroupPtr Find(const api::GangPolicyObject& o, const std::string& key) {
    for (const api::PodGroupPtr& g : o.groups) {
      if (g->Key() == key) return g;
    }
    return nullptr;
  }
};
struct PodGroupKind : GangPolicyKindBase {
  static constexpr std::string_view kName = "podgroups.scheduling.x-k8s.io";
  static constexpr std::string_view kPath = "/apis/scheduling.x-k8s.io/v1alpha1/podgroups";
};
struct VolcanoPodGroupKind : GangPolicyKindBase {
  static constexpr std::string_view kName = "podgroups.scheduling.volcano.sh";
  static constexpr std::string_view kPath = "/apis/scheduling.volcano.sh/v1beta1/podgroups";
};
struct WorkloadKind : GangPolicyKindBase {
  static constexpr std::string_view kName = "workloads.scheduling.k8s.io";
  static constexpr std::string_view kPath = "/apis/scheduling.k8s.io/v1alpha1/workloads";
};
struct NativePodGroupKind : GangPolicyKindBase {
  static constexpr std::string_view kName = "podgroups.scheduling.k8s.io";
  static constexpr std::string_view kPath = "/apis/scheduling.k8s.io/v1beta1/podgroups";
};

// Storage objects (api/storage.h), delivered as kube::StorageObject.
template <typename T>
struct StorageKindBase {
  using Object = T;
  using Ptr = std::shared_ptr<const T>;
  static void Add(ClusterEventHandler& h, Ptr o) { h.OnStorageAdd(StorageObject(std::move(o))); }
  static void Update(ClusterEventHandler& h, Ptr o, Ptr n) {
    h.OnStorageUpdate(StorageObject(std::move(o)), StorageObject(std::move(n)));
  }
  static void Delete(ClusterEventHandler& h, Ptr o) {
    h.OnStorageDelete(StorageObject(std::move(o)));
  }
};
struct PersistentVolumeKind : StorageKindBase<api::PersistentVolume> {
  static constexpr std::string_view kName = "persistentvolumes";
  static constexpr std::string_view kPath = "/api/v1/persistentvolumes";
  static constexpr bool kNamespaced = false;
  static common::StatusOr<api::PersistentVolume> Decode(const json::value& v) {
    return api::DecodePersistentVolume(v);
  }
};
struct PersistentVolumeClaimKind : StorageKindBase<api::PersistentVolumeClaim> {
  static constexpr std::string_view kName = "persistentvolumeclaims";
  static constexpr std::string_view kPath = "/api/v1/persistentvolumeclaims";
  static constexpr bool kNamespaced = true;
  static common::StatusOr<api::PersistentVolumeClaim> Decode(const json::value& v) {
    return api::DecodePersistentVolumeClaim(v);
  }
};
struct StorageClassKind : StorageKindBase<api::StorageClass> {
  static constexpr std::string_view kName = "storageclasses";
  static constexpr std::string_view kPath = "/apis/storage.k8s.io/v1/storageclasses";
  static constexpr bool kNamespaced = false;
  static common::StatusOr<api::StorageClass> Decode(const json::value& v) {
    return api::DecodeStorageClass(v);
  }
};
struct CSINodeKind : StorageKindBase<api::CSINode> {
  static constexpr std::string_view kName = "csinodes";
  static constexpr std::string_view kPath = "/apis/storage.k8s.io/v1/csinodes";
  static constexpr bool kNamespaced = false;
  static common::StatusOr<api::CSINode> Decode(const json::value& v) {
    return api::DecodeCSINode(v);
  }
};
struct CSIDriverKind : StorageKindBase<api::CSIDriver> {
  static constexpr std::string_view kName = "csidrivers";
  static constexpr std::string_view kPath = "/apis/storage.k8s.io/v1/csidrivers";
  static constexpr bool kNamespaced = false;
  static common::StatusOr<api::CSIDriver> Decode(const json::value& v) {
    return api::DecodeCSIDriver(v);
  }
};

// DRA objects (api/dra.h), delivered as kube::DraObject.
template <typename T>
struct DraKindBase {
  using Object = T;
  using Ptr = std::shared_ptr<const T>;
  static void Add(ClusterEventHandler& h, Ptr o) { h.OnDraAdd(DraObject(std::move(o))); }
  static void Update(ClusterEventHandler& h, Ptr o, Ptr n) {
    h.OnDraUpdate(DraObject(std::move(o)), DraObject(std::move(n)));
  }
  static void Delete(ClusterEventHandler& h, Ptr o) { h.OnDraDelete(DraObject(std::move(o))); }
};
struct DeviceClassKind : DraKindBase<api::DeviceClass> {
  static constexpr std::string_view kName = "deviceclasses";
  static constexpr std::string_view kPath = "/apis/resource.k8s.io/v1/deviceclasses";
  static constexpr bool kNamespaced = false;
  static common::StatusOr<api::DeviceClass> Decode(const json::value& v) {
    return api::DecodeDeviceClass(v);
  }
};
struct ResourceSliceKind : DraKindBase<api::ResourceSlice> {
  static constexpr std::string_view kName = "resourceslices";
  static constexpr std::string_view kPath = "/apis/resource.k8s.io/v1/resourceslices";
  static constexpr bool kNamespaced = false;
  static common::StatusOr<api::ResourceSlice> Decode(const json::value& v) {
    return api::DecodeResourceSlice(v);
  }
};
struct DeviceTaintRuleKind : DraKindBase<api::DeviceTaintRule> {
  static constexpr std::string_view kName = "devicetaintrules";
  static constexpr std::string_view kPath = "/apis/resource.k8s.io/v1/devicetaintrules";
  static constexpr bool kNamespaced = false;
  static common::StatusOr<api::DeviceTaintRule> Decode(const json::value& v) {
    return api::DecodeDeviceTaintRule(v);
  }
};
struct ResourceClaimKind : DraKindBase<api::ResourceClaim> {
  static constexpr std::string_view kName = "resourceclaims";
  static constexpr std::string_view kPath = "/apis/resource.k8s.io/v1/resourceclaims";
  static constexpr bool kNamespaced = true;
  static common::StatusOr<api::ResourceClaim> Decode(const json::value& v) {
    return api::DecodeResourceClaim(v);
  }
};

// Identity of a stored object: most carry an ObjectMeta; DeviceClasses, ResourceSlices and
// DeviceTaintRules keep only their name and resourceVersion (no uid: a re-created one is an
// update).
template <typename T>
std::string_view UidOf(const T& o) {
  if constexpr (requires { o.meta.uid; }) {
    return o.meta.uid;
  } else {
    return {};
  }
}
template <typename T>
std::string_view VersionOf(const T& o) {
  if constexpr (requires { o.meta.resource_version; }) {
    return o.meta.resource_version;
  } else {
    return o.resource_version;
  }
}
template <typename T>
std::string_view NameOf(const T& o) {
  if constexpr (requires { o.meta.name; }) {
    return o.meta.name;
  } else {
    return o.name;
  }
}

// "scheduling.k8s.io/v1beta1" of "/apis/scheduling.k8s.io/v1beta1/podgroups", "v1" of
// "/api/v1/pods".
std::string GroupVersionOf(std::string_view path) {
  std::vector<std::string_view> parts;
  for (std::string_view rest = path; !rest.empty();) {
    const size_t slash = rest.find('/');
    if (slash != 0) parts.push_back(rest.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (parts.size() >= 3 && parts[0] == "apis") {
    std::string group_version(parts[1]);
    group_version += '/';
    group_version += parts[2];
    return group_version;
  }
  if (parts.size() >= 2 && parts[0] == "api") return std::string(parts[1]);
  return {};
}

template <typename K>
concept NeedsApiVersion = requires {
  K::kNeedsApiVersion;
}
&&K::kNeedsApiVersion;

template <typename K>
class TypedInformer final : public Informer, private ReflectorSink {
 public:
  using T = typename K::Object;
  using Ptr = std::shared_ptr<const T>;

  TypedInformer(RestClient& client, ClusterEventHandler& handler, const common::Clock& clock,
                ReflectorOptions options)
      : handler_(handler),
        group_version_(GroupVersionOf(options.path)),
        reflector_(client, *this, clock, std::move(options)) {}

  ~TypedInformer() override { Join(); }

  void Start() override {
    GPUSCHED_CHECK(!thread_.joinable());
    thread_ = std::thread([this] { reflector_.Run(); });
  }
  void Stop() override { reflector_.Stop(); }
  void Join() override {
    Stop();
    if (thread_.joinable()) thread_.join();
  }
  bool HasSynced() const override {
    common::MutexLock l(mu_);
    return synced_;
  }
  bool WaitForSync(common::Duration timeout) const override {
    common::MutexLock l(mu_);
    return l.WaitFor(synced_cv_, timeout, [this]() GPUSCHED_REQUIRES(mu_) { return synced_; });
  }
  size_t Size() const override {
    common::MutexLock l(mu_);
    return store_.size();
  }
  common::Status StepForTest() override { return reflector_.Step(); }
  Reflector& reflector() override { return reflector_; }

 private:
  static std::string RawKey(const json::value& obj) {
    std::string_view name = api::MetaString(obj, "name");
    if (name.empty()) return "";
    if (!K::kNamespaced) return std::string(name);
    std::string key(api::MetaString(obj, "namespace"));
    key += '/';
    key += name;
    return key;
  }

  // The stored object for `key`, or null.
  Ptr Find(const std::string& key) const {
    common::MutexLock l(mu_);
    auto it = store_.find(key);
    return it == store_.end() ? nullptr : it->second;
  }
  void Put(const std::string& key, Ptr obj) {
    common::MutexLock l(mu_);
    store_[key] = std::move(obj);
  }
  void Erase(const std::string& key) {
    common::MutexLock l(mu_);
    store_.erase(key);
  }

  common::StatusOr<Ptr> DecodeObject(const json::value& obj) {
    if constexpr (NeedsApiVersion<K>) {
      const json::object* o = obj.if_object();
      if (o != nullptr && !o->contains("apiVersion")) {  // a LIST item of a built-in kind
        json::value with = obj;
        with.as_object()["apiVersion"] = group_version_;
        return Wrap(K::Decode(with));
      }
    }
    return Wrap(K::Decode(obj));
  }
  static common::StatusOr<Ptr> Wrap(common::StatusOr<T> decoded) {
    if (!decoded.ok()) return std::move(decoded).status();
    return Ptr(std::make_shared<const T>(std::move(decoded).value()));
  }

  // Adds or replaces `key` with `obj` and tells the handler (see the table in informer.h).
  void Upsert(const std::string& key, Ptr obj) {
    Ptr old = Find(key);
    if (old == nullptr) {
      Put(key, obj);
      K::Add(handler_, std::move(obj));
      return;
    }
    if (UidOf(*old) != UidOf(*obj)) {
      Put(key, obj);
      K::Delete(handler_, std::move(old));
      K::Add(handler_, std::move(obj));
      return;
    }
    if (!VersionOf(*obj).empty() && VersionOf(*old) == VersionOf(*obj)) {
      return;
    }
    Put(key, obj);
    K::Update(handler_, std::move(old), std::move(obj));
  }

  // ReflectorSink
  void Replace(std::vector<json::value> items, std::string_view resource_version) override {
    std::vector<std::pair<std::string, Ptr>> fresh;
    fresh.reserve(items.size());
    std::unordered_set<std::string> present;
    present.reserve(items.size());
    int skipped = 0;
    for (const json::value& item : items) {
      std::string key = RawKey(item);
      if (key.empty()) {
        ++skipped;
        spdlog::warn("informer {}: skipping a listed object without metadata.name", K::kName);
        continue;
      }
      present.insert(key);
      auto obj = DecodeObject(item);
      if (!obj.ok()) {
        // Keep whatever version we had: it still exists, we just cannot read its new state.
        ++skipped;
        spdlog::warn("informer {}: skipping {}: {}", K::kName, key, obj.status().ToString());
        continue;
      }
      fresh.emplace_back(std::move(key), std::move(obj).value());
    }
    // Deletions first: objects we know that the list no longer has.
    std::vector<Ptr> gone;
    {
      common::MutexLock l(mu_);
      for (auto it = store_.begin(); it != store_.end();) {
        if (present.count(it->first) == 0) {
          gone.push_back(std::move(it->second));
          it = store_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (Ptr& obj : gone) {
      if (common::V(4)) {
        spdlog::info("informer {}: {} vanished while not watching; delivering delete", K::kName,
                     NameOf(*obj));
      }
      K::Delete(handler_, std::move(obj));
    }
    for (auto& [key, obj] : fresh) Upsert(key, std::move(obj));
    if (common::V(2) || !gone.empty() || skipped > 0) {
      spdlog::info(
          "informer {}: synced {} objects at resourceVersion {} ({} deleted while away, {} "
          "skipped)",
          K::kName, Size(), resource_version, gone.size(), skipped);
    }
    {
      common::MutexLock l(mu_);
      synced_ = true;
    }
    synced_cv_.notify_all();
  }

  void Apply(EventType type, const json::value& object) override {
    std::string key = RawKey(object);
    if (key.empty()) {
      spdlog::warn("informer {}: skipping a watch event without metadata.name", K::kName);
      return;
    }
    if (type == EventType::kDeleted) {
      Ptr old = Find(key);
      if (old == nullptr) return;  // never seen (e.g. filtered, or failed to decode)
      Ptr last = old;
      auto obj = DecodeObject(object);
      if (obj.ok() && UidOf(**obj) == UidOf(*old)) last = std::move(obj).value();
      Erase(key);
      K::Delete(handler_, std::move(last));
      return;
    }
    auto obj = DecodeObject(object);
    if (!obj.ok()) {
      spdlog::warn("informer {}: skipping event for {}: {}", K::kName, key,
                   obj.status().ToString());
      return;
    }
    Upsert(key, std::move(obj).value());
  }

  ClusterEventHandler& handler_;
  const std::string group_version_;  // of the collection: the apiVersion its items are in
  Reflector reflector_;
  std::thread thread_;
  mutable common::Mutex mu_;
  mutable std::condition_variable_any synced_cv_;
  std::unordered_map<std::string, Ptr> store_ GPUSCHED_GUARDED_BY(mu_);
  bool synced_ GPUSCHED_GUARDED_BY(mu_) = false;
};

template <typename K>
InformerPtr NewInformer(RestClient& client, ClusterEventHandler& handler,
                        const common::Clock& clock, InformerOptions options,
                        std::string_view default_field_selector) {
  ReflectorOptions r = std::move(options.reflector);
  r.name = std::string(K::kName);
  if (r.path.empty()) r.path = std::string(K::kPath);
  if (options.field_selector == "-") {
    r.field_selector.clear();
  } else if (options.field_selector.empty()) {
    r.field_selector = std::string(default_field_selector);
  } else {
    r.field_selector = std::move(options.field_selector);
  }
  r.label_selector = std::move(options.label_selector);
  return std::make_unique<TypedInformer<K>>(client, handler, clock, std::move(r));
}

}  // namespace

InformerPtr NewPodInformer(RestClient& client, ClusterEventHandler& handler,
                           const common::Clock& clock, InformerOptions options) {
  return NewInformer<PodKind>(client, handler, clock, std::move(options), kNonTerminalPodsSelector);
}

InformerPtr NewNodeInformer(RestClient& client, ClusterEventHandler& handler,
                            const common::Clock& clock, InformerOptions options) {
  return NewInformer<NodeKind>(client, handler, clock, std::move(options), "");
}

InformerPtr NewPdbInformer(RestClient& client, ClusterEventHandler& handler,
                           const common::Clock& clock, InformerOptions options) {
  return NewInformer<PdbKind>(client, handler, clock, std::move(options), "");
}

InformerPtr NewPodGroupInformer(RestClient& client, ClusterEventHandler& handler,
                                const common::Clock& clock, GangPolicyApi api,
                                InformerOptions options) {
  switch (api) {
    case GangPolicyApi::kVolcano:
      return NewInformer<VolcanoPodGroupKind>(client, handler, clock, std::move(options), "");
    case GangPolicyApi::kWorkload:
      return NewInformer<WorkloadKind>(client, handler, clock, std::move(options), "");
    case GangPolicyApi::kNative:
      return NewInformer<NativePodGroupKind>(client, handler, clock, std::move(options), "");
    case GangPolicyApi::kPodGroup: break;
  }
  return NewInformer<PodGroupKind>(client, handler, clock, std::move(options), "");
}

std::string NativePodGroupPath(RestClient& client) {
  common::StatusOr<std::string> version =
      ServedGroupVersion(client, api::kNativeGangGroup, api::kNativePodGroupApiVersions);
  if (!version.ok()) {
    spdlog::info("native PodGroups: {}; watching {}", version.status().ToString(),
                 NativePodGroupKind::kPath);
    return std::string(NativePodGroupKind::kPath);
  }
  return "/apis/" + *version + "/podgroups";
}

InformerPtr NewStorageInformer(RestClient& client, ClusterEventHandler& handler,
                               const common::Clock& clock, StorageKind kind,
                               InformerOptions options) {
  switch (kind) {
    case StorageKind::kPersistentVolumeClaim:
      return NewInformer<PersistentVolumeClaimKind>(client, handler, clock, std::move(options), "");
    case StorageKind::kStorageClass:
      return NewInformer<StorageClassKind>(client, handler, clock, std::move(options), "");
    case StorageKind::kCSINode:
      return NewInformer<CSINodeKind>(client, handler, clock, std::move(options), "");
    case StorageKind::kCSIDriver:
      return NewInformer<CSIDriverKind>(client, handler, clock, std::move(options), "");
    case StorageKind::kPersistentVolume: break;
  }
  return NewInformer<PersistentVolumeKind>(client, handler, clock, std::move(options), "");
}

InformerPtr NewDraInformer(RestClient& client, ClusterEventHandler& handler,
                           const common::Clock& clock, DraKind kind, InformerOptions options) {
  switch (kind) {
    case DraKind::kResourceSlice:
      return NewInformer<ResourceSliceKind>(client, handler, clock, std::move(options), "");
    case DraKind::kResourceClaim:
      return NewInformer<ResourceClaimKind>(client, handler, clock, std::move(options), "");
    case DraKind::kDeviceTaintRule:
      return NewInformer<DeviceTaintRuleKind>(client, handler, clock, std::move(options), "");
    case DraKind::kDeviceClass: break;
  }
  return NewInformer<DeviceClassKind>(client, handler, clock, std::move(options), "");
}

}  // namespace gpusched::kube::informer
