// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/network_locality/network_locality.h"

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/plugins/helper/args.h"
#include "src/plugins/helper/queueing_hints.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::network_locality {
namespace {

const framework::StateKey kStateKey{"NetworkLocality/PreFilter"};

inline constexpr std::string_view kReasonNetworkRequirements =
    "node(s) did not meet the network requirements of the pod's workload dependencies";
inline constexpr std::string_view kReasonCostLimit =
    "node(s) exceeded the network locality cost limit";

// Raw annotation-mode cost unit: milli-dollars per month.
inline constexpr double kSecondsPerMonth = 30.0 * 86400.0;
double DollarsPerMonth(double mbps, double dollars_per_gb) {
  return mbps * kSecondsPerMonth / 1000.0 * dollars_per_gb;
}

struct Labels {
  common::Atom region = common::Intern(api::kRegionLabel);
  common::Atom zone = common::Intern(api::kZoneLabel);
  common::Atom app_group = common::Intern(api::kAppGroupLabel);
  common::Atom workload = common::Intern(api::kWorkloadLabel);
};
const Labels& L() {
  static const Labels labels;
  return labels;
}

common::Atom LabelOf(const api::Labels& labels, common::Atom key) {
  common::Atom v;
  labels.Get(key, &v);
  return v;
}

// A price or cost: a number in [0, 1e6].
std::optional<double> GetAmount(api::ObjectFields& f, std::string_view key) {
  const std::optional<double> d = f.Number(key);
  if (d && (*d < 0 || *d > 1e6)) {
    f.Error(key, "must be in 0..1000000, got " + boost::json::serialize(*f.Value(key)));
    return std::nullopt;
  }
  return d;
}

// A (region, zone) pair of node labels; empty atoms where a label is missing.
using Domain = std::pair<common::Atom, common::Atom>;

// The distinct domains of the valid nodes, in node order, and each node's (node_domain, sized to
// the nodes, -1 for invalid ones); with `regions`, the same for regions alone.
void IndexDomains(std::span<const framework::NodeInfo> nodes, std::vector<Domain>& domains,
                  std::vector<int32_t>& node_domain, std::vector<common::Atom>* regions,
                  std::vector<int32_t>* node_region) {
  for (const framework::NodeInfo& n : nodes) {
    if (!n.valid()) continue;
    common::Atom r = LabelOf(n.node->meta.labels, L().region);
    Domain d(r, LabelOf(n.node->meta.labels, L().zone));
    auto it = std::find(domains.begin(), domains.end(), d);
    node_domain[static_cast<size_t>(n.index)] = static_cast<int32_t>(it - domains.begin());
    if (it == domains.end()) domains.push_back(d);
    if (regions == nullptr) continue;
    auto rt = std::find(regions->begin(), regions->end(), r);
    (*node_region)[static_cast<size_t>(n.index)] = static_cast<int32_t>(rt - regions->begin());
    if (rt == regions->end()) regions->push_back(r);
  }
}

// AppGroup mode: placed dependency pods of one domain and maxNetworkCost.
struct DependencyGroup {
  int32_t domain;
  int64_t max_cost;
  int32_t count;
};

// Aggregates the placed pods of `pod`'s AppGroup (and namespace) that `self` depends on, per
// (domain, maxNetworkCost) into `groups` and per node into `on_node`. False when no pod of the
// group is placed.
bool GatherDependencies(const api::Pod& pod, const api::AppGroupWorkload& self,
                        std::span<const framework::NodeInfo> nodes,
                        const std::vector<int32_t>& node_domain,
                        std::vector<DependencyGroup>& groups,
                        std::vector<std::pair<int32_t, int32_t>>& on_node) {
  bool any_scheduled = false;
  common::Atom group_label = LabelOf(pod.meta.labels, L().app_group);
  for (const framework::NodeInfo& n : nodes) {
    if (!n.valid()) continue;
    int32_t here = 0;
    for (const api::PodPtr& p : n.pods) {
      if (p->meta.namespace_ != pod.meta.namespace_ ||
          LabelOf(p->meta.labels, L().app_group) != group_label) {
        continue;
      }
      any_scheduled = true;
      std::string_view sel = common::Str(LabelOf(p->meta.labels, L().workload));
      for (const api::Dependency& d : self.dependencies) {
        if (d.workload.selector != sel) continue;
        int32_t dom = node_domain[static_cast<size_t>(n.index)];
        auto g = std::find_if(groups.begin(), groups.end(), [&](const DependencyGroup& x) {
          return x.domain == dom && x.max_cost == d.max_network_cost;
        });
        if (g == groups.end()) {
          groups.push_back(DependencyGroup{dom, d.max_network_cost, 1});
        } else {
          ++g->count;
        }
        ++here;
      }
    }
    if (here > 0) on_node.emplace_back(n.index, here);
  }
  return any_scheduled;
}

// AppGroup mode: the network cost between two domains and what it means for a dependency.
enum class CellKind : uint8_t { kUnlabelled, kSame, kKnown, kUnknown };
struct DomainCell {
  CellKind kind;
  int64_t cost;
};

// The domain-pair cost table (row a, column b at a * domains + b), from the NetworkTopology's
// weight set `weights_name` (`nt` null: none known).
std::vector<DomainCell> DomainCostTable(const api::NetworkTopology* nt,
                                        const std::string& weights_name,
                                        const std::vector<Domain>& domains) {
  const api::WeightSet* ws = nt ? nt->FindWeights(weights_name) : nullptr;
  const api::TopologyCosts* region_costs = ws ? ws->Find(api::kRegionLabel) : nullptr;
  const api::TopologyCosts* zone_costs = ws ? ws->Find(api::kZoneLabel) : nullptr;
  const size_t nd = domains.size();
  std::vector<DomainCell> table(nd * nd);
  for (size_t a = 0; a < nd; ++a) {
    for (size_t b = 0; b < nd; ++b) {
      const auto& [ra, za] = domains[a];
      const auto& [rb, zb] = domains[b];
      DomainCell c{CellKind::kUnknown, kMaxCost};
      std::optional<int64_t> known;
      if (rb.empty() && zb.empty()) {
        c = {CellKind::kUnlabelled, kMaxCost};
      } else if (ra == rb && za == zb) {
        c = {CellKind::kSame, kSameZoneCost};
      } else if (ra == rb) {
        if (zone_costs) known = zone_costs->Find(common::Str(za), common::Str(zb));
      } else if (region_costs) {
        known = region_costs->Find(common::Str(ra), common::Str(rb));
      }
      if (known) c = {CellKind::kKnown, *known};
      table[a * nd + b] = c;
    }
  }
  return table;
}

// Annotation mode: peer MB/s summed per node, per domain, per region and in total; a node's cost
// prices each part by where the traffic goes from it.
struct TrafficWeights {
  std::vector<double> node;
  std::vector<double> domain;
  std::vector<double> region;
  double total = 0;

