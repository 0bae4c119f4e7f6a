import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import {
  BUCKET_MS,
  applyLag,
  applyOverviewEvent,
  countRebalance,
  overviewFromSnapshot,
  rebalancesInHour,
  shiftBuckets,
  visibleGroups,
} from "../overview-model.js";
import * as ev from "./events.js";

beforeEach(() => ev.resetSeq(101));

const zeros = () => new Array(12).fill(0);
const END = 12 * BUCKET_MS * 10;

function model() {
  return overviewFromSnapshot({
    type: "snapshot",
    seq: 100,
    now_ms: END,
    groups: [
      { group_id: "g", state: "Stable", generation_id: 4, protocol_type: "consumer", protocol: "range", leader: "a", member_count: 2, total_lag: 7, rebalances: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3] },
      { group_id: "e", state: "Empty", generation_id: 1, protocol_type: null, protocol: null, leader: null, member_count: 0, total_lag: 0, rebalances: zeros() },
    ],
  });
}

test("a rebalance counts in the bucket of its time", () => {
  const buckets = zeros();
  assert.deepEqual(countRebalance(buckets, END, END).buckets.at(-1), 1);
  assert.deepEqual(countRebalance(buckets, END, END - BUCKET_MS - 1).buckets[10], 1);
  assert.deepEqual(countRebalance(buckets, END, END - 13 * BUCKET_MS).buckets, zeros(), "older than an hour");
});

test("time moves the buckets: a rebalance after the last bucket shifts them", () => {
  const buckets = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
  const shifted = shiftBuckets(buckets, END, END + 1);
  assert.deepEqual(shifted.buckets, [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0]);
  assert.equal(shifted.endMs, END + BUCKET_MS);
  assert.deepEqual(shiftBuckets(buckets, END, END + 20 * BUCKET_MS).buckets, zeros());
  const counted = countRebalance(buckets, END, END + 2 * BUCKET_MS);
  assert.deepEqual(counted.buckets, [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 1]);
});

test("GenerationStarted sets the generation and members and counts a rebalance", () => {
  const m = model();
  applyOverviewEvent(m, ev.generationStarted(5, ["a", "b", "c"], { group_id: "g", at_ms: END - 10 }));
  const g = m.groups.get("g");
  assert.equal(g.generation_id, 5);
  assert.equal(g.member_count, 3);
  assert.equal(rebalancesInHour(g), 5);
  assert.equal(g.rebalances.at(-1), 4);
});

test("membership counts follow joins and removals; a static replacement nets zero", () => {
  const m = model();
  applyOverviewEvent(m, ev.memberJoined("x", { group_id: "g", at_ms: END }));
  applyOverviewEvent(m, ev.memberJoined("a", { group_id: "g", at_ms: END, rejoined: true }));
  assert.equal(m.groups.get("g").member_count, 3);
  applyOverviewEvent(m, ev.staticReplaced("i", "a", "a2", { group_id: "g", at_ms: END }));
  applyOverviewEvent(m, ev.memberRemoved("a", "fenced", { group_id: "g", at_ms: END }));
  applyOverviewEvent(m, ev.memberJoined("a2", { group_id: "g", at_ms: END }));
  assert.equal(m.groups.get("g").member_count, 3);
  assert.equal(m.groups.get("g").leader, "a2");
});

test("state changes, removals, new groups, lag and the state filter", () => {
  const m = model();
  applyOverviewEvent(m, ev.stateChanged("Stable", "PreparingRebalance", "x", { group_id: "g", at_ms: END }));
  applyOverviewEvent(m, ev.groupRemoved({ group_id: "e", at_ms: END }));
  applyOverviewEvent(m, ev.stateChanged("Empty", "PreparingRebalance", "x", { group_id: "new", at_ms: END }));
  applyLag(m, { g: 99 });
  assert.equal(m.groups.get("g").state, "PreparingRebalance");
  assert.equal(m.groups.get("g").total_lag, 99);
  assert.equal(m.groups.get("e").state, "Dead");
  assert.deepEqual(visibleGroups(m).map((g) => g.group_id), ["e", "g", "new"]);
  assert.deepEqual(visibleGroups(m, "PreparingRebalance").map((g) => g.group_id), ["g", "new"]);
});

test("a record that changes is replaced, one that does not is kept", () => {
  const m = model();
  const e = m.groups.get("e");
  const g = m.groups.get("g");
  applyOverviewEvent(m, ev.stateChanged("Stable", "PreparingRebalance", "x", { group_id: "g", at_ms: END }));
  assert.equal(m.groups.get("e"), e);
  assert.notEqual(m.groups.get("g"), g);
});
