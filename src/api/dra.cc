// SPDX-License-Identifier: Apache-2.0
#include "src/api/dra.h"

#include <algorithm>

namespace gpusched::api {

std::optional<std::string> PodResourceClaims::ClaimName(size_t i) const {
  const PodClaimSource& src = claims[i];
  if (!src.claim_name.empty()) return src.claim_name;
  for (const auto& [name, generated] : statuses) {
    if (name == src.name) return generated;
  }
  return std::nullopt;
}

const DeviceAttribute* Device::Attribute(std::string_view qualified) const {
  auto it = std::lower_bound(attributes.begin(), attributes.end(), qualified,
                             [](const auto& a, std::string_view k) { return a.first < k; });
  return it != attributes.end() && it->first == qualified ? &it->second : nullptr;
}

}  // namespace gpusched::api
