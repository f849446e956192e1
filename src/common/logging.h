// SPDX-License-Identifier: Apache-2.0
// Logging: spdlog underneath, klog-style verbosity and structured lines on top. cmd/ calls
// InitLogging once; everything else logs through spdlog's default logger and gates chatty lines
// with V(n):
//   if (common::V(4)) spdlog::info("...");
// or, for a structured line (kube's klog.V(n).InfoS), with key-value fields:
//   common::InfoS(2, "Successfully bound pod to node", {{"pod", key}, {"node", name}});
// Levels follow kube-scheduler's conventions: 2 = per-decision summaries, 4 = per-plugin detail,
// 5+ = per-node detail.
//
// Formats (--logging-format), one line per record:
//   text  I1130 01:20:40.123456 1234] "Successfully bound pod to node" pod="default/p" node="n1"
//         (plain spdlog calls print their message unquoted, as before)
//   json  {"ts":1764465640.123456,"level":"info","v":2,"msg":"Successfully bound pod to node",
//          "pod":"default/p","node":"n1"}
// Every JSON line is one complete object: strings are escaped (quotes, backslashes, control
// characters) and invalid UTF-8 is replaced by U+FFFD, so any message or field value parses.
// "v" appears on info lines only; warnings and errors carry "level" alone.
//
// Threading: InitLogging before any other thread logs; the rest is thread-safe. The logger is
// synchronous (a structured call's fields reach the formatter on the calling thread).
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "src/common/status.h"

namespace gpusched::common {

enum class LogFormat { kText, kJson };
enum class LogLevel { kInfo, kWarning, kError };

// Parses "text" or "json" (kube-scheduler's --logging-format values).
StatusOr<LogFormat> ParseLogFormat(std::string_view s);
// Installs the process logger on stderr. `verbosity` is -v (0..10).
void InitLogging(LogFormat format, int verbosity);

namespace internal {
extern std::atomic<int> g_verbosity;
}
inline bool V(int level) { return internal::g_verbosity.load(std::memory_order_relaxed) >= level; }

// One key-value field of a structured line. Borrows `key` and string values: build fields in
// the call's argument list, as InfoS(..., {{"pod", pod.Key()}}) does.
class LogField {
 public:
  enum class Kind : uint8_t { kString, kInt, kDouble, kBool };
  LogField(std::string_view key, std::string_view value)
      : key_(key), kind_(Kind::kString), str_(value) {}
  LogField(std::string_view key, const std::string& value)
      : LogField(key, std::string_view(value)) {}
  LogField(std::string_view key, const char* value) : LogField(key, std::string_view(value)) {}
  LogField(std::string_view key, bool value) : key_(key), kind_(Kind::kBool), int_(value ? 1 : 0) {}
  template <std::integral T>
  requires(!std::same_as<T, bool>) LogField(std::string_view key, T value)
      : key_(key), kind_(Kind::kInt), int_(static_cast<int64_t>(value)) {}
  LogField(std::string_view key, double value) : key_(key), kind_(Kind::kDouble), double_(value) {}

  std::string_view key() const { return key_; }
  Kind kind() const { return kind_; }
  std::string_view str() const { return str_; }
  int64_t integer() const { return int_; }
  double dbl() const { return double_; }

 private:
  std::string_view key_;
  Kind kind_;
  std::string_view str_;
  int64_t int_ = 0;
  double double_ = 0;
};

// A structured info line at verbosity `v` (logged only when V(v)).
void InfoS(int v, std::string_view msg, std::initializer_list<LogField> fields = {});
// A structured error line (always logged); `err` is the error text, as klog's ErrorS.
void ErrorS(std::string_view err, std::string_view msg,
            std::initializer_list<LogField> fields = {});

// Appends `s` as a JSON string literal (with the quotes) to `out`: escapes '"', '\\' and control
// characters, and replaces each byte of invalid UTF-8 by U+FFFD.
void AppendJsonString(std::string& out, std::string_view s);

// The whole line (without the newline) that the logger writes for one record. `fields` empty and
// `structured` false is a plain spdlog call. Exposed for tests.
std::string FormatLogLine(LogFormat format, LogLevel level, int v,
                          std::chrono::system_clock::time_point ts, uint64_t thread_id,
                          std::string_view msg, bool structured, std::span<const LogField> fields);

// Tests: sends the log to an in-memory buffer instead of stderr, and returns (and clears) what
// was written so far.
void InitLoggingForTest(LogFormat format, int verbosity);
std::string TakeLogOutputForTest();

}  // namespace gpusched::common
