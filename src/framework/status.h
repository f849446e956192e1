// SPDX-License-Identifier: Apache-2.0
// framework::Status: the outcome of one plugin at one extension point, with kube-scheduler's codes.
// What each code does to the pod:
//   kSuccess                        continue.
//   kUnschedulable                  the node (Filter) or pod (PreFilter) does not fit now; the pod
//                                   may fit after cluster changes (or preemption): it goes to the
//                                   unschedulable queue and is retried on a relevant event.
//   kUnschedulableAndUnresolvable   as kUnschedulable, but preemption cannot help (e.g. a node
//                                   selector mismatch or a malformed GPU annotation).
//   kError                          a bug or infrastructure failure: the cycle is aborted and the
//                                   pod goes to backoff.
//   kWait                           Permit only: hold the pod until allowed or timed out.
//   kSkip                           PreFilter/PreScore: this plugin's Filter/Score is skipped for
//                                   this pod. Bind: this binder declines; try the next one.
//
// Hot-path contract: building a non-error Status allocates nothing. `reason` must point to storage
// that outlives the cycle (a string literal or an interned string: common::Str()). Only kError and
// WithMessage (rejections built once per pod, e.g. a Permit timeout) carry an owned message.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace gpusched::framework {

enum class Code : unsigned char {
  kSuccess = 0,
  kError,
  kUnschedulable,
  kUnschedulableAndUnresolvable,
  kWait,
  kSkip,
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  Status(Code code, std::string_view reason) : code_(code), reason_(reason) {}

  static Status Success() { return Status(); }
  static Status Unschedulable(std::string_view reason) { return {Code::kUnschedulable, reason}; }
  static Status Unresolvable(std::string_view reason) {
    return {Code::kUnschedulableAndUnresolvable, reason};
  }
  static Status Skip() { return {Code::kSkip, {}}; }
  static Status Wait() { return {Code::kWait, {}}; }
  // An error with a message built at run time (allocates; not for the per-node path).
  static Status Error(std::string message);
  // A status of any code with a message built at run time (allocates; once per pod, not per node).
  static Status WithMessage(Code code, std::string message);

  Status(const Status& o) : code_(o.code_), reason_(o.reason_), plugin_(o.plugin_) {
    if (o.owned_) SetOwned(*o.owned_);
  }
  Status& operator=(const Status& o) {
    if (this != &o) {
      code_ = o.code_;
      reason_ = o.reason_;
      plugin_ = o.plugin_;
      owned_.reset();
      if (o.owned_) SetOwned(*o.owned_);
    }
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  Code code() const { return code_; }
  bool ok() const { return code_ == Code::kSuccess; }
  bool IsSkip() const { return code_ == Code::kSkip; }
  bool IsWait() const { return code_ == Code::kWait; }
  bool IsRejected() const {
    return code_ == Code::kUnschedulable || code_ == Code::kUnschedulableAndUnresolvable;
  }
  bool IsError() const { return code_ == Code::kError; }
  // The reason text, e.g. "Insufficient nvidia.com/gpu".
  std::string_view reason() const { return reason_; }
  // The plugin that returned this status (set by the runtime).
  std::string_view plugin() const { return plugin_; }
  Status& WithPlugin(std::string_view plugin) {
    plugin_ = plugin;
    return *this;
  }
  std::string ToString() const;

 private:
  void SetOwned(const std::string& text) {
    owned_ = std::make_unique<std::string>(text);
    reason_ = *owned_;
  }
  Code code_ = Code::kSuccess;
  std::string_view reason_;
  std::string_view plugin_;
  std::unique_ptr<std::string> owned_;
};

}  // namespace gpusched::framework
