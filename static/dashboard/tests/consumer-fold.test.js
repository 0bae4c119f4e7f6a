import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { RELEASED_OWNER_LEFT, applyEvent, emptyModel, foldEvents, lanesOf, modelFromSnapshot, ownerOf } from "../fold.js";
import { sortedKeys } from "../fold-parts.js";
import { RELEASED_CONSUMER_REVOKED, TILE_REVOKING, TILE_WAITING } from "../consumer-fold.js";
import { History } from "../timetravel.js";

// A consumer group's events as the real engine emitted them, and after each engine call the
// group as the engine held it (tests/webapp/dashboard/test_consumer_fixture.py records the file
// and checks that it is still what the engine emits).
const FIXTURE = JSON.parse(readFileSync(new URL("./fixtures/consumer.json", import.meta.url), "utf8"));

const pairs = (keys) =>
  sortedKeys(keys).map((key) => {
    const cut = key.lastIndexOf("-");
    return [key.slice(0, cut), Number(key.slice(cut + 1))];
  });

/** The model's members in the fixture's (the API's) shape. */
function membersOf(model) {
  const out = {};
  for (const [id, m] of model.consumer) {
    out[id] = {
      member_epoch: m.memberEpoch,
      member_state: m.state,
      assignment: pairs(m.assigned),
      pending_revocation: pairs(m.pendingRevocation),
      target: pairs(m.target),
    };
  }
  return out;
}

const foldUntil = (seq) => foldEvents({ ...emptyModel("g"), topics: { t: 6 } }, FIXTURE.events.filter((e) => e.seq <= seq));
const eventAt = (seq) => FIXTURE.events.find((e) => e.seq === seq);

/** The snapshot the feed would send of the fixture's view. */
function snapshotOf(view) {
  return {
    type: "snapshot",
    seq: view.seq,
    topics: { t: 6 },
    group: {
      group_id: "g",
      kind: "consumer",
      state: view.state,
      generation_id: view.group_epoch,
      assignment_epoch: view.assignment_epoch,
      protocol_type: "consumer",
      protocol: null,
      leader: null,
      members: Object.entries(view.members).map(([id, m]) => ({ member_id: id, client_id: `client-${id}`, ...m })),
      pending_member_ids: [],
      offsets: [],
      total_lag: 0,
    },
  };
}

