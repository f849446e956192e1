// SPDX-License-Identifier: Apache-2.0
// JSON -> DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate (resource.k8s.io/v1).
#include "src/api/decode_dra.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "src/api/decode_internal.h"

namespace gpusched::api {
namespace decode_internal {
namespace {

namespace json = boost::json;

// "gpu.nvidia.com/memory" stays; "memory" becomes "<driver>/memory".
std::string Qualify(std::string_view name, std::string_view driver) {
  if (name.find('/') != std::string_view::npos) return std::string(name);
  std::string out(driver);
  out += '/';
  out += name;
  return out;
}

std::vector<std::string> DecodeSelectors(ObjectReader& r, const json::object& o,
                                         const FieldPath& p) {
  return r.MapObjects<std::string>(
      o, "selectors", p, [&](const json::object& s, const FieldPath& sp) {
        const json::object* cel = r.Object(s, "cel", sp);
        if (cel == nullptr) {
          r.Required(sp.Key("cel"));
          return std::string();
        }
        return std::string(r.RequiredString(*cel, "expression", sp.Key("cel")));
      });
}

std::optional<NodeSelector> DecodeNodeSelectorMember(ObjectReader& r, const json::object& o,
                                                     std::string_view key, const FieldPath& p) {
  const json::object* ns = r.Object(o, key, p);
  if (ns == nullptr) return std::nullopt;
  NodeSelector out;
  out.terms = r.MapObjects<NodeSelectorTerm>(
      *ns, "nodeSelectorTerms", p.Key(key),
      [&](const json::object& t, const FieldPath& ip) { return DecodeNodeSelectorTerm(r, t, ip); });
  return out;
}

DeviceAttribute DecodeAttribute(ObjectReader& r, const json::object& o, const FieldPath& p) {
  DeviceAttribute a;
  int kinds = 0;
  if (const std::optional<int64_t> i = r.Int(o, "int", p)) {
    a.kind = DeviceAttribute::Kind::kInt;
    a.int_value = *i;
    ++kinds;
  }
  if (const std::optional<bool> b = r.Bool(o, "bool", p)) {
    a.kind = DeviceAttribute::Kind::kBool;
    a.bool_value = *b;
    ++kinds;
  }
  if (o.contains("string")) {
    a.kind = DeviceAttribute::Kind::kString;
    a.string_value = r.StringOr(o, "string", p);
    ++kinds;
  }
  if (o.contains("version")) {
    a.kind = DeviceAttribute::Kind::kVersion;
    a.string_value = r.StringOr(o, "version", p);
    ++kinds;
  }
  if (kinds != 1) r.Error(p, "exactly one of int, bool, string or version is required");
  return a;
}

// The object `o[key]` as (name, value) pairs sorted by name; each member must be an object.
template <typename T, typename F>
std::vector<std::pair<std::string, T>> DecodeObjectMap(ObjectReader& r, const json::object& o,
                                                       std::string_view key, const FieldPath& p,
                                                       F decode_value) {
  std::vector<std::pair<std::string, T>> out;
  const json::object* m = r.Object(o, key, p);
  if (m == nullptr) return out;
  const FieldPath mp = p.Key(key);
  for (const auto& [name, v] : *m) {
    const FieldPath ip = mp.Key(name);
    const json::object* vo = v.if_object();
    if (vo == nullptr) {
      r.Error(ip, std::string("expected object, got ") + std::string(KindName(v)));
      continue;
    }
    out.emplace_back(std::string(name), decode_value(*vo, ip));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// DecodeObjectMap with every name qualified by the driver's domain.
template <typename T, typename F>
std::vector<std::pair<std::string, T>> DecodeQualifiedMap(ObjectReader& r, const json::object& o,
                                                          std::string_view key,
                                                          std::string_view driver,
                                                          const FieldPath& p, F decode_value) {
  std::vector<std::pair<std::string, T>> out = DecodeObjectMap<T>(r, o, key, p, decode_value);
  for (auto& [name, value] : out) name = Qualify(name, driver);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

Quantity DecodeValue(ObjectReader& r, const json::object& v, const FieldPath& p) {
  return r.QuantityOf(v, "value", p).value_or(Quantity());
}

// `o[key]`: name -> quantity (capacity.requests, consumedCapacity), sorted by name.
Counters DecodeQuantityMap(ObjectReader& r, const json::object& o, std::string_view key,
                           const FieldPath& p) {
  Counters out;
  const json::object* m = r.Object(o, key, p);
  if (m == nullptr) return out;
  const FieldPath mp = p.Key(key);
  for (const auto& [name, v] : *m) {
    if (std::optional<Quantity> q = r.AsQuantity(v, mp.Key(name))) {
      out.emplace_back(std::string(name), *q);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// A device capacity's requestPolicy (KEP-5075); nullopt when it has none.
std::optional<CapacityRequestPolicy> DecodeRequestPolicy(ObjectReader& r, const json::object& v,
                                                         const FieldPath& p) {
  const json::object* o = r.Object(v, "requestPolicy", p);
  if (o == nullptr) return std::nullopt;
  const FieldPath pp = p.Key("requestPolicy");
  CapacityRequestPolicy out;
  out.default_value = r.QuantityOf(*o, "default", pp);
  if (const json::array* values = r.Array(*o, "validValues", pp)) {
    const FieldPath vp = pp.Key("validValues");
    for (size_t i = 0; i < values->size(); ++i) {
      if (std::optional<Quantity> q = r.AsQuantity((*values)[i], vp.At(i))) {
        out.valid_values.push_back(*q);
      }
    }
    if (!std::is_sorted(out.valid_values.begin(), out.valid_values.end(),
                        [](const Quantity& a, const Quantity& b) { return a.Compare(b) < 0; })) {
      r.Error(vp, "must be sorted in ascending order");
    }
  }
  if (const json::object* range = r.Object(*o, "validRange", pp)) {
    const FieldPath rp = pp.Key("validRange");
    out.range_min = r.QuantityOf(*range, "min", rp);
    if (!out.range_min) r.Required(rp.Key("min"));
    out.range_max = r.QuantityOf(*range, "max", rp);
    out.range_step = r.QuantityOf(*range, "step", rp);
    if (out.range_step && out.range_step->MilliValue() <= 0) {
      r.InvalidValue(rp.Key("step"), out.range_step->ToString(), "a positive quantity");
    }
  }
  if (!out.valid_values.empty() && out.range_min) {
    r.Error(pp, "at most one of validValues or validRange may be set");
  }
  return out;
}

// `o.counters`: counter name -> {value}; required and non-empty, as upstream validates it.
Counters DecodeCounters(ObjectReader& r, const json::object& o, const FieldPath& p) {
  Counters out = DecodeObjectMap<Quantity>(
      r, o, "counters", p,
      [&](const json::object& v, const FieldPath& ip) { return DecodeValue(r, v, ip); });
  if (out.empty()) r.Required(p.Key("counters"));
  return out;
}

// A device taint (a slice's or a DeviceTaintRule's): as a node taint, except that its effect is
// None, NoSchedule or NoExecute, and that an effect this version does not know counts as None
// (resource.k8s.io/v1: "Consumers must treat unknown effects like None").
Taint DecodeDeviceTaint(ObjectReader& r, const json::object& o, const FieldPath& p) {
  Taint t;
  t.key = common::Intern(r.RequiredString(o, "key", p));
  t.value = common::Intern(r.StringOr(o, "value", p));
  const std::string_view effect = r.RequiredString(o, "effect", p);
  if (effect == "NoSchedule") {
    t.effect = TaintEffect::kNoSchedule;
  } else if (effect == "NoExecute") {
    t.effect = TaintEffect::kNoExecute;
  } else {
    t.effect = TaintEffect::kNone;
  }
  return t;
}

Device DecodeDevice(ObjectReader& r, const json::object& o, const FieldPath& p,
                    std::string_view driver) {
  Device d;
  d.name = r.RequiredString(o, "name", p);
  d.attributes = DecodeQualifiedMap<DeviceAttribute>(
      r, o, "attributes", driver, p,
      [&](const json::object& v, const FieldPath& ip) { return DecodeAttribute(r, v, ip); });
  using Capacity = std::pair<Quantity, std::optional<CapacityRequestPolicy>>;
  auto decode_capacity = [&](const json::object& v, const FieldPath& ip) {
    return Capacity(DecodeValue(r, v, ip), DecodeRequestPolicy(r, v, ip));
  };
  for (auto& [name, c] :
       DecodeQualifiedMap<Capacity>(r, o, "capacity", driver, p, decode_capacity)) {
    d.capacity.emplace_back(name, c.first);
    if (c.second) d.capacity_policies.emplace_back(name, std::move(*c.second));
  }
  d.consumes_counters = r.MapObjects<DeviceCounterConsumption>(
      o, "consumesCounters", p, [&](const json::object& c, const FieldPath& ip) {
        DeviceCounterConsumption out;
        out.counter_set = r.RequiredString(c, "counterSet", ip);
        out.counters = DecodeCounters(r, c, ip);
        return out;
      });
  d.allow_multiple_allocations = r.Bool(o, "allowMultipleAllocations", p).value_or(false);
  d.node_name = r.StringOr(o, "nodeName", p);
  d.node_selector = DecodeNodeSelectorMember(r, o, "nodeSelector", p);
  d.all_nodes = r.Bool(o, "allNodes", p).value_or(false);
  d.taints = r.MapObjects<Taint>(o, "taints", p, [&](const json::object& t, const FieldPath& ip) {
    return DecodeDeviceTaint(r, t, ip);
  });
  return d;
}

DeviceTaintRule DecodeDeviceTaintRuleObject(ObjectReader& r, const json::object& root) {
  CheckKind(r, root, "DeviceTaintRule");
  DeviceTaintRule rule;
  const ObjectMeta meta = DecodeMeta(r, root);
  rule.name = meta.name;
  rule.resource_version = meta.resource_version;
  const FieldPath rp;
  const json::object* spec = r.Object(root, "spec", rp);
  if (spec == nullptr) {
    r.Required(rp.Key("spec"));
    return rule;
  }
  const FieldPath sp = rp.Key("spec");
  if (const json::object* sel = r.Object(*spec, "deviceSelector", sp)) {
    const FieldPath selp = sp.Key("deviceSelector");
    rule.has_selector = true;
    auto field = [&](std::string_view key) -> std::optional<std::string> {
      if (std::optional<std::string_view> v = r.String(*sel, key, selp)) return std::string(*v);
      return std::nullopt;
    };
    rule.driver = field("driver");
    rule.pool = field("pool");
    rule.device = field("device");
  }
  if (const json::object* taint = r.Object(*spec, "taint", sp)) {
    rule.taint = DecodeDeviceTaint(r, *taint, sp.Key("taint"));
  } else {
    r.Required(sp.Key("taint"));
  }
  return rule;
}

DeviceClass DecodeDeviceClassObject(ObjectReader& r, const json::object& root) {
  CheckKind(r, root, "DeviceClass");
  DeviceClass c;
  const ObjectMeta meta = DecodeMeta(r, root);
  c.name = meta.name;
  c.resource_version = meta.resource_version;
  c.creation_timestamp = meta.creation_timestamp;
  const FieldPath rp;
  if (const json::object* spec = r.Object(root, "spec", rp)) {
    const FieldPath sp = rp.Key("spec");
    c.selectors = DecodeSelectors(r, *spec, sp);
    c.extended_resource_name = r.StringOr(*spec, "extendedResourceName", sp);
  }
  return c;
}

ResourceSlice DecodeResourceSliceObject(ObjectReader& r, const json::object& root) {
  CheckKind(r, root, "ResourceSlice");
  ResourceSlice s;
  const ObjectMeta meta = DecodeMeta(r, root);
  s.name = meta.name;
  s.resource_version = meta.resource_version;
  const FieldPath rp;
  const json::object* spec = r.Object(root, "spec", rp);
  if (spec == nullptr) {
    r.Required(rp.Key("spec"));
    return s;
  }
  const FieldPath sp = rp.Key("spec");
  s.driver = r.RequiredString(*spec, "driver", sp);
  if (const json::object* pool = r.Object(*spec, "pool", sp)) {
    const FieldPath pp = sp.Key("pool");
    s.pool = r.RequiredString(*pool, "name", pp);
    s.pool_generation = r.Int(*pool, "generation", pp, 0).value_or(0);
    s.pool_slice_count = r.Int(*pool, "resourceSliceCount", pp, 1).value_or(1);
  } else {
    r.Required(sp.Key("pool"));
  }
  s.node_name = r.StringOr(*spec, "nodeName", sp);
  s.node_selector = DecodeNodeSelectorMember(r, *spec, "nodeSelector", sp);
  s.all_nodes = r.Bool(*spec, "allNodes", sp).value_or(false);
  s.per_device_node_selection = r.Bool(*spec, "perDeviceNodeSelection", sp).value_or(false);
  const int access = (s.node_name.empty() ? 0 : 1) + (s.node_selector ? 1 : 0) +
                     (s.all_nodes ? 1 : 0) + (s.per_device_node_selection ? 1 : 0);
  if (access != 1) {
    r.Error(sp,
            "exactly one of nodeName, nodeSelector, allNodes or perDeviceNodeSelection is "
            "required");
  }
  s.devices = r.MapObjects<Device>(
      *spec, "devices", sp,
      [&](const json::object& d, const FieldPath& ip) { return DecodeDevice(r, d, ip, s.driver); });
  s.shared_counters = r.MapObjects<CounterSet>(*spec, "sharedCounters", sp,
                                               [&](const json::object& c, const FieldPath& ip) {
                                                 CounterSet out;
                                                 out.name = r.RequiredString(c, "name", ip);
                                                 out.counters = DecodeCounters(r, c, ip);
                                                 return out;
                                               });
  if (s.devices.size() > kResourceSliceMaxDevices) {
    r.Error(sp.Key("devices"), "must have at most " + std::to_string(kResourceSliceMaxDevices) +
                                   " items, got " + std::to_string(s.devices.size()));
  }
  return s;
}

DeviceChoice DecodeChoice(ObjectReader& r, const json::object& o, const FieldPath& p) {
  DeviceChoice c;
  c.device_class = r.RequiredString(o, "deviceClassName", p);
  c.selectors = DecodeSelectors(r, o, p);
  const std::string_view mode = r.StringOr(o, "allocationMode", p);
  if (mode.empty() || mode == "ExactCount") {
    c.mode = AllocationMode::kExactCount;
  } else if (mode == "All") {
    c.mode = AllocationMode::kAll;
  } else {
    r.InvalidValue(p.Key("allocationMode"), mode, "ExactCount or All");
  }
  c.count = r.Int(o, "count", p, 1, kAllocationResultsMaxSize).value_or(1);
  c.admin_access = r.Bool(o, "adminAccess", p).value_or(false);
  c.tolerations = r.MapObjects<Toleration>(
      o, "tolerations", p,
      [&](const json::object& t, const FieldPath& ip) { return DecodeToleration(r, t, ip); });
  if (const json::object* capacity = r.Object(o, "capacity", p)) {
    c.capacity_requests = DecodeQuantityMap(r, *capacity, "requests", p.Key("capacity"));
  }
  return c;
}

ResourceClaimSpec DecodeClaimSpec(ObjectReader& r, const json::object& spec, const FieldPath& sp) {
  ResourceClaimSpec out;
  const json::object* devices = r.Object(spec, "devices", sp);
  if (devices == nullptr) return out;
  const FieldPath dp = sp.Key("devices");
  out.requests = r.MapObjects<DeviceRequest>(
      *devices, "requests", dp, [&](const json::object& q, const FieldPath& qp) {
        DeviceRequest req;
        req.name = r.RequiredString(q, "name", qp);
        if (const json::object* exactly = r.Object(q, "exactly", qp)) {
          req.exactly = DecodeChoice(r, *exactly, qp.Key("exactly"));
        }
        req.first_available = r.MapObjects<DeviceSubRequest>(
            q, "firstAvailable", qp, [&](const json::object& s, const FieldPath& ip) {
              DeviceSubRequest sub;
              sub.name = r.RequiredString(s, "name", ip);
              sub.choice = DecodeChoice(r, s, ip);
              return sub;
            });
        if (req.exactly.has_value() == !req.first_available.empty()) {
          r.Error(qp, "exactly one of exactly or firstAvailable is required");
        }
        return req;
      });
  out.constraints = r.MapObjects<DeviceConstraint>(
      *devices, "constraints", dp, [&](const json::object& c, const FieldPath& cp) {
        DeviceConstraint con;
        con.requests = DecodeStringList(r, c, "requests", cp);
        con.match_attribute = r.StringOr(c, "matchAttribute", cp);
        return con;
      });
  return out;
}

std::optional<AllocationResult> DecodeAllocation(ObjectReader& r, const json::object& status,
                                                 const FieldPath& tp) {
  const json::object* a = r.Object(status, "allocation", tp);
  if (a == nullptr) return std::nullopt;
  const FieldPath ap = tp.Key("allocation");
  AllocationResult out;
  if (const json::object* devices = r.Object(*a, "devices", ap)) {
    out.devices = r.MapObjects<DeviceResult>(
        *devices, "results", ap.Key("devices"), [&](const json::object& d, const FieldPath& ip) {
          DeviceResult res;
          res.request = r.RequiredString(d, "request", ip);
          res.driver = r.RequiredString(d, "driver", ip);
          res.pool = r.RequiredString(d, "pool", ip);
          res.device = r.RequiredString(d, "device", ip);
          res.admin_access = r.Bool(d, "adminAccess", ip).value_or(false);
          res.share_id = r.StringOr(d, "shareID", ip);
          res.consumed_capacity = DecodeQuantityMap(r, d, "consumedCapacity", ip);
          for (auto& [name, amount] : res.consumed_capacity) name = Qualify(name, res.driver);
          std::sort(res.consumed_capacity.begin(), res.consumed_capacity.end(),
                    [](const auto& a, const auto& b) { return a.first < b.first; });
          return res;
        });
  }
  out.node_selector = DecodeNodeSelectorMember(r, *a, "nodeSelector", ap);
  return out;
}

ResourceClaim DecodeResourceClaimObject(ObjectReader& r, const json::object& root) {
  CheckKind(r, root, "ResourceClaim");
  ResourceClaim c;
  c.meta = DecodeMeta(r, root);
  if (c.meta.namespace_.empty()) c.meta.namespace_ = "default";
  const FieldPath rp;
  if (const json::object* spec = r.Object(root, "spec", rp)) {
    c.spec = DecodeClaimSpec(r, *spec, rp.Key("spec"));
  }
  if (const json::object* status = r.Object(root, "status", rp)) {
    const FieldPath tp = rp.Key("status");
    c.allocation = DecodeAllocation(r, *status, tp);
    c.reserved_for = r.MapObjects<ClaimConsumer>(
        *status, "reservedFor", tp, [&](const json::object& o, const FieldPath& ip) {
          ClaimConsumer who;
          who.resource = r.RequiredString(o, "resource", ip);
          who.name = r.RequiredString(o, "name", ip);
          who.uid = r.RequiredString(o, "uid", ip);
          who.api_group = r.StringOr(o, "apiGroup", ip);
          return who;
        });
  }
  return c;
}

ResourceClaimTemplate DecodeResourceClaimTemplateObject(ObjectReader& r, const json::object& root) {
  CheckKind(r, root, "ResourceClaimTemplate");
  ResourceClaimTemplate t;
  t.meta = DecodeMeta(r, root);
  if (t.meta.namespace_.empty()) t.meta.namespace_ = "default";
  const FieldPath rp;
  if (const json::object* spec = r.Object(root, "spec", rp)) {
    const FieldPath sp = rp.Key("spec");
    if (const json::object* inner = r.Object(*spec, "spec", sp)) {
      t.spec = DecodeClaimSpec(r, *inner, sp.Key("spec"));
    }
  }
  return t;
}

}  // namespace
}  // namespace decode_internal

using decode_internal::DecodeRoot;

common::StatusOr<DeviceClass> DecodeDeviceClass(const boost::json::value& json) {
  return DecodeRoot<DeviceClass>("deviceclass", json, decode_internal::DecodeDeviceClassObject);
}
common::StatusOr<DeviceTaintRule> DecodeDeviceTaintRule(const boost::json::value& json) {
  return DecodeRoot<DeviceTaintRule>("devicetaintrule", json,
                                     decode_internal::DecodeDeviceTaintRuleObject);
}
common::StatusOr<ResourceSlice> DecodeResourceSlice(const boost::json::value& json) {
  return DecodeRoot<ResourceSlice>("resourceslice", json,
                                   decode_internal::DecodeResourceSliceObject);
}
common::StatusOr<ResourceClaim> DecodeResourceClaim(const boost::json::value& json) {
  return DecodeRoot<ResourceClaim>("resourceclaim", json,
                                   decode_internal::DecodeResourceClaimObject);
}
common::StatusOr<ResourceClaimTemplate> DecodeResourceClaimTemplate(
    const boost::json::value& json) {
  return DecodeRoot<ResourceClaimTemplate>("resourceclaimtemplate", json,
                                           decode_internal::DecodeResourceClaimTemplateObject);
}

}  // namespace gpusched::api
