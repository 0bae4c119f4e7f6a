// How a consumer group's events (Kafka 4's consumer protocol, KIP-848; docs/engine.md,
// "Consumer groups") change the page's model: the fold.js model, plus the group's target
// assignment epoch, one row per epoch bump, and for each member what the engine keeps of it.
//
// Pure module, copy-on-write like fold.js (whose applyEvent routes the consumer events here,
// and for a consumer group StateChanged, MemberRemoved, StaticMemberReplaced and GroupRemoved
// too). The engine keeps per member its member epoch, its state (STABLE, UNREVOKED_PARTITIONS,
// UNRELEASED_PARTITIONS), `assigned` (what it may consume), `pendingRevocation` (what it must
// stop consuming before it moves on) and `target` (the target assignment's share of it). The
// events say each change of them except two, which the fold derives as the engine's
// reconciliation does (coordinator_engine/consumer/reconciliation.py): every change of a
// member's state or epoch keeps only the assigned partitions that are still in its target and
// ends any revocation (a new one is the ConsumerPartitionsRevoked that follows it).
//
// The lanes follow ownership as the engine does: a partition is its member's while assigned or
// pending revocation, so a revoked partition stays on its old owner's lane, drawn *revoking*,
// until the owner's heartbeat says it let go; then it is nobody's, *waiting* (in someone's
// target), until its new owner's next heartbeat lands it there. `consumerTiles` says which.

import { memberRecord, partitionKeys as keysOf, replaceLast } from "./fold-parts.js";

export const CONSUMER_KIND = "consumer";
/** The state and epoch the engine creates a consumer group in (it says no StateChanged for it). */
export const CONSUMER_INITIAL = "Empty";

/** Why a partition owned by nobody has no owner: its old owner revoked it. */
export const RELEASED_CONSUMER_REVOKED = "consumer-revoked";
export const TILE_REVOKING = "revoking";
export const TILE_WAITING = "waiting";

/** A member the group has reconciled nothing for yet: epoch 0, Stable, nothing. */
const NEW_MEMBER = Object.freeze({
  memberEpoch: 0,
  previousMemberEpoch: 0,
  state: "STABLE",
  assigned: new Set(),
  pendingRevocation: new Set(),
  target: new Set(),
});
/** No consumer tiles (other kinds', shared so the lanes see it unchanged). */
export const NO_CONSUMER_TILES = new Map();
/** How many epochs the epochs panel keeps. */
export const MAX_EPOCHS = 100;

/** What each partition's tile shows (see the module's comment), and who owns what. */
function ownership(consumer) {
  const owners = new Map();
  const tiles = new Map();
  for (const [id, m] of consumer) {
    for (const key of m.assigned) owners.set(key, id);
    for (const key of m.pendingRevocation) {
      owners.set(key, id);
      tiles.set(key, TILE_REVOKING);
    }
  }
  for (const m of consumer.values()) {
    for (const key of m.target) if (!owners.has(key)) tiles.set(key, TILE_WAITING);
  }
  return { owners, tiles };
}

/** `model` with `consumer` replaced, and what follows from it: owners, released, tiles. A
 *  group whose creation is folded here (the history holds it from its first event, or the
 *  group was removed before, a classic one converted say) starts Empty at epoch 0. */
function withConsumer(model, consumer, more = {}) {
  const created = (model.created && model.state === null) || (!model.exists && model.state === "Dead");
  const born = created ? { state: CONSUMER_INITIAL, generation: 0, targetEpoch: 0, epochs: [] } : {};
  const { owners, tiles } = ownership(consumer);
  const released = new Map();
  for (const [key, why] of model.released) if (!owners.has(key)) released.set(key, why);
  for (const [key, owner] of model.owners) {
    if (owners.has(key)) continue;
    const was = model.consumer.get(owner);
    if (was && was.pendingRevocation.has(key)) released.set(key, RELEASED_CONSUMER_REVOKED);
  }
  return { ...model, ...born, kind: CONSUMER_KIND, protocolType: "consumer", leader: null, ...more, consumer, owners, released, consumerTiles: tiles };
}

function changeMember(model, memberId, change) {
  const consumer = new Map(model.consumer);
  consumer.set(memberId, { ...(model.consumer.get(memberId) ?? NEW_MEMBER), ...change });
  return consumer;
}

/** The consumer part of a snapshot's group (`GET /api/groups/<id>` of a consumer group). */
export function consumerFromSnapshot(model, group) {
  const consumer = new Map();
  for (const m of group.members || []) {
    consumer.set(m.member_id, {
      memberEpoch: m.member_epoch,
      previousMemberEpoch: m.previous_member_epoch ?? null,
      state: m.member_state,
      assigned: new Set(keysOf(m.assignment)),
      pendingRevocation: new Set(keysOf(m.pending_revocation)),
      target: new Set(keysOf(m.target)),
    });
  }
  return withConsumer({ ...model, owners: new Map(), released: new Map() }, consumer, {
    targetEpoch: group.assignment_epoch ?? null,
  });
}

/** The epochs panel's last row if it is the group epoch `epoch`'s, else null. */
function epochEntry(model, epoch) {
  const last = model.epochs[model.epochs.length - 1];
  return last && last.epoch === epoch ? last : null;
}

