// Committed offset, log-end offset and lag per partition (the feed's `offsets` messages, once a
// second, and the OffsetsCommitted events in between).
//
// A group may have 1,000 partitions: only the rows in view (plus a few) are in the DOM, placed
// by transform in a box as tall as all of them (a "virtual" list), so an update writes a few
// dozen cells instead of laying out a 1,000-row table.

import { setText } from "./common.js";
import { ownerOf, partitionList } from "./fold.js";
import { formatCount, shortId } from "./format.js";

const ROW_H = 26;
const OVERSCAN = 8;

export function createOffsetsTable(scroller, inner, total, { topicColor }) {
  let model = null;
  let partitions = [];
  let maxLag = 1;
  // Read from events, never during a render: reading layout then would force one.
  let scrollTop = 0;
  let viewHeight = scroller.clientHeight || 420;

  scroller.addEventListener(
    "scroll",
    () => {
      scrollTop = scroller.scrollTop;
      draw();
    },
    { passive: true },
  );
  new ResizeObserver(([entry]) => {
    viewHeight = entry.contentRect.height;
    draw();
  }).observe(scroller);

  function draw() {
    if (!model) return;
    const first = Math.max(0, Math.floor(scrollTop / ROW_H) - OVERSCAN);
    const count = Math.ceil(viewHeight / ROW_H) + 2 * OVERSCAN;
    const rows = partitions.slice(first, first + count).map((p, i) => ({ ...p, index: first + i }));
    d3.select(inner)
      .selectAll(".offsets-row")
      .data(rows, (d) => d.key)
      .join((enter) => {
        const row = enter.append("div").attr("class", "offsets-row").attr("role", "row");
        const name = row.append("span").attr("role", "rowheader");
        name.append("span").attr("class", "chip");
        name.append("span");
        row.append("span").attr("role", "cell");
        row.append("span").attr("role", "cell").attr("class", "num");
        row.append("span").attr("role", "cell").attr("class", "num");
        const lag = row.append("span").attr("role", "cell").attr("class", "num lag-cell");
        lag.append("span").attr("class", "lag-bar").append("span").attr("class", "lag-fill");
        lag.append("span");
        return row;
      })
      .each(function (d) {
        const y = `translateY(${d.index * ROW_H}px)`;
        if (this.style.transform !== y) this.style.transform = y;
        const cells = this.children;
        if (this.__key !== d.key) {
          this.__key = d.key;
          cells[0].firstChild.style.background = topicColor(d.topic);
          setText(cells[0].lastChild, `${d.topic} · ${d.partition}`);
        }
        const offsets = model.offsets.get(d.key);
        const owner = ownerOf(model, d.key);
        setText(cells[1], owner ? shortId(owner) : "nobody");
        if (cells[1].title !== owner) cells[1].title = owner;
        setText(cells[2], formatCount(offsets?.offset));
        setText(cells[3], formatCount(offsets?.logEnd));
        const lag = offsets?.lag;
        setText(cells[4].lastChild, formatCount(lag));
        const width = lag ? `${Math.max(2, (100 * lag) / maxLag)}%` : "0%";
        const fill = cells[4].firstChild.firstChild;
        if (fill.style.width !== width) fill.style.width = width;
      });
  }

  function update(next) {
    model = next;
    partitions = partitionList(next);
    maxLag = 1;
    for (const row of next.offsets.values()) if (row.lag > maxLag) maxLag = row.lag;
    const height = `${partitions.length * ROW_H}px`;
    if (inner.style.height !== height) inner.style.height = height;
    setText(total, formatCount(next.totalLag));
    draw();
  }

  return { update };
}