  TrafficWeights(size_t nodes, size_t domains, size_t regions)
      : node(nodes, 0), domain(domains, 0), region(regions, 0) {}

  void Add(size_t n, int32_t d, int32_t r, double mbps) {
    node[n] += mbps;
    domain[static_cast<size_t>(d)] += mbps;
    region[static_cast<size_t>(r)] += mbps;
    total += mbps;
  }

  double NodeDollarsPerMonth(size_t n, int32_t d, int32_t r, const Prices& pr) const {
    const double same_node = node[n];
    const double same_zone = domain[static_cast<size_t>(d)] - same_node;
    const double cross_zone = region[static_cast<size_t>(r)] - same_node - same_zone;
    const double cross_region = total - same_node - same_zone - cross_zone;
    return DollarsPerMonth(same_node, pr.same_node) + DollarsPerMonth(same_zone, pr.same_zone) +
           DollarsPerMonth(cross_zone, pr.cross_zone) +
           DollarsPerMonth(cross_region, pr.cross_region);
  }
};

}  // namespace

struct NetworkLocality::Parsed {
  std::vector<api::TrafficPeer> peers;
  std::string error;  // non-empty when the annotation is malformed
};

// Per-pod results, indexed by NodeIndex.
struct NetworkLocality::State final : framework::StateData {
  bool score_equally = true;
  bool filter = false;  // Filter checks satisfied/violated or the cost limit
  bool app_group_mode = false;
  std::vector<int64_t> cost;       // raw score per node
  std::vector<int32_t> satisfied;  // AppGroup mode
  std::vector<int32_t> violated;
};

