// SPDX-License-Identifier: Apache-2.0
#include "src/api/network_crd.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/api/decode.h"
#include "src/api/fields.h"
#include "src/api/quantity.h"

namespace gpusched::api {
namespace {

namespace json = boost::json;

std::string Quote(const json::value& v) { return json::serialize(v); }

// The CRDs' wording of JsonReader: "must be an object, got [1]", plain dotted paths.
std::string_view MustBe(JsonType want) {
  switch (want) {
    case JsonType::kObject: return "must be an object, got ";
    case JsonType::kArray: return "must be a list, got ";
    case JsonType::kString: return "must be a string, got ";
    case JsonType::kBool: return "must be true or false, got ";
    case JsonType::kInteger: return "must be an integer, got ";
    case JsonType::kNumber: return "must be a number, got ";
    case JsonType::kQuantity: return "must be a quantity, got ";
  }
  return "must not be ";
}

std::string CrdTypeError(JsonType want, const json::value& got) {
  return std::string(MustBe(want)) + Quote(got);
}

// Only integers beyond int64 reach here: the CRD readers check ranges themselves.
std::string CrdRangeError(const json::value& got, std::optional<int64_t>, int64_t, int64_t) {
  return CrdTypeError(JsonType::kInteger, got);
}

std::string CrdQuantityError(const json::value& got, std::string_view why) {
  return "invalid quantity " + Quote(got) + ": " + std::string(why);
}

constexpr Dialect kCrdDialect{PathStyle::kDotted, &CrdTypeError, &CrdRangeError, &CrdQuantityError};

// The reader of one CRD object; the error is "<Kind> <ns>/<name>: e1; e2; ...".
class CrdReader : public JsonReader {
 public:
  explicit CrdReader(std::string_view kind) : JsonReader(kCrdDialect), subject_(kind) {}

  // Appends " ns/name" (or " name") to the subject.
  void SetName(std::string_view ns, std::string_view name) {
    subject_ += ' ';
    if (!ns.empty()) {
      subject_ += ns;
      subject_ += '/';
    }
    subject_ += name;
  }
  common::Status ToStatus() const { return errors().ToStatus(subject_); }

  // An object member that must be there: absent or null records "required".
  const json::object* RequiredObject(const json::object& o, std::string_view key,
                                     const FieldPath& parent) {
    if (Member(o, key) == nullptr) {
      Error(parent.Key(key), "required");
      return nullptr;
    }
    return Object(o, key, parent);
  }

  // A string member; "" when absent, null or of another type.
  std::string StringOf(const json::object& o, std::string_view key, const FieldPath& parent) {
    return std::string(StringOr(o, key, parent));
  }

  // A non-negative Quantity's Value() (rounded up).
  std::optional<int64_t> NonNegativeQuantity(const json::object& o, std::string_view key,
                                             const FieldPath& parent) {
    std::optional<Quantity> q = QuantityOf(o, key, parent);
    if (!q) return std::nullopt;
    if (q->Value() < 0) {
      Error(parent.Key(key), "must not be negative, got " + Quote(*Member(o, key)));
      return std::nullopt;
    }
    return q->Value();
  }

