import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { PersistentMap } from "../pmap.js";

describe("PersistentMap", () => {
  test("reads like a Map", () => {
    const map = PersistentMap.from([
      ["t-0", 1],
      ["t-1", 2],
    ]);
    assert.equal(map.size, 2);
    assert.equal(map.get("t-1"), 2);
    assert.equal(map.get("t-9"), undefined);
    assert.ok(map.has("t-0") && !map.has("t-9"));
    assert.deepEqual(new Map(map), new Map([["t-0", 1], ["t-1", 2]]));
    assert.deepEqual([...map.keys()].sort(), ["t-0", "t-1"]);
    assert.deepEqual([...map.values()].sort(), [1, 2]);
  });

  test("a change makes a new map and leaves the old one as it was", () => {
    const before = PersistentMap.from([["t-0", 1]]);
    const after = before.with([["t-0", 5], ["t-1", 6]]);
    assert.equal(before.get("t-0"), 1);
    assert.equal(before.size, 1);
    assert.equal(after.get("t-0"), 5);
    assert.equal(after.size, 2);
    const removed = after.without(["t-0", "t-404"]);
    assert.equal(removed.size, 1);
    assert.ok(!removed.has("t-0"));
    assert.equal(after.get("t-0"), 5);
  });

  test("a change shares every bucket it does not touch", () => {
    const entries = Array.from({ length: 1000 }, (_, i) => [`topic-${i % 5}-${i}`, i]);
    const before = PersistentMap.from(entries);
    const after = before.with([["topic-0-0", -1]]);
    const shared = after.buckets.filter((bucket, i) => bucket === before.buckets[i]).length;
    assert.equal(shared, before.buckets.length - 1);
    assert.equal(after.size, 1000);
  });

  test("no change gives the same map", () => {
    const map = PersistentMap.from([["a", 1]]);
    assert.equal(map.with([]), map);
    assert.equal(map.without(["b"]), map);
  });
});
