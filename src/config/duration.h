// SPDX-License-Identifier: Apache-2.0
// Go duration strings ("15s", "1m30s", "500ms", "-1.5h"), as metav1.Duration writes them. Used by
// the config library and the simulator's replay annotations (src/sim/replay.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpusched::config {

// Parses a duration like Go's time.ParseDuration: an optional sign, then one or more
// <decimal number><unit> with unit ns, us, µs, ms, s, m or h; "0" alone is allowed. Returns
// nanoseconds, or nullopt when the text is malformed or does not fit in int64 nanoseconds.
std::optional<int64_t> ParseGoDurationNanos(std::string_view text);

}  // namespace gpusched::config
