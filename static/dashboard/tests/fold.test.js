import assert from "node:assert/strict";
import { beforeEach, describe, test } from "node:test";

import {
  RELEASED_OWNER_LEFT,
  RELEASED_REVOKED,
  applyEvent,
  applyOffsets,
  emptyModel,
  foldEvents,
  lanesOf,
  modelFromSnapshot,
  ownerOf,
  partitionList,
} from "../fold.js";
import * as ev from "./events.js";

beforeEach(() => ev.resetSeq(1));

const T = (p) => ["t", p];
/** A group over topic "t" with 4 partitions, before any event. */
const base = () => ({ ...emptyModel("g"), topics: { t: 4 } });

describe("snapshot", () => {
  test("members, owners, pending and offsets come from the group", () => {
    const model = modelFromSnapshot(
      "g",
      ev.snapshot(9, {
        members: [
          { id: "a", partitions: [T(0), T(1)] },
          { id: "b", instance: "inst-b", partitions: [T(2)] },
        ],
        pending: ["p1"],
        offsets: [{ topic: "t", partition: 0, offset: 5, log_end_offset: 12, lag: 7 }],
      }),
    );
    assert.equal(model.seq, 9);
    assert.equal(model.state, "Stable");
    assert.equal(model.leader, "a");
    assert.deepEqual([...model.members.keys()], ["a", "b"]);
    assert.equal(model.members.get("b").instanceId, "inst-b");
    assert.equal(ownerOf(model, "t-2"), "b");
    assert.equal(ownerOf(model, "t-3"), "");
    assert.deepEqual([...model.pending], ["p1"]);
    assert.equal(model.offsets.get("t-0").lag, 7);
  });

  test("a null group is a model of nothing, with the snapshot's seq", () => {
    const model = modelFromSnapshot("g", { type: "snapshot", seq: 4, group: null, topics: {} });
    assert.equal(model.exists, false);
    assert.equal(model.state, null);
    assert.equal(model.seq, 4);
  });
});

