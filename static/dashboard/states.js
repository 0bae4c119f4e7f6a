// The group state machines as the page draws them: for a classic group the five states and
// the transitions between them (coordinator_engine/classic/state.py TRANSITIONS), for a
// handoff group its four (coordinator_engine/handoff/state.py TRANSITIONS, the table of
// docs/engine.md, "Handoff groups"), for a consumer group (KIP-848) its four
// (coordinator_engine/consumer/state.py TRANSITIONS, the table of docs/engine.md, "Consumer
// groups"); plain-words help, and the geometry of the graph. Pure module;
// statemachine.js draws one of them with d3.

export const STATES = ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"];

/** What each state means, for the legend and the tooltips. */
export const STATE_HELP = {
  Empty: "No members. The group only keeps its committed offsets, so a consumer that joins later resumes where the last one stopped.",
  PreparingRebalance:
    "Rebalance, phase 1 (join): something changed, so every member must (re)join; consumption pauses while the coordinator waits for them.",
  CompletingRebalance:
    "Rebalance, phase 2 (sync): everyone has joined; the leader member is computing who reads which partition and the others wait for it.",
  Stable: "Every member knows its partitions and is consuming. Members send heartbeats to show they are alive.",
  Dead: "The group was deleted or expired: it no longer exists.",
};

/** Every legal transition and its usual cause (as the engine's TRANSITIONS table). */
export const TRANSITIONS = [
  ["Empty", "PreparingRebalance", "a member joined the empty group"],
  ["Stable", "PreparingRebalance", "a member joined, left, failed or changed its protocols"],
  ["CompletingRebalance", "PreparingRebalance", "a member joined, left or failed before the sync"],
  ["PreparingRebalance", "CompletingRebalance", "every member rejoined, or the rebalance timed out"],
  ["PreparingRebalance", "Empty", "the join phase completed with no members left"],
  ["CompletingRebalance", "Stable", "the leader's assignment was stored"],
  ["Empty", "Dead", "the group was deleted, or expired with no offsets left"],
  ["Stable", "Dead", "the coordinator partition was unloaded"],
  ["PreparingRebalance", "Dead", "the coordinator partition was unloaded"],
  ["CompletingRebalance", "Dead", "the coordinator partition was unloaded"],
  ["Dead", "Dead", "the group was already dead"],
];

export function edgeId(from, to) {
  return `${from}->${to}`;
}

// ------------------------------------------------------------------ geometry

export const VIEW_W = 640;
export const VIEW_H = 270;
export const NODE_W = 168;
export const NODE_H = 38;

/** Node centres in the graph's viewBox: the rebalance cycle runs clockwise on the right. */
export const NODE_POS = {
  Empty: { x: 110, y: 60 },
  PreparingRebalance: { x: 340, y: 60 },
  CompletingRebalance: { x: 540, y: 160 },
  Stable: { x: 340, y: 235 },
  Dead: { x: 110, y: 235 },
};

/** A handoff group's states; Dead only as the end. */
export const HANDOFF_STATES = ["Initial", "Starting", "Closing", "Stable", "Dead"];

export const HANDOFF_STATE_HELP = {
  Initial: "No plan yet: members have joined, but the coordinator has not given anyone partitions (it waits for the partition store and the service discovery).",
  Starting:
    "Partitions were granted to their new owners, which are starting to consume them; the coordinator waits for each start to be confirmed.",
  Closing:
    "A new plan moves partitions: their current owners must stop consuming them and commit their offsets first. Nobody else may start a partition before it is closed, so nothing is consumed twice.",
  Stable: "Every member consumes exactly what the plan gave it; nothing is being closed or started.",
  Dead: "The group was deleted or expired: it no longer exists.",
};

/** Every legal transition and its cause (as the engine's table, docs/engine.md). */
export const HANDOFF_TRANSITIONS = [
  ["Initial", "Starting", "the first plan gave members partitions to start"],
  ["Initial", "Stable", "the first plan gave nobody anything to start"],
  ["Stable", "Closing", "a new plan moves partitions: their owners must close them"],
  ["Stable", "Starting", "a new plan only adds partitions"],
  ["Starting", "Closing", "a new plan during the start moves partitions"],
  ["Starting", "Stable", "every start was confirmed, or those who had to start left"],
  ["Closing", "Starting", "every close was confirmed or its owner left: the moved partitions are granted"],
  ["Closing", "Stable", "every close was confirmed or its owner left, and nothing is left to start"],
  ["Initial", "Dead", "the group was deleted, or expired with no offsets left"],
  ["Stable", "Dead", "the group was deleted, or expired with no offsets left"],
];

/** The handoff cycle runs on the right as the classic rebalance does: Stable → Closing →
 *  Starting → Stable, each pair of them joined both ways. */
export const HANDOFF_NODE_POS = {
  Initial: { x: 110, y: 60 },
  Starting: { x: 340, y: 60 },
  Closing: { x: 540, y: 160 },
  Stable: { x: 340, y: 235 },
  Dead: { x: 110, y: 235 },
};

/** A consumer group's states (Kafka 4's consumer protocol, KIP-848); Dead only as the end. */
export const CONSUMER_STATES = ["Empty", "Assigning", "Reconciling", "Stable", "Dead"];

