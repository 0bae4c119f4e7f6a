import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { NODE_POS, STATES, STATE_HELP, TRANSITIONS, edgeGeometry } from "../states.js";

test("the transitions are the engine's table", () => {
  // coordinator_engine/state.py is the one place that says which transitions exist.
  const source = readFileSync(new URL("../../../coordinator_engine/state.py", import.meta.url), "utf8");
  const names = { Empty: "Empty", PreparingRebalance: "PreparingRebalance", CompletingRebalance: "CompletingRebalance", Stable: "Stable", Dead: "Dead" };
  const engine = [...source.matchAll(/\((\w+), (\w+)\): "([^"]+)"/g)].map((m) => [names[m[1]], names[m[2]], m[3]]);
  assert.equal(engine.length, 11);
  assert.deepEqual(TRANSITIONS, engine);
});

test("every state has a place and a plain-words explanation", () => {
  for (const state of STATES) {
    assert.ok(NODE_POS[state], state);
    assert.ok(STATE_HELP[state].length > 20, state);
  }
});

test("edges both ways between two states bow to different sides", () => {
  const there = edgeGeometry("PreparingRebalance", "CompletingRebalance");
  const back = edgeGeometry("CompletingRebalance", "PreparingRebalance");
  assert.match(there.path, /^M[\d.-]+,[\d.-]+ Q/);
  assert.notEqual(there.labelX, back.labelX);
  assert.notEqual(there.labelY, back.labelY);
  assert.match(edgeGeometry("Dead", "Dead").path, /^M.* C/);
});
