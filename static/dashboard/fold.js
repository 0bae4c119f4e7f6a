// The group model the page draws, and how each engine event changes it.
//
// Pure module (no DOM, no d3): the group page, the time-travel history and the Node tests all
// use it. The model is copy-on-write: applyEvent returns a new object and replaces (never
// mutates) any collection an event changes. That makes a folded model a free checkpoint for
// time travel, and lets the renderer skip any part whose collection is the same object as at
// its last render.
//
// Event types and fields are the engine's (coordinator_engine/events.py); the snapshot is the
// feed's {"type": "snapshot", "seq", "group", "topics"} with `group` as GET /api/groups/<id>.
//
// A handoff group has events of its own and four sets per member: handoff-fold.js
// folds those into the same model (`kind`, `handoff`, `handoffTiles`), and applyEvent routes
// them there. A consumer group (KIP-848) likewise: consumer-fold.js (`consumer`,
// `consumerTiles`, `targetEpoch`, `epochs`). What the three build with (partition keys, member
// records) is fold-parts.js's.

import { NO_CONSUMER_TILES, consumerFromSnapshot, consumerHandler } from "./consumer-fold.js";
import { memberRecord, partitionKey, replaceLast } from "./fold-parts.js";
import { NO_TILES, handoffFromSnapshot, handoffHandler } from "./handoff-fold.js";
import { PersistentMap } from "./pmap.js";

/** How many generations the timeline keeps. */
export const MAX_GENERATIONS = 100;

/** Why a partition has no owner (the tile's tooltip says so). */
export const RELEASED_REVOKED = "revoked"; // a cooperative first round took it away
export const RELEASED_OWNER_LEFT = "owner-left"; // its owner left the group

/** A model with nothing known yet (a group the snapshot did not have). */
export function emptyModel(groupId, seq = 0) {
  return {
    groupId,
    exists: false,
    // True when the events folded onto this model start at the group's creation (time travel
    // over a history held from the start): a handoff group then begins in Initial.
    created: false,
    kind: null, // "classic" (Kafka's protocol), "handoff" or "consumer" (KIP-848); null while unknown
    seq, // the last event reflected here
    atMs: null, // coordinator time of that event
    state: null,
    generation: null,
    protocolType: null,
    protocol: null,
    leader: null,
    members: new Map(), // member id → member record, in lane order
    pending: new Set(), // member ids waiting to rejoin with their new id (KIP-394)
    owners: new Map(), // partition key → owner member id (owned partitions only)
    released: new Map(), // partition key → RELEASED_* (owned before, nobody now)
    topics: {}, // topic → partition count
    offsets: new PersistentMap(), // partition key → {topic, partition, offset, logEnd, lag}
    totalLag: null, // the sum of the offsets' lags (null while the group is unknown)
    lastTransition: null, // {from, to, reason, cause, causeMemberId, atMs, seq}
    rebalance: null, // the rebalance under way: {startedMs, reason}
    generations: [], // timeline entries, oldest first (see generationEntry)
    // A handoff group's: member id → {assignment, owned, toStart, toClose} (Sets of partition
    // keys), what each tile shows of the handoff (handoff-fold.js), and the outage switches
    // ({partition_store, discovery}: true when up; null while unknown).
    handoff: new Map(),
    handoffTiles: NO_TILES,
    switches: null,
    // A consumer group's: member id → {memberEpoch, previousMemberEpoch, state, assigned,
    // pendingRevocation, target} (Sets of partition keys), what each tile shows of a move
    // (consumer-fold.js), the target assignment's epoch (the group epoch is `generation`),
    // and one row per epoch bump, oldest first.
    consumer: new Map(),
    consumerTiles: NO_CONSUMER_TILES,
    targetEpoch: null,
    epochs: [],
  };
}

function offsetRow(topic, partition, offset, logEnd) {
  const lag = logEnd != null && offset != null && offset >= 0 ? Math.max(0, logEnd - offset) : null;
  return { topic, partition, offset, logEnd, lag };
}

