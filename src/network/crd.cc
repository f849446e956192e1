// SPDX-License-Identifier: Apache-2.0
#include "src/network/crd.h"

#include <algorithm>
#include <cmath>
#include <boost/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/api/decode.h"
#include "src/api/quantity.h"

namespace gpusched::network {
namespace {

namespace json = boost::json;

// Collects "path: message" errors for one object; reports them all at once.
class Errors {
 public:
  explicit Errors(std::string what) : what_(std::move(what)) {}
  void Add(const std::string& path, const std::string& message) {
    errors_.push_back(path + ": " + message);
  }
  void SetName(const std::string& name) { what_ += " " + name; }
  common::Status ToStatus() const {
    if (errors_.empty()) return common::Status::Ok();
    std::string s = what_ + ": ";
    for (size_t i = 0; i < errors_.size(); ++i) s += (i ? "; " : "") + errors_[i];
    return common::InvalidArgumentError(std::move(s));
  }

 private:
  std::string what_;
  std::vector<std::string> errors_;
};

std::string Quote(const json::value& v) { return json::serialize(v); }

const json::object* GetObject(const json::object& o, std::string_view key,
                              const std::string& path, Errors& e, bool required = false) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    if (required) e.Add(path, "required");
    return nullptr;
  }
  if (!v->is_object()) {
    e.Add(path, "must be an object, got " + Quote(*v));
    return nullptr;
  }
  return &v->get_object();
}

const json::array* GetArray(const json::object& o, std::string_view key, const std::string& path,
                            Errors& e) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return nullptr;
  if (!v->is_array()) {
    e.Add(path, "must be a list, got " + Quote(*v));
    return nullptr;
  }
  return &v->get_array();
}

std::string GetString(const json::object& o, std::string_view key, const std::string& path,
                      Errors& e) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_string()) {
    e.Add(path, "must be a string, got " + Quote(*v));
    return {};
  }
  return std::string(v->get_string());
}

std::optional<int64_t> GetInt(const json::object& o, std::string_view key, const std::string& path,
                              Errors& e) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(v->get_uint64());
  }
  if (v->is_double()) {
    // Range first: converting an out-of-range or NaN double to int64 is undefined behaviour.
    const double d = v->get_double();
    if (std::isfinite(d) && std::fabs(d) < 9.0e18 && std::trunc(d) == d) {
      return static_cast<int64_t>(d);
    }
  }
  e.Add(path, "must be an integer, got " + Quote(*v));
  return std::nullopt;
}

// A Quantity given as a string or a number; returns its Value() (rounded up).
std::optional<int64_t> GetQuantity(const json::object& o, std::string_view key,
                                   const std::string& path, Errors& e) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  std::string text;
  if (v->is_string()) {
    text = std::string(v->get_string());
  } else if (v->is_number()) {
    text = Quote(*v);
  } else {
    e.Add(path, "must be a quantity, got " + Quote(*v));
    return std::nullopt;
  }
  auto q = api::Quantity::Parse(text);
  if (!q.ok()) {
    e.Add(path, "invalid quantity " + Quote(*v) + ": " + std::string(q.status().message()));
    return std::nullopt;
  }
  if (q->Value() < 0) {
    e.Add(path, "must not be negative, got " + Quote(*v));
    return std::nullopt;
  }
  return q->Value();
}

// metadata.{namespace,name,resourceVersion}; returns false when metadata is unusable.
void DecodeMeta(const json::object& root, std::string* ns, std::string* name, std::string* rv,
                Errors& e) {
  const json::object* meta = GetObject(root, "metadata", "metadata", e, true);
  if (meta == nullptr) return;
  *name = GetString(*meta, "name", "metadata.name", e);
  *ns = GetString(*meta, "namespace", "metadata.namespace", e);
  *rv = GetString(*meta, "resourceVersion", "metadata.resourceVersion", e);
  if (name->empty()) e.Add("metadata.name", "required");
  e.SetName(ns->empty() ? *name : *ns + "/" + *name);
}

