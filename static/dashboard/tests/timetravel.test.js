import assert from "node:assert/strict";
import { beforeEach, describe, test } from "node:test";

import { emptyModel, foldEvents, ownerOf } from "../fold.js";
import { History, loadHistory } from "../timetravel.js";
import * as ev from "./events.js";

beforeEach(() => ev.resetSeq(1));

const T = (p) => ["t", p];

/** Three generations: a alone, then a + b, then b alone after a timed out. */
function threeGenerations() {
  return [
    ev.memberJoined("a"),
    ...ev.rebalance("Empty", 1, ["a"], { a: [T(0), T(1)] }),
    ev.memberJoined("b"),
    ...ev.rebalance("Stable", 2, ["a", "b"], { a: [T(0)], b: [T(1)] }),
    ev.memberRemoved("a", "session_timeout"),
    ...ev.rebalance("Stable", 3, ["b"], { b: [T(0), T(1)] }),
  ];
}

describe("History", () => {
  test("scrubbing back to an earlier generation shows its state, lanes and owners", () => {
    const events = threeGenerations();
    const history = new History("g", { checkpointEvery: 4 });
    history.append(events);
    assert.equal(history.end.generation, 3);

    const gen2Assigned = events.findIndex((e) => e.type === "AssignmentStored" && e.generation_id === 2);
    const at = history.modelAt(gen2Assigned);
    assert.equal(at.generation, 2);
    assert.equal(at.state, "Stable");
    assert.deepEqual([...at.members.keys()], ["a", "b"]);
    assert.equal(ownerOf(at, "t-1"), "b");

    // Mid-rebalance of generation 3: a is gone, its partition unowned, b still has t-1.
    const removed = events.findIndex((e) => e.type === "MemberRemoved");
    const mid = history.modelAt(removed + 1);
    assert.equal(mid.state, "PreparingRebalance");
    assert.equal(mid.generation, 2);
    assert.equal(ownerOf(mid, "t-0"), "");
    assert.equal(ownerOf(mid, "t-1"), "b");
  });

  test("modelAt(i) is the fold of the first i+1 events, whatever the checkpoints", () => {
    const events = threeGenerations();
    for (const every of [1, 3, 5, 100]) {
      const history = new History("g", { checkpointEvery: every });
      history.append(events);
      events.forEach((_, i) => {
        const expected = foldEvents(emptyModel("g"), events.slice(0, i + 1));
        const got = history.modelAt(i);
        assert.equal(got.seq, expected.seq);
        assert.equal(got.state, expected.state);
        assert.deepEqual([...got.members.keys()], [...expected.members.keys()]);
        assert.deepEqual([...got.owners], [...expected.owners]);
      });
    }
  });

  test("past the cap, the oldest events go a checkpoint at a time and the rest still folds", () => {
    const events = [];
    for (let g = 1; g <= 30; g++) events.push(...ev.rebalance(g === 1 ? "Empty" : "Stable", g, ["a"], { a: [T(g % 4)] }));
    const history = new History("g", { cap: 40, checkpointEvery: 10 });
    history.append(events);
    assert.ok(history.length >= 40 && history.length < 50, `kept ${history.length}`);
    assert.equal(history.lastSeq, events.at(-1).seq);
    const last = history.modelAt(history.length - 1);
    assert.equal(last.generation, 30);
    assert.equal(ownerOf(last, "t-2"), "a");
    assert.equal(history.firstCompleteIndex(), history.events.findIndex((e) => e.type === "GenerationStarted"));
    // The base carries what was dropped: the first kept event still has its generation.
    const first = history.events[0];
    const expected = foldEvents(emptyModel("g"), events.filter((e) => e.seq <= first.seq));
    assert.equal(history.modelAt(0).generation, expected.generation);
  });

  test("append skips events already held; the scrubber starts at the first GenerationStarted", () => {
    const events = threeGenerations();
    const history = new History("g");
    history.append(events.slice(0, 5));
    history.append(events.slice(3));
    assert.equal(history.length, events.length);
    assert.equal(history.firstCompleteIndex(), 3);
    assert.equal(history.indexOfSeq(events[4].seq), 4);
    assert.equal(history.indexOfSeq(0), -1);
  });
});

describe("loadHistory", () => {
  /** An events API over `all` (global seqs), recording the calls. */
  function api(all) {
    const calls = [];
    const fetchPage = async (after, limit) => {
      calls.push([after, limit]);
      const events = all.filter((e) => e.seq > after).slice(0, limit);
      return { events, last_seq: events.length ? events.at(-1).seq : after };
    };
    return { fetchPage, calls };
  }

  test("the last `want` events up to untilSeq, widening the window as needed", async () => {
    // The group's events are every 10th global seq.
    const all = Array.from({ length: 100 }, (_, i) => ({ seq: (i + 1) * 10, type: "X" }));
    const { fetchPage, calls } = api(all);
    const got = await loadHistory(fetchPage, { untilSeq: 900, want: 20, pageLimit: 1000 });
    assert.deepEqual(got.map((e) => e.seq), Array.from({ length: 20 }, (_, i) => 710 + i * 10));
    assert.deepEqual(calls.map((c) => c[0]), [880, 820, 580]);
  });

  test("pages through a window holding more than a page", async () => {
    const all = Array.from({ length: 50 }, (_, i) => ({ seq: i + 1, type: "X" }));
    const { fetchPage, calls } = api(all);
    const got = await loadHistory(fetchPage, { untilSeq: 45, want: 30, pageLimit: 8 });
    assert.deepEqual(got.map((e) => e.seq), Array.from({ length: 30 }, (_, i) => 16 + i));
    assert.ok(calls.length > 1);
  });

  test("continuing after a seq reads only what follows it", async () => {
    const all = Array.from({ length: 50 }, (_, i) => ({ seq: i + 1, type: "X" }));
    const { fetchPage, calls } = api(all);
    const got = await loadHistory(fetchPage, { untilSeq: 30, after: 25, want: 100 });
    assert.deepEqual(got.map((e) => e.seq), [26, 27, 28, 29, 30]);
    assert.deepEqual(calls.map((c) => c[0]), [25]);
  });
});
