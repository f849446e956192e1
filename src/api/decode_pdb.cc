// SPDX-License-Identifier: Apache-2.0
// JSON -> PodDisruptionBudget (policy/v1) and PriorityClass (scheduling.k8s.io/v1): the fields
// that preemption reads. Every error is recorded in the ObjectReader, in document order; the
// entry points (DecodePodDisruptionBudget, DecodePriorityClass) return the first.
#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "src/api/decode.h"
#include "src/api/decode_internal.h"

namespace gpusched::api {
namespace decode_internal {
namespace {

namespace json = boost::json;

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// status.disruptedPods: pod name -> the time the API server processed its eviction. The names,
// sorted; each value must be an RFC 3339 time (or null).
std::vector<std::string> DecodeDisruptedPods(ObjectReader& r, const json::object& status,
                                             const FieldPath& tp) {
  std::vector<std::string> out;
  const json::object* m = r.Object(status, "disruptedPods", tp);
  if (m == nullptr) return out;
  const FieldPath mp = tp.Key("disruptedPods");
  out.reserve(m->size());
  for (const auto& kv : *m) {
    if (kv.key().empty()) {
      r.Error(mp, "empty pod name");
      continue;
    }
    DecodeTime(r, *m, kv.key(), mp);
    out.emplace_back(kv.key());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

PodDisruptionBudget DecodePdbObject(ObjectReader& r, const json::object& root) {
  PodDisruptionBudget pdb;
  const FieldPath rp;
  CheckKind(r, root, "PodDisruptionBudget");
  pdb.meta = DecodeMeta(r, root);
  if (pdb.meta.namespace_.empty()) pdb.meta.namespace_ = "default";
  if (const json::object* spec = r.Object(root, "spec", rp)) {
    const FieldPath sp = rp.Key("spec");
    if (const json::object* sel = r.Object(*spec, "selector", sp)) {
      pdb.selector = DecodeLabelSelectorObject(r, *sel, sp.Key("selector"));
    }
  }
  if (const json::object* status = r.Object(root, "status", rp)) {
    const FieldPath tp = rp.Key("status");
    pdb.disruptions_allowed =
        static_cast<int32_t>(r.Int(*status, "disruptionsAllowed", tp, 0, kInt32Max).value_or(0));
    pdb.disrupted_pods = DecodeDisruptedPods(r, *status, tp);
  }
  return pdb;
}

PriorityClass DecodePriorityClassObject(ObjectReader& r, const json::object& root) {
  PriorityClass pc;
  const FieldPath rp;
  CheckKind(r, root, "PriorityClass");
  pc.name = DecodeMeta(r, root).name;
  pc.value = static_cast<int32_t>(r.Int(root, "value", rp, kInt32Min, kInt32Max).value_or(0));
  pc.global_default = r.Bool(root, "globalDefault", rp).value_or(false);
  pc.preemption_policy = DecodePreemptionPolicy(r, root, rp);
  return pc;
}

}  // namespace decode_internal

common::StatusOr<PodDisruptionBudget> DecodePodDisruptionBudget(const boost::json::value& json) {
  return decode_internal::DecodeRoot<PodDisruptionBudget>("poddisruptionbudget", json,
                                                          decode_internal::DecodePdbObject);
}

common::StatusOr<PriorityClass> DecodePriorityClass(const boost::json::value& json) {
  return decode_internal::DecodeRoot<PriorityClass>("priorityclass", json,
                                                    decode_internal::DecodePriorityClassObject);
}

}  // namespace gpusched::api
