// SPDX-License-Identifier: Apache-2.0
#include "src/common/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace gpusched::common {
namespace internal {
std::atomic<int> g_verbosity{0};
}

StatusOr<LogFormat> ParseLogFormat(std::string_view s) {
  if (s == "text") return LogFormat::kText;
  if (s == "json") return LogFormat::kJson;
  return InvalidArgumentError("--logging-format: unsupported value \"" + std::string(s) +
                              "\" (want \"text\" or \"json\")");
}

void InitLogging(LogFormat format, int verbosity) {
  internal::g_verbosity.store(verbosity);
  auto logger = spdlog::stderr_logger_mt("gpusched");
  if (format == LogFormat::kJson) {
    logger->set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","thread":%t,"msg":"%v"})",
        spdlog::pattern_time_type::utc);
  } else {
    // klog-like: I1129 22:12:46.123456 thread file] msg
    logger->set_pattern("%L%m%d %H:%M:%S.%f %t] %v", spdlog::pattern_time_type::utc);
  }
  logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace gpusched::common
