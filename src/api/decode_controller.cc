// SPDX-License-Identifier: Apache-2.0
// Workload controllers and label selectors (decode.h), through the readers the Pod decoder uses.
#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <cctype>
#include <limits>
#include <string>
#include <string_view>

#include "src/api/decode.h"
#include "src/api/decode_internal.h"

namespace gpusched::api {
namespace {

namespace json = boost::json;
using decode_internal::ObjectReader;

constexpr std::array<std::string_view, 5> kControllerKinds = {"Deployment", "ReplicaSet",
                                                              "StatefulSet", "DaemonSet", "Job"};

WorkloadController DecodeControllerObject(ObjectReader& r, const json::object& root) {
  WorkloadController w;
  const FieldPath rp;
  w.kind = r.StringOr(root, "kind", rp);
  if (std::find(kControllerKinds.begin(), kControllerKinds.end(), w.kind) ==
      kControllerKinds.end()) {
    r.InvalidValue(rp.Key("kind"), w.kind, "Deployment, ReplicaSet, StatefulSet, DaemonSet or Job");
  }
  w.meta = decode_internal::DecodeMeta(r, root);
  if (w.meta.namespace_.empty()) w.meta.namespace_ = "default";
  const json::object* spec = r.Object(root, "spec", rp);
  if (spec == nullptr) {
    w.selector = LabelSelector::Nothing();
    return w;
  }
  const FieldPath sp = rp.Key("spec");
  if (std::optional<int64_t> n =
          r.Int(*spec, "replicas", sp, 0, std::numeric_limits<int32_t>::max())) {
    w.replicas = static_cast<int32_t>(*n);
  }
  w.selector = decode_internal::DecodeLabelSelector(r, *spec, "selector", sp);
  if (const json::object* tmpl = r.Object(*spec, "template", sp)) {
    w.pod_template = decode_internal::DecodePodTemplate(r, *tmpl, sp.Key("template"));
  }
  return w;
}

std::string Lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

common::StatusOr<WorkloadController> DecodeWorkloadController(const json::value& json) {
  std::string kind = "workload controller";
  if (const json::object* o = json.if_object()) {
    if (const json::value* k = o->if_contains("kind"); k != nullptr && k->is_string()) {
      kind = Lowercase(k->get_string());
    }
  }
  return decode_internal::DecodeRoot<WorkloadController>(kind, json, DecodeControllerObject);
}

common::StatusOr<LabelSelector> DecodeLabelSelector(const json::value& json) {
  const json::object* o = json.if_object();
  if (o == nullptr) return decode_internal::NotAnObject("label selector", json);
  ObjectReader r;
  const FieldPath root;
  LabelSelector selector = decode_internal::DecodeLabelSelectorObject(r, *o, root);
  if (!r.ok()) return common::InvalidArgumentError(r.errors().list().front());
  return selector;
}

}  // namespace gpusched::api
