// How a handoff group's events (docs/engine.md, "Handoff groups") change the page's
// model: the fold.js model, plus for each member the engine's four sets.
//
// Pure module, copy-on-write like fold.js (whose applyEvent routes the handoff events here,
// and for a handoff group MemberRemoved and GroupRemoved too). The engine keeps per member
// `assignment` (the plan's target), `owned` (what it may be consuming; a partition is in at
// most one member's owned), `toClose` ⊆ owned (asked to close, not confirmed) and `toStart`
// (to start, not confirmed; granted once it is also in owned). The events say each change of
// them except one: a plan's new `toStart`, which the fold derives as the engine does
// (assignment − what the member already consumes for good). The lanes follow `owned`:
// `owners` maps each owned partition to its owner, so a partition asked to close stays on its
// old owner's lane until it is closed, and reaches its new owner's lane when granted.
//
// `handoffTiles` says, per partition key, what a tile shows besides its place: "closing" (on
// its owner's lane, asked to close), "starting" (granted, its start not confirmed yet) or
// "waiting" (closed by its old owner, not granted yet: nobody owns it); absent: consumed.

import { memberRecord, partitionKeys as keysOf } from "./fold-parts.js";

/** The state and epoch the engine creates a handoff group in (it says no StateChanged for it). */
export const HANDOFF_INITIAL = "Initial";

/** Why a partition owned by nobody has no owner: it is between its old and new owner. */
export const RELEASED_HANDOFF = "handoff";
export const TILE_CLOSING = "closing";
export const TILE_STARTING = "starting";
export const TILE_WAITING = "waiting";

/** The sets of a member the group has planned nothing for yet. */
const NO_SETS = Object.freeze({
  assignment: new Set(),
  owned: new Set(),
  toStart: new Set(),
  toClose: new Set(),
});
/** No handoff tiles (a classic group's, shared so the lanes see it unchanged). */
export const NO_TILES = new Map();

const union = (a, keys) => new Set([...a, ...keys]);
const minus = (a, keys) => {
  const drop = new Set(keys);
  return new Set([...a].filter((k) => !drop.has(k)));
};

/** What each partition's tile shows in a handoff (see the module's comment). */
export function handoffTiles(handoff) {
  const tiles = new Map();
  for (const sets of handoff.values()) {
    for (const key of sets.toStart) {
      if (sets.owned.has(key)) tiles.set(key, TILE_STARTING);
      else if (!tiles.has(key)) tiles.set(key, TILE_WAITING);
    }
  }
  for (const sets of handoff.values()) for (const key of sets.toClose) tiles.set(key, TILE_CLOSING);
  return tiles;
}

/** `model` with `handoff` replaced, and what follows from it. */
function withHandoff(model, handoff, more = {}) {
  const born = model.created && model.state === null ? { state: HANDOFF_INITIAL, generation: 0 } : {};
  return { ...model, ...born, kind: "handoff", ...more, handoff, handoffTiles: handoffTiles(handoff) };
}

function changeSets(model, memberId, change) {
  const handoff = new Map(model.handoff);
  handoff.set(memberId, { ...(model.handoff.get(memberId) ?? NO_SETS), ...change });
  return handoff;
}

/** The handoff part of a snapshot's group (`GET /api/groups/<id>` of a handoff group). */
export function handoffFromSnapshot(model, group) {
  const owners = new Map();
  const handoff = new Map();
  for (const m of group.members || []) {
    const sets = {
      assignment: new Set(keysOf(m.assignment)),
      owned: new Set(keysOf(m.owned)),
      toStart: new Set(keysOf(m.to_start)),
      toClose: new Set(keysOf(m.to_close)),
    };
    handoff.set(m.member_id, sets);
    for (const key of sets.owned) owners.set(key, m.member_id);
  }
  const released = new Map();
  for (const sets of handoff.values()) {
    for (const key of sets.toStart) if (!owners.has(key)) released.set(key, RELEASED_HANDOFF);
  }
  return withHandoff(model, handoff, {
    owners,
    released,
    leader: null,
    switches: group.switches ? { ...group.switches } : null,
  });
}

