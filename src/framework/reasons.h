// SPDX-License-Identifier: Apache-2.0
// Several rejection reasons in one Status. Upstream's Status carries a list of reasons and its
// FitError counts each one (NodeResourcesFit reports every insufficient resource of a node:
// "1 Insufficient cpu, 1 Insufficient memory" for one node). A framework::Status has one reason
// string, so a plugin that finds several joins them with kReasonSeparator into one interned
// string; everything that counts or shows reasons splits it here.
#pragma once

#include <string>
#include <string_view>

namespace gpusched::framework {

inline constexpr char kReasonSeparator = '\n';

// Calls f(std::string_view) for each reason in `reason` (one call for a plain reason).
template <typename F>
void ForEachReason(std::string_view reason, F&& f) {
  while (true) {
    const size_t end = reason.find(kReasonSeparator);
    f(reason.substr(0, end));
    if (end == std::string_view::npos) return;
    reason.remove_prefix(end + 1);
  }
}

// The reasons joined with ", " (for one line of text: explain's node table, logs).
inline std::string ReasonsForDisplay(std::string_view reason) {
  std::string out;
  ForEachReason(reason, [&out](std::string_view r) {
    if (!out.empty()) out += ", ";
    out += r;
  });
  return out;
}

}  // namespace gpusched::framework
