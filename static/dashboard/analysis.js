// The analysis page: the newest Spark report (summary, charts, tables) and, while a report
// runs, its progress from Spark's status tracker with a link to the Spark UI. Polls
// /api/analysis (or /api/analysis/groups/<id>) every two seconds while a run is under way,
// every thirty otherwise. Charts are D3 (vendored from npm, as on the other pages).

import { getJSON, postJSON, setText } from "./common.js";
import { protocolRows } from "./protocols.js";

const d3 = window.d3;
const groupId = JSON.parse(document.getElementById("analysis-group-id").textContent);
const api = groupId === null ? "/api/analysis" : `/api/analysis/groups/${encodeURIComponent(groupId)}`;
const POLL_RUNNING_MS = 2000;
const POLL_IDLE_MS = 30000;

/** Causes in the order the report lists them (docs/analysis.md), each with its colour. */
export const CAUSES = [
  ["member_joined", "#2f6fde"],
  ["member_left", "#7b61c9"],
  ["session_timeout", "#c0392b"],
  ["poll_timeout", "#e67e22"],
  ["static_member_replaced", "#16a085"],
  ["admin_action", "#8e6c3a"],
  ["metadata_change", "#27ae60"],
  ["other", "#7f8c8d"],
];
const causeColour = new Map(CAUSES);
const causeWords = (cause) => String(cause || "other").replaceAll("_", " ");
const number = d3.format(",");
const decimal = (value, digits = 1) => (value === null || value === undefined ? "—" : d3.format(`,.${digits}f`)(value));
const whenText = (iso) => (iso ? new Date(iso).toLocaleString() : "—");

let lastRenderedReport = null;
let timer = null;

// ---------------------------------------------------------------- status and progress

function showRun(run, report) {
  const status = document.querySelector(".report-status");
  const progressBox = document.querySelector(".report-progress");
  const errorBox = document.querySelector(".report-error");
  const running = run && !["succeeded", "failed"].includes(run.status);
  const parts = [];
  if (report) {
    const input = report.summary.input || {};
    parts.push(`Report #${report.run_id}, finished ${whenText(report.finished_at)}, over ${number(input.events || 0)} events.`);
  } else if (!running) {
    parts.push("No report yet: one runs about a minute after the services start, then hourly.");
  }
  if (running) parts.push(`Report #${run.id} is ${run.status === "queued" ? "queued" : run.status === "exporting" ? "exporting the new history" : "running on Spark"} (${run.spark_master}).`);
  setText(status, parts.join(" "));

  progressBox.hidden = !running;
  if (running) {
    const p = run.progress || {};
    const fraction = p.tasks_total ? p.tasks_done / p.tasks_total : 0;
    const fill = progressBox.querySelector(".progress-fill");
    fill.style.width = `${Math.round(fraction * 100)}%`;
    progressBox.querySelector(".progress-bar").setAttribute("aria-valuenow", String(Math.round(fraction * 100)));
    const text = progressBox.querySelector(".progress-text");
    text.textContent = "";
    const words = p.tasks_total
      ? `${p.phase || "working"}: stage ${p.stages_done} of ${p.stages_total}, ${p.tasks_done} of ${p.tasks_total} tasks`
      : run.status === "running" ? "starting Spark…" : "";
    text.append(words);
    if (run.spark_ui_url) {
      const link = document.createElement("a");
      link.href = run.spark_ui_url;
      link.target = "_blank";
      link.rel = "noopener";
      link.textContent = "Spark UI";
      link.dataset.testid = "spark-ui-link";
      text.append(" · ", link);
    }
  }
  const failed = run && run.status === "failed" && (!report || run.id > report.run_id);
  errorBox.hidden = !failed;
  if (failed) setText(errorBox, `Report #${run.id} failed: ${run.error}`);
  const button = document.querySelector('[data-testid="run-report"]');
  if (button) button.disabled = Boolean(running);
  return running;
}

// ---------------------------------------------------------------- charts

function svgFor(container, width, height) {
  d3.select(container).selectAll("*").remove();
  return d3.select(container).append("svg").attr("viewBox", `0 0 ${width} ${height}`).attr("role", "img");
}

