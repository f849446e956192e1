// SPDX-License-Identifier: Apache-2.0
#include "src/api/traffic_annotation.h"

#include <charconv>
#include <cmath>
#include <string>
#include <utility>

namespace gpusched::api {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

common::Status EntryError(size_t index, std::string_view entry, std::string_view why) {
  return common::InvalidArgumentError(std::string(kTrafficAnnotation) + " entry " +
                                      std::to_string(index) + " \"" + std::string(entry) +
                                      "\": " + std::string(why));
}

}  // namespace

common::StatusOr<std::vector<TrafficPeer>> ParseTrafficAnnotation(std::string_view value) {
  std::vector<TrafficPeer> peers;
  size_t index = 0;
  while (true) {
    size_t semi = value.find(';');
    std::string_view entry = Trim(value.substr(0, semi));
    if (!entry.empty()) {
      size_t arrow = entry.rfind("=>");
      if (arrow == std::string_view::npos) {
        return EntryError(index, entry, "want \"<label selector> => <MB/s>\"");
      }
      std::string_view sel = Trim(entry.substr(0, arrow));
      std::string_view weight = Trim(entry.substr(arrow + 2));
      if (sel.empty()) {
        return EntryError(index, entry, "empty selector (it would match every pod)");
      }
      auto selector = ParseSelector(sel);
      if (!selector.ok()) return EntryError(index, entry, selector.status().message());
      if (selector->empty()) return EntryError(index, entry, "empty selector");
      double mbps = 0;
      auto [ptr, ec] = std::from_chars(weight.data(), weight.data() + weight.size(), mbps);
      if (weight.empty() || ec != std::errc() || ptr != weight.data() + weight.size() ||
          !std::isfinite(mbps)) {
        return EntryError(index, entry,
                          "weight \"" + std::string(weight) + "\" is not a number (MB/s)");
      }
      if (mbps <= 0 || mbps > kMaxTrafficMBps) {
        return EntryError(index, entry,
                          "weight " + std::string(weight) + " must be in (0, 100000] MB/s");
      }
      for (const TrafficPeer& p : peers) {
        if (p.selector_text == sel) return EntryError(index, entry, "selector listed twice");
      }
      if (peers.size() == kMaxTrafficEntries) {
        return EntryError(index, entry, "more than 64 entries");
      }
      peers.push_back(TrafficPeer{std::string(sel), std::move(*selector), mbps});
    }
    ++index;
    if (semi == std::string_view::npos) break;
    value.remove_prefix(semi + 1);
  }
  if (peers.empty()) {
    return common::InvalidArgumentError(std::string(kTrafficAnnotation) +
                                        ": no entries (want \"<label selector> => <MB/s>\")");
  }
  return peers;
}

}  // namespace gpusched::api