/** The model of a feed snapshot `{seq, group, topics}` (group null: no such group yet). */
export function modelFromSnapshot(groupId, snapshot) {
  const model = emptyModel(groupId, snapshot.seq ?? 0);
  model.topics = { ...(snapshot.topics || {}) };
  const group = snapshot.group;
  if (!group) return model;
  model.exists = true;
  model.kind = group.kind ?? "classic";
  model.state = group.state;
  model.generation = group.generation_id;
  model.protocolType = group.protocol_type;
  model.protocol = group.protocol;
  model.leader = group.leader;
  for (const m of group.members || []) {
    model.members.set(
      m.member_id,
      memberRecord(m.member_id, {
        instanceId: m.group_instance_id,
        clientId: m.client_id,
        clientHost: m.client_host,
        connection: m.connection,
        sessionTimeoutMs: m.session_timeout_ms,
        rebalanceTimeoutMs: m.rebalance_timeout_ms,
        subscription: m.subscription,
      }),
    );
    // Owners follow a handoff member's `owned` (handoffFromSnapshot), a consumer member's
    // assigned and pending revocation (consumerFromSnapshot).
    if (model.kind !== "classic") continue;
    for (const [topic, partition] of m.assignment || []) {
      model.owners.set(partitionKey(topic, partition), m.member_id);
    }
  }
  model.pending = new Set(group.pending_member_ids || []);
  const offsets = offsetRows(group.offsets);
  model.totalLag = lagAfter(model, offsets); // summed over the empty model's none
  model.offsets = offsets;
  if (group.state === "PreparingRebalance") model.rebalance = { startedMs: null, reason: null };
  if (model.kind === "handoff") return handoffFromSnapshot(model, group);
  return model.kind === "consumer" ? consumerFromSnapshot(model, group) : model;
}

function offsetRows(rows) {
  return PersistentMap.from(
    (rows || []).map((r) => [partitionKey(r.topic, r.partition), offsetRow(r.topic, r.partition, r.offset, r.log_end_offset)]),
  );
}

/** The total lag once `changes` ([key, row], row undefined for a removed one) replace the
 *  model's offset rows: the sum of the lags the rows show, so the two always agree (the
 *  committed offsets move with events, the log ends with the ticks). */
function lagAfter(model, changes) {
  let total = model.totalLag ?? 0;
  for (const [key, row] of changes) total += (row?.lag ?? 0) - (model.offsets.get(key)?.lag ?? 0);
  return total;
}