common::StatusOr<Args> ParseArgs(const boost::json::value& raw) {
  Args args;
  GPUSCHED_RETURN_IF_ERROR(helper::ReadArgs(raw, [&](api::ObjectFields& f) {
    if (const boost::json::array* ns = f.Array("namespaces")) {
      args.namespaces.clear();
      if (ns->empty()) f.Error("namespaces", "must list at least one namespace");
      f.ForEachString("namespaces", [&](std::string_view s, const api::FieldPath& path) {
        if (s.empty()) {
          f.reader().Error(path, "must not be empty");
        } else {
          args.namespaces.emplace_back(s);
        }
      });
    }
    for (auto [field, slot] :
         {std::pair<std::string_view, std::string*>{"weightsName", &args.weights_name},
          {"networkTopologyName", &args.network_topology_name}}) {
      if (auto s = f.String(field)) {
        if (s->empty()) f.Error(field, "must not be empty");
        *slot = std::string(*s);
      }
    }
    if (const boost::json::object* p = f.Object("prices")) {
      const api::FieldPath pp = f.path().Key("prices");
      api::ObjectFields prices(f.reader(), *p, pp);
      if (auto v = GetAmount(prices, "sameNodeDollarsPerGB")) args.prices.same_node = *v;
      if (auto v = GetAmount(prices, "sameZoneDollarsPerGB")) args.prices.same_zone = *v;
      if (auto v = GetAmount(prices, "crossZoneDollarsPerGB")) args.prices.cross_zone = *v;
      if (auto v = GetAmount(prices, "crossRegionDollarsPerGB")) args.prices.cross_region = *v;
    }
    if (auto v = GetAmount(f, "maxCostDollarsPerMonth")) args.max_cost_dollars_per_month = *v;
  }));
  return args;
}

common::StatusOr<framework::PluginPtr> NetworkLocality::Create(const boost::json::value& raw,
                                                               framework::Handle& handle) {
  GPUSCHED_ASSIGN_OR_RETURN(Args args, ParseArgs(raw));
  return framework::PluginPtr(std::make_unique<NetworkLocality>(std::move(args), handle.network()));
}

NetworkLocality::NetworkLocality(Args args, const framework::NetworkView* network)
    : args_(std::move(args)), network_(network) {}

std::string_view NetworkLocality::Name() const { return names::kNetworkLocality; }

bool NetworkLocality::Less(const framework::QueuedPodInfo& a,
                           const framework::QueuedPodInfo& b) const {
  const api::Pod& p1 = *a.pod;
  const api::Pod& p2 = *b.pod;
  common::Atom g1 = LabelOf(p1.meta.labels, L().app_group);
  common::Atom g2 = LabelOf(p2.meta.labels, L().app_group);
  if (network_ != nullptr && g1 == g2 && !g1.empty()) {
    auto catalog = network_->Current();
    const api::AppGroup* ag = nullptr;
    for (const std::string& ns : args_.namespaces) {
      if ((ag = catalog->FindAppGroup(ns, common::Str(g1))) != nullptr) break;
    }
    if (ag != nullptr) {
      int32_t o1 = ag->OrderIndex(common::Str(LabelOf(p1.meta.labels, L().workload)));
      int32_t o2 = ag->OrderIndex(common::Str(LabelOf(p2.meta.labels, L().workload)));
      if (o1 != o2) return o1 < o2;
    }
  }
  if (p1.priority != p2.priority) return p1.priority > p2.priority;
  return a.timestamp < b.timestamp;
}

const NetworkLocality::Parsed& NetworkLocality::ParseCached(const std::string& text) {
  auto it = parse_cache_.find(text);
  if (it != parse_cache_.end()) return *it->second;
  if (parse_cache_.size() >= 4096) parse_cache_.clear();  // bound memory; rebuilt on demand
  auto parsed = std::make_shared<Parsed>();
  auto peers = api::ParseTrafficAnnotation(text);
  if (peers.ok()) {
    parsed->peers = std::move(*peers);
  } else {
    parsed->error = std::string(peers.status().message());
  }
  return *parse_cache_.emplace(text, std::move(parsed)).first->second;
}

