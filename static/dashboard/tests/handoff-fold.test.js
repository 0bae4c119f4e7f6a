import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { beforeEach, describe, test } from "node:test";

import { RELEASED_OWNER_LEFT, applyEvent, applyOffsets, emptyModel, foldEvents, lanesOf, modelFromSnapshot, ownerOf } from "../fold.js";
import { sortedKeys } from "../fold-parts.js";
import { RELEASED_HANDOFF, TILE_CLOSING, TILE_STARTING, TILE_WAITING } from "../handoff-fold.js";
import { History } from "../timetravel.js";
import * as ev from "./events.js";

beforeEach(() => ev.resetSeq(1));

// A handoff group's events as the real engine emitted them, and after each engine call the
// group as the engine held it (tests/webapp/dashboard/test_handoff_fixture.py records the file
// and checks that it is still what the engine emits).
const FIXTURE = JSON.parse(readFileSync(new URL("./fixtures/handoff.json", import.meta.url), "utf8"));
const T = (p) => ["t", p];

const pairs = (keys) =>
  sortedKeys(keys).map((key) => {
    const cut = key.lastIndexOf("-");
    return [key.slice(0, cut), Number(key.slice(cut + 1))];
  });

/** The model's handoff sets in the fixture's (the API's) shape. */
function setsOf(model) {
  const out = {};
  for (const [id, s] of model.handoff) {
    out[id] = { assignment: pairs(s.assignment), owned: pairs(s.owned), to_start: pairs(s.toStart), to_close: pairs(s.toClose) };
  }
  return out;
}

const foldUntil = (seq) => foldEvents({ ...emptyModel("g"), topics: { t: 6 } }, FIXTURE.events.filter((e) => e.seq <= seq));

/** The snapshot the feed would send of the fixture's view. */
function snapshotOf(view) {
  return {
    type: "snapshot",
    seq: view.seq,
    topics: { t: 6 },
    group: {
      group_id: "g",
      kind: "handoff",
      state: view.state,
      generation_id: view.epoch,
      protocol_type: "handoff",
      protocol: null,
      leader: null,
      members: Object.entries(view.members).map(([id, sets]) => ({ member_id: id, client_id: `client-${id}`, ...sets })),
      pending_member_ids: [],
      offsets: [],
      total_lag: 0,
      switches: { partition_store: true, discovery: true },
    },
  };
}

