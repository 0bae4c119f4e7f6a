// The group page (/groups/<group_id>/): the live model, the time-travel history, and the
// panels that draw them.
//
// Live: the group feed's snapshot, then each event applied to the model as it arrives
// (fold.js); the DOM is redrawn at most once per animation frame. A prev_seq gap or a dropped
// socket brings a fresh snapshot (feed.js). History: the last 5,000 events from the events API,
// extended by every live event, for the timeline and the time-travel scrubber.
//
// A handoff group is drawn with its own state machine (states.js), its members'
// four sets in their lanes and its tiles' handoff (handoff-fold.js, lanes.js), and an outage
// banner while its partition store or service discovery is down. A consumer group (KIP-848)
// likewise has its own state machine, its group and target epochs, its epochs panel in place of
// the generations, and its members' epochs, states and targets in their lanes
// (consumer-fold.js, epochs.js). `body[data-kind]` says which kind of group is shown; the
// page's CSS shows only the panels and help of that kind.

import { createActions } from "./actions.js";
import { Every, FrameScheduler, LabHooks, getJSON, setText, showConnection, topicColors } from "./common.js";
import { createEpochs } from "./epochs.js";
import { MAX_ROWS, createEventLog } from "./eventlog.js";
import { APPLY, GAP, GroupSequence, LIVE, LiveFeed, feedUrl } from "./feed.js";
import { RELEASED_REVOKED, applyEvent, applyOffsets, modelFromSnapshot } from "./fold.js";
import { describeEvent, formatClock, formatCount, shortId } from "./format.js";
import { createLanes } from "./lanes.js";
import { createOffsetsTable } from "./offsets.js";
import { diagramFor } from "./states.js";
import { createStateMachine } from "./statemachine.js";
import { createTimeline } from "./timeline.js";
import { HISTORY_CAP, History, loadHistory } from "./timetravel.js";

const OFFSETS_EVERY_MS = 500; // the offsets table (1,000 rows) is redrawn at most this often
const COUNT_EVERY_MS = 250; // live, the scrubber follows the history's growth at most this often
const HISTORY_RETRY_MS = 5000;

const groupId = JSON.parse(document.getElementById("group-id").textContent);
const encodedId = encodeURIComponent(groupId);
const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);
const bySelector = (selector) => document.querySelector(selector);
const field = (name) => bySelector(`[data-field="${name}"]`);

const lab = new LabHooks();
const frame = new FrameScheduler(render);
const topicColor = topicColors();

const ui = {
  state: byTestId("group-state"),
  generation: byTestId("group-generation"),
  targetEpoch: byTestId("group-target-epoch"),
  timelineTitle: field("timeline-title"),
  leader: field("leader"),
  protocolType: field("protocol-type"),
  protocol: field("protocol"),
  memberCount: field("member-count"),
  totalLag: field("lag"),
  notice: bySelector(".group-notice"),
  outage: byTestId("handoff-outage"),
  generationLabel: field("generation-label"),
  pending: bySelector(".pending"),
  pendingList: bySelector(".pending-list"),
  legend: bySelector(".topic-legend"),
  scrubber: byTestId("scrubber"),
  travelLabel: byTestId("time-travel-label"),
  travelDetail: bySelector(".travel-detail"),
  backToLive: byTestId("back-to-live"),
  historyNote: bySelector(".history-note"),
};

let machine = null; // drawn for the group's kind once the first snapshot says it
let machineKind = null;
const lanes = createLanes(bySelector(".lanes-canvas"), { topicColor, onResize: () => frame.request() });
const timeline = createTimeline(bySelector(".timeline"), bySelector(".timeline-note"));
const epochs = createEpochs(byTestId("epochs"));
const log = createEventLog(bySelector(".event-log"), { onPick: travelTo });
const offsetsTable = createOffsetsTable(bySelector(".offsets-scroll"), bySelector(".offsets-inner"), field("total-lag"), {
  topicColor,
});
const actionsPanel = bySelector('[data-role="actions"]');
const actions = actionsPanel
  ? createActions(actionsPanel, {
      groupId,
      // The switches' answer shows at once; the feed's next tick says the same.
      onSwitches(switches) {
        if (live) live = { ...live, switches };
        frame.request();
      },
    })
  : null;

// ------------------------------------------------------------------ state

