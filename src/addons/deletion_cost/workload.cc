// SPDX-License-Identifier: Apache-2.0
#include "src/addons/deletion_cost/workload.h"

#include <algorithm>
#include <boost/json.hpp>

#include "src/common/strings.h"

namespace gpusched::addons::deletion_cost {
namespace {

namespace json = boost::json;

std::string_view Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return {};
  const json::string* s = v->if_string();
  return s ? std::string_view(*s) : std::string_view();
}

const json::object* Obj(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v ? v->if_object() : nullptr;
}

}  // namespace

const std::string* WorkloadFacts::Annotation(std::string_view key) const {
  for (const auto& [k, v] : annotations) {
    if (k == key) return &v;
  }
  return nullptr;
}

const api::OwnerReference* WorkloadFacts::ControllerRef() const {
  for (const auto& o : owner_references) {
    if (o.controller) return &o;
  }
  return nullptr;
}

common::StatusOr<api::LabelSelector> DecodeLabelSelector(const boost::json::value* value) {
  if (value == nullptr || value->is_null()) return api::LabelSelector::Nothing();
  const json::object* o = value->if_object();
  if (o == nullptr) return common::InvalidArgumentError("selector: want an object");
  // Built as kubectl selector text and parsed by api::ParseSelector, which validates keys and
  // values the way labels.Parse does.
  std::vector<std::string> parts;
  if (const json::object* ml = Obj(*o, "matchLabels")) {
    for (const auto& kv : *ml) {
      const json::string* s = kv.value().if_string();
      if (s == nullptr) {
        return common::InvalidArgumentError("selector.matchLabels." + std::string(kv.key()) +
                                            ": want a string");
      }
      parts.push_back(std::string(kv.key()) + "=" + std::string(*s));
    }
  }
  if (const json::value* me = o->if_contains("matchExpressions"); me && !me->is_null()) {
    const json::array* arr = me->if_array();
    if (arr == nullptr)
      return common::InvalidArgumentError("selector.matchExpressions: want a list");
    for (size_t k = 0; k < arr->size(); ++k) {
      const std::string path = "selector.matchExpressions[" + std::to_string(k) + "]";
      const json::object* e = (*arr)[k].if_object();
      if (e == nullptr) return common::InvalidArgumentError(path + ": want an object");
      const std::string key(Str(*e, "key"));
      const std::string_view op = Str(*e, "operator");
      std::vector<std::string> values;
      if (const json::value* vs = e->if_contains("values"); vs && vs->is_array()) {
        for (const json::value& v : vs->get_array()) {
          if (const json::string* s = v.if_string()) values.emplace_back(*s);
        }
      }
      std::string joined;
      for (size_t n = 0; n < values.size(); ++n) joined += (n ? "," : "") + values[n];
      if (op == "In") {
        if (values.empty())
          return common::InvalidArgumentError(path + ".values: must be non-empty for In");
        parts.push_back(key + " in (" + joined + ")");
      } else if (op == "NotIn") {
        if (values.empty())
          return common::InvalidArgumentError(path + ".values: must be non-empty for NotIn");
        parts.push_back(key + " notin (" + joined + ")");
      } else if (op == "Exists") {
        parts.push_back(key);
      } else if (op == "DoesNotExist") {
        parts.push_back("!" + key);
      } else {
        return common::InvalidArgumentError(path + ".operator: invalid value " + common::Quote(op) +
                                            " (want In, NotIn, Exists or DoesNotExist)");
      }
    }
  }
  std::string text;
  for (size_t n = 0; n < parts.size(); ++n) text += (n ? "," : "") + parts[n];
  auto sel = api::ParseSelector(text);
  if (!sel.ok()) return sel.status().WithContext("selector");
  return sel;
}

common::StatusOr<WorkloadFacts> DecodeWorkload(const boost::json::value& value) {
  const json::object* root = value.if_object();
  if (root == nullptr) return common::InvalidArgumentError("workload: want a JSON object");
  WorkloadFacts w;
  w.kind = std::string(Str(*root, "kind"));
  const json::object* meta = Obj(*root, "metadata");
  if (meta != nullptr) {
    w.namespace_ = std::string(Str(*meta, "namespace"));
    w.name = std::string(Str(*meta, "name"));
    w.uid = std::string(Str(*meta, "uid"));
    if (const json::object* ann = Obj(*meta, "annotations")) {
      for (const auto& kv : *ann) {
        if (const json::string* s = kv.value().if_string()) {
          w.annotations.emplace_back(std::string(kv.key()), std::string(*s));
        }
      }
      std::sort(w.annotations.begin(), w.annotations.end());
    }
    if (const json::value* owners = meta->if_contains("ownerReferences");
        owners && owners->is_array()) {
      for (const json::value& ov : owners->get_array()) {
        const json::object* o = ov.if_object();
        if (o == nullptr) continue;
        api::OwnerReference ref;
        ref.api_version = std::string(Str(*o, "apiVersion"));
        ref.kind = std::string(Str(*o, "kind"));
        ref.name = std::string(Str(*o, "name"));
        ref.uid = std::string(Str(*o, "uid"));
        if (const json::value* c = o->if_contains("controller"))
          ref.controller = c->is_bool() && c->get_bool();
        w.owner_references.push_back(std::move(ref));
      }
    }
  }
  const std::string where = (w.kind.empty() ? std::string("object") : w.kind) + " " +
                            (w.namespace_.empty() ? "" : w.namespace_ + "/") + w.name;
  if (w.kind != "Deployment" && w.kind != "ReplicaSet") {
    return common::InvalidArgumentError(where + ": kind must be Deployment or ReplicaSet");
  }
  if (const json::object* spec = Obj(*root, "spec")) {
    if (const json::value* r = spec->if_contains("replicas"); r && !r->is_null()) {
      if (const int64_t* i = r->if_int64()) {
        w.replicas = static_cast<int32_t>(std::clamp<int64_t>(*i, 0, INT32_MAX));
      } else if (const uint64_t* u = r->if_uint64()) {
        w.replicas = static_cast<int32_t>(std::min<uint64_t>(*u, INT32_MAX));
      } else {
        return common::InvalidArgumentError(where + ": spec.replicas: want an integer");
      }
    }
    auto sel = DecodeLabelSelector(spec->if_contains("selector"));
    if (!sel.ok()) return sel.status().WithContext(where + ": spec");
    w.selector = std::move(sel).value();
  } else {
    w.selector = api::LabelSelector::Nothing();
  }
  return w;
}

}  // namespace gpusched::addons::deletion_cost
