// SPDX-License-Identifier: Apache-2.0
// Decoders of the storage objects the volume plugins read (storage.h): PersistentVolume and
// PersistentVolumeClaim (v1), StorageClass, CSINode and CSIDriver (storage.k8s.io/v1), from the
// API server's JSON (or a YAML manifest converted to JSON) straight into the compact structs.
// As decode.h: every field is read, the first error is returned, naming the object, the field
// path and the value, e.g.
//   persistentvolume pv-1: spec.capacity.storage: invalid quantity "ten"
//   storageclass fast: volumeBindingMode: invalid value "Later" (want Immediate or
//   WaitForFirstConsumer)
// A missing volumeBindingMode is Immediate (the API server's default). Nothing here throws.
#pragma once

#include <boost/json/fwd.hpp>

#include "src/api/storage.h"
#include "src/common/status.h"

namespace gpusched::api {

common::StatusOr<PersistentVolume> DecodePersistentVolume(const boost::json::value& json);
common::StatusOr<PersistentVolumeClaim> DecodePersistentVolumeClaim(const boost::json::value& json);
common::StatusOr<StorageClass> DecodeStorageClass(const boost::json::value& json);
common::StatusOr<CSINode> DecodeCSINode(const boost::json::value& json);
common::StatusOr<CSIDriver> DecodeCSIDriver(const boost::json::value& json);

}  // namespace gpusched::api