function durationChart(container, rows) {
  const points = rows.filter((r) => r.duration_ms !== null && r.duration_ms !== undefined);
  const width = 900, height = 300, m = { top: 12, right: 140, bottom: 32, left: 56 };
  const svg = svgFor(container, width, height).attr("aria-label", `${points.length} rebalance durations over time`);
  if (!points.length) {
    svg.append("text").attr("x", 10).attr("y", 30).attr("class", "chart-title").text("No completed rebalance in this report.");
    return;
  }
  const x = d3.scaleTime().domain(d3.extent(points, (r) => new Date(r.start_ms))).nice().range([m.left, width - m.right]);
  const y = d3.scaleSymlog().constant(10).domain([0, d3.max(points, (r) => r.duration_ms) || 1]).nice().range([height - m.bottom, m.top]);
  svg.append("g").attr("class", "axis").attr("transform", `translate(0,${height - m.bottom})`).call(d3.axisBottom(x).ticks(8));
  // A symlog axis: ticks at the powers of ten, so short and very long rebalances both read.
  const top = y.domain()[1];
  const ticks = [0, ...d3.range(1, Math.ceil(Math.log10(top)) + 1).map((p) => 10 ** p).filter((v) => v <= top)];
  svg.append("g").attr("class", "axis").attr("transform", `translate(${m.left},0)`).call(d3.axisLeft(y).tickValues(ticks).tickFormat(d3.format("~s")));
  svg.append("text").attr("class", "chart-title").attr("x", m.left).attr("y", m.top - 2).text("ms");
  svg.append("g").attr("class", "dots").selectAll("circle").data(points).join("circle")
    .attr("cx", (r) => x(new Date(r.start_ms)))
    .attr("cy", (r) => y(r.duration_ms))
    .attr("r", 3)
    .attr("fill", (r) => causeColour.get(r.cause) || "#7f8c8d")
    .attr("fill-opacity", 0.75)
    .append("title")
    .text((r) => `${r.group_id}: ${number(r.duration_ms)} ms (join ${number(r.join_ms ?? 0)}, sync ${number(r.sync_ms ?? 0)}), ${causeWords(r.cause)}${r.cause_member_id ? ` by ${r.cause_member_id}` : ""}; ${r.partitions_moved ?? 0} partitions moved`);
  const present = CAUSES.filter(([cause]) => points.some((r) => r.cause === cause));
  const legend = svg.append("g").attr("class", "legend").attr("transform", `translate(${width - m.right + 14},${m.top + 4})`);
  present.forEach(([cause, colour], i) => {
    const row = legend.append("g").attr("transform", `translate(0,${i * 17})`);
    row.append("circle").attr("r", 5).attr("cx", 5).attr("cy", 0).attr("fill", colour);
    row.append("text").attr("x", 15).attr("y", 4).text(causeWords(cause));
  });
}

function barChart(container, entries, { title, showTitle = true, format = number, colour = () => "#2f6fde" }) {
  const width = 440, barHeight = 22, m = { top: showTitle ? 20 : 4, right: 60, bottom: 6, left: 150 };
  const height = m.top + m.bottom + Math.max(1, entries.length) * barHeight;
  const svg = svgFor(container, width, height).attr("aria-label", title);
  if (showTitle) svg.append("text").attr("class", "chart-title").attr("x", 0).attr("y", 12).text(title);
  if (!entries.length) {
    svg.append("text").attr("x", m.left).attr("y", m.top + 14).attr("class", "bar-label").text("nothing to show");
    return;
  }
  const x = d3.scaleLinear().domain([0, d3.max(entries, (e) => e.value) || 1]).range([m.left, width - m.right]);
  const y = d3.scaleBand().domain(entries.map((e) => e.label)).range([m.top, height - m.bottom]).padding(0.2);
  const bars = svg.append("g").selectAll("g").data(entries).join("g");
  bars.append("rect").attr("x", m.left).attr("y", (e) => y(e.label)).attr("height", y.bandwidth())
    .attr("width", (e) => Math.max(0, x(e.value) - m.left)).attr("fill", (e) => colour(e));
  bars.append("text").attr("class", "bar-label").attr("x", m.left - 6).attr("y", (e) => y(e.label) + y.bandwidth() / 2 + 4)
    .attr("text-anchor", "end").text((e) => e.label);
  bars.append("text").attr("class", "bar-label").attr("x", (e) => x(e.value) + 4).attr("y", (e) => y(e.label) + y.bandwidth() / 2 + 4)
    .text((e) => format(e.value));
}