function sameRecord(a, b) {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/** The feed's once-a-second `{"type": "offsets", log_end_offsets: {topic: [log end per
 *  partition]}}`: each committed offset's log end and lag move on; the lists'
 *  lengths are the topics' partition counts. Rows and topics keep their objects where nothing
 *  changed, so the renderers skip them. */
export function applyOffsets(model, message) {
  const ends = message.log_end_offsets || {};
  const changed = [];
  for (const [key, row] of model.offsets) {
    const list = ends[row.topic];
    if (!list) continue;
    const logEnd = list[row.partition] ?? null;
    if (logEnd !== row.logEnd) changed.push([key, offsetRow(row.topic, row.partition, row.offset, logEnd)]);
  }
  let topics = model.topics;
  for (const [topic, list] of Object.entries(ends)) {
    if (topics[topic] !== list.length) {
      if (topics === model.topics) topics = { ...model.topics };
      topics[topic] = list.length;
    }
  }
  // A handoff group's outage switches come with the tick (they are no events).
  let switches = model.switches;
  const sent = message.switches;
  if (sent && !(switches && sameRecord(switches, sent))) switches = { ...sent };
  return { ...model, offsets: model.offsets.with(changed), totalLag: lagAfter(model, changed), topics, switches };
}

// ------------------------------------------------------------------ membership helpers

/** `owners` without the partitions of members not in `keep`; those become released. */
function dropOwnersOutside(model, keep) {
  let owners = model.owners;
  let released = model.released;
  for (const [key, owner] of model.owners) {
    if (keep.has(owner)) continue;
    if (owners === model.owners) {
      owners = new Map(model.owners);
      released = new Map(model.released);
    }
    owners.delete(key);
    released.set(key, RELEASED_OWNER_LEFT);
  }
  return { owners, released };
}

/** Members exactly `ids`: known records kept in their lane order, new ones appended. */
function membersExactly(members, ids, atMs) {
  const wanted = new Set(ids);
  const out = new Map();
  for (const [id, record] of members) if (wanted.has(id)) out.set(id, record);
  for (const id of ids) if (!out.has(id)) out.set(id, memberRecord(id, { joinedMs: atMs }));
  return out;
}

function sameKeys(map, ids) {
  if (map.size !== ids.length) return false;
  for (const id of ids) if (!map.has(id)) return false;
  return true;
}

function withoutPending(pending, ids) {
  if (!ids.some((id) => pending.has(id))) return pending;
  const out = new Set(pending);
  for (const id of ids) out.delete(id);
  return out;
}

function setMembership(model, ids, atMs) {
  if (sameKeys(model.members, ids)) return model;
  const members = membersExactly(model.members, ids, atMs);
  return { ...model, members, ...dropOwnersOutside(model, members) };
}

/** A timeline entry: join phase joinStartedMs → completingMs, sync completingMs → stableMs. */
function generationEntry(model, e) {
  return {
    seq: e.seq, // identifies the entry: a group deleted and created again counts from 1 again
    generation: e.generation_id,
    joinStartedMs: e.join_started_ms,
    completingMs: e.at_ms,
    stableMs: null,
    reason: model.rebalance ? model.rebalance.reason : null,
    memberCount: e.member_ids.length,
    protocol: e.protocol_name,
    leader: e.leader_id,
    syncAborted: false, // CompletingRebalance went back to PreparingRebalance
  };
}

// ------------------------------------------------------------------ the fold

const HANDLERS = {
  StateChanged(model, e) {
    const next = {
      ...model,
      state: e.to_state,
      lastTransition: {
        from: e.from_state,
        to: e.to_state,
        reason: e.reason,
        cause: e.cause ?? null,
        causeMemberId: e.cause_member_id ?? null,
        atMs: e.at_ms,
        seq: e.seq,
      },
    };
    const last = model.generations[model.generations.length - 1];
    const open = last && last.generation === model.generation && last.stableMs == null;
    if (e.to_state === "PreparingRebalance") {
      next.rebalance = { startedMs: e.at_ms, reason: e.reason };
      if (open && e.from_state === "CompletingRebalance") {
        next.generations = replaceLast(model.generations, { ...last, syncAborted: true });
      }
    } else if (e.to_state === "Stable") {
      next.rebalance = null;
      if (open) next.generations = replaceLast(model.generations, { ...last, stableMs: e.at_ms });
    } else if (e.to_state === "Empty" || e.to_state === "Dead") {
      next.rebalance = null;
    }
    return next;
  },

  GenerationStarted(model, e) {
    const next = setMembership(model, e.member_ids, e.at_ms);
    const generations = [...model.generations, generationEntry(model, e)];
    return {
      ...next,
      generation: e.generation_id,
      protocolType: e.protocol_type,
      protocol: e.protocol_name,
      leader: e.leader_id,
      pending: withoutPending(model.pending, e.member_ids),
      generations: generations.slice(-MAX_GENERATIONS),
      // An empty generation ends the rebalance (the group went Empty).
      rebalance: e.member_ids.length ? model.rebalance : null,
    };
  },

  MemberJoined(model, e) {
    const old = model.members.get(e.member_id);
    const record = memberRecord(e.member_id, {
      instanceId: e.group_instance_id,
      clientId: e.client_id,
      clientHost: e.client_host,
      // Events do not say it; a rejoin keeps what the snapshot said.
      connection: old ? old.connection : null,
      sessionTimeoutMs: e.session_timeout_ms,
      rebalanceTimeoutMs: e.rebalance_timeout_ms,
      subscription: old ? old.subscription : null,
      joinedMs: old ? old.joinedMs : e.at_ms,
    });
    // A rejoin for a rebalance usually changes nothing: keep the map, the lanes stay as drawn.
    let members = model.members;
    if (!old || !sameRecord(old, record)) {
      members = new Map(model.members);
      members.set(e.member_id, record);
    }
    return {
      ...model,
      members,
      // The coordinator makes the first member of a group without a leader its leader.
      leader: model.leader ?? e.member_id,
      pending: withoutPending(model.pending, [e.member_id]),
    };
  },

  MemberRemoved(model, e) {
    if (!model.members.has(e.member_id)) return model;
    const members = new Map(model.members);
    members.delete(e.member_id);
    // As the coordinator does, the leader's departure hands leadership to the first member left.
    const leader = model.leader === e.member_id ? (members.keys().next().value ?? null) : model.leader;
    return { ...model, members, leader, ...dropOwnersOutside(model, members) };
  },

  StaticMemberReplaced(model, e) {
    const { old_member_id: oldId, new_member_id: newId } = e;
    const old = model.members.get(oldId);
    if (!old) return model;
    // The lane keeps its place and its partitions; only the member id changes (KIP-345).
    const members = new Map();
    for (const [id, record] of model.members) {
      if (id === oldId) members.set(newId, { ...record, id: newId, instanceId: e.group_instance_id });
      else if (id !== newId) members.set(id, record);
    }
    const owners = new Map();
    for (const [key, owner] of model.owners) owners.set(key, owner === oldId ? newId : owner);
    return {
      ...model,
      members,
      owners,
      leader: model.leader === oldId ? newId : model.leader,
      pending: withoutPending(model.pending, [newId]),
    };
  },

  PendingMemberAdded(model, e) {
    if (model.pending.has(e.member_id)) return model;
    const pending = new Set(model.pending);
    pending.add(e.member_id);
    return { ...model, pending };
  },

  PendingMemberRemoved(model, e) {
    return { ...model, pending: withoutPending(model.pending, [e.member_id]) };
  },

  AssignmentStored(model, e) {
    // The assignment names every member of the generation, so it also fixes the membership.
    const next = setMembership(model, Object.keys(e.assignments || {}), e.at_ms);
    if (!e.partitions) return { ...next, generation: e.generation_id };
    const owners = new Map();
    for (const [member, pairs] of Object.entries(e.partitions)) {
      for (const [topic, partition] of pairs) owners.set(partitionKey(topic, partition), member);
    }
    // Owned before, by nobody now: a cooperative first round revoked it (KIP-429); it waits
    // for the second round. Partitions released earlier and still unowned keep their reason.
    const released = new Map();
    for (const [key, reason] of next.released) if (!owners.has(key)) released.set(key, reason);
    for (const key of model.owners.keys()) if (!owners.has(key)) released.set(key, RELEASED_REVOKED);
    return { ...next, generation: e.generation_id, owners, released };
  },

  OffsetsCommitted(model, e) {
    const rows = e.offsets.map(([topic, partition, offset]) => {
      const key = partitionKey(topic, partition);
      const old = model.offsets.get(key);
      return [key, offsetRow(topic, partition, offset, old ? old.logEnd : null)];
    });
    return { ...model, offsets: model.offsets.with(rows), totalLag: lagAfter(model, rows) };
  },

  OffsetsRemoved(model, e) {
    const keys = e.partitions.map(([topic, partition]) => partitionKey(topic, partition));
    const removed = keys.map((key) => [key, undefined]);
    return { ...model, offsets: model.offsets.without(keys), totalLag: lagAfter(model, removed) };
  },

  GroupRemoved(model, e) {
    return {
      ...model,
      exists: false,
      state: "Dead",
      generation: e.generation_id,
      leader: null,
      members: new Map(),
      pending: new Set(),
      owners: new Map(),
      released: new Map(),
      rebalance: null,
    };
  },
};

/** The model after `event` (an engine event with `seq`, `type`, `at_ms` and its fields). */
export function applyEvent(model, event) {
  const handler = HANDLERS[event.type];
  const ofKind = handoffHandler(model.kind, event.type) ?? consumerHandler(model.kind, event.type);
  const next = ofKind ? ofKind(model, event, handler) : handler ? handler(model, event) : { ...model };
  const result = next === model ? { ...model } : next;
  result.seq = event.seq;
  result.atMs = event.at_ms;
  if (event.type !== "GroupRemoved") result.exists = true;
  return result;
}

/** Fold a list of events onto a model. */
export function foldEvents(model, events) {
  let out = model;
  for (const event of events) out = applyEvent(out, event);
  return out;
}

// ------------------------------------------------------------------ derived views

/** Every partition the page shows a tile for, ordered by topic then partition:
 *  0..count-1 of each known topic, plus any partition owned or committed outside those. */
export function partitionList(model) {
  const seen = new Set();
  const out = [];
  const add = (topic, partition) => {
    const key = partitionKey(topic, partition);
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ key, topic, partition });
  };
  for (const [topic, count] of Object.entries(model.topics)) {
    for (let p = 0; p < count; p++) add(topic, p);
  }
  for (const row of model.offsets.values()) add(row.topic, row.partition);
  for (const key of model.owners.keys()) {
    const cut = key.lastIndexOf("-");
    add(key.slice(0, cut), Number(key.slice(cut + 1)));
  }
  out.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  return out;
}

/** The owner a tile shows: a current member, or "" when nobody (or nobody known) owns it. */
export function ownerOf(model, key) {
  const owner = model.owners.get(key);
  return owner !== undefined && model.members.has(owner) ? owner : "";
}

/** Lanes in member order, each with its partition keys, and the unowned partitions. */
export function lanesOf(model, partitions = partitionList(model)) {
  const byMember = new Map();
  for (const id of model.members.keys()) byMember.set(id, []);
  const unowned = [];
  for (const { key } of partitions) {
    const owner = ownerOf(model, key);
    (owner ? byMember.get(owner) : unowned).push(key);
  }
  const lanes = [];
  for (const [id, keys] of byMember) lanes.push({ id, member: model.members.get(id), keys });
  return { lanes, unowned };
}
