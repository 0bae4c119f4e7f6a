// Builders of engine events (coordinator_engine/events.py) and feed snapshots for the tests.
// Not a test file itself (the runner picks up *.test.js only).

let nextSeq = 1;
export function resetSeq(seq = 1) {
  nextSeq = seq;
}

function event(type, fields) {
  const seq = fields.seq ?? nextSeq;
  nextSeq = seq + 1;
  return { seq, type, group_id: "g", at_ms: 1_000 * seq, ...fields };
}

export const stateChanged = (from_state, to_state, reason = "why", f = {}) =>
  event("StateChanged", { from_state, to_state, reason, cause: null, cause_member_id: null, ...f });

export const generationStarted = (generation_id, member_ids, f = {}) =>
  event("GenerationStarted", {
    generation_id,
    protocol_type: "consumer",
    protocol_name: "range",
    leader_id: member_ids[0] ?? null,
    member_ids,
    join_started_ms: 0,
    ...f,
  });

export const memberJoined = (member_id, f = {}) =>
  event("MemberJoined", {
    member_id,
    group_instance_id: null,
    client_id: member_id,
    client_host: "/127.0.0.1",
    session_timeout_ms: 10_000,
    rebalance_timeout_ms: 20_000,
    protocols: ["range"],
    rejoined: false,
    reason: null,
    ...f,
  });

export const memberRemoved = (member_id, reason = "left", f = {}) =>
  event("MemberRemoved", { member_id, group_instance_id: null, reason, detail: null, ...f });

export const staticReplaced = (group_instance_id, old_member_id, new_member_id, f = {}) =>
  event("StaticMemberReplaced", { group_instance_id, old_member_id, new_member_id, ...f });

export const pendingAdded = (member_id, f = {}) => event("PendingMemberAdded", { member_id, ...f });
export const pendingRemoved = (member_id, reason = "joined", f = {}) =>
  event("PendingMemberRemoved", { member_id, reason, ...f });

/** partitions: {member: [[topic, p], ...]}; assignments mirror its keys. */
export const assignmentStored = (generation_id, partitions, f = {}) =>
  event("AssignmentStored", {
    generation_id,
    assignments: Object.fromEntries(Object.keys(partitions).map((m) => [m, "00"])),
    partitions,
    ...f,
  });

export const offsetsCommitted = (member_id, offsets, f = {}) =>
  event("OffsetsCommitted", { member_id, generation_id: 1, offsets, ...f });

export const offsetsRemoved = (partitions, reason = "deleted", f = {}) =>
  event("OffsetsRemoved", { reason, partitions, ...f });

export const groupRemoved = (f = {}) =>
  event("GroupRemoved", { reason: "deleted", generation_id: 0, tombstoned: true, ...f });

/** A full eager rebalance to `members` with `assignment`, as the engine emits it. */
export function rebalance(fromState, generation, members, assignment) {
  return [
    stateChanged(fromState, "PreparingRebalance", "a member joined"),
    stateChanged("PreparingRebalance", "CompletingRebalance", "every member rejoined"),
    generationStarted(generation, members),
    stateChanged("CompletingRebalance", "Stable", "the leader's assignment was stored"),
    assignmentStored(generation, assignment),
  ];
}

/** A feed snapshot of group "g". */
export function snapshot(seq, { state = "Stable", generation = 1, members = [], topics = { t: 4 }, pending = [], offsets = [] } = {}) {
  return {
    type: "snapshot",
    seq,
    topics,
    group: {
      group_id: "g",
      state,
      generation_id: generation,
      protocol_type: "consumer",
      protocol: "range",
      leader: members[0]?.id ?? null,
      member_count: members.length,
      members: members.map((m) => ({
        member_id: m.id,
        group_instance_id: m.instance ?? null,
        client_id: m.id,
        client_host: "/127.0.0.1",
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 20_000,
        is_leader: m.id === members[0].id,
        subscription: ["t"],
        assignment: m.partitions ?? [],
      })),
      pending_member_ids: pending,
      offsets,
      total_lag: 0,
    },
  };
}

// -- handoff groups: coordinator_engine/events.py's Handoff* events. Partitions are
// [[topic, partition], ...]; handoff-fold.test.js checks these fields against the engine's.

export const handoffMemberJoined = (member_id, f = {}) =>
  event("HandoffMemberJoined", {
    member_id,
    client_id: member_id,
    client_host: "/127.0.0.1",
    session_timeout_ms: 10_000,
    topics: ["t"],
    ...f,
  });

/** assignment: {member: [[topic, p], ...]} for every member of the group. */
export const handoffPlanMade = (epoch, assignment, f = {}) => event("HandoffPlanMade", { epoch, assignment, ...f });

const handoffPartitions = (type) => (member_id, partitions, f = {}) => event(type, { member_id, partitions, ...f });
export const handoffClosing = handoffPartitions("HandoffPartitionsClosing");
export const handoffClosed = handoffPartitions("HandoffPartitionsClosed");
export const handoffGranted = handoffPartitions("HandoffPartitionsGranted");
export const handoffStarted = handoffPartitions("HandoffPartitionsStarted");

/** A feed snapshot of handoff group "g": members [{id, assignment, owned, to_start, to_close}]. */
export function handoffSnapshot(seq, { state = "Stable", epoch = 1, members = [], topics = { t: 4 }, switches } = {}) {
  return {
    type: "snapshot",
    seq,
    topics,
    group: {
      group_id: "g",
      kind: "handoff",
      state,
      generation_id: epoch,
      protocol_type: "handoff",
      protocol: null,
      leader: null,
      member_count: members.length,
      members: members.map((m) => ({
        member_id: m.id,
        group_instance_id: null,
        client_id: m.id,
        client_host: "/127.0.0.1",
        connection: "websocket",
        session_timeout_ms: 10_000,
        is_leader: false,
        subscription: ["t"],
        assignment: m.assignment ?? [],
        owned: m.owned ?? [],
        to_start: m.to_start ?? [],
        to_close: m.to_close ?? [],
      })),
      pending_member_ids: [],
      offsets: [],
      total_lag: 0,
      switches: switches ?? { partition_store: true, discovery: true },
    },
  };
}
