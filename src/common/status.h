// SPDX-License-Identifier: Apache-2.0
// Status and StatusOr<T>: the result of every fallible operation below cmd/.
//
// An OK Status holds a null pointer, so success allocates nothing (LevelDB's design). Errors carry
// a code and a message that names the offending field and value. Status is a value type; it is not
// thread-safe to mutate one Status from two threads, but distinct copies are independent.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gpusched::common {

enum class StatusCode : unsigned char {
  kOk = 0,
  kInvalidArgument,  // malformed input: quantity, annotation, YAML, CSV row, request
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kOutOfRange,
  kUnavailable,  // transient: retry may succeed (network, API server 5xx)
  kDeadlineExceeded,
  kResourceExhausted,  // 429, size limits
  kPermissionDenied,
  kAborted,  // conflict (409)
  kUnimplemented,
  kInternal,  // a bug
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // The message without the code; empty when OK.
  std::string_view message() const {
    return rep_ ? std::string_view(rep_->message) : std::string_view();
  }
  // "InvalidArgument: message", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "prefix: message"; OK stays OK. Used to add context such as
  // the file name or the YAML path on the way up.
  Status WithContext(std::string_view prefix) const;

  // Explicitly ignores a status where dropping it is correct (logged elsewhere).
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;
};

Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status FailedPreconditionError(std::string message);
Status OutOfRangeError(std::string message);
Status UnavailableError(std::string message);
Status DeadlineExceededError(std::string message);
Status ResourceExhaustedError(std::string message);
Status PermissionDeniedError(std::string message);
Status AbortedError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);

// StatusOr<T> holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // REQUIRES: !status.ok()
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "StatusOr built from an OK status");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  // REQUIRES: ok()
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace gpusched::common

#define GPUSCHED_STATUS_CONCAT_INNER_(a, b) a##b
#define GPUSCHED_STATUS_CONCAT_(a, b) GPUSCHED_STATUS_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define GPUSCHED_RETURN_IF_ERROR(expr)                    \
  do {                                                    \
    ::gpusched::common::Status gpusched_status_ = (expr); \
    if (!gpusched_status_.ok()) return gpusched_status_;  \
  } while (0)

// `lhs` = value of the StatusOr `expr`, or return its status.
#define GPUSCHED_ASSIGN_OR_RETURN(lhs, expr) \
  GPUSCHED_ASSIGN_OR_RETURN_IMPL_(GPUSCHED_STATUS_CONCAT_(gpusched_statusor_, __LINE__), lhs, expr)
#define GPUSCHED_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.ok()) return std::move(tmp).status();        \
  lhs = std::move(tmp).value()