bool NetworkLocality::MayHavePeers(const api::Pod& pod) {
  if (!LabelOf(pod.meta.labels, L().app_group).empty()) return true;
  const auto& ns = pod.meta.namespace_;
  const bool seen = std::find(namespaces_with_traffic_.begin(), namespaces_with_traffic_.end(),
                              ns) != namespaces_with_traffic_.end();
  if (pod.meta.Annotation(api::kTrafficAnnotation) != nullptr) {
    if (!seen) namespaces_with_traffic_.emplace_back(ns);
    return true;
  }
  if (seen) return true;
  std::shared_ptr<const framework::NetworkCatalog> catalog =
      network_ ? network_->Current() : nullptr;
  const api::TrafficMatrix* matrix = catalog ? catalog->traffic_matrix() : nullptr;
  if (matrix == nullptr) return false;
  const common::Atom workload = LabelOf(pod.meta.labels, matrix->workload_label());
  return !workload.empty() && !matrix->PeersOf(ns, common::Str(workload)).empty();
}

framework::Status NetworkLocality::PreFilter(framework::CycleState& cycle, const api::Pod& pod,
                                             const framework::Snapshot& snapshot) {
  if (!MayHavePeers(pod)) return framework::Status::Skip();
  auto state = std::make_unique<State>();
  State& s = *state;
  framework::Status result;
  common::Atom group = LabelOf(pod.meta.labels, L().app_group);
  const api::AppGroup* ag = nullptr;
  std::shared_ptr<const framework::NetworkCatalog> catalog;
  if (!group.empty() && network_ != nullptr) {
    catalog = network_->Current();
    for (const std::string& ns : args_.namespaces) {
      if ((ag = catalog->FindAppGroup(ns, common::Str(group))) != nullptr) break;
    }
  }
  if (ag != nullptr) {
    result = AppGroupCosts(s, pod, *catalog, *ag, snapshot);
  } else {
    result = AnnotationCosts(s, pod, snapshot);
  }
  cycle.Write(kStateKey, std::move(state));
  return result;
}

framework::Status NetworkLocality::AppGroupCosts(State& s, const api::Pod& pod,
                                                 const framework::NetworkCatalog& catalog,
                                                 const api::AppGroup& ag,
                                                 const framework::Snapshot& snapshot) {
  s.app_group_mode = true;
  const api::AppGroupWorkload* self =
      ag.FindWorkload(common::Str(LabelOf(pod.meta.labels, L().workload)));
  if (self == nullptr || self->dependencies.empty()) return framework::Status::Success();

  std::span<const framework::NodeInfo> nodes = snapshot.nodes();
  std::vector<Domain> domains;
  std::vector<int32_t> node_domain(nodes.size(), -1);
  IndexDomains(nodes, domains, node_domain, nullptr, nullptr);
  std::vector<DependencyGroup> groups;
  std::vector<std::pair<int32_t, int32_t>> on_node;  // (node index, count) of dependency pods
  if (!GatherDependencies(pod, *self, nodes, node_domain, groups, on_node)) {
    return framework::Status::Success();
  }
  const std::vector<DomainCell> table =
      DomainCostTable(catalog.FindTopology(ag.namespace_, args_.network_topology_name),
                      args_.weights_name, domains);

  s.score_equally = false;
  s.filter = true;
  s.cost.assign(nodes.size(), 0);
  s.satisfied.assign(nodes.size(), 0);
  s.violated.assign(nodes.size(), 0);
  const size_t nd = domains.size();
  for (const framework::NodeInfo& n : nodes) {
    if (!n.valid()) continue;
    const size_t i = static_cast<size_t>(n.index);
    const size_t a = static_cast<size_t>(node_domain[i]);
    int64_t cost = 0;
    int32_t sat = 0;
    int32_t vio = 0;
    for (const DependencyGroup& g : groups) {
      const DomainCell& c = table[a * nd + static_cast<size_t>(g.domain)];
      cost += c.cost * g.count;
      switch (c.kind) {
        case CellKind::kUnlabelled: vio += g.count; break;
        case CellKind::kSame: sat += g.count; break;
        case CellKind::kKnown: (c.cost <= g.max_cost ? sat : vio) += g.count; break;
        case CellKind::kUnknown: break;
      }
    }
    s.cost[i] = cost;
    s.satisfied[i] = sat;
    s.violated[i] = vio;
  }
  // Dependencies on the node itself cost 0 and are satisfied (upstream checks this first).
  for (const auto& [idx, count] : on_node) {
    const size_t i = static_cast<size_t>(idx);
    const auto& [r, z] = domains[static_cast<size_t>(node_domain[i])];
    if (r.empty() && z.empty()) {
      s.cost[i] -= kMaxCost * count;
      s.violated[i] -= count;
    } else {
      s.cost[i] -= kSameZoneCost * count;
      s.satisfied[i] -= count;
    }
    s.satisfied[i] += count;
  }
  return framework::Status::Success();
}

