// SPDX-License-Identifier: Apache-2.0
#include "src/framework/dra_view.h"

namespace gpusched::framework {

std::span<const uint32_t> DeviceIndex::NodeDevices(std::string_view node) const {
  auto it = by_node.find(node);
  return it == by_node.end() ? std::span<const uint32_t>() : std::span<const uint32_t>(it->second);
}

bool DeviceIndex::PoolIncomplete(std::string_view driver, std::string_view pool) const {
  for (const std::string& p : incomplete_pools) {
    if (p.size() == driver.size() + 1 + pool.size() && p.starts_with(driver) &&
        p[driver.size()] == '/' && p.ends_with(pool)) {
      return true;
    }
  }
  return false;
}

}  // namespace gpusched::framework