let live = null; // the group now: the snapshot plus every event since
let sequence = null; // gap detection on the live feed
const history = new History(groupId);
let historyLoading = false;
let historySyncTo = null; // a later snapshot's seq to catch the history up to after this load
let historyProblem = null; // why the last load failed (null: it did not)
let queued = []; // live events that arrived while the history was loading
let travelSeq = null; // the event time travel shows (null: live)
let travelView = null; // the model shown while travelling, with what it was built from
let offsetsShown = null; // the model the offsets table shows
const offsetsEvery = new Every(OFFSETS_EVERY_MS, () => frame.request());
let scrubberShown = {}; // what renderScrubber last drew from
const countEvery = new Every(COUNT_EVERY_MS, () => frame.request());
let highlighted = null;

// ------------------------------------------------------------------ the feed

const feed = new LiveFeed(feedUrl(`/ws/dashboard/groups/${encodedId}/`), {
  onMessage,
  onStatus(status, detail) {
    showConnection(status, detail);
    if (status !== LIVE) {
      const wait = detail.delayMs ? ` in ${(detail.delayMs / 1000).toFixed(1)} s` : "";
      log.add({ seq: null, atMs: Date.now(), kind: "system", text: `connection lost; reconnecting${wait}` });
      frame.request();
    }
  },
});

function onMessage(message) {
  if (message.type === "snapshot") {
    live = modelFromSnapshot(groupId, message);
    sequence = new GroupSequence(message.seq);
    lab.resetTo(message.seq);
    log.add({ seq: null, atMs: Date.now(), kind: "system", text: `live: showing the group as of event ${formatCount(message.seq)}` });
    syncHistory(message.seq);
  } else if (message.type === "event") {
    if (!live) return;
    const event = message.event;
    const verdict = sequence.accept(event);
    if (verdict === GAP) {
      log.add({ seq: null, atMs: Date.now(), kind: "system", text: "events were missed; taking a fresh snapshot" });
      feed.resync();
      return;
    }
    if (verdict !== APPLY) return;
    live = applyEvent(live, event);
    lab.applied(event);
    logEvent(event);
    if (historyLoading) queued.push(event);
    else history.append([event]);
  } else if (message.type === "offsets") {
    if (!live) return;
    live = applyOffsets(live, message);
  } else {
    return;
  }
  frame.request();
}

function logEvent(event) {
  let revoked = 0;
  if (event.type === "AssignmentStored") {
    for (const why of live.released.values()) if (why === RELEASED_REVOKED) revoked += 1;
  }
  const { kind, text } = describeEvent(event, { revoked });
  log.add({ seq: event.seq, atMs: event.at_ms, kind, text });
}

// ------------------------------------------------------------------ history

function fetchEvents(after, limit) {
  return getJSON(`/api/groups/${encodedId}/events?after=${after}&limit=${limit}`);
}

/** Bring the history up to a snapshot's seq: all of it the first time, what was missed after
 *  a reconnect. Live events wait in `queued` meanwhile, so the history stays in seq order. */
function syncHistory(untilSeq) {
  if (historyLoading) {
    historySyncTo = Math.max(historySyncTo ?? 0, untilSeq);
    return;
  }
  historyLoading = true;
  const after = history.length ? history.lastSeq : 0;
  loadHistory(fetchEvents, { untilSeq, after })
    .then((events) => {
      if (!after) {
        // The log starts with what happened before the page opened (commits left out: a
        // busy group's last 200 events would be nothing else).
        const earlier = events.filter((e) => e.type !== "OffsetsCommitted").slice(-MAX_ROWS);
        log.seed(earlier.map((e) => ({ seq: e.seq, atMs: e.at_ms, ...describeEvent(e) })));
      }
      // Fewer than asked for: the API was read from its start, so these are all the group's.
      if (!after && events.length < HISTORY_CAP) history.fromCreation();
      history.append(events);
      history.append(queued);
      queued = [];
      historyProblem = null;
    })
    .catch((error) => {
      // Keep queueing live events (the newest HISTORY_CAP) and try again.
      queued = queued.slice(-HISTORY_CAP);
      historyProblem = error.message;
      frame.request();
      historySyncTo = Math.max(historySyncTo ?? 0, untilSeq);
      return new Promise((resolve) => setTimeout(resolve, HISTORY_RETRY_MS));
    })
    .finally(() => {
      historyLoading = false;
      if (historySyncTo !== null) {
        const next = historySyncTo;
        historySyncTo = null;
        syncHistory(next);
      }
      frame.request();
    });
}

// ------------------------------------------------------------------ time travel