WorkloadRef DecodeWorkloadRef(const json::object& o, const std::string& path, Errors& e) {
  WorkloadRef w;
  w.kind = GetString(o, "kind", path + ".kind", e);
  w.name = GetString(o, "name", path + ".name", e);
  w.selector = GetString(o, "selector", path + ".selector", e);
  w.api_version = GetString(o, "apiVersion", path + ".apiVersion", e);
  w.namespace_ = GetString(o, "namespace", path + ".namespace", e);
  if (w.selector.empty()) e.Add(path + ".selector", "required");
  return w;
}

constexpr std::pair<std::string_view, SortAlgorithm> kAlgorithms[] = {
    {"KahnSort", SortAlgorithm::kKahnSort},           {"TarjanSort", SortAlgorithm::kTarjanSort},
    {"ReverseKahn", SortAlgorithm::kReverseKahn},     {"ReverseTarjan", SortAlgorithm::kReverseTarjan},
    {"AlternateKahn", SortAlgorithm::kAlternateKahn}, {"AlternateTarjan", SortAlgorithm::kAlternateTarjan},
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
  auto it = std::lower_bound(entries.begin(), entries.end(), std::pair(origin, destination),
                             [](const Entry& e, const std::pair<std::string_view, std::string_view>& k) {
                               return std::pair<std::string_view, std::string_view>(
                                          e.origin, e.destination) < k;
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

common::StatusOr<AppGroup> DecodeAppGroup(const json::value& object) {
  Errors e("AppGroup");
  AppGroup ag;
  if (!object.is_object()) {
    e.Add("(object)", "must be a JSON object, got " + Quote(object));
    return e.ToStatus();
  }
  const json::object& root = object.get_object();
  DecodeMeta(root, &ag.namespace_, &ag.name, &ag.resource_version, e);
  if (std::string kind = GetString(root, "kind", "kind", e); !kind.empty() && kind != "AppGroup") {
    e.Add("kind", "must be AppGroup, got \"" + kind + "\"");
  }
  const json::object* spec = GetObject(root, "spec", "spec", e, true);
  if (spec != nullptr) {
    if (auto n = GetInt(*spec, "numMembers", "spec.numMembers", e)) {
      if (*n < 1 || *n > INT32_MAX) {
        e.Add("spec.numMembers", "must be >= 1, got " + std::to_string(*n));
      } else {
        ag.num_members = static_cast<int32_t>(*n);
      }
    }
    std::string algo = GetString(*spec, "topologySortingAlgorithm",
                                 "spec.topologySortingAlgorithm", e);
    if (!algo.empty()) {
      bool found = false;
      for (const auto& [name, value] : kAlgorithms) {
        if (algo == name) {
          ag.algorithm = value;
          found = true;
        }
      }
      if (!found) {
        e.Add("spec.topologySortingAlgorithm",
              "must be one of KahnSort, TarjanSort, ReverseKahn, ReverseTarjan, AlternateKahn, "
              "AlternateTarjan, got \"" + algo + "\"");
      }
    }
    if (const json::array* wls = GetArray(*spec, "workloads", "spec.workloads", e)) {
      for (size_t i = 0; i < wls->size(); ++i) {
        std::string path = "spec.workloads[" + std::to_string(i) + "]";
        if (!(*wls)[i].is_object()) {
          e.Add(path, "must be an object, got " + Quote((*wls)[i]));
          continue;
        }
        const json::object& wo = (*wls)[i].get_object();
        AppGroupWorkload w;
        if (const json::object* ref = GetObject(wo, "workload", path + ".workload", e, true)) {
          w.workload = DecodeWorkloadRef(*ref, path + ".workload", e);
        }
        if (const json::array* deps = GetArray(wo, "dependencies", path + ".dependencies", e)) {
          for (size_t j = 0; j < deps->size(); ++j) {
            std::string dpath = path + ".dependencies[" + std::to_string(j) + "]";
            if (!(*deps)[j].is_object()) {
              e.Add(dpath, "must be an object, got " + Quote((*deps)[j]));
              continue;
            }
            const json::object& d = (*deps)[j].get_object();
            Dependency dep;
            if (const json::object* ref = GetObject(d, "workload", dpath + ".workload", e, true)) {
              dep.workload = DecodeWorkloadRef(*ref, dpath + ".workload", e);
            }
            if (auto bw = GetQuantity(d, "minBandwidth", dpath + ".minBandwidth", e)) {
              dep.min_bandwidth_bytes_per_second = *bw;
            }
            if (auto c = GetInt(d, "maxNetworkCost", dpath + ".maxNetworkCost", e)) {
              if (*c < 0 || *c > kMaxNetworkCostLimit) {
                e.Add(dpath + ".maxNetworkCost",
                      "must be in 0..10000, got " + std::to_string(*c));
              } else {
                dep.max_network_cost = *c;
              }
            }
            w.dependencies.push_back(std::move(dep));
          }
        }
        ag.workloads.push_back(std::move(w));
      }
    }
    // Selectors unique; dependencies name a workload of the group.
    std::set<std::string> seen;
    for (size_t i = 0; i < ag.workloads.size(); ++i) {
      const std::string& sel = ag.workloads[i].workload.selector;
      if (!sel.empty() && !seen.insert(sel).second) {
        e.Add("spec.workloads[" + std::to_string(i) + "].workload.selector",
              "duplicate selector \"" + sel + "\"");
      }
    }
    for (size_t i = 0; i < ag.workloads.size(); ++i) {
      const auto& deps = ag.workloads[i].dependencies;
      for (size_t j = 0; j < deps.size(); ++j) {
        const std::string& sel = deps[j].workload.selector;
        if (!sel.empty() && seen.count(sel) == 0) {
          e.Add("spec.workloads[" + std::to_string(i) + "].dependencies[" + std::to_string(j) +
                    "].workload.selector",
                "names no workload of the AppGroup: \"" + sel + "\"");
        }
      }
    }
  }
  if (const json::object* status = GetObject(root, "status", "status", e)) {
    if (const json::array* order = GetArray(*status, "topologyOrder", "status.topologyOrder", e)) {
      for (size_t i = 0; i < order->size(); ++i) {
        std::string path = "status.topologyOrder[" + std::to_string(i) + "]";
        if (!(*order)[i].is_object()) {
          e.Add(path, "must be an object, got " + Quote((*order)[i]));
          continue;
        }
        const json::object& oo = (*order)[i].get_object();
        std::string sel;
        if (const json::object* ref = GetObject(oo, "workload", path + ".workload", e, true)) {
          sel = DecodeWorkloadRef(*ref, path + ".workload", e).selector;
        }
        auto idx = GetInt(oo, "index", path + ".index", e);
        if (idx && (*idx < 0 || *idx > INT32_MAX)) {
          e.Add(path + ".index", "must be >= 0, got " + std::to_string(*idx));
          idx.reset();
        }
        if (!sel.empty() && idx) ag.topology_order.emplace_back(sel, static_cast<int32_t>(*idx));
      }
      std::sort(ag.topology_order.begin(), ag.topology_order.end());
    }
  }
  GPUSCHED_RETURN_IF_ERROR(e.ToStatus());
  return ag;
}

common::StatusOr<NetworkTopology> DecodeNetworkTopology(const json::value& object) {
  Errors e("NetworkTopology");
  NetworkTopology nt;
  if (!object.is_object()) {
    e.Add("(object)", "must be a JSON object, got " + Quote(object));
    return e.ToStatus();
  }
  const json::object& root = object.get_object();
  DecodeMeta(root, &nt.namespace_, &nt.name, &nt.resource_version, e);
  if (std::string kind = GetString(root, "kind", "kind", e);
      !kind.empty() && kind != "NetworkTopology") {
    e.Add("kind", "must be NetworkTopology, got \"" + kind + "\"");
  }
  const json::object* spec = GetObject(root, "spec", "spec", e, true);
  if (spec != nullptr) {
    nt.configmap_name = GetString(*spec, "configmapName", "spec.configmapName", e);
    if (const json::array* weights = GetArray(*spec, "weights", "spec.weights", e)) {
      for (size_t i = 0; i < weights->size(); ++i) {
        std::string path = "spec.weights[" + std::to_string(i) + "]";
        if (!(*weights)[i].is_object()) {
          e.Add(path, "must be an object, got " + Quote((*weights)[i]));
          continue;
        }
        const json::object& wo = (*weights)[i].get_object();
        WeightSet ws;
        ws.name = GetString(wo, "name", path + ".name", e);
        if (ws.name.empty()) e.Add(path + ".name", "required");
        const json::array* topos = GetArray(wo, "topologyList", path + ".topologyList", e);
        for (size_t t = 0; topos != nullptr && t < topos->size(); ++t) {
          std::string tpath = path + ".topologyList[" + std::to_string(t) + "]";
          if (!(*topos)[t].is_object()) {
            e.Add(tpath, "must be an object, got " + Quote((*topos)[t]));
            continue;
          }
          const json::object& to = (*topos)[t].get_object();
          TopologyCosts tc;
          tc.topology_key = GetString(to, "topologyKey", tpath + ".topologyKey", e);
          if (tc.topology_key != kRegionLabel && tc.topology_key != kZoneLabel) {
            e.Add(tpath + ".topologyKey", "must be " + std::string(kRegionLabel) + " or " +
                                              std::string(kZoneLabel) + ", got \"" +
                                              tc.topology_key + "\"");
          }
          const json::array* origins = GetArray(to, "originList", tpath + ".originList", e);
          for (size_t o = 0; origins != nullptr && o < origins->size(); ++o) {
            std::string opath = tpath + ".originList[" + std::to_string(o) + "]";
            if (!(*origins)[o].is_object()) {
              e.Add(opath, "must be an object, got " + Quote((*origins)[o]));
              continue;
            }
            const json::object& oo = (*origins)[o].get_object();
            std::string origin = GetString(oo, "origin", opath + ".origin", e);
            if (origin.empty()) e.Add(opath + ".origin", "required");
            const json::array* costs = GetArray(oo, "costList", opath + ".costList", e);
            for (size_t c = 0; costs != nullptr && c < costs->size(); ++c) {
              std::string cpath = opath + ".costList[" + std::to_string(c) + "]";
              if (!(*costs)[c].is_object()) {
                e.Add(cpath, "must be an object, got " + Quote((*costs)[c]));
                continue;
              }
              const json::object& co = (*costs)[c].get_object();
              TopologyCosts::Entry entry;
              entry.origin = origin;
              entry.destination = GetString(co, "destination", cpath + ".destination", e);
              if (entry.destination.empty()) e.Add(cpath + ".destination", "required");
              auto cost = GetInt(co, "networkCost", cpath + ".networkCost", e);
              if (cost && *cost < 0) {
                e.Add(cpath + ".networkCost", "must be >= 0, got " + std::to_string(*cost));
              } else if (cost) {
                entry.cost = *cost;
              }
              // Bandwidth fields are modelled upstream but not enforced; validated only.
              (void)GetQuantity(co, "bandwidthCapacity", cpath + ".bandwidthCapacity", e);
              (void)GetQuantity(co, "bandwidthAllocated", cpath + ".bandwidthAllocated", e);
              if (!origin.empty() && !entry.destination.empty()) {
                tc.entries.push_back(std::move(entry));
              }
            }
          }
          std::sort(tc.entries.begin(), tc.entries.end(), [](const auto& a, const auto& b) {
            return std::tie(a.origin, a.destination) < std::tie(b.origin, b.destination);
          });
          for (size_t k = 1; k < tc.entries.size(); ++k) {
            if (tc.entries[k].origin == tc.entries[k - 1].origin &&
                tc.entries[k].destination == tc.entries[k - 1].destination) {
              e.Add(tpath, "duplicate cost " + tc.entries[k].origin + " -> " +
                               tc.entries[k].destination);
            }
          }
          ws.topologies.push_back(std::move(tc));
        }
        nt.weights.push_back(std::move(ws));
      }
    }
  }
  GPUSCHED_RETURN_IF_ERROR(e.ToStatus());
  return nt;
}

common::StatusOr<AppGroup> ParseAppGroup(std::string_view text, std::string_view source) {
  GPUSCHED_ASSIGN_OR_RETURN(json::value v, api::ParseJson(text, source));
  auto ag = DecodeAppGroup(v);
  if (!ag.ok()) return ag.status().WithContext(source);
  return ag;
}

common::StatusOr<NetworkTopology> ParseNetworkTopology(std::string_view text,
                                                       std::string_view source) {
  GPUSCHED_ASSIGN_OR_RETURN(json::value v, api::ParseJson(text, source));
  auto nt = DecodeNetworkTopology(v);
  if (!nt.ok()) return nt.status().WithContext(source);
  return nt;
}

}  // namespace gpusched::network