describe("a handoff group's events from the real engine", () => {
  test("the builders make the engine's fields, as the recorded events have them", () => {
    const source = readFileSync(new URL("../../../coordinator_engine/events.py", import.meta.url), "utf8");
    const built = {
      HandoffMemberJoined: ev.handoffMemberJoined("a"),
      HandoffPlanMade: ev.handoffPlanMade(1, { a: [T(0)] }),
      HandoffPartitionsClosing: ev.handoffClosing("a", [T(0)]),
      HandoffPartitionsClosed: ev.handoffClosed("a", [T(0)]),
      HandoffPartitionsGranted: ev.handoffGranted("a", [T(0)]),
      HandoffPartitionsStarted: ev.handoffStarted("a", [T(0)]),
    };
    for (const [type, event] of Object.entries(built)) {
      const body = source.split(`class ${type}(GroupEvent):`)[1].split("\n\n\n")[0];
      const fields = [...body.matchAll(/^ {4}(\w+): (?!ClassVar)/gm)].map((m) => m[1]);
      const expected = ["at_ms", "group_id", "seq", "type", ...fields].sort();
      assert.deepEqual(Object.keys(event).sort(), expected, type);
      const recorded = FIXTURE.events.find((e) => e.type === type);
      assert.ok(recorded, `the fixture has a ${type}`);
      assert.deepEqual(Object.keys(recorded).sort(), [...expected, "prev_seq"].sort(), type);
    }
  });

  test("after every engine call the fold holds the engine's state, epoch and four sets", () => {
    for (const view of FIXTURE.views) {
      const model = foldUntil(view.seq);
      assert.equal(model.kind, "handoff");
      assert.equal(model.state, view.state, `state at ${view.seq}`);
      assert.equal(model.generation, view.epoch, `epoch at ${view.seq}`);
      assert.deepEqual(setsOf(model), view.members, `sets at ${view.seq}`);
      assert.deepEqual([...model.members.keys()].sort(), Object.keys(view.members).sort());
      // A lane holds exactly its member's owned partitions.
      for (const [id, sets] of Object.entries(view.members)) {
        const lane = lanesOf(model).lanes.find((l) => l.id === id);
        assert.deepEqual(pairs(lane.keys), sets.owned, `${id}'s lane at ${view.seq}`);
      }
    }
  });

  test("a snapshot of the same moment gives the same model as the fold", () => {
    for (const view of FIXTURE.views) {
      const folded = foldUntil(view.seq);
      const loaded = modelFromSnapshot("g", snapshotOf(view));
      assert.equal(loaded.kind, "handoff");
      assert.deepEqual(setsOf(loaded), setsOf(folded), `sets at ${view.seq}`);
      assert.deepEqual(new Map([...loaded.owners].sort()), new Map([...folded.owners].sort()), `owners at ${view.seq}`);
      assert.deepEqual(new Map([...loaded.handoffTiles].sort()), new Map([...folded.handoffTiles].sort()), `tiles at ${view.seq}`);
      assert.deepEqual(loaded.switches, { partition_store: true, discovery: true });
    }
  });

  test("a moved partition closes on its old owner's lane, waits, starts on the new one's, then is consumed", () => {
    // c joined: a must close t-2 and b t-5; both are still on their old owners' lanes.
    let model = foldUntil(20);
    assert.equal(model.state, "Closing");
    assert.equal(ownerOf(model, "t-2"), "a");
    assert.equal(model.handoffTiles.get("t-2"), TILE_CLOSING);
    assert.equal(ownerOf(model, "t-5"), "b");
    assert.equal(model.handoffTiles.get("t-5"), TILE_CLOSING);
    assert.equal(model.handoffTiles.get("t-0"), undefined, "a keeps consuming t-0");
    // a closed t-2, but c may not start it before b closed t-5: nobody owns it meanwhile.
    model = foldUntil(21);
    assert.equal(ownerOf(model, "t-2"), "");
    assert.equal(model.released.get("t-2"), RELEASED_HANDOFF);
    assert.equal(model.handoffTiles.get("t-2"), TILE_WAITING);
    assert.deepEqual(lanesOf(model).unowned, ["t-2"]);
    // b closed t-5: both are granted to c, which has yet to start them.
    model = foldUntil(24);
    assert.equal(model.state, "Starting");
    assert.equal(ownerOf(model, "t-2"), "c");
    assert.equal(model.handoffTiles.get("t-2"), TILE_STARTING);
    assert.equal(model.released.has("t-2"), false);
    model = foldUntil(26);
    assert.equal(model.state, "Stable");
    assert.equal(model.handoffTiles.size, 0);
    assert.deepEqual(lanesOf(model).lanes.find((l) => l.id === "c").keys, ["t-2", "t-5"]);
  });

  test("a member that leaves takes its sets with it; its partitions are granted without a close", () => {
    const before = foldUntil(26);
    const model = foldUntil(27);
    assert.equal(model.handoff.has("b"), false);
    assert.equal(model.members.has("b"), false);
    assert.equal(model.released.get("t-3"), RELEASED_OWNER_LEFT);
    assert.ok(before.handoff.has("b"), "copy-on-write: the earlier model is untouched");
    const granted = foldUntil(31);
    assert.equal(ownerOf(granted, "t-3"), "a");
    assert.equal(granted.handoffTiles.get("t-3"), TILE_STARTING);
    assert.equal(granted.handoffTiles.get("t-4"), TILE_STARTING);
  });

  test("time travel shows the handoff as it was at any event", () => {
    const history = new History("g", { checkpointEvery: 5 });
    history.append(FIXTURE.events);
    const closing = history.modelAt(history.indexOfSeq(20));
    assert.equal(closing.state, "Closing");
    assert.equal(closing.handoffTiles.get("t-2"), TILE_CLOSING);
    assert.equal(ownerOf(closing, "t-2"), "a");
    const end = history.modelAt(history.length - 1);
    assert.equal(end.state, "Stable");
    assert.equal(ownerOf(end, "t-2"), "c");
  });
});