// Annotation mode: a placed pod of the namespace, with its parsed declaration (null: none).
struct NetworkLocality::Placed {
  const api::Pod* pod;
  framework::NodeIndex node;
  const Parsed* parsed;
};

// Annotation mode: the measured peers of the pod's workload (api::TrafficMatrix, from service
// mesh metrics), in any namespace, and their placed replicas.
struct NetworkLocality::MeshTraffic {
  const api::TrafficMatrix* matrix = nullptr;
  std::span<const api::TrafficMatrix::Peer> peers;
  common::Atom self_workload;
  std::vector<std::pair<framework::NodeIndex, size_t>> placed;  // (node, peer) per placed replica
  std::vector<int32_t> replicas;                                // placed replicas per peer
  int32_t self_replicas = 1;                                    // this pod and its placed siblings

  MeshTraffic(const api::Pod& pod, const api::TrafficMatrix* m) : matrix(m) {
    if (matrix != nullptr) {
      self_workload = LabelOf(pod.meta.labels, matrix->workload_label());
      if (!self_workload.empty()) {
        peers = matrix->PeersOf(pod.meta.namespace_, common::Str(self_workload));
      }
    }
    replicas.assign(peers.size(), 0);
  }

  // Counts `p` (placed on `node`) as a sibling of `pod` or a replica of a peer.
  void Count(const api::Pod& pod, const api::Pod& p, framework::NodeIndex node) {
    if (peers.empty()) return;
    common::Atom w = LabelOf(p.meta.labels, matrix->workload_label());
    if (w.empty()) return;
    if (w == self_workload && p.meta.namespace_ == pod.meta.namespace_) ++self_replicas;
    for (size_t k = 0; k < peers.size(); ++k) {
      if (peers[k].workload == w && peers[k].ns == p.meta.namespace_) {
        placed.emplace_back(node, k);
        ++replicas[k];
      }
    }
  }
};

void NetworkLocality::CollectPlaced(const api::Pod& pod, std::span<const framework::NodeInfo> nodes,
                                    MeshTraffic& mesh, std::vector<Placed>& placed) {
  for (const framework::NodeInfo& n : nodes) {
    if (!n.valid()) continue;
    for (const api::PodPtr& p : n.pods) {
      if (p->meta.uid == pod.meta.uid) continue;
      mesh.Count(pod, *p, n.index);
      if (p->meta.namespace_ != pod.meta.namespace_) continue;
      const std::string* text = p->meta.Annotation(api::kTrafficAnnotation);
      const Parsed* parsed = text ? &ParseCached(*text) : nullptr;
      placed.push_back(Placed{p.get(), n.index, parsed});
    }
  }
}