function travelTo(seq) {
  const index = history.indexOfSeq(seq);
  if (index < 0 || history.events[index].seq !== seq) return; // not in the loaded history
  if (index === history.length - 1) return goLive();
  travelSeq = seq;
  document.body.classList.add("is-travelling");
  frame.request();
}

function goLive() {
  travelSeq = null;
  travelView = null;
  document.body.classList.remove("is-travelling");
  frame.request();
}

ui.scrubber.addEventListener("input", () => {
  const index = Number(ui.scrubber.value);
  // The right end is live (its max may be a few events behind the history: see renderScrubber).
  if (index >= Number(ui.scrubber.max)) goLive();
  else travelTo(history.events[index].seq);
});
ui.backToLive.addEventListener("click", goLive);
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && travelSeq !== null) goLive();
});

/** The model the panels show: live, or the group as it was at the event travelled to. The
 *  past has no partition counts of its own: the current ones are used. */
function shownModel() {
  if (travelSeq === null) return live;
  const index = history.indexOfSeq(travelSeq);
  if (index < 0) {
    goLive(); // the event fell out of the history window
    return live;
  }
  if (!travelView || travelView.seq !== travelSeq || travelView.topics !== live.topics) {
    travelView = { seq: travelSeq, topics: live.topics, model: { ...history.modelAt(index), topics: live.topics } };
  }
  return travelView.model;
}

/** Set a property only when it changes: each write invalidates the element's style. */
function setProp(node, name, value) {
  if (node[name] !== value) node[name] = value;
}

function renderScrubber() {
  const n = history.length;
  const shown = { n, travelSeq, historyProblem, historyLoading };
  const changed = Object.keys(shown).filter((key) => shown[key] !== scrubberShown[key]);
  if (!changed.length) return;
  // Live, a busy group adds hundreds of events a second: redrawing the slider and the count
  // for each would repaint the page every frame for a change nobody can read that fast.
  if (travelSeq === null && changed.length === 1 && changed[0] === "n" && !countEvery.due()) return;
  scrubberShown = shown;
  const s = ui.scrubber;
  setProp(s, "disabled", n < 2);
  setProp(s, "min", String(Math.min(history.firstCompleteIndex(), Math.max(0, n - 1))));
  setProp(s, "max", String(Math.max(0, n - 1)));
  setProp(ui.backToLive, "disabled", travelSeq === null);
  let note = `${formatCount(n)} events loaded; the oldest are dropped past ${formatCount(HISTORY_CAP)}`;
  if (historyProblem) note = `the history could not be loaded (${historyProblem}); retrying`;
  else if (historyLoading && !n) note = "loading the history…";
  setText(ui.historyNote, note);
  if (travelSeq === null) {
    setProp(s, "value", s.max);
    setText(ui.travelLabel, "live");
    setText(ui.travelDetail, n ? "Drag the slider back to see the group as it was at an earlier event." : "");
    return;
  }
  const index = history.indexOfSeq(travelSeq);
  const event = history.events[index];
  setProp(s, "value", String(index));
  setText(ui.travelLabel, `${formatClock(event.at_ms)} · event ${formatCount(event.seq)}`);
  setText(ui.travelDetail, `${n - 1 - index} events ago: ${describeEvent(event).text}`);
}

// ------------------------------------------------------------------ rendering

/** The group's kind: what the live group is (a past moment of it is the same group). */
function groupKind() {
  return live.kind ?? "classic";
}

/** Draw the state machine of the group's kind (again if the group was deleted and came back
 *  as the other kind). */
function machineFor(kind) {
  if (kind !== machineKind) {
    if (machine) machine.destroy();
    machine = createStateMachine(bySelector(".sm-svg"), bySelector(".sm-caption"), diagramFor(kind));
    machineKind = kind;
    document.body.dataset.kind = kind;
  }
  return machine;
}

const SWITCH_WORDS = { partition_store: "the partition store", discovery: "the service discovery" };
let outageShown;
function renderOutage() {
  const switches = live.kind === "handoff" ? live.switches : null;
  if (switches === outageShown) return;
  outageShown = switches;
  const down = Object.keys(SWITCH_WORDS).filter((name) => switches && switches[name] === false);
  setProp(ui.outage, "hidden", !down.length);
  if (!down.length) return;
  const what = down.map((name) => SWITCH_WORDS[name]).join(" and ");
  setText(
    ui.outage,
    `Outage: ${what} ${down.length > 1 ? "are" : "is"} unreachable. Every member keeps its current assignment: ` +
      "no new plan is made until both are back (members may still join, with nothing, and leave).",
  );
}