describe("handoff folding, case by case", () => {
  test("a plan that gives back a partition being closed keeps it closing first", () => {
    let model = modelFromSnapshot(
      "g",
      ev.handoffSnapshot(10, {
        state: "Closing",
        epoch: 2,
        members: [
          { id: "a", assignment: [T(0)], owned: [T(0), T(1)], to_close: [T(1)] },
          { id: "b", assignment: [T(1)], to_start: [T(1)] },
        ],
      }),
    );
    ev.resetSeq(11);
    model = foldEvents(model, [ev.memberRemoved("b"), ev.handoffPlanMade(3, { a: [T(0), T(1)] })]);
    const a = model.handoff.get("a");
    // The engine: to_start = assignment − (owned − to_start − to_close) = {t-1}.
    assert.deepEqual(sortedKeys(a.toStart), ["t-1"]);
    assert.deepEqual(sortedKeys(a.toClose), ["t-1"]);
    assert.equal(model.handoffTiles.get("t-1"), TILE_CLOSING, "closing wins until confirmed");
    model = foldEvents(model, [ev.handoffClosed("a", [T(1)]), ev.handoffGranted("a", [T(1)])]);
    assert.equal(ownerOf(model, "t-1"), "a");
    assert.equal(model.handoffTiles.get("t-1"), TILE_STARTING);
  });

  test("a member that restarts (removed, then joined again) comes back with nothing", () => {
    let model = modelFromSnapshot("g", ev.handoffSnapshot(3, { members: [{ id: "a", assignment: [T(0)], owned: [T(0)] }] }));
    ev.resetSeq(4);
    model = foldEvents(model, [ev.memberRemoved("a", "left", { detail: "rejoined with epoch 0" }), ev.handoffMemberJoined("a")]);
    assert.deepEqual(setsOf(model), { a: { assignment: [], owned: [], to_start: [], to_close: [] } });
    assert.equal(ownerOf(model, "t-0"), "");
    assert.equal(model.members.get("a").clientId, "a");
  });

  test("a deleted handoff group is Dead with no sets left", () => {
    let model = modelFromSnapshot("g", ev.handoffSnapshot(3, { members: [] }));
    ev.resetSeq(4);
    model = foldEvents(model, [ev.stateChanged("Stable", "Dead"), ev.groupRemoved()]);
    assert.equal(model.state, "Dead");
    assert.equal(model.handoff.size, 0);
    assert.equal(model.handoffTiles.size, 0);
  });

  test("a classic group's MemberRemoved is not a handoff's", () => {
    const classic = modelFromSnapshot("g", ev.snapshot(2, { members: [{ id: "a", partitions: [T(0)] }] }));
    assert.equal(classic.kind, "classic");
    ev.resetSeq(3);
    const model = applyEvent(classic, ev.memberRemoved("a"));
    assert.equal(model.kind, "classic");
    assert.equal(model.handoffTiles, classic.handoffTiles);
  });

  test("the switches come with the snapshot and then with the offsets tick", () => {
    const model = modelFromSnapshot("g", ev.handoffSnapshot(1, { switches: { partition_store: false, discovery: true } }));
    assert.deepEqual(model.switches, { partition_store: false, discovery: true });
    const same = applyOffsets(model, { type: "offsets", log_end_offsets: {}, switches: { partition_store: false, discovery: true } });
    assert.equal(same.switches, model.switches, "unchanged switches keep their object");
    const back = applyOffsets(model, { type: "offsets", log_end_offsets: {}, switches: { partition_store: true, discovery: true } });
    assert.deepEqual(back.switches, { partition_store: true, discovery: true });
    assert.deepEqual(model.switches, { partition_store: false, discovery: true });
  });
});

describe("a handoff group's history from its creation", () => {
  test("scrubbed to its first event the group is in Initial at epoch 0, as the engine made it", () => {
    const history = new History("g");
    history.fromCreation();
    history.append(FIXTURE.events);
    assert.equal(history.firstCompleteIndex(), 0);
    const first = history.modelAt(0);
    assert.equal(FIXTURE.events[0].type, "HandoffMemberJoined");
    assert.equal(first.state, "Initial");
    assert.equal(first.generation, 0);
    // The engine's own views after each call still agree (the first StateChanged leaves Initial).
    for (const view of FIXTURE.views) {
      assert.equal(history.modelAt(history.indexOfSeq(view.seq)).state, view.state, `state at ${view.seq}`);
    }
  });

  test("held from later on, the scrubber starts at the first StateChanged, never at an unknown state", () => {
    const later = FIXTURE.events.slice(1); // its first event is not held
    const history = new History("g");
    history.append(later);
    const start = history.firstCompleteIndex();
    assert.equal(history.events[start].type, "StateChanged");
    assert.equal(history.modelAt(start).state, history.events[start].to_state);
    assert.equal(history.modelAt(0).state, null); // before it the state is not known
  });
});