bool NetworkLocality::DeclaredMbps(const api::Pod& pod, const Parsed* own,
                                   const std::vector<Placed>& placed, std::vector<double>& mbps) {
  bool any = false;
  if (own != nullptr) {
    for (const api::TrafficPeer& peer : own->peers) {
      int32_t matched = 0;
      for (const Placed& p : placed) matched += peer.selector.Matches(p.pod->meta.labels) ? 1 : 0;
      if (matched == 0) continue;
      for (size_t i = 0; i < placed.size(); ++i) {
        if (peer.selector.Matches(placed[i].pod->meta.labels)) {
          mbps[i] += peer.mbps / matched;
          any = true;
        }
      }
    }
  }
  // Reverse declarations: placed pods whose entries select this pod; their traffic is shared by
  // this pod and the placed pods the same entry selects.
  for (size_t i = 0; i < placed.size(); ++i) {
    if (placed[i].parsed == nullptr || !placed[i].parsed->error.empty()) continue;
    for (const api::TrafficPeer& peer : placed[i].parsed->peers) {
      if (!peer.selector.Matches(pod.meta.labels)) continue;
      int32_t replicas = 1;
      for (size_t j = 0; j < placed.size(); ++j) {
        if (j != i && peer.selector.Matches(placed[j].pod->meta.labels)) ++replicas;
      }
      mbps[i] += peer.mbps / replicas;
      any = true;
    }
  }
  return any;
}

framework::Status NetworkLocality::AnnotationCosts(State& s, const api::Pod& pod,
                                                   const framework::Snapshot& snapshot) {
  const Parsed* own = nullptr;
  if (const std::string* text = pod.meta.Annotation(api::kTrafficAnnotation)) {
    own = &ParseCached(*text);
    if (!own->error.empty()) {
      // Interned: a stable reason for the FailedScheduling message.
      common::Atom reason =
          common::Intern("invalid annotation " + std::string(api::kTrafficAnnotation) + "=\"" +
                         *text + "\": " + own->error);
      return framework::Status::Unresolvable(common::Str(reason));
    }
  }

  std::shared_ptr<const framework::NetworkCatalog> catalog =
      network_ ? network_->Current() : nullptr;
  MeshTraffic mesh(pod, catalog ? catalog->traffic_matrix() : nullptr);
  std::vector<Placed> placed;  // placed pods of the namespace, with their declarations
  std::span<const framework::NodeInfo> nodes = snapshot.nodes();
  CollectPlaced(pod, nodes, mesh, placed);
  if (placed.empty() && mesh.placed.empty()) return framework::Status::Success();

  // MB/s towards each placed peer.
  std::vector<double> mbps(placed.size(), 0);
  const bool any = DeclaredMbps(pod, own, placed, mbps);
  if (!any && mesh.placed.empty()) return framework::Status::Success();

  // Per-node, per-zone and per-region sums of $/month if the traffic crossed zones.
  std::vector<Domain> domains;
  std::vector<common::Atom> regions;
  std::vector<int32_t> node_domain(nodes.size(), -1);
  std::vector<int32_t> node_region(nodes.size(), -1);
  IndexDomains(nodes, domains, node_domain, &regions, &node_region);
  TrafficWeights w(nodes.size(), domains.size(), regions.size());
  for (size_t i = 0; i < placed.size(); ++i) {
    if (mbps[i] == 0) continue;
    const size_t ni = static_cast<size_t>(placed[i].node);
    w.Add(ni, node_domain[ni], node_region[ni], mbps[i]);
  }
  // A measured pair A <-> B of m MB/s: this replica of A carries m / (replicas of A), shared
  // evenly by B's placed replicas.
  for (const auto& [node, k] : mesh.placed) {
    const double m = mesh.peers[k].mbps / mesh.self_replicas / mesh.replicas[k];
    const size_t ni = static_cast<size_t>(node);
    w.Add(ni, node_domain[ni], node_region[ni], m);
  }
  s.score_equally = false;
  s.filter = args_.max_cost_dollars_per_month > 0;
  s.cost.assign(nodes.size(), 0);
  for (const framework::NodeInfo& n : nodes) {
    if (!n.valid()) continue;
    const size_t i = static_cast<size_t>(n.index);
    const double dollars = w.NodeDollarsPerMonth(i, node_domain[i], node_region[i], args_.prices);
    s.cost[i] = std::llround(std::max(0.0, dollars) * 1000.0);  // milli-dollars per month
  }
  return framework::Status::Success();
}

