// SPDX-License-Identifier: Apache-2.0
// File helpers shared by kubeconfig loading and the credential providers. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "src/common/status.h"

namespace gpusched::kube::client {

// Reads a whole file of at most `max_bytes`. kNotFound when it does not exist, kPermissionDenied
// when it cannot be opened, kResourceExhausted when larger. The message names the path.
common::StatusOr<std::string> ReadFileToString(const std::string& path,
                                               size_t max_bytes = 16u << 20);

// Identity of a file's current contents for change detection: device, inode, size and mtime
// (following symlinks, so the kubelet's atomic ..data swap shows as a change).
struct FileStamp {
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t size = -1;
  int64_t mtime_ns = 0;
  friend bool operator==(const FileStamp&, const FileStamp&) = default;
};
common::StatusOr<FileStamp> StatFile(const std::string& path);

bool FileExists(const std::string& path);

// `path` if absolute or `base_dir` empty, else base_dir/path.
std::string JoinPath(std::string_view base_dir, std::string_view path);
// The directory part of `path` ("." when none).
std::string DirName(std::string_view path);

}  // namespace gpusched::kube::client