// ---------------------------------------------------------------- tables

function fillTable(table, rows, cells) {
  const tbody = table.querySelector("tbody");
  tbody.textContent = "";
  for (const row of rows) {
    const tr = document.createElement("tr");
    for (const cell of cells(row)) {
      const td = document.createElement("td");
      if (cell instanceof Node) td.append(cell);
      else td.textContent = cell;
      if (typeof cell === "string" && /^[\d,.—-]+$/.test(cell)) td.className = "num";
      tr.append(td);
    }
    tbody.append(tr);
  }
}

function link(href, text) {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  return a;
}

function mainCause(causes) {
  const entries = Object.entries(causes || {}).sort((a, b) => b[1] - a[1]);
  return entries.length ? causeWords(entries[0][0]) : "—";
}

function renderReport(body) {
  const report = body.report;
  document.querySelectorAll(".report-body").forEach((node) => (node.hidden = !report));
  if (!report) return;
  const summary = report.summary;
  const figures = groupId === null ? { ...summary.totals, causes: null } : summary.group;
  const totals = document.querySelector(".report-totals");
  totals.textContent = "";
  const facts = figures
    ? [
        ["Rebalances", number(figures.rebalances), "Times the group left Stable or Empty to rebalance"],
        ["Duration p50", `${decimal(figures.duration_ms.p50, 0)} ms`, "Half the rebalances took less"],
        ["Duration p95", `${decimal(figures.duration_ms.p95, 0)} ms`, "95 in 100 took less"],
        ["Longest", `${decimal(figures.duration_ms.max, 0)} ms`, "The longest completed rebalance"],
        ["Partitions moved", number(figures.partitions_moved), "Partitions whose owner changed, summed over rebalances"],
        ["Unavailable", `${decimal(figures.unavailable_partition_s)} partition·s`, "Seconds partitions spent revoked, without a consumer, summed"],
        ["Storms", number(figures.storms), "Bursts of rebalances (see below)"],
        ["Duplicate windows", number(figures.duplicate_windows ?? 0), "Partitions whose owner was removed holding them: what it processed after its last commit is processed again"],
      ]
    : [["Rebalances", "none in this report", "The group has no rebalance in the exported history yet"]];
  for (const [label, value, help] of facts) {
    const div = document.createElement("div");
    const dt = document.createElement("dt");
    dt.textContent = label;
    dt.title = help;
    const dd = document.createElement("dd");
    dd.textContent = value;
    div.append(dt, dd);
    totals.append(div);
  }

  durationChart(document.querySelector('[data-chart="durations"]'), body.rebalances);

  let causes = figures && figures.causes;
  if (!causes) {
    causes = {};
    for (const group of Object.values(summary.groups || {})) {
      for (const [cause, count] of Object.entries(group.causes || {})) causes[cause] = (causes[cause] || 0) + count;
    }
  }
  const causeEntries = CAUSES.filter(([cause]) => causes[cause]).map(([cause]) => ({ label: causeWords(cause), cause, value: causes[cause] }));
  barChart(document.querySelector('[data-chart="causes"]'), causeEntries, { title: "Rebalances by cause", showTitle: false, colour: (e) => causeColour.get(e.cause) });

  const members = (summary.top_members || []).filter((m) => groupId === null || m.group_id === groupId);
  const topMembers = groupId === null ? members : body.rebalances.length ? topOfGroup(body.rebalances) : [];
  fillTable(document.querySelector(".top-members"), topMembers, (m) => [
    groupId === null ? `${m.member_id} (${m.group_id})` : m.member_id,
    number(m.rebalances),
    Object.entries(m.causes).map(([c, n]) => `${causeWords(c)} ×${n}`).join(", "),
  ]);

  if (groupId === null) {
    const assignors = Object.entries(summary.assignors || {}).map(([label, f]) => ({ label, f }));
    barChart(document.querySelector('[data-chart="assignor-moved"]'), assignors.map(({ label, f }) => ({ label, value: f.partitions_moved_mean || 0 })), { title: "Partitions moved per rebalance (mean)", format: (v) => decimal(v) });
    barChart(document.querySelector('[data-chart="assignor-unavailable"]'), assignors.map(({ label, f }) => ({ label, value: f.unavailable_partition_s_mean || 0 })), { title: "Partition-unavailable s per rebalance (mean)", format: (v) => decimal(v, 2), colour: () => "#c0392b" });
    fillTable(document.querySelector(".protocols"), protocolRows(summary.protocols), ({ label, figures: f }) => f === null
      ? [label, number(0), "—", "—", "—", "—", "—", "—", "—"]
      : [
        label, number(f.rebalances), decimal(f.duration_ms.p50, 0), decimal(f.duration_ms.p95, 0), decimal(f.partitions_moved_mean), decimal(f.stickiness_mean, 3), decimal(f.unavailable_partition_s_mean, 2),
        number(f.duplicate_windows ?? 0), number(f.duplicate_records ?? 0),
      ]);
    const groups = Object.entries(summary.groups || {}).sort((a, b) => b[1].rebalances - a[1].rebalances);
    fillTable(document.querySelector(".report-groups"), groups, ([id, g]) => [
      link(`/analysis/groups/${encodeURIComponent(id)}/`, id), number(g.rebalances), decimal(g.duration_ms.p50, 0), decimal(g.duration_ms.p95, 0), decimal(g.duration_ms.max, 0), number(g.partitions_moved), decimal(g.unavailable_partition_s), number(g.storms), number(g.duplicate_windows ?? 0), mainCause(g.causes),
    ]);
  }

  const parameters = summary.parameters || {};
  setText(document.querySelector(".storm-rule"), `A storm: at least ${parameters.storm_count} rebalances of one group within ${decimal((parameters.storm_window_ms || 0) / 1000, 0)} s.`);
  const storms = [...body.storms].reverse();
  document.querySelector(".storms-empty").hidden = storms.length > 0;
  fillTable(document.querySelector(".storms"), storms, (s) => [
    s.group_id, new Date(s.first_start_ms).toLocaleString(), `${decimal(s.span_ms / 1000)} s`, number(s.rebalances), decimal(s.unavailable_partition_s), (s.member_ids || []).join(", ") || "—",
  ]);
}

