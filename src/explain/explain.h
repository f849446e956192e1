// SPDX-License-Identifier: Apache-2.0
// The explain model: one scheduling cycle's record turned into the rows `gpusched explain` prints,
// and its two output formats.
//
//   In:  a framework::runtime::ScheduleResult of Framework::SchedulePod run with record_verdicts,
//        record_scores and score_all_nodes (what scheduler::Scheduler::Explain returns), the
//        Snapshot the cycle ran on (node indices are resolved against it), and the Subject: what
//        the caller knows about the pod (its key, the profile and why, the node it is bound to,
//        where the cluster came from).
//   Out: an Explanation, one NodeRow per valid node of the snapshot, ordered: feasible nodes by
//        total (highest first; equal totals: the chosen node, then by name), then the others by
//        name. A rejected node carries the Filter status code, plugin and reason (or PreFilter's,
//        which applies to every node); a feasible node carries the per-plugin score breakdown
//        (plugins whose PreScore returned Skip for the pod are absent from it, as in the result).
//        When no node fits and preemption ran (record_verdicts makes it try every node it may
//        act on: ScheduleResult::post_filter.per_node), each node it tried carries a
//        PreemptionRow: the victims it would evict there, or why not; `nominated` is its choice.
//        FormatText renders it as aligned tables; ToJson as one JSON object (field list:
//        docs/explain.md).
//
// An Explanation is a plain value: it owns all its strings and refers to neither the result, the
// snapshot nor the framework, so it may outlive them. Every function here is pure (no I/O, no
// globals) and may be called from any thread; Build only reads its inputs, which must not be
// written meanwhile (the snapshot is, between cycles, by the scheduler that owns it).
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/framework/dra_report.h"
#include "src/framework/node_info.h"
#include "src/framework/runtime/framework.h"

