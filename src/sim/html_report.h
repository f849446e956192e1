// SPDX-License-Identifier: Apache-2.0
// The report as one self-contained HTML page (`gpusched simulate -o html > report.html`): no
// network, no external file. The report's JSON (ReportToJson, plus `replay` when there is one) is
// embedded, and a small script draws the charts as SVG when the page loads:
//
//   - GPU allocation over time (with --replay): all GPUs and per model, and per node group, as
//     step lines; without --replay, GPU allocation attempt by attempt (Report::fill);
//   - GPU allocation per node group and per GPU model, as bars (allocated / total);
//   - fragmentation: GPUs partly used and GPU nodes idle;
//   - unschedulable pods by reason, as bars;
//   - every GPU of every node (Report::gpu_nodes): one box per device, filled as far as it is
//     allocated, partly used ones marked, its pods in the box's tooltip (the first 1,000 nodes);
//   - the per-pod table (pod, node, devices, state, reason), sortable by any column.
//
// Each chart is an <svg data-chart="NAME" data-marks="N"> once drawn (N: bars or points), so a
// browser test can tell a drawn chart from an empty one (tests/docs/sim_html_test.py). Pure.
#pragma once

#include <string>

#include "src/sim/replay.h"
#include "src/sim/report.h"

namespace gpusched::sim {

// `replay` may be null (no time chart then).
std::string FormatReportHtml(const Report& report, const ReplayResult* replay);

}  // namespace gpusched::sim
