// The state machine panel: a group kind's states as an SVG graph (states.js: the classic
// group's five, a handoff group's four and Dead), the current one lit, and each
// transition animated along its edge (a token travels it) with its cause: a rebalance's start
// names its structured cause and the member behind it (the event's `cause`), any other move the
// engine's reason.
//
// The token is an HTML element over the SVG, moved by a Web Animation of its transform: the
// compositor runs that without the page's main thread. A token inside the SVG could only move
// by repainting the SVG, a frame of style, paint and layer work for each of the ~40 frames of
// a transition, and under churn a group makes several transitions a second.

import { EASE_CUBIC_IN_OUT } from "./common.js";
import { causeWords, formatClock, shortId } from "./format.js";
import { DIAGRAMS, NODE_H, NODE_W, VIEW_H, VIEW_W, edgeGeometry, edgeId } from "./states.js";

const TRAVEL_MS = 700;
const FADE_MS = 250;
const LABEL_CHARS = 46;
const TRACK_POINTS = 48;

/** Points along a path (viewBox units), evenly spaced by length: the token's keyframes. */
function track(path) {
  const length = path.getTotalLength();
  return d3.range(TRACK_POINTS + 1).map((i) => path.getPointAtLength((i / TRACK_POINTS) * length));
}

/** A transition's cause as data, in words ("member joined · b"), or null when it has none. */
function causeOf(t) {
  if (!t.cause) return null;
  return `${causeWords(t.cause)}${t.causeMemberId ? ` · ${shortId(t.causeMemberId)}` : ""}`;
}