export const CONSUMER_STATE_HELP = {
  Empty: "No members. The group only keeps its committed offsets; the first member to join gets its whole target at once.",
  Assigning:
    "The group epoch went up (a member joined, left or changed its subscription, or a topic changed): the coordinator computes a new target assignment at the next heartbeat of any member.",
  Reconciling:
    "A new target assignment moves partitions: each member gets there on its own, first revoking what it must give up, then receiving what others released. Members keep consuming the rest meanwhile.",
  Stable: "Every member holds its target assignment at the group's epoch.",
  Dead: "The group was deleted or expired: it no longer exists.",
};

/** Every legal transition and its cause (as the engine's table, docs/engine.md). */
export const CONSUMER_TRANSITIONS = [
  ["Empty", "Stable", "a member joined and got its whole target assignment at once"],
  ["Stable", "Assigning", "a member joined, left or changed its subscription, or a topic changed"],
  ["Stable", "Reconciling", "a new target moves partitions, or a static member is away (epoch -2)"],
  ["Assigning", "Reconciling", "the target assignment was computed and members must reconcile"],
  ["Assigning", "Stable", "the target assignment was computed and every member holds it"],
  ["Reconciling", "Assigning", "the group epoch went up again before the members reconciled"],
  ["Reconciling", "Stable", "every member reached the target assignment"],
  ["Assigning", "Empty", "the last member left"],
  ["Reconciling", "Empty", "the last member left"],
  ["Stable", "Empty", "the last member left"],
  ["Empty", "Dead", "the group was deleted, or expired with no offsets left"],
];

/** The rebalance runs on the right as the classic one does: Stable → Assigning → Reconciling →
 *  Stable, with the shortcuts between each pair. */
export const CONSUMER_NODE_POS = {
  Empty: { x: 110, y: 60 },
  Assigning: { x: 340, y: 60 },
  Reconciling: { x: 540, y: 160 },
  Stable: { x: 340, y: 235 },
  Dead: { x: 110, y: 235 },
};

/** What the page draws for each group kind (`title`: the overview legend's heading). */
export const DIAGRAMS = {
  classic: {
    kind: "classic",
    title: "Classic groups (Kafka's JoinGroup / SyncGroup protocol)",
    states: STATES,
    help: STATE_HELP,
    transitions: TRANSITIONS,
    positions: NODE_POS,
  },
  handoff: {
    kind: "handoff",
    title: "Handoff groups (the coordinator plans; a moved partition is closed before it starts elsewhere)",
    states: HANDOFF_STATES,
    help: HANDOFF_STATE_HELP,
    transitions: HANDOFF_TRANSITIONS,
    positions: HANDOFF_NODE_POS,
  },
  consumer: {
    kind: "consumer",
    title: "Consumer groups (Kafka 4's consumer protocol, KIP-848: the coordinator assigns; members reconcile one by one)",
    states: CONSUMER_STATES,
    help: CONSUMER_STATE_HELP,
    transitions: CONSUMER_TRANSITIONS,
    positions: CONSUMER_NODE_POS,
  },
};

/** The diagram of a group kind (a group not known yet is drawn as a classic one). */
export function diagramFor(kind) {
  return DIAGRAMS[kind] ?? DIAGRAMS.classic;
}

/** Where the segment from the centre of a node towards (dx, dy) leaves its rectangle. */
function exitPoint(center, dx, dy, pad = 4) {
  const hw = NODE_W / 2 + pad;
  const hh = NODE_H / 2 + pad;
  const scale = 1 / Math.max(Math.abs(dx) / hw, Math.abs(dy) / hh);
  return { x: center.x + dx * scale, y: center.y + dy * scale };
}

/**
 * The SVG path of an edge: a quadratic curve bowed to its left, so that the two edges of a
 * pair of states that go both ways never overlap. Also where its label goes (the curve's
 * midpoint). The self-loop of Dead is a small loop on the node's left. `positions`: the
 * diagram's node centres.
 */
export function edgeGeometry(from, to, positions = NODE_POS) {
  const a = positions[from];
  const b = positions[to];
  if (from === to) {
    const x = a.x - NODE_W / 2;
    const path = `M${x},${a.y - 8} C${x - 26},${a.y - 24} ${x - 26},${a.y + 24} ${x - 4},${a.y + 9}`;
    return { path, labelX: x + 10, labelY: a.y - 26 };
  }
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const length = Math.hypot(dx, dy);
  const bend = 26;
  // The left normal of the direction a → b; the control point sits `bend` along it.
  const nx = dy / length;
  const ny = -dx / length;
  const cx = (a.x + b.x) / 2 + nx * bend;
  const cy = (a.y + b.y) / 2 + ny * bend;
  const start = exitPoint(a, cx - a.x, cy - a.y);
  const end = exitPoint(b, cx - b.x, cy - b.y, 8);
  const round = (v) => Math.round(v * 10) / 10;
  const path = `M${round(start.x)},${round(start.y)} Q${round(cx)},${round(cy)} ${round(end.x)},${round(end.y)}`;
  // A quadratic Bézier's midpoint: (start + 2·control + end) / 4.
  return {
    path,
    labelX: round((start.x + 2 * cx + end.x) / 4),
    labelY: round((start.y + 2 * cy + end.y) / 4),
  };
}
