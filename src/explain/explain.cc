// SPDX-License-Identifier: Apache-2.0
#include "src/explain/explain.h"

#include <algorithm>
#include <cstddef>
#include <sstream>
#include <utility>

#include "src/framework/reasons.h"
#include "src/framework/status.h"

namespace gpusched::explain {
namespace {

using framework::runtime::ScheduleResult;

// One row per valid node of the snapshot, in slot order; `row_of[slot]` is the row's index (-1
// for an empty slot). A PreFilter rejection applies to every node.
std::vector<NodeRow> InitialRows(const Subject& subject, const ScheduleResult& r,
                                 const framework::Snapshot& snapshot, std::vector<int>& row_of) {
  std::vector<NodeRow> rows;
  row_of.assign(snapshot.nodes().size(), -1);
  const framework::Status& pre = r.diagnosis.pre_filter_status;
  for (const auto& ni : snapshot.nodes()) {
    if (!ni.valid()) continue;
    NodeRow row;
    row.name = std::string(ni.name());
    row.bound = !subject.bound_node.empty() && row.name == subject.bound_node;
    row_of[static_cast<size_t>(ni.index)] = static_cast<int>(rows.size());
    if (!pre.ok()) {
      row.code = std::string(framework::CodeName(pre.code()));
      row.plugin = pre.plugin().empty() ? std::string("PreFilter") : std::string(pre.plugin());
      row.reason = std::string(pre.reason());
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// The row of node `node`, or nullptr when it is not a valid node of the snapshot.
NodeRow* RowOf(std::vector<NodeRow>& rows, const std::vector<int>& row_of,
               framework::NodeIndex node) {
  if (node < 0 || static_cast<size_t>(node) >= row_of.size()) return nullptr;
  int k = row_of[static_cast<size_t>(node)];
  return k < 0 ? nullptr : &rows[static_cast<size_t>(k)];
}

// Filter verdicts (rejected nodes), score breakdowns (feasible nodes) and the choice.
void ApplyResult(const ScheduleResult& r, const std::vector<int>& row_of, Explanation& ex) {
  for (const auto& v : r.diagnosis.verdicts) {
    NodeRow* row = RowOf(ex.nodes, row_of, v.node);
    if (row == nullptr) continue;
    row->code = std::string(framework::CodeName(v.status.code()));
    row->plugin = std::string(v.status.plugin());
    row->reason = framework::ReasonsForDisplay(v.status.reason());
  }
  for (const auto& b : r.scores) {
    NodeRow* row = RowOf(ex.nodes, row_of, b.node);
    if (row == nullptr) continue;
    row->feasible = true;
    row->chosen = b.node == r.node;
    NodeScores scores;
    scores.total = b.total;
    for (const auto& ps : b.by_plugin) {
      scores.by_plugin.push_back(
          {std::string(ps.plugin), ps.raw, ps.normalized, ps.weight, ps.weighted, ps.why});
    }
    row->scores = std::move(scores);
  }
  if (NodeRow* row = RowOf(ex.nodes, row_of, r.node); row != nullptr) {
    row->feasible = true;
    row->chosen = true;
    ex.chosen = row->name;
  }
}

// What preemption tried on each node, and the node it would nominate.
void ApplyPostFilter(const ScheduleResult& r, const std::vector<int>& row_of, Explanation& ex) {
  if (!r.post_filter_ran) return;
  for (const framework::NodePostFilter& np : r.post_filter.per_node) {
    NodeRow* row = RowOf(ex.nodes, row_of, np.node);
    if (row == nullptr) continue;
    PreemptionRow p;
    p.possible = np.status.ok();
    for (const api::PodPtr& v : np.victims) p.victims.push_back({v->Key(), v->priority});
    p.pdb_violations = np.pdb_violations;
    if (!p.possible) {
      p.plugin = std::string(np.status.plugin());
      p.reason = np.status.IsError() ? np.status.ToString() : std::string(np.status.reason());
    }
    row->preemption = std::move(p);
  }
  if (!r.post_filter.victims.empty()) ex.nominated = r.post_filter.nominated_node;
  const auto& to = r.post_filter.destinations;
  for (size_t i = 0; i < to.size() && i < r.post_filter.victims.size(); ++i) {
    ex.moves.push_back({r.post_filter.victims[i]->Key(), to[i]});
  }
}

// Feasible nodes by total (highest first; equal totals: the chosen one first, then by name),
// then the others by name.
void SortRows(std::vector<NodeRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const NodeRow& a, const NodeRow& b) {
    if (a.feasible != b.feasible) return a.feasible;
    if (a.feasible) {
      int64_t ta = a.scores ? a.scores->total : 0, tb = b.scores ? b.scores->total : 0;
      if (ta != tb) return ta > tb;
      if (a.chosen != b.chosen) return a.chosen;
    }
    return a.name < b.name;
  });
}

void SetOutcome(const ScheduleResult& r, Explanation& ex) {
  if (r.status.ok()) {
    ex.outcome = Outcome::kSchedulable;
  } else if (r.status.IsError()) {
    ex.outcome = Outcome::kError;
    ex.message = r.status.ToString();
  } else {
    ex.outcome = r.status.code() == framework::Code::kUnschedulableAndUnresolvable
                     ? Outcome::kUnresolvable
                     : Outcome::kUnschedulable;
    ex.message = r.diagnosis.Message();
  }
}

// An aligned table: columns listed in `right` are right-aligned (numbers). Trailing blanks are
// trimmed from every line.
std::string Table(const std::vector<std::vector<std::string>>& rows,
                  const std::vector<bool>& right) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      bool is_last = c + 1 == r.size();
      size_t pad = width[c] - r[c].size();
      bool ra = c < right.size() && right[c];
      if (ra) line.append(pad, ' ');
      line += r[c];
      if (!ra && !is_last) line.append(pad, ' ');
      if (!is_last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

void WriteHeader(const Explanation& ex, std::ostringstream& o) {
  const Subject& s = ex.subject;
  o << "Pod " << s.pod << " (profile " << s.profile << ", " << ex.counts.total << " nodes, "
    << s.source << ")\n";
  if (!s.profile_note.empty()) o << "Note: " << s.profile_note << "\n";
  if (!s.bound_node.empty()) {
    o << "Bound to " << s.bound_node << "; explained as if unbound (its own usage removed from "
      << s.bound_node << ")\n";
  }
}

std::string FilterTable(const Explanation& ex) {
  std::vector<std::vector<std::string>> rows{{"NODE", "VERDICT", "PLUGIN", "REASON"}};
  for (const auto& n : ex.nodes) {
    std::string name = n.name + (n.bound ? " (bound)" : "");
    if (n.feasible) {
      rows.push_back({name, "Feasible", "", ""});
    } else if (!n.code.empty()) {
      rows.push_back({name, n.code, n.plugin, n.reason});
    } else {
      rows.push_back({name, "NotEvaluated", "", ""});
    }
  }
  return Table(rows, {});
}

// Empty when no node was scored. The RAW SCORE MEANS column only when a plugin put a score in
// words.
std::string ScoreTable(const Explanation& ex) {
  std::vector<std::vector<std::string>> s{
      {"NODE", "PLUGIN", "RAW", "NORMALIZED", "WEIGHT", "WEIGHTED", "RAW SCORE MEANS"}};
  bool words = false;
  for (const auto& n : ex.nodes) {
    if (!n.scores) continue;
    bool first = true;
    for (const auto& ps : n.scores->by_plugin) {
      s.push_back({first ? n.name : "", ps.plugin, std::to_string(ps.raw),
                   std::to_string(ps.normalized), std::to_string(ps.weight),
                   std::to_string(ps.weighted), ps.why});
      words = words || !ps.why.empty();
      first = false;
    }
    s.push_back({first ? n.name : "", "TOTAL" + std::string(n.chosen ? " (chosen)" : ""), "", "",
                 "", std::to_string(n.scores->total), ""});
  }
  if (s.size() == 1) return "";
  if (!words) {
    for (auto& row : s) row.pop_back();
  }
  return "\nSCORE (feasible nodes, highest total first; weighted = normalized x weight)\n" +
         Table(s, {false, false, true, true, true, true, false});
}

std::string VictimList(const std::vector<VictimRow>& victims) {
  std::string out;
  for (const VictimRow& v : victims) {
    if (!out.empty()) out += ", ";
    out += v.pod + " (" + std::to_string(v.priority) + ")";
  }
  return out;
}

// Empty when preemption tried no node. The nominated node first, then the other nodes where the
// pod would fit, then the rest, each group in row order.
std::string PreemptionTable(const Explanation& ex) {
  std::vector<std::vector<std::string>> t{
      {"NODE", "VICTIMS (PRIORITY)", "PDB VIOLATIONS", "PLUGIN", "REASON"}};
  for (int group = 0; group < 3; ++group) {
    for (const auto& n : ex.nodes) {
      if (!n.preemption) continue;
      const PreemptionRow& p = *n.preemption;
      const int g = n.name == ex.nominated ? 0 : (p.possible ? 1 : 2);
      if (g != group) continue;
      if (p.possible) {
        t.push_back({n.name + (g == 0 ? " (nominated)" : ""), VictimList(p.victims),
                     std::to_string(p.pdb_violations), "", ""});
      } else {
        t.push_back({n.name, "", "", p.plugin, p.reason});
      }
    }
  }
  if (t.size() == 1) return "";
  return "\nPREEMPTION (nodes where evicting pods of lower priority was tried; most important "
         "victim first)\n" +
         Table(t, {false, false, true, false, false});
}

// "Gang: ..." after the result: a member binds only when its whole gang does.
void WriteGang(const GangRow& g, std::ostringstream& o) {
  o << "Gang: " << g.gang << " (minMember " << g.min_member << ", " << g.members
    << " pods exist): ";
  if (g.awaiting_victims) {
    o << g.message << "\n";
    return;
  }
  if (!g.fits) {
    o << "the gang does not fit: " << g.message << "\n";
    return;
  }
  o << "the whole gang fits now:";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    o << (i == 0 ? " " : ", ") << g.nodes[i].first << " -> " << g.nodes[i].second;
  }
  o << "\n";
}

// "CLAIMS on NODE: ..." after the result: each request's devices on the node and their verdicts;
// `role` (e.g. "the closest node DynamicResources rejected") follows the node in parentheses.
void WriteDra(const DraRow& d, std::string_view role, std::ostringstream& o) {
  o << "\nCLAIMS on " << (d.node.empty() ? std::string("(no node)") : d.node);
  if (!role.empty()) o << " (" << role << ")";
  if (!d.message.empty()) o << ": " << d.message;
  o << "\n";
  for (const DraRequestRow& r : d.requests) {
    o << "  " << r.claim << " request " << r.request << ": " << r.device_class;
    if (r.count > 0) o << " x" << r.count;
    if (r.count == 0) o << " (all)";
    if (!r.selectors.empty()) o << " where " << r.selectors;
    o << "\n";
    std::vector<std::vector<std::string>> t = {{"DEVICE", "VERDICT"}};
    for (const DraDeviceRow& dev : r.devices) {
      t.push_back({(dev.selected ? "* " : "  ") + dev.device, dev.verdict});
    }
    if (r.devices.empty()) {
      o << "    no device on this node\n";
    } else {
      std::istringstream table(Table(t, {false, false}));
      for (std::string line; std::getline(table, line);) o << "    " << line << "\n";
    }
    if (r.unreachable > 0) {
      o << "    " << r.unreachable << " more device(s) not reachable from the node\n";
    }
  }
  if (d.lookahead) {
    o << "  lookahead: " << d.lookahead->waiting_claims << " waiting claim(s), "
      << d.lookahead->replays << " replays; waiting pods still served after placing here:";
    for (const auto& [node, pods] : d.lookahead->nodes) {
      o << " " << node << "=" << (pods < 0 ? std::string("-") : std::to_string(pods));
    }
    o << "\n";
  }
}

// The raw score of `plugin` in `n`'s breakdown (0 when absent).
int64_t RawOf(const NodeRow& n, std::string_view plugin) {
  if (!n.scores) return 0;
  for (const PluginScoreRow& ps : n.scores->by_plugin) {
    if (ps.plugin == plugin) return ps.raw;
  }
  return 0;
}

// "Tie: ..." when other nodes have the chosen node's total: which rule chose among them.
void WriteTie(const Explanation& ex, std::ostringstream& o) {
  const NodeRow* chosen = nullptr;
  std::vector<const NodeRow*> tied;
  for (const NodeRow& n : ex.nodes) {
    if (n.chosen && n.scores) chosen = &n;
  }
  if (chosen == nullptr) return;
  for (const NodeRow& n : ex.nodes) {
    if (!n.chosen && n.feasible && n.scores && n.scores->total == chosen->scores->total) {
      tied.push_back(&n);
    }
  }
  if (tied.empty()) return;
  o << "Tie: " << tied.size() + 1 << " nodes share the highest total " << chosen->scores->total
    << "; ";
  using TieBreak = framework::ScorePlugin::TieBreak;
  if (ex.tie_rule == TieBreak::kRawScore) {
    const NodeRow* next = tied[0];  // the tied node of the highest raw score after the chosen
    for (const NodeRow* n : tied) {
      if (RawOf(*n, ex.tie_plugin) > RawOf(*next, ex.tie_plugin)) next = n;
    }
    const int64_t key = RawOf(*chosen, ex.tie_plugin);
    const int64_t next_key = RawOf(*next, ex.tie_plugin);
    o << ex.tie_plugin << "'s raw score breaks it (the profile's tie-break rule): " << chosen->name
      << " " << key << (next_key == key ? " = " : " > ") << next->name << " " << next_key;
    if (next_key == key) o << ", so chosen among the equal ones at random (--seed)";
    o << "\n";
  } else if (ex.tie_rule == TieBreak::kFirstNode) {
    o << ex.tie_plugin << "'s tie-break rule (tieBreak: NodeOrder) chose the first of them in "
      << "the cluster's node order\n";
  } else {
    o << "chosen among them uniformly at random (--seed), as kube-scheduler's selectHost\n";
  }
}

void WriteResult(const Explanation& ex, std::ostringstream& o) {
  if (ex.outcome != Outcome::kSchedulable) {
    o << "Result: " << OutcomeName(ex.outcome) << ": " << ex.message << "\n";
    if (!ex.moves.empty()) {
      o << "Consolidation would move";
      for (size_t i = 0; i < ex.moves.size(); ++i) {
        o << (i == 0 ? " " : ", ") << ex.moves[i].pod << " to " << ex.moves[i].to;
      }
      o << " and nominate the pod on " << ex.nominated << ".\n";
      return;
    }
    for (const auto& n : ex.nodes) {
      if (n.name != ex.nominated || !n.preemption) continue;
      o << "Preemption would evict " << VictimList(n.preemption->victims) << " on " << n.name
        << " and nominate the pod there.\n";
    }
    return;
  }
  o << "Result: " << ex.chosen;
  const NodeRow* runner = nullptr;
  for (const auto& n : ex.nodes) {
    if (n.chosen && n.scores) o << " (total " << n.scores->total << ")";
    if (!n.chosen && n.feasible && n.scores && runner == nullptr) runner = &n;
  }
  if (runner != nullptr)
    o << "; runner-up " << runner->name << " (total " << runner->scores->total << ")";
  o << "; " << ex.counts.feasible << "/" << ex.counts.total << " nodes feasible\n";
  WriteTie(ex, o);
  const std::string& bound = ex.subject.bound_node;
  if (bound.empty()) return;
  if (bound == ex.chosen) {
    o << "The pod's node " << bound << " is still the best choice.\n";
  } else {
    o << "The pod is on " << bound << "; with the cluster as it is now " << ex.chosen
      << " would be chosen.\n";
  }
}

boost::json::value NullIfEmpty(const std::string& s) {
  return s.empty() ? boost::json::value(nullptr) : boost::json::value(s);
}

std::string_view TieRuleName(framework::ScorePlugin::TieBreak rule) {
  switch (rule) {
    case framework::ScorePlugin::TieBreak::kRawScore: return "rawScore";
    case framework::ScorePlugin::TieBreak::kFirstNode: return "nodeOrder";
    case framework::ScorePlugin::TieBreak::kNone: return "random";
  }
  return "random";
}

boost::json::object PreemptionJson(const PreemptionRow& p) {
  boost::json::object j;
  j["possible"] = p.possible;
  boost::json::array victims;
  for (const VictimRow& v : p.victims) {
    victims.push_back(boost::json::object{{"pod", v.pod}, {"priority", v.priority}});
  }
  j["victims"] = std::move(victims);
  j["pdbViolations"] = p.pdb_violations;
  if (!p.possible) {
    j["plugin"] = p.plugin;
    j["reason"] = p.reason;
  }
  return j;
}

boost::json::object NodeJson(const NodeRow& n) {
  boost::json::object j;
  j["name"] = n.name;
  j["feasible"] = n.feasible;
  j["chosen"] = n.chosen;
  j["bound"] = n.bound;
  if (!n.feasible) {
    boost::json::object f;
    f["code"] = n.code.empty() ? "NotEvaluated" : n.code;
    f["plugin"] = n.plugin;
    f["reason"] = n.reason;
    j["filter"] = std::move(f);
  }
  if (n.scores) {
    boost::json::array s;
    for (const auto& ps : n.scores->by_plugin) {
      s.push_back(boost::json::object{{"plugin", ps.plugin},
                                      {"raw", ps.raw},
                                      {"normalized", ps.normalized},
                                      {"weight", ps.weight},
                                      {"weighted", ps.weighted},
                                      {"means", NullIfEmpty(ps.why)}});
    }
    j["scores"] = std::move(s);
    j["total"] = n.scores->total;
  }
  if (n.preemption) j["preemption"] = PreemptionJson(*n.preemption);
  return j;
}

// The claims of a DraRow as -o json writes them.
boost::json::object DraJson(const DraRow& dra) {
  boost::json::array requests;
  for (const DraRequestRow& r : dra.requests) {
    boost::json::array devices;
    for (const DraDeviceRow& d : r.devices) {
      devices.push_back(boost::json::object{
          {"device", d.device}, {"verdict", d.verdict}, {"selected", d.selected}});
    }
    requests.push_back(boost::json::object{{"claim", r.claim},
                                           {"request", r.request},
                                           {"deviceClass", r.device_class},
                                           {"selectors", r.selectors},
                                           {"count", r.count},
                                           {"devices", std::move(devices)},
                                           {"unreachable", r.unreachable}});
  }
  boost::json::object claims{
      {"node", NullIfEmpty(dra.node)}, {"message", dra.message}, {"requests", std::move(requests)}};
  if (const std::optional<DraLookaheadRow>& l = dra.lookahead) {
    boost::json::array nodes;
    for (const auto& [node, pods] : l->nodes) {
      nodes.push_back(boost::json::object{{"node", node}, {"waitingPodsServed", pods}});
    }
    claims["lookahead"] = boost::json::object{
        {"waitingClaims", l->waiting_claims}, {"replays", l->replays}, {"nodes", std::move(nodes)}};
  }
  return claims;
}

}  // namespace

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kSchedulable: return "schedulable";
    case Outcome::kUnschedulable: return "unschedulable";
    case Outcome::kUnresolvable: return "unresolvable";
    case Outcome::kError: return "error";
  }
  return "error";
}

