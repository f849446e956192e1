// SPDX-License-Identifier: Apache-2.0
#include "src/sim/html_report.h"

#include <boost/json.hpp>
#include <string_view>

namespace gpusched::sim {
namespace {

constexpr std::string_view kHead = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>gpusched simulate</title>
<style>
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
.charts{display:flex;flex-wrap:wrap;gap:24px}
figure{margin:0}figcaption{font-weight:600;margin-bottom:4px}
svg text{font-size:11px}
table{border-collapse:collapse;margin-top:8px}
th,td{border-bottom:1px solid #ddd;padding:3px 10px;text-align:left;white-space:nowrap}
th{cursor:pointer;background:#f4f4f4;user-select:none}
td.reason{white-space:normal;max-width:640px}
.Scheduled{color:#176b2c}.Unschedulable,.Error,.Rejected{color:#a31515}
.summary span{margin-right:18px}
</style></head><body>
<h1>gpusched simulate</h1>
<div class="summary" id="summary"></div>
<div class="charts" id="charts"></div>
<h2>Pods</h2><p>Click a column to sort.</p>
<table id="pods"><thead><tr><th>pod</th><th>node</th><th>devices</th><th>state</th><th>reason</th></tr></thead><tbody></tbody></table>
<script type="application/json" id="report">)html";

constexpr std::string_view kTail = R"html(</script>
<script>
"use strict";
const R = JSON.parse(document.getElementById("report").textContent);
const NS = "http://www.w3.org/2000/svg";
function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function figure(title) {
  const f = document.createElement("figure");
  const c = document.createElement("figcaption");
  c.textContent = title;
  f.appendChild(c);
  document.getElementById("charts").appendChild(f);
  return f;
}
// Horizontal bars: rows [{label, value, max}], value/max as a share of the bar.
function bars(name, title, rows, unit) {
  const f = figure(title), h = 24 * rows.length + 10, w = 460;
  const svg = el("svg", {width: w, height: Math.max(h, 34), "data-chart": name}, f);
  let marks = 0;
  rows.forEach((r, i) => {
    const y = 5 + 24 * i, share = r.max > 0 ? r.value / r.max : 0;
    el("rect", {x: 150, y: y, width: 220, height: 16, fill: "#eee"}, svg);
    el("rect", {x: 150, y: y, width: Math.max(1, 220 * Math.min(share, 1)), height: 16,
                fill: "#3b6fb6", class: "mark"}, svg);
    el("text", {x: 0, y: y + 12}, svg).textContent = r.label.slice(0, 24);
    el("text", {x: 376, y: y + 12}, svg).textContent = r.text || (r.value + unit);
    marks++;
  });
  if (!rows.length) el("text", {x: 0, y: 20}, svg).textContent = "none";
  svg.setAttribute("data-marks", marks);
}
// Step lines over time: series [{label, points: [{hours, value}]}], the first one in the chart
// colour, the others in the palette, with a legend.
const PALETTE = ["#3b6fb6", "#d9822b", "#2f9e6e", "#9b59b6", "#c0392b", "#7f8c8d"];
function lines(name, title, series) {
  const f = figure(title), w = 560, h = 220 + 16 * series.length, l = 40, b = 24 + 16 * series.length;
  const svg = el("svg", {width: w, height: h, "data-chart": name}, f);
  const all = series.flatMap(s => s.points);
  const tmax = Math.max(1e-9, ...all.map(p => p.hours));
  const x = t => l + (w - l - 10) * t / tmax, y = v => h - b - (h - b - 10) * v / 100;
  el("line", {x1: l, y1: y(0), x2: w - 10, y2: y(0), stroke: "#888"}, svg);
  el("line", {x1: l, y1: y(0), x2: l, y2: y(100), stroke: "#888"}, svg);
  el("text", {x: 4, y: y(100) + 4}, svg).textContent = "100%";
  el("text", {x: 4, y: y(0)}, svg).textContent = "0%";
  el("text", {x: w - 60, y: y(0) + 14}, svg).textContent = tmax.toFixed(1) + " h";
  series.forEach((s, i) => {
    let d = "", prev = null;
    s.points.forEach(p => {  // a step line: allocation holds until the next event
      if (prev) d += " L" + x(p.hours) + "," + y(prev.value);
      d += (prev ? " L" : "M") + x(p.hours) + "," + y(p.value);
      prev = p;
    });
    const color = PALETTE[i % PALETTE.length];
    if (d) el("path", {d: d, fill: "none", stroke: color, "stroke-width": i ? 1.5 : 2, class: "mark"}, svg);
    const ly = h - 16 * (series.length - i) + 8;
    el("rect", {x: l, y: ly - 8, width: 10, height: 10, fill: color}, svg);
    el("text", {x: l + 16, y: ly + 1}, svg).textContent = s.label;
  });
  svg.setAttribute("data-marks", all.length);
}
function over(samples, key) {  // one series per name of samples[i][key]
  const names = [...new Set(samples.flatMap(p => Object.keys(p[key])))].sort();
  return names.map(n => ({label: n, points: samples.map(p => ({hours: p.hours, value: p[key][n] || 0}))}));
}
function summary() {
  const p = R.pods, s = document.getElementById("summary");
  const items = [R.source, "profile " + R.profile, R.nodes + " nodes", p.total + " pods",
                 p.scheduled + " scheduled", p.unschedulable + " unschedulable",
                 (R.rejected || []).length + " rejected objects"];
  items.forEach(t => { const e = document.createElement("span"); e.textContent = t; s.appendChild(e); });
}
function table() {
  const body = document.querySelector("#pods tbody");
  const rows = R.placements.map(p => [p.pod, p.node || "-", p.gpuDevices.join(",") || "-", p.state, p.message]);
  function fill() {
    body.textContent = "";
    rows.forEach(r => {
      const tr = document.createElement("tr");
      r.forEach((v, i) => {
        const td = document.createElement("td");
        td.textContent = v;
        if (i === 3) td.className = v;
        if (i === 4) td.className = "reason";
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  }
  document.querySelectorAll("#pods th").forEach((th, i) => {
    let asc = true;
    th.addEventListener("click", () => {
      rows.sort((a, b) => (asc ? 1 : -1) * a[i].localeCompare(b[i], undefined, {numeric: true}));
      asc = !asc;
      fill();
    });
  });
  fill();
}
summary();
if (R.replay) {
  const samples = R.replay.samples;
  lines("allocation-over-time", "GPU allocation over time, per model",
        [{label: "all GPUs", points: samples.map(p => ({hours: p.hours, value: p.gpuAllocation}))}]
            .concat(over(samples, "byModel")));
  lines("allocation-over-time-by-group", "GPU allocation over time, per node group",
        over(samples, "byGroup"));
}
bars("allocation-by-group", "GPU allocation per node group",
     R.nodeGroups.filter(g => g.gpus > 0).map(g => ({label: g.group, value: g.gpuMilliAllocated / 1000,
       max: g.gpus, text: (g.gpuMilliAllocated / 1000) + " / " + g.gpus + " GPUs"})), "");
bars("allocation-by-model", "GPU allocation per model",
     R.gpuModels.map(m => ({label: m.model, value: m.milliAllocated, max: m.milliTotal,
       text: (100 * m.milliAllocated / Math.max(1, m.milliTotal)).toFixed(1) + "%"})), "");
const gpus = R.gpuModels.reduce((a, m) => a + m.gpusTotal, 0);
bars("fragmentation", "Fragmentation", [
  {label: "GPUs partly used", value: R.gpusPartlyUsed, max: gpus, text: R.gpusPartlyUsed + " of " + gpus},
  {label: "GPU nodes idle", value: R.gpuNodesIdle, max: Math.max(1, R.gpuModels.reduce((a, m) => a + m.nodes, 0)),
   text: R.gpuNodesIdle + " nodes"}], "");
const most = Math.max(1, ...R.unschedulableByReason.map(r => r.pods));
bars("unschedulable-reasons", "Unschedulable pods by reason",
     R.unschedulableByReason.map(r => ({label: r.reason, value: r.pods, max: most, text: r.pods + " pods"})), "");
table();
document.body.setAttribute("data-rendered", "true");
</script></body></html>
)html";

// JSON inside <script>: "</" would end the element, so it is written "<\/".
std::string ScriptSafe(std::string json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += json[i];
    }
  }
  return out;
}

}  // namespace

std::string FormatReportHtml(const Report& report, const ReplayResult* replay) {
  boost::json::value json = ReportToJson(report);
  if (replay != nullptr) json.as_object()["replay"] = ReplayToJson(*replay);
  std::string out(kHead);
  out += ScriptSafe(boost::json::serialize(json));
  out += kTail;
  return out;
}

}  // namespace gpusched::sim
