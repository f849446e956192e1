// SPDX-License-Identifier: Apache-2.0
#include "src/sim/traffic_report.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "src/api/network_crd.h"
#include "src/api/traffic_annotation.h"

namespace gpusched::sim {
namespace {

std::string WorkloadOf(const api::Pod& pod) {
  for (const api::OwnerReference& o : pod.meta.owner_references) {
    if (o.controller) return pod.meta.namespace_ + "/" + o.name;
  }
  static const common::Atom app = common::Intern("app");
  common::Atom v;
  if (pod.meta.labels.Get(app, &v) && !v.empty()) {
    return pod.meta.namespace_ + "/" + std::string(common::Str(v));
  }
  return pod.Key();
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

}  // namespace

bool HasTrafficDeclarations(const Workload& workload) {
  for (const api::PodPtr& p : workload.pods) {
    if (p->meta.Annotation(api::kTrafficAnnotation) != nullptr) return true;
  }
  return false;
}

TrafficReport BuildTrafficReport(const Simulator& sim, double dollars_per_gb) {
  static const common::Atom zone_label = common::Intern(api::kZoneLabel);
  TrafficReport r;
  r.dollars_per_gb = dollars_per_gb;
  if (!sim.config().profiles.empty()) r.profile = sim.config().profiles.front().scheduler_name;
  std::vector<PlacedPod> placed;
  std::map<std::string, std::pair<int32_t, std::set<std::string>>> spans;
  for (const PodOutcome& o : sim.outcomes()) {
    if (o.deleted || (o.state != PodState::kScheduled && o.state != PodState::kPreBound)) continue;
    const std::string& node_name = o.state == PodState::kPreBound ? o.pod->node_name : o.node;
    api::NodePtr node = sim.cluster().GetNode(node_name);
    common::Atom zone;
    if (node != nullptr) node->meta.labels.Get(zone_label, &zone);
    placed.push_back(PlacedPod{o.pod.get(), node_name, common::Str(zone)});
    auto& span = spans[WorkloadOf(*o.pod)];
    ++span.first;
    span.second.insert(std::string(common::Str(zone)));
  }
  r.summary = AccountTraffic(placed);
  r.cross_zone_gb_per_day = TrafficSummary::GBPerDay(r.summary.cross_zone_mbps);
  r.cross_zone_dollars_per_month =
      TrafficSummary::DollarsPerMonth(r.summary.cross_zone_mbps, dollars_per_gb);
  r.zone_blind_gb_per_day = TrafficSummary::GBPerDay(r.summary.cross_zone_mbps_zone_blind);
  r.zone_blind_dollars_per_month =
      TrafficSummary::DollarsPerMonth(r.summary.cross_zone_mbps_zone_blind, dollars_per_gb);
  for (const auto& [name, span] : spans) {
    WorkloadSpan w{name, span.first, static_cast<int32_t>(span.second.size())};
    if (w.replicas >= 2) {
      r.min_zones_multi_replica =
          r.min_zones_multi_replica == 0 ? w.zones : std::min(r.min_zones_multi_replica, w.zones);
    }
    r.spans.push_back(std::move(w));
  }
  return r;
}

std::string FormatTrafficText(const TrafficReport& r) {
  const auto& s = r.summary;
  std::string out = "Network traffic (gpusched.io/traffic declarations, $" +
                    Fixed(r.dollars_per_gb, 3) + "/GB crossing zones):\n";
  out += "  declared traffic between placed pods  " + Fixed(s.total_mbps, 2) + " MB/s (" +
         Fixed(TrafficSummary::GBPerDay(s.total_mbps), 1) + " GB/day)\n";
  out += "  cross-zone, same-zone routing         " + Fixed(s.cross_zone_mbps, 2) +
         " MB/s = " + Fixed(r.cross_zone_gb_per_day, 1) + " GB/day = $" +
         Fixed(r.cross_zone_dollars_per_month, 2) + "/month\n";
  out += "  cross-zone, zone-blind routing        " + Fixed(s.cross_zone_mbps_zone_blind, 2) +
         " MB/s = " + Fixed(r.zone_blind_gb_per_day, 1) + " GB/day = $" +
         Fixed(r.zone_blind_dollars_per_month, 2) + "/month\n";
  if (s.unmatched_mbps > 0) {
    out += "  declared with no placed peer          " + Fixed(s.unmatched_mbps, 2) + " MB/s\n";
  }
  out += "  zones spanned (workloads with >= 2 replicas): min " +
         std::to_string(r.min_zones_multi_replica) + "\n";
  for (const WorkloadSpan& w : r.spans) {
    out += "    " + w.workload + ": " + std::to_string(w.replicas) + " replicas in " +
           std::to_string(w.zones) + " zone(s)\n";
  }
  for (const std::string& e : s.errors) out += "  error: " + e + "\n";
  return out;
}

boost::json::value TrafficToJson(const TrafficReport& r) {
  boost::json::object o;
  o["profile"] = r.profile;
  o["dollarsPerGB"] = r.dollars_per_gb;
  o["declaredMBps"] = r.summary.total_mbps;
  o["crossZoneMBps"] = r.summary.cross_zone_mbps;
  o["crossZoneGBPerDay"] = r.cross_zone_gb_per_day;
  o["crossZoneDollarsPerMonth"] = r.cross_zone_dollars_per_month;
  o["zoneBlindCrossZoneMBps"] = r.summary.cross_zone_mbps_zone_blind;
  o["zoneBlindGBPerDay"] = r.zone_blind_gb_per_day;
  o["zoneBlindDollarsPerMonth"] = r.zone_blind_dollars_per_month;
  o["unmatchedMBps"] = r.summary.unmatched_mbps;
  o["minZonesMultiReplica"] = r.min_zones_multi_replica;
  boost::json::array spans;
  for (const WorkloadSpan& w : r.spans) {
    spans.push_back(boost::json::object{
        {"workload", w.workload}, {"replicas", w.replicas}, {"zones", w.zones}});
  }
  o["workloads"] = std::move(spans);
  boost::json::array errors;
  for (const std::string& e : r.summary.errors) errors.push_back(boost::json::value(e));
  o["errors"] = std::move(errors);
  return o;
}

}  // namespace gpusched::sim
