import assert from "node:assert/strict";
import { test } from "node:test";

import { PROTOCOLS, protocolRows } from "../protocols.js";

test("the four modes are listed in order, those without rebalances too", () => {
  const consumer = { rebalances: 2 };
  const eager = { rebalances: 5 };
  const rows = protocolRows({ consumer, eager });
  assert.deepEqual(
    rows.map((r) => [r.key, r.label, r.figures]),
    [
      ["eager", "eager (classic)", eager],
      ["cooperative", "cooperative (KIP-429)", null],
      ["handoff", "handoff (seed 004)", null],
      ["consumer", "consumer (KIP-848)", consumer],
    ],
  );
});

test("a key the page does not name follows the four, under its own name", () => {
  const unknown = { rebalances: 1 };
  const rows = protocolRows({ unknown, handoff: { rebalances: 3 } });
  assert.deepEqual(rows.map((r) => r.key), ["eager", "cooperative", "handoff", "consumer", "unknown"]);
  assert.equal(rows[4].figures, unknown);
  assert.equal(rows[4].label, "unknown");
});

test("no summary yet: the four modes, empty", () => {
  assert.deepEqual(protocolRows(undefined).map((r) => r.figures), [null, null, null, null]);
  assert.equal(PROTOCOLS.length, 4);
});