describe("a consumer group's events from the real engine", () => {
  test("the recorded events are every consumer event type the engine declares", () => {
    const source = readFileSync(new URL("../../../coordinator_engine/events.py", import.meta.url), "utf8");
    const declared = source.split("CONSUMER_EVENT_TYPES")[1].split("}")[0];
    const types = [...declared.matchAll(/(Consumer\w+),/g)].map((m) => m[1]);
    const recorded = new Set(FIXTURE.events.map((e) => e.type));
    // A static member's leave is folded case by case below; every other type is recorded.
    for (const type of types.filter((t) => t !== "ConsumerStaticMemberLeft")) assert.ok(recorded.has(type), type);
  });

  test("after every engine call the fold holds the engine's state, epochs and members", () => {
    for (const view of FIXTURE.views) {
      const model = foldUntil(view.seq);
      assert.equal(model.kind, "consumer");
      assert.equal(model.state, view.state, `state at ${view.seq}`);
      assert.equal(model.generation, view.group_epoch, `group epoch at ${view.seq}`);
      assert.equal(model.targetEpoch, view.assignment_epoch, `target epoch at ${view.seq}`);
      assert.deepEqual(membersOf(model), view.members, `members at ${view.seq}`);
      assert.deepEqual([...model.members.keys()].sort(), Object.keys(view.members).sort());
      // A lane holds exactly what its member owns: assigned and pending revocation.
      for (const [id, m] of Object.entries(view.members)) {
        const lane = lanesOf(model).lanes.find((l) => l.id === id);
        assert.deepEqual(pairs(lane.keys), pairs([...m.assignment, ...m.pending_revocation].map(([t, p]) => `${t}-${p}`)));
      }
    }
  });

  test("a snapshot of the same moment gives the same model as the fold", () => {
    for (const view of FIXTURE.views) {
      const folded = foldUntil(view.seq);
      const loaded = modelFromSnapshot("g", snapshotOf(view));
      assert.equal(loaded.kind, "consumer");
      assert.equal(loaded.targetEpoch, folded.targetEpoch);
      assert.deepEqual(membersOf(loaded), membersOf(folded), `members at ${view.seq}`);
      assert.deepEqual(new Map([...loaded.owners].sort()), new Map([...folded.owners].sort()), `owners at ${view.seq}`);
      assert.deepEqual(new Map([...loaded.consumerTiles].sort()), new Map([...folded.consumerTiles].sort()), `tiles at ${view.seq}`);
    }
  });

  test("a partition leaves its old owner revoking, waits unowned, then lands on its new owner", () => {
    // b joined: its target is t-3..5, still a's (a has not heard of it yet).
    let model = foldUntil(11);
    assert.equal(model.state, "Reconciling");
    assert.equal(model.consumer.get("b").state, "UNRELEASED_PARTITIONS");
    assert.equal(ownerOf(model, "t-3"), "a");
    assert.equal(model.consumerTiles.get("t-3"), undefined);
    // a's heartbeat: it must revoke them; they stay on its lane, drawn revoking.
    model = foldUntil(13);
    assert.equal(ownerOf(model, "t-3"), "a");
    assert.equal(model.consumerTiles.get("t-3"), TILE_REVOKING);
    assert.equal(model.consumer.get("a").state, "UNREVOKED_PARTITIONS");
    assert.equal(model.consumer.get("a").memberEpoch, 1);
    // a let go: epoch 2; nobody owns them until b's next heartbeat.
    model = foldUntil(14);
    assert.equal(ownerOf(model, "t-3"), "");
    assert.equal(model.released.get("t-3"), RELEASED_CONSUMER_REVOKED);
    assert.equal(model.consumerTiles.get("t-3"), TILE_WAITING);
    assert.deepEqual(lanesOf(model).unowned, ["t-3", "t-4", "t-5"]);
    assert.equal(model.consumer.get("a").memberEpoch, 2);
    // b's heartbeat: they land on b; the group is Stable.
    model = foldUntil(17);
    assert.equal(ownerOf(model, "t-3"), "b");
    assert.equal(model.consumerTiles.size, 0);
    assert.equal(model.released.has("t-3"), false);
    assert.equal(model.state, "Stable");
  });

  test("a member that leaves takes its partitions with it until the others take them", () => {
    const before = foldUntil(32);
    const model = foldUntil(35);
    assert.equal(model.consumer.has("b"), false);
    assert.equal(model.members.has("b"), false);
    assert.equal(model.released.get("t-3"), RELEASED_OWNER_LEFT);
    assert.equal(model.state, "Assigning");
    assert.equal(model.generation, 4);
    assert.equal(model.targetEpoch, 3);
    assert.ok(before.consumer.has("b"), "copy-on-write: the earlier model is untouched");
    const after = foldUntil(38);
    assert.equal(ownerOf(after, "t-3"), "a");
    assert.equal(after.consumerTiles.get("t-4"), TILE_WAITING, "c's, at its next heartbeat");
  });

  test("the epochs panel has a row per bump: its cause, its member, and when it was Stable", () => {
    const model = foldUntil(42);
    const rows = model.epochs.map((r) => [r.epoch, r.cause, r.causeMemberId, r.stableMs]);
    assert.deepEqual(rows, [
      [1, "member_joined", "a", eventAt(6).at_ms],
      [2, "member_joined", "b", eventAt(17).at_ms],
      [3, "member_joined", "c", eventAt(32).at_ms],
      [4, "member_left", "b", eventAt(42).at_ms],
    ]);
    const reconciling = foldUntil(30);
    assert.equal(reconciling.epochs[2].stableMs, null, "epoch 3 is not Stable yet");
    assert.equal(reconciling.epochs[2].assignedMs, eventAt(20).at_ms);
  });

  test("the state machine's last transition carries its cause and member", () => {
    const model = foldUntil(22);
    assert.equal(model.lastTransition.from, "Stable");
    assert.equal(model.lastTransition.to, "Reconciling");
    assert.equal(model.lastTransition.cause, "member_joined");
    assert.equal(model.lastTransition.causeMemberId, "c");
  });
});

