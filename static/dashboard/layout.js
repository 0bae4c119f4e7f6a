// Where lanes and partition tiles go, computed rather than measured.
//
// Pure module. The lanes panel positions lanes and tiles itself (absolute positions, CSS
// transforms) so that moving a tile from one lane to another is arithmetic on two layouts:
// no DOM reads (which would force a layout per frame with 1,000 tiles), and the old position
// of a tile whose lane just disappeared is still known.

export const TILE_W = 36;
export const TILE_H = 22;
export const GAP = 4;
export const PAD = 6;
export const HEAD_W = 270; // wide screens: the lane's name on the left of its tiles
export const HEAD_H = 26; // narrow screens: the name above the tiles
export const NARROW_BELOW = 640;
export const MIN_BOX_H = 44; // wide screens: room for the name and, under it, its badges
export const MIN_HANDOFF_BOX_H = 62; // and a third line: a handoff member's sets, a consumer member's epoch
export const BOX_GAP = 6;

/**
 * Layout of `boxes` (each {id, count}: a lane, or the unowned area, and its tile count)
 * stacked top to bottom in a panel `width` pixels wide. `minBoxHeight`: the least height of a
 * box on a wide screen (a handoff group's lanes have a line more).
 *
 * Returns {narrow, perRow, height, boxes: Map id → {y, height}}; tile slot positions relative
 * to their box come from tileOffset(layout, slot).
 */
export function stackLayout(boxes, width, { minBoxHeight = MIN_BOX_H } = {}) {
  const narrow = width < NARROW_BELOW;
  const left = narrow ? PAD : HEAD_W;
  const top = narrow ? HEAD_H : PAD;
  const minHeight = narrow ? 0 : minBoxHeight;
  const perRow = Math.max(1, Math.floor((width - left - PAD + GAP) / (TILE_W + GAP)));
  const placed = new Map();
  let y = 0;
  for (const box of boxes) {
    const rows = Math.max(1, Math.ceil(box.count / perRow));
    const height = Math.max(minHeight, top + rows * (TILE_H + GAP) - GAP + PAD);
    placed.set(box.id, { y, height });
    y += height + BOX_GAP;
  }
  return { narrow, perRow, left, top, height: Math.max(0, y - BOX_GAP), boxes: placed };
}

/** The position of tile `slot` (0-based, in reading order) inside its box. */
export function tileOffset(layout, slot) {
  return {
    x: layout.left + (slot % layout.perRow) * (TILE_W + GAP),
    y: layout.top + Math.floor(slot / layout.perRow) * (TILE_H + GAP),
  };
}

/**
 * Every tile's place: Map key → {box, slot, x, y (in its box), ax, ay (in the panel)}.
 * `contents` is a list of {id, keys}: each box's id and the tile keys it holds, in order.
 */
export function tilePlaces(layout, contents) {
  const places = new Map();
  for (const { id, keys } of contents) {
    const box = layout.boxes.get(id);
    keys.forEach((key, slot) => {
      const { x, y } = tileOffset(layout, slot);
      places.set(key, { box: id, slot, x, y, ax: x, ay: box.y + y });
    });
  }
  return places;
}
