// SPDX-License-Identifier: Apache-2.0
#include "src/common/logging.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <ctime>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

namespace gpusched::common {
namespace internal {
std::atomic<int> g_verbosity{0};
}
namespace {

// What a structured call hands to the formatter on the same thread (the logger is synchronous).
struct PendingRecord {
  int v = 0;
  std::span<const LogField> fields;
};
thread_local const PendingRecord* t_pending = nullptr;

LogLevel FromSpdlog(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::warn: return LogLevel::kWarning;
    case spdlog::level::err:
    case spdlog::level::critical: return LogLevel::kError;
    default: return LogLevel::kInfo;
  }
}

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not valid (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  }
  return n;
}

void AppendDouble(std::string& out, double d, bool json) {
  if (!std::isfinite(d)) {
    out += json ? "null" : (std::isnan(d) ? "NaN" : (d > 0 ? "+Inf" : "-Inf"));
    return;
  }
  out += fmt::format("{}", d);
}

void AppendFieldValue(std::string& out, const LogField& f, bool json) {
  switch (f.kind()) {
    case LogField::Kind::kString: AppendJsonString(out, f.str()); break;
    case LogField::Kind::kInt: out += std::to_string(f.integer()); break;
    case LogField::Kind::kDouble: AppendDouble(out, f.dbl(), json); break;
    case LogField::Kind::kBool: out += f.integer() != 0 ? "true" : "false"; break;
  }
}

// A key as klog writes it: keys are program constants, but a bad one must not break a line.
void AppendTextKey(std::string& out, std::string_view key) {
  for (char c : key) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (u <= 0x20 || c == '=' || c == '"' || u >= 0x7F) ? '_' : c;
  }
}

class LineFormatter final : public spdlog::formatter {
 public:
  explicit LineFormatter(LogFormat format) : format_(format) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const PendingRecord* rec = t_pending;
    std::string line =
        FormatLogLine(format_, FromSpdlog(msg.level), rec ? rec->v : 0, msg.time, msg.thread_id,
                      std::string_view(msg.payload.data(), msg.payload.size()), rec != nullptr,
                      rec ? rec->fields : std::span<const LogField>{});
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<LineFormatter>(format_);
  }

 private:
  LogFormat format_;
};

void Emit(spdlog::level::level_enum level, int v, std::string_view msg,
          std::span<const LogField> fields) {
  PendingRecord rec{v, fields};
  t_pending = &rec;
  spdlog::default_logger_raw()->log(level, "{}", msg);
  t_pending = nullptr;
}

// The test buffer (InitLoggingForTest).
std::mutex g_test_mu;
std::ostringstream* g_test_out = nullptr;

void Install(std::shared_ptr<spdlog::logger> logger, LogFormat format, int verbosity) {
  internal::g_verbosity.store(verbosity);
  logger->set_formatter(std::make_unique<LineFormatter>(format));
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace

StatusOr<LogFormat> ParseLogFormat(std::string_view s) {
  if (s == "text") return LogFormat::kText;
  if (s == "json") return LogFormat::kJson;
  return InvalidArgumentError("--logging-format: unsupported value \"" + std::string(s) +
                              "\" (want \"text\" or \"json\")");
}

void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20 || c == 0x7F) {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    out.append(s.data() + i, n);
    i += n;
  }
  out += '"';
}

std::string FormatLogLine(LogFormat format, LogLevel level, int v,
                          std::chrono::system_clock::time_point ts, uint64_t thread_id,
                          std::string_view msg, bool structured, std::span<const LogField> fields) {
  using namespace std::chrono;
  const int64_t us = duration_cast<microseconds>(ts.time_since_epoch()).count();
  const int64_t secs = us >= 0 ? us / 1'000'000 : (us - 999'999) / 1'000'000;
  const int64_t frac = us - secs * 1'000'000;
  std::string out;
  out.reserve(96 + msg.size() + fields.size() * 24);
  if (format == LogFormat::kJson) {
    out += fmt::format("{{\"ts\":{}.{:06d},\"level\":\"{}\"", secs, frac,
                       level == LogLevel::kInfo      ? "info"
                       : level == LogLevel::kWarning ? "warning"
                                                     : "error");
    if (level == LogLevel::kInfo) out += fmt::format(",\"v\":{}", v);
    out += ",\"msg\":";
    AppendJsonString(out, msg);
    for (const LogField& f : fields) {
      out += ',';
      AppendJsonString(out, f.key());
      out += ':';
      AppendFieldValue(out, f, true);
    }
    out += '}';
    return out;
  }
  // klog header: Lmmdd hh:mm:ss.uuuuuu threadid] (UTC)
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char lvl = level == LogLevel::kInfo ? 'I' : level == LogLevel::kWarning ? 'W' : 'E';
  out += fmt::format("{}{:02d}{:02d} {:02d}:{:02d}:{:02d}.{:06d} {:>7}] ", lvl, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac, thread_id);
  if (!structured) {
    out += msg;
    return out;
  }
  AppendJsonString(out, msg);
  for (const LogField& f : fields) {
    out += ' ';
    AppendTextKey(out, f.key());
    out += '=';
    AppendFieldValue(out, f, false);
  }
  return out;
}

void InfoS(int v, std::string_view msg, std::initializer_list<LogField> fields) {
  if (!V(v)) return;
  Emit(spdlog::level::info, v, msg, std::span<const LogField>(fields.begin(), fields.size()));
}

void ErrorS(std::string_view err, std::string_view msg, std::initializer_list<LogField> fields) {
  std::vector<LogField> all;
  all.reserve(fields.size() + 1);
  all.emplace_back("err", err);
  all.insert(all.end(), fields.begin(), fields.end());
  Emit(spdlog::level::err, 0, msg, all);
}

void InitLogging(LogFormat format, int verbosity) {
  Install(spdlog::stderr_logger_mt("gpusched"), format, verbosity);
}

void InitLoggingForTest(LogFormat format, int verbosity) {
  std::lock_guard<std::mutex> l(g_test_mu);
  static std::ostringstream out;
  g_test_out = &out;
  out.str("");
  spdlog::drop("gpusched-test");
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  Install(std::make_shared<spdlog::logger>("gpusched-test", std::move(sink)), format, verbosity);
}

std::string TakeLogOutputForTest() {
  std::lock_guard<std::mutex> l(g_test_mu);
  if (g_test_out == nullptr) return {};
  spdlog::default_logger_raw()->flush();
  std::string s = g_test_out->str();
  g_test_out->str("");
  return s;
}

}  // namespace gpusched::common
