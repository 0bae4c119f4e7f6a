import assert from "node:assert/strict";
import { test } from "node:test";

import { BOX_GAP, GAP, HEAD_W, MIN_BOX_H, NARROW_BELOW, PAD, TILE_H, TILE_W, stackLayout, tileOffset, tilePlaces } from "../layout.js";

test("wide: names on the left, tiles wrap into rows, boxes stack", () => {
  const width = HEAD_W + PAD + 12 * (TILE_W + GAP) - GAP; // exactly twelve tiles a row
  const layout = stackLayout([{ id: "", count: 0 }, { id: "a", count: 13 }, { id: "b", count: 12 }], width);
  assert.equal(layout.narrow, false);
  assert.equal(layout.perRow, 12);
  const one = Math.max(MIN_BOX_H, PAD + TILE_H + PAD); // room for the name and its badges
  const two = Math.max(MIN_BOX_H, PAD + 2 * TILE_H + GAP + PAD);
  assert.deepEqual(layout.boxes.get(""), { y: 0, height: one }, "an empty box still has a row");
  assert.deepEqual(layout.boxes.get("a"), { y: one + BOX_GAP, height: two });
  assert.deepEqual(layout.boxes.get("b"), { y: one + two + 2 * BOX_GAP, height: one });
  assert.equal(layout.height, 3 * one + two - one + 2 * BOX_GAP);
  assert.deepEqual(tileOffset(layout, 12), { x: HEAD_W, y: PAD + TILE_H + GAP });
  assert.deepEqual(tileOffset(layout, 1), { x: HEAD_W + TILE_W + GAP, y: PAD });
});

test("narrow (a phone): the name above the tiles, which use the whole width", () => {
  const layout = stackLayout([{ id: "a", count: 3 }], 390);
  assert.ok(390 < NARROW_BELOW);
  assert.equal(layout.narrow, true);
  assert.equal(tileOffset(layout, 0).x, PAD);
  assert.ok(layout.perRow >= 8);
});

test("tile places are absolute in the panel and relative in their box", () => {
  const layout = stackLayout([{ id: "", count: 1 }, { id: "a", count: 2 }], 1000);
  const places = tilePlaces(layout, [
    { id: "", keys: ["t-2"] },
    { id: "a", keys: ["t-0", "t-1"] },
  ]);
  const t1 = places.get("t-1");
  assert.equal(t1.box, "a");
  assert.equal(t1.slot, 1);
  assert.equal(t1.ay, layout.boxes.get("a").y + t1.y);
  assert.equal(places.get("t-2").box, "");
});