 private:
  std::string subject_;
};

// metadata.{namespace,name,resourceVersion}.
struct Meta {
  std::string namespace_;
  std::string name;
  std::string resource_version;
};

Meta DecodeMeta(CrdReader& r, const json::object& root) {
  Meta m;
  const FieldPath rp;
  const json::object* meta = r.RequiredObject(root, "metadata", rp);
  if (meta == nullptr) return m;
  const FieldPath mp = rp.Key("metadata");
  m.name = r.StringOf(*meta, "name", mp);
  m.namespace_ = r.StringOf(*meta, "namespace", mp);
  m.resource_version = r.StringOf(*meta, "resourceVersion", mp);
  if (m.name.empty()) r.Error(mp.Key("name"), "required");
  r.SetName(m.namespace_, m.name);
  return m;
}

// Records an error unless the root's kind is absent, empty or `want`.
void CheckKind(CrdReader& r, const json::object& root, std::string_view want) {
  const FieldPath rp;
  const std::string kind = r.StringOf(root, "kind", rp);
  if (!kind.empty() && kind != want) {
    r.Error(rp.Key("kind"), "must be " + std::string(want) + ", got \"" + kind + "\"");
  }
}

WorkloadRef DecodeWorkloadRef(CrdReader& r, const json::object& o, const FieldPath& path) {
  WorkloadRef w;
  w.kind = r.StringOf(o, "kind", path);
  w.name = r.StringOf(o, "name", path);
  w.selector = r.StringOf(o, "selector", path);
  w.api_version = r.StringOf(o, "apiVersion", path);
  w.namespace_ = r.StringOf(o, "namespace", path);
  if (w.selector.empty()) r.Error(path.Key("selector"), "required");
  return w;
}

// The required member "workload" of `o`, decoded; empty when it is not there.
WorkloadRef DecodeWorkloadMember(CrdReader& r, const json::object& o, const FieldPath& path) {
  const json::object* ref = r.RequiredObject(o, "workload", path);
  return ref == nullptr ? WorkloadRef() : DecodeWorkloadRef(r, *ref, path.Key("workload"));
}

constexpr std::pair<std::string_view, SortAlgorithm> kAlgorithms[] = {
    {"KahnSort", SortAlgorithm::kKahnSort},
    {"TarjanSort", SortAlgorithm::kTarjanSort},
    {"ReverseKahn", SortAlgorithm::kReverseKahn},
    {"ReverseTarjan", SortAlgorithm::kReverseTarjan},
    {"AlternateKahn", SortAlgorithm::kAlternateKahn},
    {"AlternateTarjan", SortAlgorithm::kAlternateTarjan},
};

}  // namespace

std::string_view SortAlgorithmName(SortAlgorithm a) {
  for (const auto& [name, value] : kAlgorithms) {
    if (value == a) return name;
  }
  return "KahnSort";
}

const AppGroupWorkload* AppGroup::FindWorkload(std::string_view selector) const {
  for (const AppGroupWorkload& w : workloads) {
    if (w.workload.selector == selector) return &w;
  }
  return nullptr;
}

int32_t AppGroup::OrderIndex(std::string_view selector) const {
  auto it = std::lower_bound(topology_order.begin(), topology_order.end(), selector,
                             [](const auto& e, std::string_view s) { return e.first < s; });
  if (it == topology_order.end() || it->first != selector) return -1;
  return it->second;
}

std::optional<int64_t> TopologyCosts::Find(std::string_view origin,
                                           std::string_view destination) const {
  auto it = std::lower_bound(
      entries.begin(), entries.end(), std::pair(origin, destination),
      [](const Entry& e, const std::pair<std::string_view, std::string_view>& k) {
        return std::pair<std::string_view, std::string_view>(e.origin, e.destination) < k;
      });
  if (it == entries.end() || it->origin != origin || it->destination != destination) {
    return std::nullopt;
  }
  return it->cost;
}

const TopologyCosts* WeightSet::Find(std::string_view topology_key) const {
  for (const TopologyCosts& t : topologies) {
    if (t.topology_key == topology_key) return &t;
  }
  return nullptr;
}

const WeightSet* NetworkTopology::FindWeights(std::string_view weights_name) const {
  for (const WeightSet& w : weights) {
    if (w.name == weights_name) return &w;
  }
  return nullptr;
}

namespace {

Dependency DecodeDependency(CrdReader& r, const json::object& d, const FieldPath& path) {
  Dependency dep;
  dep.workload = DecodeWorkloadMember(r, d, path);
  if (auto bw = r.NonNegativeQuantity(d, "minBandwidth", path)) {
    dep.min_bandwidth_bytes_per_second = *bw;
  }
  if (auto c = r.Int(d, "maxNetworkCost", path)) {
    if (*c < 0 || *c > kMaxNetworkCostLimit) {
      r.Error(path.Key("maxNetworkCost"), "must be in 0..10000, got " + std::to_string(*c));
    } else {
      dep.max_network_cost = *c;
    }
  }
  return dep;
}

AppGroupWorkload DecodeAppGroupWorkload(CrdReader& r, const json::object& wo,
                                        const FieldPath& path) {
  AppGroupWorkload w;
  w.workload = DecodeWorkloadMember(r, wo, path);
  w.dependencies = r.MapObjects<Dependency>(
      wo, "dependencies", path,
      [&](const json::object& d, const FieldPath& dp) { return DecodeDependency(r, d, dp); });
  return w;
}

std::optional<SortAlgorithm> DecodeSortAlgorithm(CrdReader& r, const json::object& spec,
                                                 const FieldPath& sp) {
  const std::string algo = r.StringOf(spec, "topologySortingAlgorithm", sp);
  if (algo.empty()) return std::nullopt;
  for (const auto& [name, value] : kAlgorithms) {
    if (algo == name) return value;
  }
  r.Error(sp.Key("topologySortingAlgorithm"),
          "must be one of KahnSort, TarjanSort, ReverseKahn, ReverseTarjan, AlternateKahn, "
          "AlternateTarjan, got \"" +
              algo + "\"");
  return std::nullopt;
}

// Selectors unique; dependencies name a workload of the group.
void CheckWorkloadSelectors(CrdReader& r, const std::vector<AppGroupWorkload>& workloads,
                            const FieldPath& wp) {
  std::set<std::string> seen;
  for (size_t i = 0; i < workloads.size(); ++i) {
    const std::string& sel = workloads[i].workload.selector;
    if (!sel.empty() && !seen.insert(sel).second) {
      const FieldPath ip = wp.At(i);
      const FieldPath ref = ip.Key("workload");
      r.Error(ref.Key("selector"), "duplicate selector \"" + sel + "\"");
    }
  }
  for (size_t i = 0; i < workloads.size(); ++i) {
    const auto& deps = workloads[i].dependencies;
    for (size_t j = 0; j < deps.size(); ++j) {
      const std::string& sel = deps[j].workload.selector;
      if (!sel.empty() && seen.count(sel) == 0) {
        const FieldPath ip = wp.At(i);
        const FieldPath dp = ip.Key("dependencies");
        const FieldPath jp = dp.At(j);
        const FieldPath ref = jp.Key("workload");
        r.Error(ref.Key("selector"), "names no workload of the AppGroup: \"" + sel + "\"");
      }
    }
  }
}

void DecodeAppGroupSpec(CrdReader& r, const json::object& spec, const FieldPath& sp, AppGroup& ag) {
  if (auto n = r.Int(spec, "numMembers", sp)) {
    if (*n < 1 || *n > INT32_MAX) {
      r.Error(sp.Key("numMembers"), "must be >= 1, got " + std::to_string(*n));
    } else {
      ag.num_members = static_cast<int32_t>(*n);
    }
  }
  if (auto algo = DecodeSortAlgorithm(r, spec, sp)) ag.algorithm = *algo;
  ag.workloads = r.MapObjects<AppGroupWorkload>(spec, "workloads", sp,
                                                [&](const json::object& wo, const FieldPath& wp) {
                                                  return DecodeAppGroupWorkload(r, wo, wp);
                                                });
  CheckWorkloadSelectors(r, ag.workloads, sp.Key("workloads"));
}

// status.topologyOrder, sorted by selector.
std::vector<std::pair<std::string, int32_t>> DecodeTopologyOrder(CrdReader& r,
                                                                 const json::object& status,
                                                                 const FieldPath& tp) {
  std::vector<std::pair<std::string, int32_t>> order;
  r.ForEachObject(status, "topologyOrder", tp, [&](const json::object& oo, const FieldPath& p) {
    const std::string sel = DecodeWorkloadMember(r, oo, p).selector;
    auto idx = r.Int(oo, "index", p);
    if (idx && (*idx < 0 || *idx > INT32_MAX)) {
      r.Error(p.Key("index"), "must be >= 0, got " + std::to_string(*idx));
      idx.reset();
    }
    if (!sel.empty() && idx) order.emplace_back(sel, static_cast<int32_t>(*idx));
  });
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

namespace {

// The object, its metadata (into out.namespace_/name/resource_version) and its kind; null (with
// the error recorded) when `object` is not a JSON object.
template <typename T>
const json::object* DecodeHeader(CrdReader& r, const json::value& object, std::string_view kind,
                                 T& out) {
  if (!object.is_object()) {
    r.Error(FieldPath::Text("(object)"), "must be a JSON object, got " + Quote(object));
    return nullptr;
  }
  const json::object& root = object.get_object();
  Meta meta = DecodeMeta(r, root);
  out.namespace_ = std::move(meta.namespace_);
  out.name = std::move(meta.name);
  out.resource_version = std::move(meta.resource_version);
  CheckKind(r, root, kind);
  return &root;
}

}  // namespace

common::StatusOr<AppGroup> DecodeAppGroup(const json::value& object) {
  CrdReader r("AppGroup");
  AppGroup ag;
  const FieldPath rp;
  const json::object* header = DecodeHeader(r, object, "AppGroup", ag);
  if (header == nullptr) return r.ToStatus();
  const json::object& root = *header;
  if (const json::object* spec = r.RequiredObject(root, "spec", rp)) {
    DecodeAppGroupSpec(r, *spec, rp.Key("spec"), ag);
  }
  if (const json::object* status = r.Object(root, "status", rp)) {
    ag.topology_order = DecodeTopologyOrder(r, *status, rp.Key("status"));
  }
  GPUSCHED_RETURN_IF_ERROR(r.ToStatus());
  return ag;
}

namespace {

// One costList entry of origin `origin`; nullopt when it names no destination or origin.
std::optional<TopologyCosts::Entry> DecodeCost(CrdReader& r, const json::object& co,
                                               const FieldPath& cp, const std::string& origin) {
  TopologyCosts::Entry entry;
  entry.origin = origin;
  entry.destination = r.StringOf(co, "destination", cp);
  if (entry.destination.empty()) r.Error(cp.Key("destination"), "required");
  auto cost = r.Int(co, "networkCost", cp);
  if (cost && *cost < 0) {
    r.Error(cp.Key("networkCost"), "must be >= 0, got " + std::to_string(*cost));
  } else if (cost) {
    entry.cost = *cost;
  }
  // Bandwidth fields are modelled upstream but not enforced; validated only.
  (void)r.NonNegativeQuantity(co, "bandwidthCapacity", cp);
  (void)r.NonNegativeQuantity(co, "bandwidthAllocated", cp);
  if (origin.empty() || entry.destination.empty()) return std::nullopt;
  return entry;
}

void DecodeOrigin(CrdReader& r, const json::object& oo, const FieldPath& op, TopologyCosts& tc) {
  const std::string origin = r.StringOf(oo, "origin", op);
  if (origin.empty()) r.Error(op.Key("origin"), "required");
  r.ForEachObject(oo, "costList", op, [&](const json::object& co, const FieldPath& cp) {
    if (auto entry = DecodeCost(r, co, cp, origin)) tc.entries.push_back(std::move(*entry));
  });
}

TopologyCosts DecodeTopologyCosts(CrdReader& r, const json::object& to, const FieldPath& tp) {
  TopologyCosts tc;
  tc.topology_key = r.StringOf(to, "topologyKey", tp);
  if (tc.topology_key != kRegionLabel && tc.topology_key != kZoneLabel) {
    r.Error(tp.Key("topologyKey"), "must be " + std::string(kRegionLabel) + " or " +
                                       std::string(kZoneLabel) + ", got \"" + tc.topology_key +
                                       "\"");
  }
  r.ForEachObject(to, "originList", tp, [&](const json::object& oo, const FieldPath& op) {
    DecodeOrigin(r, oo, op, tc);
  });
  std::sort(tc.entries.begin(), tc.entries.end(), [](const auto& a, const auto& b) {
    return std::tie(a.origin, a.destination) < std::tie(b.origin, b.destination);
  });
  for (size_t k = 1; k < tc.entries.size(); ++k) {
    if (tc.entries[k].origin == tc.entries[k - 1].origin &&
        tc.entries[k].destination == tc.entries[k - 1].destination) {
      r.Error(tp, "duplicate cost " + tc.entries[k].origin + " -> " + tc.entries[k].destination);
    }
  }
  return tc;
}

WeightSet DecodeWeightSet(CrdReader& r, const json::object& wo, const FieldPath& wp) {
  WeightSet ws;
  ws.name = r.StringOf(wo, "name", wp);
  if (ws.name.empty()) r.Error(wp.Key("name"), "required");
  ws.topologies = r.MapObjects<TopologyCosts>(
      wo, "topologyList", wp,
      [&](const json::object& to, const FieldPath& tp) { return DecodeTopologyCosts(r, to, tp); });
  return ws;
}

}  // namespace

common::StatusOr<NetworkTopology> DecodeNetworkTopology(const json::value& object) {
  CrdReader r("NetworkTopology");
  NetworkTopology nt;
  const FieldPath rp;
  const json::object* header = DecodeHeader(r, object, "NetworkTopology", nt);
  if (header == nullptr) return r.ToStatus();
  const json::object& root = *header;
  if (const json::object* spec = r.RequiredObject(root, "spec", rp)) {
    const FieldPath sp = rp.Key("spec");
    nt.configmap_name = r.StringOf(*spec, "configmapName", sp);
    nt.weights = r.MapObjects<WeightSet>(
        *spec, "weights", sp,
        [&](const json::object& wo, const FieldPath& wp) { return DecodeWeightSet(r, wo, wp); });
  }
  GPUSCHED_RETURN_IF_ERROR(r.ToStatus());
  return nt;
}

common::StatusOr<AppGroup> ParseAppGroup(std::string_view text, std::string_view source) {
  GPUSCHED_ASSIGN_OR_RETURN(json::value v, ParseJson(text, source));
  auto ag = DecodeAppGroup(v);
  if (!ag.ok()) return ag.status().WithContext(source);
  return ag;
}

common::StatusOr<NetworkTopology> ParseNetworkTopology(std::string_view text,
                                                       std::string_view source) {
  GPUSCHED_ASSIGN_OR_RETURN(json::value v, ParseJson(text, source));
  auto nt = DecodeNetworkTopology(v);
  if (!nt.ok()) return nt.status().WithContext(source);
  return nt;
}

}  // namespace gpusched::api
