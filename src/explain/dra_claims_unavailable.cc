// SPDX-License-Identifier: Apache-2.0
// dra_claims.h in a build without the DynamicResources plugin (src/plugins/dynamic_resources):
// no DRA rows. CMake picks this file or dra_claims.cc.
#include "src/explain/dra_claims.h"

namespace gpusched::explain {

std::string DraNodeOf(const Explanation& /*ex*/) { return ""; }

std::optional<DraRow> ExplainClaims(const framework::DraView& /*view*/, const api::Pod& /*pod*/,
                                    const api::Node& /*node*/) {
  return std::nullopt;
}

}  // namespace gpusched::explain