/** What a kind calls its generation: a handoff plan's epoch, a consumer group's group epoch. */
const GENERATION_LABELS = { handoff: "Epoch", consumer: "Group epoch" };

let summaryShown = { model: null, lag: null };
function renderSummary(model) {
  if (model === summaryShown.model && live.totalLag === summaryShown.lag) return;
  summaryShown = { model, lag: live.totalLag };
  const state = model.state ?? "none";
  const diagram = diagramFor(groupKind());
  setText(ui.state, state);
  setProp(ui.state, "className", `state-badge state-${state}`);
  setProp(ui.state, "title", diagram.help[state] || "The group does not exist (yet).");
  setText(ui.generationLabel, GENERATION_LABELS[groupKind()] ?? "Generation");
  setText(ui.timelineTitle, groupKind() === "consumer" ? "Epochs" : "Generations");
  setText(ui.generation, model.generation ?? 0);
  setText(ui.targetEpoch, model.targetEpoch ?? 0);
  setText(ui.leader, model.leader ? shortId(model.leader) : "none");
  setProp(ui.leader, "title", model.leader || "");
  setText(ui.protocolType, model.protocolType ?? "—");
  setText(ui.protocol, model.protocol ?? "—");
  setText(ui.memberCount, model.members.size);
  // Lag is measured now; the past has none to show.
  setText(ui.totalLag, model === live ? formatCount(live.totalLag) : "—");
  let notice = "";
  if (!model.exists && model.state === null) {
    notice = `There is no group “${groupId}” yet. It appears as soon as a consumer joins it.`;
  } else if (model.state === "Dead") {
    notice = "This group was removed. Its history stays readable below.";
  }
  setText(ui.notice, notice);
  setProp(ui.notice, "hidden", !notice);
}

let pendingShown = null;
function renderPending(model) {
  if (model.pending === pendingShown) return;
  pendingShown = model.pending;
  ui.pending.hidden = model.pending.size === 0;
  d3.select(ui.pendingList)
    .selectAll("li")
    .data([...model.pending], (id) => id)
    .join("li")
    .attr("data-testid", (id) => `pending-${id}`)
    .attr("title", (id) => `${id}: asked to join, got this member id, and must send JoinGroup again with it (KIP-394)`)
    .text(shortId);
}

let legendTopics = null;
function renderLegend(topics) {
  if (topics === legendTopics) return;
  legendTopics = topics;
  d3.select(ui.legend)
    .selectAll("li")
    .data(Object.keys(topics).sort(), (t) => t)
    .join("li")
    .html("")
    .call((li) => li.append("span").attr("class", "chip").style("background", topicColor))
    .call((li) => li.append("span").text((t) => `${t} (${topics[t]} partitions)`));
}

function renderOffsets() {
  if (live === offsetsShown || !offsetsEvery.due()) return;
  offsetsShown = live;
  offsetsTable.update(live);
}

function render() {
  if (!live) return;
  const model = shownModel();
  const animate = !document.hidden;
  renderSummary(model);
  // A snapshot does not say how the group got into its state; the history does.
  const transition = model.lastTransition ?? (model === live && history.length ? history.end.lastTransition : null);
  machineFor(groupKind()).update(model.state, transition, { animate });
  renderOutage();
  lanes.update(model, { animate });
  renderPending(model);
  renderLegend(live.topics);
  // The past shows its own rows; live, the history's (the snapshot has none of its own).
  const past = travelSeq !== null ? model : history.length ? history.end : live;
  timeline.update(past.generations, model.rebalance);
  epochs.update(past.epochs);
  renderScrubber();
  log.render();
  if (highlighted !== travelSeq) {
    highlighted = travelSeq;
    log.highlight(travelSeq);
  }
  renderOffsets();
  if (actions) actions.update(live);
  lab.rendered();
}

bySelector(".show-commits").addEventListener("change", (event) => {
  log.setShowCommits(event.target.checked);
  frame.request();
});

// Leaving the page closes the socket: no "reconnecting" flash while the next page loads. A
// page restored from the back-forward cache starts again from a fresh snapshot.
window.addEventListener("pagehide", () => feed.stop());
window.addEventListener("pageshow", (event) => {
  if (event.persisted) feed.start();
});
feed.start();
