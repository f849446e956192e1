// SPDX-License-Identifier: Apache-2.0
// Report: the outcome of a simulation, summarised for people (text) and tools (JSON).
//
//   - pods submitted / scheduled / unschedulable / errors / pending / pre-bound, decisions and
//     decisions per second (wall time from the caller's clock);
//   - placements per node group: label node.kubernetes.io/instance-type, else
//     gpusched.io/node-group, else "(none)";
//   - GPU allocation per GPU model: allocated / total GPUs (a GPU counts as allocated when any
//     milli of it is used) and allocated / total milli-GPU, from SimCluster's ledger;
//   - unschedulable pods grouped by reason, each pod once, under the main reason of its last
//     attempt (PodOutcome::reason: the one that rejected the most nodes, e.g. "Insufficient
//     nvidia.com/gpu", "GPU model mismatch", or the malformed-annotation text), with the first
//     few as examples ("+N more" in text); preempted pods are in the preemptions instead;
//   - the API writes SimCluster saw (binds, events and PodScheduled conditions by reason);
//   - per pod (text table, JSON `placements`, CSV): node, GPU devices, state and message;
//   - the objects of the input that were rejected (file, document, kind/name, field and value),
//     and warnings (skipped kinds, unknown fields, node GPU facts that were clamped or disagree).
//   - per gang (gang_report.h): placed / waiting / timed out, members bound and their nodes.
//   - per ResourceClaim (DRA, docs/dra.md): its node and allocated devices ("driver/pool/device"),
//     text "Resource claims:" and JSON `claims` ([] when there are none).
//
// BuildReport reads a finished Simulator; the Format functions are pure.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/sim/gang_report.h"
#include "src/sim/sim_cluster.h"
#include "src/sim/simulator.h"

namespace gpusched::sim {

inline constexpr std::string_view kNodeGroupLabel = "gpusched.io/node-group";

struct GroupRow {
  std::string group;
  int32_t nodes = 0;
  int64_t pods = 0;  // pods bound to the group's nodes (scheduled or pre-bound)
  int32_t gpus_total = 0;
  int64_t gpu_milli_allocated = 0;
  int64_t milli_cpu_allocatable = 0;
  int64_t milli_cpu_requested = 0;
};

struct ModelRow {
  std::string model;  // normalised model, "(unknown)" when a GPU node has none
  int32_t nodes = 0;  // with GPUs of the model, through the device plugin or DRA
  int32_t gpus_total = 0;
  int32_t gpus_allocated = 0;  // devices with any milli used
  int64_t milli_total = 0;
  int64_t milli_allocated = 0;
  // Of those, the GPUs published through DRA (ResourceSlice devices with a productName; a MIG
  // GPU's partitions count as one GPU, allocated as far as its most used counter is).
  int32_t dra_gpus_total = 0;
  int32_t dra_gpus_allocated = 0;
};

struct ReasonRow {
  std::string reason;
  int64_t pods = 0;
  std::vector<std::string> examples;  // the first few pod keys, in arrival order
};

struct UnscheduledRow {
  std::string pod;    // namespace/name
  std::string state;  // Unschedulable, Error, Pending
  std::string message;
};

// Where one submitted pod went (arrival order): its node and GPU devices, or why not.
struct PlacementRow {
  std::string pod;   // namespace/name
  std::string node;  // empty unless scheduled or pre-bound
  std::vector<int32_t> gpu_devices;
  int32_t gpu_milli = 0;  // on each of gpu_devices (1000: whole GPUs; less: a share)
  std::string state;      // PodStateName, or "Completed" for a placed pod that left (replay)
  std::string message;
};

// One node with GPUs (nvidia.com/gpu devices, not DRA) at the end of the run, for the page's
// per-node, per-GPU view.
struct GpuNodeRow {
  std::string node;
  std::string group;                // NodeGroupOf
  std::string model;                // "(unknown)" when the node names none
  std::vector<int32_t> used_milli;  // per device, 0..1000
};

// GPU allocation (% of the nvidia.com/gpu milli of the cluster) after `decisions` scheduling
// attempts: Simulator::fill_curve, then the end of the run.
struct FillRow {
  int64_t decisions = 0;
  double gpu_allocation = 0;
};

// One ResourceClaim at the end of the run: where its devices are, or unallocated (node "",
// devices empty).
struct ClaimRow {
  std::string claim;                 // namespace/name
  std::string node;                  // "" when unallocated or not node-local
  std::vector<std::string> devices;  // "driver/pool/device", in allocation order
  // namespace/name of the pods using it; "namespace/name (PodGroup)" for a native PodGroup whose
  // pods share it (KEP-5729)
  std::vector<std::string> reserved_for;
};

struct Report {
  std::string source;   // what was simulated, e.g. "built-in example"
  std::string profile;  // the scheduler name of the first profile
  int32_t nodes = 0;
  SimStats stats;
  double decisions_per_second = 0;          // 0 when no wall time was measured
  int32_t gpus_partly_used = 0;             // devices with 0 < milli used < 1000 (fragments)
  int32_t gpu_nodes_idle = 0;               // GPU nodes with every device free
  std::vector<GroupRow> groups;             // sorted by name
  std::vector<ModelRow> models;             // sorted by name
  std::vector<GpuNodeRow> gpu_nodes;        // sorted by name
  std::vector<FillRow> fill;                // in decision order; empty without GPUs
  std::vector<ReasonRow> reasons;           // most pods first, then by name
  std::vector<UnscheduledRow> unscheduled;  // arrival order
  std::vector<PlacementRow> placements;     // every submitted pod, arrival order
  std::vector<Preemption> preemptions;      // in the order they happened
  std::vector<GangRow> gangs;               // gang_report.h
  std::vector<ClaimRow> claims;             // by namespace/name
  ClusterCounters counters;
  std::vector<std::string> warnings;
  std::vector<Rejection> rejected;  // input objects refused (not simulated)
};

// Summarises a finished simulation. `warnings` (e.g. skipped manifest objects) and `rejected`
// (objects refused as invalid) are copied in.
Report BuildReport(const Simulator& sim, std::string_view source,
                   const std::vector<std::string>& warnings = {},
                   const std::vector<Rejection>& rejected = {});

// A readable multi-line report. At most `max_unscheduled_listed` unscheduled pods are listed one
// by one (all of them are counted), and at most `max_pods_listed` rows of the per-pod table
// ("Pods:", arrival order; 0 leaves the table out).
std::string FormatReportText(const Report& report, size_t max_unscheduled_listed = 25,
                             size_t max_pods_listed = SIZE_MAX);
// The per-pod table as CSV (RFC 4180): a header `pod,node,gpuDevices,state,message`, then one
// row per submitted pod in arrival order; gpuDevices are the device indices joined by ';'.
std::string FormatPlacementsCsv(const Report& report);
boost::json::value ReportToJson(const Report& report);
// The node group a report names a node by: label node.kubernetes.io/instance-type, else
// gpusched.io/node-group, else "(none)".
std::string NodeGroupOf(const api::Node& node);

// `rows` as the report's text tables: indented two spaces, the first column left-aligned, the
// others right-aligned, two spaces apart.
std::string TextTable(const std::vector<std::vector<std::string>>& rows);

// Pretty-printed JSON with a trailing newline.
std::string FormatJson(const boost::json::value& value);

}  // namespace gpusched::sim