/** Handlers by event type; those of the shared types get the classic handler to build on. */
export const CONSUMER_HANDLERS = {
  ConsumerMemberJoined(model, e) {
    const old = model.members.get(e.member_id);
    const members = new Map(model.members);
    members.set(
      e.member_id,
      memberRecord(e.member_id, {
        instanceId: e.instance_id,
        clientId: e.client_id,
        clientHost: e.client_host,
        connection: old ? old.connection : null,
        rebalanceTimeoutMs: e.rebalance_timeout_ms,
        subscription: e.subscribed_topic_regex ? [...e.subscribed_topic_names, `/${e.subscribed_topic_regex}/`] : e.subscribed_topic_names,
        joinedMs: e.at_ms,
      }),
    );
    const consumer = new Map(model.consumer);
    consumer.set(e.member_id, NEW_MEMBER);
    return withConsumer(model, consumer, { members });
  },

  ConsumerGroupEpochBumped(model, e) {
    const row = { seq: e.seq, epoch: e.epoch, cause: e.cause, causeMemberId: e.cause_member_id, atMs: e.at_ms, assignedMs: null, stableMs: null };
    const epochs = [...model.epochs, row].slice(-MAX_EPOCHS);
    return withConsumer(model, model.consumer, { generation: e.epoch, epochs });
  },

  ConsumerTargetAssignmentComputed(model, e) {
    // The target names every member, changed or not.
    const consumer = new Map(model.consumer);
    for (const [memberId, pairs] of Object.entries(e.assignment)) {
      consumer.set(memberId, { ...(model.consumer.get(memberId) ?? NEW_MEMBER), target: new Set(keysOf(pairs)) });
    }
    const row = epochEntry(model, e.epoch);
    const epochs = row && row.assignedMs == null ? replaceLast(model.epochs, { ...row, assignedMs: e.at_ms }) : model.epochs;
    return withConsumer(model, consumer, { targetEpoch: e.epoch, protocol: e.assignor, epochs });
  },

  ConsumerMemberStateChanged(model, e) {
    const m = model.consumer.get(e.member_id) ?? NEW_MEMBER;
    // As the engine's reconciliation: what leaves the target leaves the assignment (revoked
    // first, by the ConsumerPartitionsRevoked that follows, or at once if not owned), and a
    // move to another state or epoch ends the revocation it waited for.
    const assigned = new Set([...m.assigned].filter((key) => m.target.has(key)));
    return withConsumer(
      model,
      changeMember(model, e.member_id, {
        state: e.to_state,
        memberEpoch: e.member_epoch,
        previousMemberEpoch: e.previous_member_epoch,
        assigned,
        pendingRevocation: new Set(),
      }),
    );
  },

  ConsumerPartitionsRevoked(model, e) {
    const m = model.consumer.get(e.member_id) ?? NEW_MEMBER;
    const keys = new Set(keysOf(e.partitions));
    return withConsumer(
      model,
      changeMember(model, e.member_id, {
        assigned: new Set([...m.assigned].filter((key) => !keys.has(key))),
        pendingRevocation: new Set([...m.pendingRevocation, ...keys]),
      }),
    );
  },

  ConsumerPartitionsAssigned(model, e) {
    const m = model.consumer.get(e.member_id) ?? NEW_MEMBER;
    return withConsumer(model, changeMember(model, e.member_id, { assigned: new Set([...m.assigned, ...keysOf(e.partitions)]) }));
  },

  // A static member away for a while (epoch -2) keeps its assignment; its revocations end.
  ConsumerStaticMemberLeft(model, e) {
    return withConsumer(model, changeMember(model, e.member_id, { memberEpoch: -2, pendingRevocation: new Set() }));
  },

  StateChanged(model, e, classic) {
    const next = classic(model, e);
    // The group reached Stable at its epoch: every member holds the target of that epoch.
    const row = epochEntry(model, model.generation);
    if (e.to_state !== "Stable" || !row || row.stableMs != null) return next;
    return { ...next, epochs: replaceLast(model.epochs, { ...row, stableMs: e.at_ms }) };
  },

  // A member fenced or gone takes its partitions with it: nobody owns them until the others'
  // next heartbeats.
  MemberRemoved(model, e, classic) {
    const next = classic(model, e);
    if (!model.consumer.has(e.member_id)) return next;
    const consumer = new Map(model.consumer);
    consumer.delete(e.member_id);
    return withConsumer(next, consumer);
  },

  // The new member id takes the old one's place, assignment and target, at epoch 0.
  StaticMemberReplaced(model, e, classic) {
    const next = classic(model, e);
    const old = model.consumer.get(e.old_member_id);
    if (!old) return next;
    const consumer = new Map();
    for (const [id, m] of model.consumer) {
      if (id === e.old_member_id) consumer.set(e.new_member_id, { ...m, memberEpoch: 0, previousMemberEpoch: 0 });
      else if (id !== e.new_member_id) consumer.set(id, m);
    }
    return withConsumer(next, consumer);
  },

  GroupRemoved(model, e, classic) {
    return { ...classic(model, e), consumer: new Map(), consumerTiles: NO_CONSUMER_TILES, targetEpoch: null };
  },
};

/** The handler for `event` in a model of kind `kind`, or undefined. */
export function consumerHandler(kind, type) {
  if (!Object.hasOwn(CONSUMER_HANDLERS, type)) return undefined;
  return kind === CONSUMER_KIND || type.startsWith("Consumer") ? CONSUMER_HANDLERS[type] : undefined;
}
