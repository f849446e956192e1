// SPDX-License-Identifier: Apache-2.0
#include "src/cache/volume_store.h"

namespace gpusched::cache {

using api::CompareResourceVersions;

namespace {

template <typename T>
bool OlderThan(const T& a, const T& b) {
  return CompareResourceVersions(a.meta.resource_version, b.meta.resource_version) < 0;
}

template <typename Map>
typename Map::mapped_type Find(const Map& m, std::string_view key) {
  auto it = m.find(key);
  return it == m.end() ? typename Map::mapped_type() : it->second;
}

}  // namespace

std::string VolumeStore::PvcKey(std::string_view ns, std::string_view name) {
  std::string key(ns);
  key += '/';
  key += name;
  return key;
}

void VolumeStore::UpsertPv(api::PersistentVolumePtr pv) {
  common::MutexLock l(mu_);
  Entry<api::PersistentVolume>& e = pvs_[pv->name()];
  // An informer version at least as new as the assumed one replaces it.
  if (e.assumed && !OlderThan(*pv, *e.assumed)) e.assumed.reset();
  e.informer = std::move(pv);
  ++generation_;
  changed_.notify_all();
}

void VolumeStore::DeletePv(std::string_view name) {
  common::MutexLock l(mu_);
  if (auto it = pvs_.find(name); it != pvs_.end()) pvs_.erase(it);
  ++generation_;
  changed_.notify_all();
}

void VolumeStore::UpsertPvc(api::PersistentVolumeClaimPtr pvc) {
  common::MutexLock l(mu_);
  Entry<api::PersistentVolumeClaim>& e = pvcs_[PvcKey(pvc->namespace_(), pvc->name())];
  if (e.assumed && !OlderThan(*pvc, *e.assumed)) e.assumed.reset();
  e.informer = std::move(pvc);
  ++generation_;
  changed_.notify_all();
}

void VolumeStore::DeletePvc(std::string_view ns, std::string_view name) {
  common::MutexLock l(mu_);
  pvcs_.erase(PvcKey(ns, name));
  ++generation_;
  changed_.notify_all();
}

void VolumeStore::UpsertStorageClass(api::StorageClassPtr sc) {
  common::MutexLock l(mu_);
  std::string name = sc->name;
  classes_[std::move(name)] = std::move(sc);
  ++generation_;
  changed_.notify_all();
}

void VolumeStore::DeleteStorageClass(std::string_view name) {
  common::MutexLock l(mu_);
  if (auto it = classes_.find(name); it != classes_.end()) classes_.erase(it);
  ++generation_;
  changed_.notify_all();
}

void VolumeStore::UpsertCSINode(api::CSINodePtr node) {
  common::MutexLock l(mu_);
  std::string name = node->name;
  csi_nodes_[std::move(name)] = std::move(node);
  ++generation_;
  changed_.notify_all();
}

void VolumeStore::DeleteCSINode(std::string_view name) {
  common::MutexLock l(mu_);
  if (auto it = csi_nodes_.find(name); it != csi_nodes_.end()) csi_nodes_.erase(it);
  ++generation_;
  changed_.notify_all();
}

void VolumeStore::UpsertCSIDriver(api::CSIDriverPtr driver) {
  common::MutexLock l(mu_);
  std::string name = driver->name;
  csi_drivers_[std::move(name)] = std::move(driver);
  ++generation_;
  changed_.notify_all();
}

void VolumeStore::DeleteCSIDriver(std::string_view name) {
  common::MutexLock l(mu_);
  if (auto it = csi_drivers_.find(name); it != csi_drivers_.end()) csi_drivers_.erase(it);
  ++generation_;
  changed_.notify_all();
}

void VolumeStore::set_writer(framework::VolumeWriter* writer) {
  common::MutexLock l(mu_);
  writer_ = writer;
}

api::PersistentVolumeClaimPtr VolumeStore::GetPvc(std::string_view ns,
                                                  std::string_view name) const {
  common::MutexLock l(mu_);
  auto it = pvcs_.find(PvcKey(ns, name));
  return it == pvcs_.end() ? nullptr : it->second.latest();
}

api::PersistentVolumePtr VolumeStore::GetPv(std::string_view name) const {
  common::MutexLock l(mu_);
  auto it = pvs_.find(name);
  return it == pvs_.end() ? nullptr : it->second.latest();
}

api::PersistentVolumeClaimPtr VolumeStore::InformerPvc(std::string_view ns,
                                                       std::string_view name) const {
  common::MutexLock l(mu_);
  auto it = pvcs_.find(PvcKey(ns, name));
  return it == pvcs_.end() ? nullptr : it->second.informer;
}

api::PersistentVolumePtr VolumeStore::InformerPv(std::string_view name) const {
  common::MutexLock l(mu_);
  auto it = pvs_.find(name);
  return it == pvs_.end() ? nullptr : it->second.informer;
}

api::StorageClassPtr VolumeStore::GetStorageClass(std::string_view name) const {
  common::MutexLock l(mu_);
  return Find(classes_, name);
}

api::CSINodePtr VolumeStore::GetCSINode(std::string_view name) const {
  common::MutexLock l(mu_);
  return Find(csi_nodes_, name);
}

api::CSIDriverPtr VolumeStore::GetCSIDriver(std::string_view name) const {
  common::MutexLock l(mu_);
  return Find(csi_drivers_, name);
}

std::vector<api::PersistentVolumePtr> VolumeStore::ListPvs(std::string_view storage_class) const {
  std::vector<api::PersistentVolumePtr> out;
  common::MutexLock l(mu_);
  for (const auto& [name, e] : pvs_) {
    if (e.latest()->storage_class == storage_class) out.push_back(e.latest());
  }
  return out;
}

std::vector<api::PersistentVolumeClaimPtr> VolumeStore::ListPvcs() const {
  std::vector<api::PersistentVolumeClaimPtr> out;
  common::MutexLock l(mu_);
  out.reserve(pvcs_.size());
  for (const auto& [key, e] : pvcs_) out.push_back(e.latest());
  return out;
}

common::Status VolumeStore::AssumePv(api::PersistentVolumePtr pv) {
  common::MutexLock l(mu_);
  auto it = pvs_.find(pv->name());
  if (it == pvs_.end()) {
    return common::NotFoundError("persistentvolume " + pv->name() + " not in the cache");
  }
  if (OlderThan(*pv, *it->second.latest())) {
    return common::FailedPreconditionError("persistentvolume " + pv->name() +
                                           ": assumed version is older than the cached one");
  }
  it->second.assumed = std::move(pv);
  ++generation_;
  changed_.notify_all();
  return common::Status::Ok();
}

common::Status VolumeStore::AssumePvc(api::PersistentVolumeClaimPtr pvc) {
  common::MutexLock l(mu_);
  const std::string key = PvcKey(pvc->namespace_(), pvc->name());
  auto it = pvcs_.find(key);
  if (it == pvcs_.end()) {
    return common::NotFoundError("persistentvolumeclaim " + key + " not in the cache");
  }
  if (OlderThan(*pvc, *it->second.latest())) {
    return common::FailedPreconditionError("persistentvolumeclaim " + key +
                                           ": assumed version is older than the cached one");
  }
  it->second.assumed = std::move(pvc);
  ++generation_;
  changed_.notify_all();
  return common::Status::Ok();
}

void VolumeStore::RestorePv(std::string_view name) {
  common::MutexLock l(mu_);
  if (auto it = pvs_.find(name); it != pvs_.end()) it->second.assumed.reset();
  ++generation_;
  changed_.notify_all();
}

void VolumeStore::RestorePvc(std::string_view ns, std::string_view name) {
  common::MutexLock l(mu_);
  if (auto it = pvcs_.find(PvcKey(ns, name)); it != pvcs_.end()) it->second.assumed.reset();
  ++generation_;
  changed_.notify_all();
}

common::StatusOr<std::string> VolumeStore::BindPersistentVolume(const api::PersistentVolume& pv,
                                                                bool bound_by_controller) {
  framework::VolumeWriter* writer = nullptr;
  {
    common::MutexLock l(mu_);
    writer = writer_;
  }
  if (writer == nullptr) return common::UnavailableError("no API writer for volumes");
  return writer->BindPersistentVolume(pv, bound_by_controller);
}

common::StatusOr<std::string> VolumeStore::SetSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                           std::string_view node) {
  framework::VolumeWriter* writer = nullptr;
  {
    common::MutexLock l(mu_);
    writer = writer_;
  }
  if (writer == nullptr) return common::UnavailableError("no API writer for volumes");
  return writer->SetSelectedNode(pvc, node);
}

uint64_t VolumeStore::generation() const {
  common::MutexLock l(mu_);
  return generation_;
}

uint64_t VolumeStore::WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const {
  common::MutexLock l(mu_);
  (void)l.WaitFor(changed_, timeout, [&]() GPUSCHED_REQUIRES(mu_) { return generation_ != seen; });
  return generation_;
}

}  // namespace gpusched::cache
