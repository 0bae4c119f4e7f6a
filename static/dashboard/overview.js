// The overview page (/): every group with its state, generation, members, protocol, total lag
// and a sparkline of its rebalances in the last hour, live from the all-groups feed.

import { FrameScheduler, LabHooks, setText, showConnection } from "./common.js";
import { APPLY, GAP, GroupsSequence, LiveFeed, feedUrl } from "./feed.js";
import { formatCount } from "./format.js";
import { createNewGroup } from "./new-group.js";
import {
  BUCKETS,
  BUCKET_MS,
  advanceTo,
  applyLag,
  applyOverviewEvent,
  overviewFromSnapshot,
  rebalancesInHour,
  visibleGroups,
} from "./overview-model.js";
import { DIAGRAMS, diagramFor } from "./states.js";

const SPARK_W = 96;
const SPARK_H = 22;
const TICK_MS = 15_000; // how often the sparklines slide with time

const lab = new LabHooks();
const frame = new FrameScheduler(render);
const tbody = document.querySelector("table.groups tbody");
const empty = document.querySelector(".groups-empty");
const filter = document.querySelector('[data-testid="state-filter"]');

let model = null;
let sequence = null;
let clockOffsetMs = 0; // coordinator clock minus this browser's

const feed = new LiveFeed(feedUrl("/ws/dashboard/groups/"), {
  onStatus: showConnection,
  onMessage(message) {
    if (message.type === "snapshot") {
      model = overviewFromSnapshot(message);
      sequence = new GroupsSequence(message.seq);
      clockOffsetMs = message.now_ms - Date.now();
      lab.resetTo(message.seq);
    } else if (message.type === "event") {
      if (!model) return;
      const verdict = sequence.accept(message.event);
      if (verdict === GAP) return feed.resync();
      if (verdict !== APPLY) return;
      applyOverviewEvent(model, message.event);
      lab.applied(message.event);
    } else if (message.type === "lag") {
      if (!model) return;
      applyLag(model, message.total_lag);
    } else {
      return;
    }
    frame.request();
  },
});

function groupUrl(id) {
  return `/groups/${encodeURIComponent(id)}/`;
}

/** A sparkline: one bar per five-minute bucket, scaled to the row's busiest bucket. */
function drawSparkline(svg, buckets) {
  const x = d3.scaleBand().domain(d3.range(BUCKETS)).range([0, SPARK_W]).padding(0.2);
  const y = d3.scaleLinear().domain([0, Math.max(1, d3.max(buckets))]).range([SPARK_H - 1, 1]);
  d3.select(svg)
    .selectAll("rect")
    .data(buckets)
    .join("rect")
    .attr("x", (_, i) => x(i))
    .attr("width", x.bandwidth())
    .attr("y", (d) => (d ? y(d) : SPARK_H - 1))
    .attr("height", (d) => (d ? SPARK_H - 1 - y(d) : 1))
    .classed("is-zero", (d) => d === 0);
}

function bucketHelp(buckets) {
  return buckets
    .map((n, i) => {
      const minutesAgo = (BUCKETS - i) * (BUCKET_MS / 60_000);
      return `${minutesAgo}–${minutesAgo - 5} min ago: ${n}`;
    })
    .join("\n");
}

// data-label: on a phone the table becomes one card per group, each value under its label.
function enterRow(enter) {
  const tr = enter.append("tr");
  tr.append("th").attr("scope", "row").append("a");
  tr.append("td").attr("data-label", "State").append("span").attr("class", "state-badge");
  tr.append("td").attr("class", "num").attr("data-label", "Generation");
  tr.append("td").attr("class", "num").attr("data-label", "Members");
  tr.append("td").attr("data-label", "Protocol");
  tr.append("td").attr("class", "num").attr("data-label", "Total lag");
  const spark = tr.append("td").attr("class", "spark").attr("data-label", "Rebalances, last hour");
  spark.append("span").attr("class", "spark-count");
  spark.append("svg").attr("width", SPARK_W).attr("height", SPARK_H).attr("viewBox", `0 0 ${SPARK_W} ${SPARK_H}`);
  return tr;
}

function updateRow(g) {
  if (this.__shown === g) return; // records are replaced when they change
  this.__shown = g;
  const cells = this.children;
  this.dataset.testid = `group-row-${g.group_id}`;
  const link = cells[0].firstChild;
  link.href = groupUrl(g.group_id);
  setText(link, g.group_id);
  const badge = cells[1].firstChild;
  const state = g.state ?? "unknown";
  setText(badge, state);
  badge.className = `state-badge state-${state}`;
  badge.title = diagramFor(g.kind).help[state] || "";
  setText(cells[2], g.generation_id ?? "—");
  setText(cells[3], g.member_count);
  setText(cells[4], g.protocol ? `${g.protocol_type ?? "?"} / ${g.protocol}` : (g.protocol_type ?? "—"));
  setText(cells[5], formatCount(g.total_lag));
  setText(cells[6].firstChild, rebalancesInHour(g));
  cells[6].title = bucketHelp(g.rebalances);
  drawSparkline(cells[6].lastChild, g.rebalances);
}

function render() {
  if (model) {
    const rows = visibleGroups(model, filter.value);
    d3.select(tbody)
      .selectAll("tr")
      .data(rows, (g) => g.group_id)
      .join(enterRow)
      .each(updateRow)
      .order();
    empty.hidden = rows.length > 0;
    setText(empty, model.groups.size ? "No group in this state right now." : "No group yet: start a consumer to see one here.");
  }
  lab.rendered();
}

// Rows are links: the whole row opens the group, not only its name.
tbody.addEventListener("click", (event) => {
  const row = event.target.closest("tr");
  if (row && !event.target.closest("a")) row.querySelector("a")?.click();
});
filter.addEventListener("change", () => frame.request());

setInterval(() => {
  if (!model) return;
  advanceTo(model, Date.now() + clockOffsetMs);
  frame.request();
}, TICK_MS);

// The legend: each group kind's states, since the table shows groups of every kind.
d3.select(".state-legends")
  .selectAll("div")
  .data(Object.values(DIAGRAMS))
  .join("div")
  .attr("data-testid", (d) => `state-legend-${d.kind}`)
  .call((div) => div.append("h3").text((d) => d.title))
  .call((div) =>
    div
      .append("ul")
      .attr("class", "state-legend")
      .selectAll("li")
      .data((d) => d.states.map((state) => ({ state, help: d.help[state] })))
      .join("li")
      .call((li) => li.append("span").attr("class", (s) => `state-badge state-${s.state}`).text((s) => s.state))
      .call((li) => li.append("span").text((s) => s.help)),
  );

// Staff: a new group, of any kind. A group the overview lists keeps its kind (a Dead one is gone).
const newGroup = document.querySelector('[data-role="new-group"]');
if (newGroup) {
  createNewGroup(newGroup, {
    kindOf(groupId) {
      const g = model && model.groups.get(groupId);
      return g && g.state !== "Dead" ? (g.kind ?? "classic") : null;
    },
  });
}

// Leaving the page closes the socket: no "reconnecting" flash while the next page loads. A
// page restored from the back-forward cache starts again from a fresh snapshot.
window.addEventListener("pagehide", () => feed.stop());
window.addEventListener("pageshow", (event) => {
  if (event.persisted) feed.start();
});
feed.start();
