import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  CONSUMER_NODE_POS,
  CONSUMER_STATES,
  CONSUMER_STATE_HELP,
  CONSUMER_TRANSITIONS,
  HANDOFF_NODE_POS,
  HANDOFF_STATES,
  HANDOFF_STATE_HELP,
  HANDOFF_TRANSITIONS,
  NODE_POS,
  STATES,
  STATE_HELP,
  TRANSITIONS,
  diagramFor,
  edgeGeometry,
} from "../states.js";

test("the transitions are the engine's table", () => {
  // coordinator_engine/classic/state.py is the one place that says which transitions exist.
  const source = readFileSync(new URL("../../../coordinator_engine/classic/state.py", import.meta.url), "utf8");
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

test("the handoff diagram's transitions are the table of docs/engine.md", () => {
  // The engine checks the same table against coordinator_engine/handoff/state.py TRANSITIONS.
  const doc = readFileSync(new URL("../../../docs/engine.md", import.meta.url), "utf8");
  const table = doc.split("<!-- handoff-transitions:start -->")[1].split("<!-- handoff-transitions:end -->")[0];
  const rows = [...table.matchAll(/^\| (\w+) \| (\w+) \| (.+) \|$/gm)].filter((m) => m[1] !== "from");
  assert.equal(rows.length, 10);
  assert.deepEqual(HANDOFF_TRANSITIONS, rows.map((m) => [m[1], m[2], m[3]]));
  assert.deepEqual(diagramFor("handoff").transitions, HANDOFF_TRANSITIONS);
  assert.deepEqual(diagramFor(null).transitions, TRANSITIONS);
});

test("every handoff state has a place and help, and its edges both ways bow apart", () => {
  for (const state of HANDOFF_STATES) {
    assert.ok(HANDOFF_NODE_POS[state], state);
    assert.ok(HANDOFF_STATE_HELP[state].length > 20, state);
  }
  for (const [from, to] of HANDOFF_TRANSITIONS) {
    assert.ok(HANDOFF_STATES.includes(from) && HANDOFF_STATES.includes(to), `${from} → ${to}`);
  }
  const there = edgeGeometry("Closing", "Starting", HANDOFF_NODE_POS);
  const back = edgeGeometry("Starting", "Closing", HANDOFF_NODE_POS);
  assert.notEqual(there.labelX, back.labelX);
  assert.notEqual(there.labelY, back.labelY);
});

test("the consumer diagram's transitions are the engine's table and the one of docs/engine.md", () => {
  // coordinator_engine/consumer/state.py holds the table; tests/engine checks the doc's against it.
  const source = readFileSync(new URL("../../../coordinator_engine/consumer/state.py", import.meta.url), "utf8");
  const engine = [...source.matchAll(/\((\w+), (\w+)\): "([^"]+)"/g)].map((m) => [m[1], m[2], m[3]]);
  assert.equal(engine.length, 11);
  assert.deepEqual(CONSUMER_TRANSITIONS, engine);
  const doc = readFileSync(new URL("../../../docs/engine.md", import.meta.url), "utf8");
  const table = doc.split("<!-- consumer-transitions:start -->")[1].split("<!-- consumer-transitions:end -->")[0];
  const rows = [...table.matchAll(/^\| (\w+) \| (\w+) \| (.+) \|$/gm)].filter((m) => m[1] !== "from");
  assert.deepEqual(CONSUMER_TRANSITIONS, rows.map((m) => [m[1], m[2], m[3]]));
  assert.deepEqual(diagramFor("consumer").transitions, CONSUMER_TRANSITIONS);
});

test("every consumer state has a place and help, and its edges both ways bow apart", () => {
  for (const state of CONSUMER_STATES) {
    assert.ok(CONSUMER_NODE_POS[state], state);
    assert.ok(CONSUMER_STATE_HELP[state].length > 20, state);
  }
  for (const [from, to] of CONSUMER_TRANSITIONS) {
    assert.ok(CONSUMER_STATES.includes(from) && CONSUMER_STATES.includes(to), `${from} → ${to}`);
  }
  const there = edgeGeometry("Assigning", "Reconciling", CONSUMER_NODE_POS);
  const back = edgeGeometry("Reconciling", "Assigning", CONSUMER_NODE_POS);
  assert.notEqual(there.labelX, back.labelX);
  assert.notEqual(there.labelY, back.labelY);
});
