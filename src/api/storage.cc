// SPDX-License-Identifier: Apache-2.0
#include "src/api/storage.h"

#include <algorithm>

namespace gpusched::api {

bool IsVolumeBoundToClaim(const PersistentVolume& pv, const PersistentVolumeClaim& pvc) {
  if (!pv.claim_ref) return false;
  const ClaimRef& ref = *pv.claim_ref;
  if (ref.name != pvc.meta.name || ref.namespace_ != pvc.meta.namespace_) return false;
  return ref.uid.empty() || ref.uid == pvc.meta.uid;
}

bool PvNodeAffinityMatches(const PersistentVolume& pv, const Labels& node_labels) {
  // CheckNodeAffinity matches against a node that has the labels and no name, so matchFields on
  // metadata.name never match.
  return !pv.node_affinity || pv.node_affinity->Matches(node_labels, {});
}

bool TopologyTermsMatch(const std::vector<TopologySelectorTerm>& terms, const Labels& labels) {
  if (terms.empty()) return true;
  for (const TopologySelectorTerm& term : terms) {
    bool all = true;
    for (const TopologyRequirement& req : term.requirements) {
      Atom value;
      if (!labels.Get(req.key, &value) ||
          std::find(req.values.begin(), req.values.end(), value) == req.values.end()) {
        all = false;
        break;
      }
    }
    if (all) return true;
  }
  return false;
}

}  // namespace gpusched::api