ProfileChoice ChooseProfile(std::string_view requested, std::string_view own, bool own_is_profile,
                            std::string_view first_profile) {
  if (!requested.empty()) return {std::string(requested), ""};
  if (own_is_profile) return {std::string(own), ""};
  return {std::string(first_profile),
          "spec.schedulerName \"" + std::string(own) +
              "\" is not a profile of the config; explained with profile \"" +
              std::string(first_profile) + "\""};
}

Explanation Build(Subject subject, const ScheduleResult& result,
                  const framework::Snapshot& snapshot) {
  Explanation ex;
  std::vector<int> row_of;
  ex.nodes = InitialRows(subject, result, snapshot, row_of);
  ex.subject = std::move(subject);
  ex.counts = result.counts;
  ex.tie_rule = result.tie_rule;
  ex.tie_plugin = std::string(result.tie_plugin);
  ApplyResult(result, row_of, ex);
  ApplyPostFilter(result, row_of, ex);
  SortRows(ex.nodes);
  SetOutcome(result, ex);
  return ex;
}

std::string FormatText(const Explanation& ex) {
  std::ostringstream o;
  WriteHeader(ex, o);
  o << "\nFILTER\n" << FilterTable(ex) << ScoreTable(ex) << PreemptionTable(ex) << "\n";
  WriteResult(ex, o);
  if (ex.gang) WriteGang(*ex.gang, o);
  if (ex.dra) WriteDra(*ex.dra, "", o);
  if (ex.dra_rejected) WriteDra(*ex.dra_rejected, "the closest node DynamicResources rejected", o);
  return o.str();
}

