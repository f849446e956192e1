// SPDX-License-Identifier: Apache-2.0
// PreFilterNodes: upstream's PreFilterResult.NodeNames. A PreFilter plugin that knows the pod can
// go only to some named nodes (NodeAffinity: required terms that each name nodes with
// metadata.name In) writes it under kPreFilterNodesKey. The runtime then runs no Filter on any
// other node and counts each of them as `reason` ("node(s) didn't satisfy plugin(s)
// [NodeAffinity]", UnschedulableAndUnresolvable), as kube-scheduler does.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "src/framework/cycle_state.h"

namespace gpusched::framework {

struct PreFilterNodes final : StateData {
  std::vector<std::string> names;  // sorted, unique
  std::string_view plugin;         // the plugin that wrote it (a literal)
  std::string_view reason;         // a literal or interned text
  bool Allows(std::string_view node) const {
    return std::binary_search(names.begin(), names.end(), node);
  }
};

inline const StateKey kPreFilterNodesKey{"framework/PreFilterNodes"};

}  // namespace gpusched::framework
