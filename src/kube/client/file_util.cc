// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "src/common/strings.h"

namespace gpusched::kube::client {
namespace {

common::Status ErrnoStatus(int err, const std::string& what) {
  std::string msg = what + ": " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return common::NotFoundError(std::move(msg));
  if (err == EACCES || err == EPERM) return common::PermissionDeniedError(std::move(msg));
  return common::UnavailableError(std::move(msg));
}

}  // namespace

common::StatusOr<std::string> ReadFileToString(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "reading " + common::Quote(path));
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoStatus(err, "reading " + common::Quote(path));
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      ::close(fd);
      return common::ResourceExhaustedError("reading " + common::Quote(path) + ": larger than " +
                                            std::to_string(max_bytes) + " bytes");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

common::StatusOr<FileStamp> StatFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "stat " + common::Quote(path));
  FileStamp s;
  s.device = static_cast<uint64_t>(st.st_dev);
  s.inode = static_cast<uint64_t>(st.st_ino);
  s.size = static_cast<int64_t>(st.st_size);
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return s;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string JoinPath(std::string_view base_dir, std::string_view path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return std::string(path);
  std::string out(base_dir);
  if (out.back() != '/') out += '/';
  out += path;
  return out;
}

std::string DirName(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

}  // namespace gpusched::kube::client