/** Handlers by event type; those of the shared types get the classic handler to build on. */
export const HANDOFF_HANDLERS = {
  HandoffMemberJoined(model, e) {
    const old = model.members.get(e.member_id);
    const members = new Map(model.members);
    members.set(
      e.member_id,
      memberRecord(e.member_id, {
        clientId: e.client_id,
        clientHost: e.client_host,
        connection: old ? old.connection : null,
        sessionTimeoutMs: e.session_timeout_ms,
        subscription: e.topics,
        joinedMs: e.at_ms,
      }),
    );
    const handoff = new Map(model.handoff);
    handoff.set(e.member_id, NO_SETS);
    return withHandoff(model, handoff, { members });
  },

  HandoffPlanMade(model, e) {
    const handoff = new Map(model.handoff);
    for (const [memberId, pairs] of Object.entries(e.assignment)) {
      const sets = model.handoff.get(memberId) ?? NO_SETS;
      const assignment = new Set(keysOf(pairs));
      // As the engine: everything of the target it does not already consume for good. (Its
      // partitions asked to close by this plan are outside the target, so the plan's
      // HandoffPartitionsClosing, which follows, does not change this.)
      const confirmed = [...sets.owned].filter((k) => !sets.toStart.has(k) && !sets.toClose.has(k));
      handoff.set(memberId, { ...sets, assignment, toStart: minus(assignment, confirmed) });
    }
    return withHandoff(model, handoff, { generation: e.epoch });
  },

  HandoffPartitionsClosing(model, e) {
    const sets = model.handoff.get(e.member_id) ?? NO_SETS;
    return withHandoff(model, changeSets(model, e.member_id, { toClose: union(sets.toClose, keysOf(e.partitions)) }));
  },

  HandoffPartitionsClosed(model, e) {
    const keys = keysOf(e.partitions);
    const sets = model.handoff.get(e.member_id) ?? NO_SETS;
    const handoff = changeSets(model, e.member_id, { toClose: minus(sets.toClose, keys), owned: minus(sets.owned, keys) });
    const owners = new Map(model.owners);
    const released = new Map(model.released);
    for (const key of keys) {
      if (owners.get(key) === e.member_id) owners.delete(key);
      released.set(key, RELEASED_HANDOFF);
    }
    return withHandoff(model, handoff, { owners, released });
  },

  HandoffPartitionsGranted(model, e) {
    const keys = keysOf(e.partitions);
    const sets = model.handoff.get(e.member_id) ?? NO_SETS;
    const handoff = changeSets(model, e.member_id, { owned: union(sets.owned, keys) });
    const owners = new Map(model.owners);
    const released = new Map(model.released);
    for (const key of keys) {
      owners.set(key, e.member_id);
      released.delete(key);
    }
    return withHandoff(model, handoff, { owners, released });
  },

  HandoffPartitionsStarted(model, e) {
    const sets = model.handoff.get(e.member_id) ?? NO_SETS;
    return withHandoff(model, changeSets(model, e.member_id, { toStart: minus(sets.toStart, keysOf(e.partitions)) }));
  },

  // A member that leaves or expires takes its owned partitions with it: they count as closed.
  MemberRemoved(model, e, classic) {
    const next = classic(model, e);
    if (!model.handoff.has(e.member_id)) return next;
    const handoff = new Map(model.handoff);
    handoff.delete(e.member_id);
    return withHandoff(next, handoff, { leader: null });
  },

  GroupRemoved(model, e, classic) {
    return { ...classic(model, e), handoff: new Map(), handoffTiles: NO_TILES };
  },
};

/** The handler for `event` in a model of kind `kind`, or undefined: the classic one applies. */
export function handoffHandler(kind, type) {
  if (!Object.hasOwn(HANDOFF_HANDLERS, type)) return undefined;
  return kind === "handoff" || type.startsWith("Handoff") ? HANDOFF_HANDLERS[type] : undefined;
}
