// The overview's model: one summary per group, kept live from the all-groups feed.
//
// Pure module. A summary is GET /api/groups's plus `total_lag` and `rebalances` (generations
// started in each of the last twelve five-minute buckets, oldest first, the last ending at
// `endMs`). Records are replaced, never mutated, so the table redraws only rows that changed.

export const BUCKETS = 12;
export const BUCKET_MS = 5 * 60 * 1000;

/** Buckets moved forward so the last one ends at or after `nowMs` (empty buckets enter). */
export function shiftBuckets(buckets, endMs, nowMs) {
  if (nowMs <= endMs) return { buckets, endMs };
  const steps = Math.ceil((nowMs - endMs) / BUCKET_MS);
  const kept = steps >= BUCKETS ? [] : buckets.slice(steps);
  const out = kept.concat(new Array(BUCKETS - kept.length).fill(0));
  return { buckets: out, endMs: endMs + steps * BUCKET_MS };
}

/** Buckets with one more rebalance at `atMs` (shifting first if it is past the last one). */
export function countRebalance(buckets, endMs, atMs) {
  const shifted = shiftBuckets(buckets, endMs, atMs);
  const age = Math.floor((shifted.endMs - atMs) / BUCKET_MS);
  if (age >= BUCKETS || age < 0) return shifted; // older than the hour shown
  const out = shifted.buckets.slice();
  out[BUCKETS - 1 - age] += 1;
  return { buckets: out, endMs: shifted.endMs };
}

function summary(group_id, fields = {}) {
  return {
    group_id,
    state: null,
    generation_id: null,
    protocol_type: null,
    protocol: null,
    leader: null,
    member_count: 0,
    total_lag: null,
    rebalances: new Array(BUCKETS).fill(0),
    ...fields,
  };
}

/** The model of the feed's snapshot {seq, now_ms, groups}. */
export function overviewFromSnapshot(snapshot) {
  const groups = new Map();
  for (const g of snapshot.groups || []) {
    const rebalances = Array.isArray(g.rebalances) && g.rebalances.length === BUCKETS ? g.rebalances.slice() : new Array(BUCKETS).fill(0);
    groups.set(g.group_id, summary(g.group_id, { ...g, rebalances }));
  }
  return { seq: snapshot.seq ?? 0, endMs: snapshot.now_ms, groups };
}

/** Move every group's buckets so the last ends at or after `nowMs` (coordinator time). */
export function advanceTo(model, nowMs) {
  if (nowMs <= model.endMs) return;
  for (const [id, g] of model.groups) {
    model.groups.set(id, { ...g, rebalances: shiftBuckets(g.rebalances, model.endMs, nowMs).buckets });
  }
  model.endMs = shiftBuckets([], model.endMs, nowMs).endMs;
}

/** Apply one engine event to the overview model (in place: the group's record is replaced). */
export function applyOverviewEvent(model, e) {
  model.seq = Math.max(model.seq, e.seq);
  advanceTo(model, e.at_ms);
  const old = model.groups.get(e.group_id) || summary(e.group_id);
  let next = old;
  switch (e.type) {
    case "StateChanged":
      next = { ...old, state: e.to_state };
      break;
    case "GenerationStarted":
      next = {
        ...old,
        generation_id: e.generation_id,
        protocol_type: e.protocol_type,
        protocol: e.protocol_name,
        leader: e.leader_id,
        member_count: e.member_ids.length,
        rebalances: countRebalance(old.rebalances, model.endMs, e.at_ms).buckets,
      };
      break;
    case "MemberJoined":
      // A rejoin for a rebalance is a member already counted.
      if (!e.rejoined) next = { ...old, member_count: old.member_count + 1 };
      break;
    case "MemberRemoved":
      next = { ...old, member_count: Math.max(0, old.member_count - 1), leader: old.leader === e.member_id ? null : old.leader };
      break;
    case "StaticMemberReplaced":
      if (old.leader === e.old_member_id) next = { ...old, leader: e.new_member_id };
      break;
    case "GroupRemoved":
      next = { ...old, state: "Dead", member_count: 0, leader: null };
      break;
    default:
      break;
  }
  if (next !== old || !model.groups.has(e.group_id)) model.groups.set(e.group_id, next);
}

/** The feed's {"type": "lag", "total_lag": {group: n}}. */
export function applyLag(model, totalLag) {
  for (const [id, lag] of Object.entries(totalLag || {})) {
    const g = model.groups.get(id);
    if (g && g.total_lag !== lag) model.groups.set(id, { ...g, total_lag: lag });
  }
}

/** Sum of a group's buckets: its rebalances in the last hour. */
export function rebalancesInHour(g) {
  return g.rebalances.reduce((a, b) => a + b, 0);
}

/** Groups to show: sorted by id, only `state` if given. */
export function visibleGroups(model, state = "") {
  return [...model.groups.values()]
    .filter((g) => !state || g.state === state)
    .sort((a, b) => (a.group_id < b.group_id ? -1 : a.group_id > b.group_id ? 1 : 0));
}