describe("events", () => {
  test("a first rebalance builds lanes, leader, generation and owners", () => {
    const events = [
      ev.memberJoined("a"),
      ...ev.rebalance("Empty", 1, ["a", "b"], { a: [T(0), T(1)], b: [T(2), T(3)] }),
    ];
    const model = foldEvents(emptyModel("g"), events);
    assert.equal(model.state, "Stable");
    assert.equal(model.generation, 1);
    assert.equal(model.leader, "a");
    assert.equal(model.seq, events.at(-1).seq);
    assert.deepEqual([...model.members.keys()], ["a", "b"]);
    assert.equal(ownerOf(model, "t-3"), "b");
    assert.equal(model.lastTransition.to, "Stable");
  });

  test("GenerationStarted makes the member set exactly member_ids", () => {
    let model = foldEvents(emptyModel("g"), [
      ...ev.rebalance("Empty", 1, ["a", "b", "c"], { a: [T(0)], b: [T(1)], c: [T(2)] }),
    ]);
    model = applyEvent(model, ev.generationStarted(2, ["c", "a", "d"]));
    // Known members keep their lane order; new ones come after.
    assert.deepEqual([...model.members.keys()], ["a", "c", "d"]);
    assert.equal(ownerOf(model, "t-1"), "", "b's partition has no owner any more");
    assert.equal(model.released.get("t-1"), RELEASED_OWNER_LEFT);
    assert.equal(ownerOf(model, "t-0"), "a", "a keeps its partition until the new assignment");
  });

  test("a removed member's lane goes; its partitions become unowned; leadership passes on", () => {
    let model = foldEvents(base(), ev.rebalance("Empty", 1, ["a", "b"], { a: [T(0)], b: [T(1)] }));
    model = applyEvent(model, ev.memberRemoved("a", "session_timeout"));
    assert.deepEqual([...model.members.keys()], ["b"]);
    assert.equal(ownerOf(model, "t-0"), "");
    assert.equal(model.leader, "b");
    const { lanes, unowned } = lanesOf(model);
    assert.deepEqual(lanes.map((l) => [l.id, l.keys]), [["b", ["t-1"]]]);
    assert.deepEqual(unowned, ["t-0", "t-2", "t-3"]);
  });

  test("a cooperative first round: a revoked partition has no owner until the second round", () => {
    let model = foldEvents(
      base(),
      ev.rebalance("Empty", 1, ["a"], { a: [T(0), T(1), T(2), T(3)] }),
    );
    model = applyEvent(model, ev.memberJoined("b"));
    // Round one: a gives up t-2 and t-3 (revoked), b gets nothing yet.
    model = foldEvents(model, ev.rebalance("Stable", 2, ["a", "b"], { a: [T(0), T(1)], b: [] }));
    assert.equal(ownerOf(model, "t-2"), "");
    assert.equal(ownerOf(model, "t-3"), "");
    assert.equal(model.released.get("t-2"), RELEASED_REVOKED);
    assert.deepEqual(lanesOf(model).unowned, ["t-2", "t-3"]);
    assert.deepEqual(lanesOf(model).lanes.find((l) => l.id === "b").keys, []);
    // Round two: b gets them.
    model = foldEvents(model, ev.rebalance("Stable", 3, ["a", "b"], { a: [T(0), T(1)], b: [T(2), T(3)] }));
    assert.equal(ownerOf(model, "t-2"), "b");
    assert.equal(model.released.size, 0);
    assert.deepEqual(lanesOf(model).unowned, []);
  });

  test("StaticMemberReplaced moves the lane, in place, with its partitions and leadership", () => {
    let model = foldEvents(
      emptyModel("g"),
      ev.rebalance("Empty", 1, ["s-old", "b"], { "s-old": [T(0), T(1)], b: [T(2), T(3)] }),
    );
    model = applyEvent(model, ev.staticReplaced("inst-1", "s-old", "s-new"));
    assert.deepEqual([...model.members.keys()], ["s-new", "b"]);
    assert.equal(model.members.get("s-new").instanceId, "inst-1");
    assert.equal(ownerOf(model, "t-0"), "s-new");
    assert.equal(ownerOf(model, "t-1"), "s-new");
    assert.equal(model.leader, "s-new");
    // The engine follows with MemberRemoved(old, fenced) and MemberJoined(new): nothing moves.
    model = applyEvent(model, ev.memberRemoved("s-old", "fenced"));
    model = applyEvent(model, ev.memberJoined("s-new", { group_instance_id: "inst-1" }));
    assert.deepEqual([...model.members.keys()], ["s-new", "b"]);
    assert.equal(ownerOf(model, "t-1"), "s-new");
    assert.equal(model.state, "Stable");
  });

  test("pending members are kept apart and leave the list when they join", () => {
    let model = applyEvent(emptyModel("g"), ev.pendingAdded("p"));
    assert.deepEqual([...model.pending], ["p"]);
    assert.equal(model.members.size, 0);
    model = applyEvent(model, ev.pendingRemoved("p", "joined"));
    model = applyEvent(model, ev.memberJoined("p"));
    assert.equal(model.pending.size, 0);
    assert.ok(model.members.has("p"));
  });

  test("the timeline: join and sync phases, an aborted sync, the cause of the rebalance", () => {
    let model = emptyModel("g");
    model = applyEvent(model, ev.stateChanged("Empty", "PreparingRebalance", "a member joined the empty group", { at_ms: 100 }));
    model = applyEvent(model, ev.stateChanged("PreparingRebalance", "CompletingRebalance", "all in", { at_ms: 3100 }));
    model = applyEvent(model, ev.generationStarted(1, ["a"], { at_ms: 3100, join_started_ms: 100 }));
    model = applyEvent(model, ev.stateChanged("CompletingRebalance", "PreparingRebalance", "b joined", { at_ms: 3150 }));
    model = applyEvent(model, ev.stateChanged("PreparingRebalance", "CompletingRebalance", "all in", { at_ms: 3400 }));
    model = applyEvent(model, ev.generationStarted(2, ["a", "b"], { at_ms: 3400, join_started_ms: 3150 }));
    model = applyEvent(model, ev.stateChanged("CompletingRebalance", "Stable", "stored", { at_ms: 3420 }));
    const [g1, g2] = model.generations;
    assert.deepEqual(
      [g1.generation, g1.joinStartedMs, g1.completingMs, g1.stableMs, g1.syncAborted, g1.reason],
      [1, 100, 3100, null, true, "a member joined the empty group"],
    );
    assert.deepEqual([g2.generation, g2.joinStartedMs, g2.completingMs, g2.stableMs, g2.reason], [2, 3150, 3400, 3420, "b joined"]);
    assert.equal(model.rebalance, null);
  });

  test("offsets: commits update the rows, removals drop them, the feed's log ends move the lag", () => {
    let model = modelFromSnapshot(
      "g",
      ev.snapshot(0, {
        offsets: [
          { topic: "t", partition: 0, offset: 5, log_end_offset: 12 },
          { topic: "t", partition: 2, offset: 1, log_end_offset: 4 },
        ],
      }),
    );
    assert.equal(model.totalLag, 7 + 3);
    model = applyEvent(model, ev.offsetsCommitted("a", [["t", 0, 10], ["t", 1, 3]]));
    assert.deepEqual(model.offsets.get("t-0"), { topic: "t", partition: 0, offset: 10, logEnd: 12, lag: 2 });
    assert.equal(model.offsets.get("t-1").lag, null, "no log-end offset known yet");
    assert.equal(model.totalLag, 2 + 3);
    model = applyEvent(model, ev.offsetsRemoved([["t", 0]]));
    assert.deepEqual([...model.offsets.keys()].sort(), ["t-1", "t-2"]);
    assert.equal(model.totalLag, 3);
    model = applyOffsets(model, { type: "offsets", log_end_offsets: { t: [20, 9, 4, 0, 0, 0], gone: [1] } });
    assert.deepEqual(model.offsets.get("t-1"), { topic: "t", partition: 1, offset: 3, logEnd: 9, lag: 6 });
    assert.ok(!model.offsets.has("t-0"), "a log end does not make a committed offset");
    assert.equal(model.totalLag, 6 + 3);
    assert.equal(partitionList(model).length, 6 + 1, "t has 6 partitions now, and gone one");
    model = applyEvent(model, ev.offsetsCommitted("a", [["t", 1, 9]]));
    assert.equal(model.offsets.get("t-1").lag, 0, "a commit keeps the log end it knew");
    assert.equal(model.totalLag, 3);
  });

  test("the total lag is always the sum of the rows' lags, commits and log ends interleaved", () => {
    let model = modelFromSnapshot("g", ev.snapshot(0, {}));
    for (let round = 1; round <= 20; round++) {
      const ends = [0, 1, 2, 3].map((p) => round * 10 + p * 7);
      model = applyOffsets(model, { type: "offsets", log_end_offsets: { t: ends } });
      model = applyEvent(model, ev.offsetsCommitted("a", [["t", round % 4, round * 9], ["t", (round + 1) % 4, round * 3]]));
      if (round % 7 === 0) model = applyEvent(model, ev.offsetsRemoved([["t", round % 4]]));
      let sum = 0;
      for (const row of model.offsets.values()) sum += row.lag ?? 0;
      assert.equal(model.totalLag, sum, `round ${round}`);
    }
  });

  test("GroupRemoved: the group is Dead with no lanes", () => {
    let model = foldEvents(emptyModel("g"), ev.rebalance("Empty", 1, ["a"], { a: [T(0)] }));
    model = applyEvent(model, ev.groupRemoved({ generation_id: 1 }));
    assert.equal(model.state, "Dead");
    assert.equal(model.exists, false);
    assert.equal(model.members.size, 0);
    assert.equal(ownerOf(model, "t-0"), "");
  });

  test("copy-on-write: an event never changes the model it was applied to", () => {
    const before = foldEvents(emptyModel("g"), ev.rebalance("Empty", 1, ["a", "b"], { a: [T(0)], b: [T(1)] }));
    const members = before.members;
    const owners = before.owners;
    const after = applyEvent(before, ev.memberRemoved("b"));
    assert.equal(before.members.size, 2);
    assert.equal(before.owners.get("t-1"), "b");
    assert.notEqual(after.members, members);
    assert.notEqual(after.owners, owners);
    // An event that changes no collection keeps them, so renderers can skip them.
    const same = applyEvent(after, ev.stateChanged("Stable", "PreparingRebalance"));
    assert.equal(same.members, after.members);
    assert.equal(same.owners, after.owners);
  });

  test("a rejoin that changes nothing keeps the member map; unchanged topic counts keep theirs", () => {
    let model = foldEvents(base(), [ev.memberJoined("a"), ...ev.rebalance("Empty", 1, ["a"], { a: [T(0)] })]);
    const rejoined = applyEvent(model, ev.memberJoined("a", { rejoined: true }));
    assert.equal(rejoined.members, model.members);
    const moved = applyEvent(model, ev.memberJoined("a", { session_timeout_ms: 45_000 }));
    assert.notEqual(moved.members, model.members);
    assert.equal(moved.members.get("a").sessionTimeoutMs, 45_000);

    const ends = (n) => ({ log_end_offsets: { t: new Array(n).fill(0) } });
    model = applyOffsets(model, ends(4));
    const { topics, offsets } = model;
    const again = applyOffsets(model, ends(4));
    assert.equal(again.topics, topics);
    assert.equal(again.offsets, offsets);
    assert.deepEqual(applyOffsets(model, ends(6)).topics, { ...topics, t: 6 });
  });
});

describe("derived views", () => {
  test("partitionList covers every partition of every topic, plus committed or owned ones", () => {
    let model = modelFromSnapshot("g", ev.snapshot(0, { topics: { b: 2, a: 1 } }));
    model = applyEvent(model, ev.offsetsCommitted("m", [["zz-top", 3, 1]]));
    assert.deepEqual(
      partitionList(model).map((p) => p.key),
      ["a-0", "b-0", "b-1", "zz-top-3"],
    );
  });

  test("a topic whose name contains '-' keeps its partitions apart from another's", () => {
    const model = modelFromSnapshot(
      "g",
      ev.snapshot(0, { topics: {}, members: [{ id: "a", partitions: [["x-1", 2], ["x", 12]] }] }),
    );
    assert.deepEqual(
      partitionList(model).map((p) => [p.topic, p.partition]),
      [["x", 12], ["x-1", 2]],
    );
  });
});