boost::json::object ToJson(const Explanation& ex) {
  const Subject& s = ex.subject;
  boost::json::object o;
  o["pod"] = s.pod;
  o["profile"] = s.profile;
  if (!s.profile_note.empty()) o["profileNote"] = s.profile_note;
  o["source"] = s.source;
  o["boundNode"] = NullIfEmpty(s.bound_node);
  o["status"] = OutcomeName(ex.outcome);
  if (!ex.message.empty()) o["message"] = ex.message;
  o["chosenNode"] = NullIfEmpty(ex.chosen);
  o["nominatedNode"] = NullIfEmpty(ex.nominated);
  if (!ex.moves.empty()) {
    boost::json::array moves;
    for (const auto& m : ex.moves)
      moves.push_back(boost::json::object{{"pod", m.pod}, {"to", m.to}});
    o["consolidation"] = std::move(moves);
  }
  o["totalNodes"] = ex.counts.total;
  o["evaluatedNodes"] = ex.counts.evaluated;
  o["feasibleNodes"] = ex.counts.feasible;
  o["tieBreak"] = boost::json::object{{"rule", TieRuleName(ex.tie_rule)},
                                      {"plugin", NullIfEmpty(ex.tie_plugin)}};
  boost::json::array nodes;
  for (const auto& n : ex.nodes) nodes.push_back(NodeJson(n));
  o["nodes"] = std::move(nodes);
  if (ex.gang) {
    boost::json::array placed;
    for (const auto& [pod, node] : ex.gang->nodes) {
      placed.push_back(boost::json::object{{"pod", pod}, {"node", node}});
    }
    o["gang"] = boost::json::object{{"gang", ex.gang->gang},
                                    {"minMember", ex.gang->min_member},
                                    {"members", ex.gang->members},
                                    {"fits", ex.gang->fits},
                                    {"awaitingVictims", ex.gang->awaiting_victims},
                                    {"message", ex.gang->message},
                                    {"placements", std::move(placed)}};
  }
  if (ex.dra) o["claims"] = DraJson(*ex.dra);
  if (ex.dra_rejected) o["claimsOnClosestRejected"] = DraJson(*ex.dra_rejected);
  return o;
}

}  // namespace gpusched::explain