framework::Status NetworkLocality::Filter(const framework::CycleState& cycle,
                                          const api::Pod& /*pod*/,
                                          const framework::NodeInfo& node) const {
  const State* s = cycle.Get<State>(kStateKey);
  if (s == nullptr || s->score_equally || !s->filter) return framework::Status::Success();
  const size_t i = static_cast<size_t>(node.index);
  if (i >= s->cost.size()) return framework::Status::Success();
  if (s->app_group_mode) {
    if (s->violated[i] > s->satisfied[i]) {
      return framework::Status::Unschedulable(kReasonNetworkRequirements);
    }
    return framework::Status::Success();
  }
  if (static_cast<double>(s->cost[i]) > args_.max_cost_dollars_per_month * 1000.0) {
    return framework::Status::Unschedulable(kReasonCostLimit);
  }
  return framework::Status::Success();
}

framework::Status NetworkLocality::PreScore(framework::CycleState& cycle, const api::Pod& pod,
                                            const framework::Snapshot& snapshot,
                                            std::span<const framework::NodeIndex> /*feasible*/) {
  if (cycle.Get<State>(kStateKey) != nullptr) return framework::Status::Success();
  framework::Status s = PreFilter(cycle, pod, snapshot);
  if (s.IsSkip()) return s;
  // A malformed annotation already made the pod unschedulable when PreFilter ran; at score
  // time it only means "no declared traffic".
  return s.IsRejected() ? framework::Status::Success() : s;
}

void NetworkLocality::ScoreNodes(const framework::CycleState& cycle, const api::Pod& /*pod*/,
                                 const framework::Snapshot& snapshot,
                                 std::span<const framework::NodeIndex> nodes,
                                 std::span<int64_t> out) const {
  const State* s = cycle.Get<State>(kStateKey);
  framework::ScoreEach(snapshot, nodes, out, [s](const framework::NodeInfo& node) -> int64_t {
    if (s == nullptr || s->score_equally) return 0;
    const auto i = static_cast<size_t>(node.index);
    return i < s->cost.size() ? s->cost[i] : 0;
  });
}

framework::Status NetworkLocality::NormalizeScore(const framework::CycleState& /*cycle*/,
                                                  const api::Pod& /*pod*/,
                                                  std::span<int64_t> scores) const {
  if (scores.empty()) return framework::Status::Success();
  const auto [lo_it, hi_it] = std::minmax_element(scores.begin(), scores.end());
  const int64_t lo = *lo_it;
  const int64_t hi = *hi_it;
  if (lo == 0 && hi == 0) return framework::Status::Success();
  for (int64_t& s : scores) {
    if (hi != lo) {
      s = framework::kMaxNodeScore -
          static_cast<int64_t>(static_cast<double>(framework::kMaxNodeScore) *
                               static_cast<double>(s - lo) / static_cast<double>(hi - lo));
    } else {
      s = framework::kMaxNodeScore - (s - lo);
    }
  }
  return framework::Status::Success();
}

using framework::ClusterEvent;
using framework::ClusterEventWithHint;
using framework::EventObjects;
using framework::EventResource;
using framework::QueueingHint;

std::vector<ClusterEventWithHint> NetworkLocality::EventsToRegister() const {
  // Where the pod's peers run (assigned pods) and the nodes' topology labels and annotations
  // decide its requirements and costs; no hints.
  return {
      {ClusterEvent{EventResource::kAssignedPod,
                    framework::kAdd | framework::kDelete | framework::kUpdatePodLabel},
       nullptr},
      {ClusterEvent{EventResource::kNode,
                    framework::kAdd | framework::kDelete | framework::kUpdateNodeLabel |
                        framework::kUpdateNodeAnnotation | framework::kUpdateNodeAllocatable},
       nullptr},
  };
}

std::string NetworkLocality::ExplainScore(const framework::CycleState& /*state*/,
                                          const api::Pod& /*pod*/,
                                          const framework::NodeInfo& /*node*/, int64_t raw) const {
  return "network cost " + std::to_string(raw) + " (lower is better)";
}

}  // namespace gpusched::plugins::network_locality