/** A group's members ranked by the rebalances they caused, from the plotted rebalances. */
function topOfGroup(rows) {
  const byMember = new Map();
  for (const r of rows) {
    if (!r.cause_member_id) continue;
    const entry = byMember.get(r.cause_member_id) || { member_id: r.cause_member_id, rebalances: 0, causes: {} };
    entry.rebalances += 1;
    entry.causes[r.cause] = (entry.causes[r.cause] || 0) + 1;
    byMember.set(r.cause_member_id, entry);
  }
  return [...byMember.values()].sort((a, b) => b.rebalances - a.rebalances).slice(0, 10);
}

// ---------------------------------------------------------------- polling

async function poll() {
  clearTimeout(timer);
  let running = false;
  try {
    const body = await getJSON(api);
    running = showRun(body.run, body.report);
    const key = body.report ? body.report.run_id : null;
    if (key !== lastRenderedReport) {
      renderReport(body);
      lastRenderedReport = key;
    }
  } catch (error) {
    setText(document.querySelector(".report-status"), `Could not read the analysis: ${error.message}`);
  }
  timer = setTimeout(poll, running ? POLL_RUNNING_MS : POLL_IDLE_MS);
}

const runButton = document.querySelector('[data-testid="run-report"]');
if (runButton) {
  runButton.addEventListener("click", async () => {
    runButton.disabled = true;
    try {
      await postJSON("/api/admin/run-task", { task: "rebalance-report" });
    } catch (error) {
      setText(document.querySelector(".report-status"), `The report could not be queued: ${error.message}`);
      runButton.disabled = false;
    }
    poll();
  });
}

poll();