describe("consumer folding, case by case", () => {
  const snapshot = (members) => snapshotOf({ seq: 10, state: "Stable", group_epoch: 3, assignment_epoch: 3, members });
  const stable = (epoch, keys) => ({
    member_epoch: epoch,
    member_state: "STABLE",
    assignment: keys.map((p) => ["t", p]),
    pending_revocation: [],
    target: keys.map((p) => ["t", p]),
  });
  const event = (seq, type, fields) => ({ seq, prev_seq: seq - 1, type, group_id: "g", at_ms: seq * 1000, ...fields });

  test("a static member away (epoch -2) keeps its assignment; its replacement takes its place at epoch 0", () => {
    let model = modelFromSnapshot("g", snapshot({ a: stable(3, [0, 1]), b: stable(3, [2]) }));
    model = applyEvent(model, event(11, "ConsumerStaticMemberLeft", { member_id: "a", instance_id: "i" }));
    assert.equal(model.consumer.get("a").memberEpoch, -2);
    assert.equal(ownerOf(model, "t-0"), "a");
    model = applyEvent(model, event(12, "StaticMemberReplaced", { group_instance_id: "i", old_member_id: "a", new_member_id: "a2" }));
    assert.deepEqual([...model.members.keys()], ["a2", "b"]);
    assert.equal(model.consumer.get("a2").memberEpoch, 0);
    assert.deepEqual(sortedKeys(model.consumer.get("a2").assigned), ["t-0", "t-1"]);
    assert.equal(ownerOf(model, "t-0"), "a2");
  });

  test("a deleted consumer group is Dead with no members left", () => {
    let model = modelFromSnapshot("g", snapshot({}));
    model = applyEvent(model, event(11, "StateChanged", { from_state: "Stable", to_state: "Empty", reason: "r", cause: null, cause_member_id: null }));
    model = applyEvent(model, event(12, "StateChanged", { from_state: "Empty", to_state: "Dead", reason: "r", cause: null, cause_member_id: null }));
    model = applyEvent(model, event(13, "GroupRemoved", { reason: "deleted", generation_id: 3, tombstoned: true }));
    assert.equal(model.state, "Dead");
    assert.equal(model.consumer.size, 0);
    assert.equal(model.consumerTiles.size, 0);
  });

  test("an empty classic group taken over by a consumer join starts Empty at epoch 0", () => {
    const classic = { ...emptyModel("g"), topics: { t: 6 } };
    let model = applyEvent(classic, event(1, "StateChanged", { from_state: "Empty", to_state: "Dead", reason: "r" }));
    model = applyEvent(model, event(2, "GroupRemoved", { reason: "converted", generation_id: 4, tombstoned: true }));
    assert.equal(model.state, "Dead");
    const joined = FIXTURE.events.slice(0, 6).map((e, i) => ({ ...e, seq: 3 + i }));
    model = applyEvent(model, joined[0]);
    assert.equal(model.kind, "consumer");
    assert.equal(model.state, "Empty");
    assert.equal(model.generation, 0);
    model = foldEvents(model, joined.slice(1));
    assert.equal(model.state, "Stable");
    assert.equal(model.generation, 1);
    assert.equal(ownerOf(model, "t-5"), "a");
  });

  test("a classic group's StateChanged is not a consumer's", () => {
    const model = applyEvent(emptyModel("g"), event(1, "StateChanged", { from_state: "Empty", to_state: "PreparingRebalance", reason: "r" }));
    assert.equal(model.kind, null);
    assert.deepEqual(model.epochs, []);
  });
});

describe("a consumer group's history", () => {
  test("scrubbed to its first event the group is Empty at epoch 0, as the engine made it", () => {
    const history = new History("g");
    history.fromCreation();
    history.append(FIXTURE.events);
    assert.equal(history.firstCompleteIndex(), 0);
    const first = history.modelAt(0);
    assert.equal(FIXTURE.events[0].type, "ConsumerMemberJoined");
    assert.equal(first.state, "Empty");
    assert.equal(first.generation, 0);
    assert.equal(first.targetEpoch, 0);
    assert.deepEqual([...first.members.keys()], ["a"]);
    for (const view of FIXTURE.views) {
      const model = history.modelAt(history.indexOfSeq(view.seq));
      assert.equal(model.state, view.state, `state at ${view.seq}`);
      assert.deepEqual(membersOf(model), view.members, `members at ${view.seq}`);
    }
  });

  test("time travel back to an earlier epoch shows that epoch's assignment", () => {
    const history = new History("g", { checkpointEvery: 5 });
    history.fromCreation();
    history.append(FIXTURE.events);
    const end = history.modelAt(history.length - 1);
    assert.equal(ownerOf(end, "t-2"), "c");
    const epoch2 = history.modelAt(history.indexOfSeq(17));
    assert.equal(epoch2.generation, 2);
    assert.equal(ownerOf(epoch2, "t-2"), "a");
    assert.equal(ownerOf(epoch2, "t-5"), "b");
    assert.equal(epoch2.members.has("c"), false);
  });

  test("held from later on, the scrubber starts at the first StateChanged, never at an unknown state", () => {
    const history = new History("g");
    history.append(FIXTURE.events.slice(1));
    const start = history.firstCompleteIndex();
    assert.equal(history.events[start].type, "StateChanged");
    assert.equal(history.modelAt(start).state, history.events[start].to_state);
  });
});