function clip(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/** Draws `diagram` (states.js DIAGRAMS) into `svgNode`, whose parent is the token's stage
 *  (positioned, the SVG at its top left); `caption` is an element for the last transition in
 *  full. `destroy()` empties the SVG and removes the token (the page draws another kind). */
export function createStateMachine(svgNode, caption, diagram = DIAGRAMS.classic) {
  const { states: STATES, help: STATE_HELP, transitions: TRANSITIONS, positions: NODE_POS } = diagram;
  const svg = d3.select(svgNode).attr("viewBox", `0 0 ${VIEW_W} ${VIEW_H}`).attr("role", "img");
  svg.attr("data-kind", diagram.kind);
  svg.append("title").text("The group's state machine: the lit state is the current one");

  const defs = svg.append("defs");
  for (const [id, cls] of [["arrow", "arrow"], ["arrow-active", "arrow is-active"]]) {
    defs
      .append("marker")
      .attr("id", id)
      .attr("viewBox", "0 0 10 10")
      .attr("refX", 9)
      .attr("refY", 5)
      .attr("markerWidth", 7)
      .attr("markerHeight", 7)
      .attr("orient", "auto-start-reverse")
      .append("path")
      .attr("class", cls)
      .attr("d", "M0,0 L10,5 L0,10 z");
  }

  const geometry = new Map(TRANSITIONS.map(([from, to]) => [edgeId(from, to), edgeGeometry(from, to, NODE_POS)]));
  const edges = svg
    .append("g")
    .attr("class", "sm-edges")
    .selectAll("path")
    .data(TRANSITIONS, (d) => edgeId(d[0], d[1]))
    .join("path")
    .attr("class", "sm-edge")
    .attr("d", (d) => geometry.get(edgeId(d[0], d[1])).path)
    .attr("marker-end", "url(#arrow)");
  edges.append("title").text((d) => `${d[0]} → ${d[1]}: usually because ${d[2]}`);

  const nodes = svg
    .append("g")
    .attr("class", "sm-nodes")
    .selectAll("g")
    .data(STATES)
    .join("g")
    .attr("class", (d) => `sm-node state-${d}`)
    .attr("data-state", (d) => d)
    .attr("transform", (d) => `translate(${NODE_POS[d].x - NODE_W / 2},${NODE_POS[d].y - NODE_H / 2})`);
  nodes.append("rect").attr("width", NODE_W).attr("height", NODE_H).attr("rx", 10);
  nodes
    .append("text")
    .attr("x", NODE_W / 2)
    .attr("y", NODE_H / 2)
    .attr("dy", "0.35em")
    .attr("text-anchor", "middle")
    .text((d) => d);
  nodes.append("title").text((d) => `${d}: ${STATE_HELP[d]}`);

  const label = svg.append("text").attr("class", "sm-label").attr("text-anchor", "middle").attr("opacity", 0);
  const token = svgNode.parentElement.appendChild(document.createElement("div"));
  token.className = "sm-token";
  token.setAttribute("aria-hidden", "true");
  // The SVG's size, kept from resize events (reading it during a render forces a layout).
  let size = { width: VIEW_W, height: VIEW_H };
  const resize = new ResizeObserver(([entry]) => (size = entry.contentRect));
  resize.observe(svgNode);

  /** A viewBox point in the stage's pixels ("meet": scaled to fit, centred). */
  function toStage({ x, y }) {
    const scale = Math.min(size.width / VIEW_W, size.height / VIEW_H);
    const left = (size.width - VIEW_W * scale) / 2;
    const top = (size.height - VIEW_H * scale) / 2;
    return `translate(${left + x * scale}px,${top + y * scale}px)`;
  }

  /** End the token's flight, if any: it is hidden when not animated. */
  function ground() {
    for (const running of token.getAnimations()) running.cancel();
  }

  function travel(points) {
    ground();
    token.animate(
      points.map((p) => ({ transform: toStage(p) })),
      { duration: TRAVEL_MS, easing: EASE_CUBIC_IN_OUT, fill: "forwards" },
    );
    token.animate([{ opacity: 1 }, { opacity: 0 }], { delay: TRAVEL_MS, duration: FADE_MS, fill: "both" });
  }

  const tracks = new Map(); // edge id → sampled points, for the token
  let shownState;
  let shownSeq = null;

  /** Light `state`; show `t` ({from, to, reason, cause, causeMemberId, atMs, seq} or null) on its edge, travelling
   *  it when `animate`. */
  function update(state, t, { animate }) {
    if (state !== shownState) {
      shownState = state;
      nodes.classed("is-current", (d) => d === state);
    }
    if ((t ? t.seq : null) === shownSeq) return;
    shownSeq = t ? t.seq : null;
    edges.classed("is-active", (d) => t !== null && d[0] === t.from && d[1] === t.to);
    edges.attr("marker-end", (d) => (t !== null && d[0] === t.from && d[1] === t.to ? "url(#arrow-active)" : "url(#arrow)"));
    if (!t) {
      label.attr("opacity", 0);
      ground();
      caption.textContent = "No transition seen yet.";
      return;
    }
    const cause = causeOf(t);
    caption.textContent = `${t.from} → ${t.to} at ${formatClock(t.atMs)}${cause ? ` (cause: ${cause})` : ""}: ${t.reason}`;
    const geo = geometry.get(edgeId(t.from, t.to));
    if (!geo) return; // a transition the engine's table does not have: lit state only
    label.text(clip(cause ?? t.reason, LABEL_CHARS)).attr("x", geo.labelX).attr("y", geo.labelY - 6);
    if (!animate) {
      label.interrupt().attr("opacity", 1);
      ground();
      return;
    }
    label.interrupt().attr("opacity", 1).transition().delay(4000).duration(1500).attr("opacity", 0.55);
    const id = edgeId(t.from, t.to);
    if (!tracks.has(id)) tracks.set(id, track(edges.filter((d) => edgeId(d[0], d[1]) === id).node()));
    travel(tracks.get(id));
  }

  function destroy() {
    resize.disconnect();
    ground();
    token.remove();
    svg.selectAll("*").interrupt().remove();
  }

  return { update, destroy };
}