namespace gpusched::explain {

// The cycle's outcome, from ScheduleResult::status.
enum class Outcome {
  kSchedulable,    // a node was chosen
  kUnschedulable,  // no node fits now (some rejection may go away, e.g. by preemption)
  kUnresolvable,   // every rejection was UnschedulableAndUnresolvable
  kError,          // a plugin failed: the cycle was aborted
};

// "schedulable", "unschedulable", "unresolvable", "error" (the JSON `status`).
std::string_view OutcomeName(Outcome outcome);

// What the caller knows about the explained pod, beyond the cycle.
struct Subject {
  std::string pod;           // namespace/name
  std::string profile;       // the profile the cycle ran with
  std::string profile_note;  // why this profile, when not the pod's own; empty otherwise
  std::string bound_node;    // the node the pod is bound to now; empty when it is not bound
  std::string source;  // where the cluster came from: "cluster <server>", "simulated from …"
};

// Which profile explains a pod, and the note to print when it is not the pod's own.
struct ProfileChoice {
  std::string profile;
  std::string note;  // empty unless the pod's schedulerName is not a profile
};

// `requested` (--scheduler-name, empty: none) wins; else the pod's own schedulerName `own` when
// `own_is_profile`; else `first_profile`, with a note naming `own`.
ProfileChoice ChooseProfile(std::string_view requested, std::string_view own, bool own_is_profile,
                            std::string_view first_profile);

// One Score plugin's part of a node's total.
struct PluginScoreRow {
  std::string plugin;
  int64_t raw = 0;
  int64_t normalized = 0;
  int64_t weight = 1;
  int64_t weighted = 0;  // normalized × weight
  std::string why;       // the raw score in words (the plugin's ExplainScore; "" when none)
};

// A scored node's breakdown, in the profile's score order.
struct NodeScores {
  std::vector<PluginScoreRow> by_plugin;
  int64_t total = 0;
};

// One pod preemption would evict.
struct VictimRow {
  std::string pod;  // namespace/name
  int32_t priority = 0;
};

// What preemption (the PostFilter) found on one node it tried: the pods of lower priority whose
// eviction lets the pod fit there, or why the pod does not fit even without them.
struct PreemptionRow {
  bool possible = false;
  std::vector<VictimRow> victims;  // most important first; empty when !possible
  int32_t pdb_violations = 0;      // victims whose eviction exceeds a PodDisruptionBudget
  std::string plugin;              // when !possible: the rejecting plugin and its reason
  std::string reason;
};

// One node's line of the explanation.
struct NodeRow {
  std::string name;
  bool feasible = false;
  // A node that is not feasible: the Filter (or PreFilter) status code name, e.g.
  // "Unschedulable", the rejecting plugin and its reason. Empty code: not evaluated.
  std::string code;
  std::string plugin;
  std::string reason;
  std::optional<NodeScores> scores;  // set for a node Score ran on
  bool chosen = false;
  bool bound = false;                       // the pod is bound to this node now
  std::optional<PreemptionRow> preemption;  // set for each node preemption tried
};

// The pod's gang (api/gang.h), when it is a member of one: whether the whole gang fits now, as
// the gang cycle would try it (Scheduler::ExplainGang), and why not.
struct GangRow {
  std::string gang;  // "gang PodGroup ml/train"
  int32_t min_member = 0;
  int32_t members = 0;  // that exist (waiting, reserved or bound)
  bool fits = false;
  // It does not fit because a preemption it made is under way: its victims are still
  // terminating; `message` names them and the node each member is nominated to.
  bool awaiting_victims = false;
  std::string message;                                     // why not; empty when it fits
  std::vector<std::pair<std::string, std::string>> nodes;  // fits: member -> node
};

// The DRA rows are what the DynamicResources plugin reports (src/framework/dra_report.h).
using DraDeviceRow = framework::DraDeviceReport;
using DraRequestRow = framework::DraRequestReport;
using DraLookaheadRow = framework::DraLookaheadReport;
using DraRow = framework::DraClaimsReport;

struct Explanation {
  Subject subject;
  Outcome outcome = Outcome::kSchedulable;
  std::string message;  // kube-scheduler's FitError message, or the error; empty when schedulable
  std::string chosen;   // the chosen node's name; empty when none
  // The node preemption would nominate the pod to (evicting its row's victims); empty when none.
  std::string nominated;
  // Consolidation instead: the pods it would move (namespace/name) and where each would run
  // again, before nominating the pod to `nominated`; empty when it would move none.
  struct Move {
    std::string pod;
    std::string to;
  };
  std::vector<Move> moves;
  framework::runtime::NodeCounts counts;
  // How ties between the highest totals are broken: by tie_plugin's raw score, by node order
  // (tie_plugin's rule), or uniformly at random (kNone, tie_plugin empty).
  framework::ScorePlugin::TieBreak tie_rule = framework::ScorePlugin::TieBreak::kNone;
  std::string tie_plugin;
  std::vector<NodeRow> nodes;   // feasible by total (best first), then the others by name
  std::optional<GangRow> gang;  // set by the caller for a gang member
  std::optional<DraRow> dra;    // set by the caller for a pod with resource claims
  // Also set by the caller, beside `dra` on a node the pod can use: the claims on the node
  // DynamicResources rejected that came closest (ExplainBestRejected).
  std::optional<DraRow> dra_rejected;
};

// The explanation of `result`, a cycle run on `snapshot` (see the top of the file).
Explanation Build(Subject subject, const framework::runtime::ScheduleResult& result,
                  const framework::Snapshot& snapshot);

// The human-readable form: a header, the FILTER table (every node), the SCORE table (scored
// nodes, when any), the PREEMPTION table (nodes preemption tried, when any) and the result
// line(s), then the gang and the DRA claims (per request, each device the node reaches and its
// verdict) when set. Ends with a newline.
std::string FormatText(const Explanation& ex);

// The machine-readable form (`-o json`), keys in a fixed order.
boost::json::object ToJson(const Explanation& ex);

}  // namespace gpusched::explain
