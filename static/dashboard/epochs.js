// A consumer group's epochs (KIP-848): one row per group epoch, newest first, with what raised
// it (its cause and the member behind it) and when every member was Stable at it. The
// consumer group's counterpart of the generations timeline (timeline.js).

import { causeWords, formatClock, formatDuration, shortId } from "./format.js";

const ROWS = 40;

/** What became of the epoch: Stable after how long, overtaken by the next, or under way. */
function outcome(row, next) {
  if (row.stableMs != null) return `Stable after ${formatDuration(row.stableMs - row.atMs)}`;
  if (next) return `the next epoch came before every member was Stable at this one`;
  if (row.assignedMs != null) return "not Stable yet: the members are reconciling";
  return "not Stable yet: its target assignment is due at the next heartbeat";
}

function rowHelp(row) {
  return [
    `Group epoch ${row.epoch}, raised ${formatClock(row.atMs)} (cause: ${causeWords(row.cause)}${row.causeMemberId ? `, member ${row.causeMemberId}` : ""})`,
    row.assignedMs == null ? "Target assignment: not computed" : `Target assignment computed ${formatClock(row.assignedMs)}`,
    row.stableMs == null ? "Every member Stable at it: not (yet)" : `Every member Stable at it: ${formatClock(row.stableMs)}`,
  ].join("\n");
}

/** `root` is a list element; `update(epochs)` redraws it when the list changed. */
export function createEpochs(root) {
  let shown = null;

  function update(epochs) {
    if (epochs === shown) return;
    shown = epochs;
    const rows = epochs.slice(-ROWS).map((row, i, all) => ({ row, next: all[i + 1] ?? null }));
    rows.reverse();
    d3.select(root)
      .selectAll("li")
      .data(rows, (d) => d.row.seq)
      .join((enter) => {
        const li = enter.append("li");
        li.append("span").attr("class", "epoch-number");
        li.append("span").attr("class", "epoch-cause");
        li.append("span").attr("class", "epoch-outcome");
        return li;
      })
      .attr("data-testid", (d) => `epoch-${d.row.epoch}`)
      .attr("data-stable", (d) => String(d.row.stableMs != null))
      .attr("title", (d) => rowHelp(d.row))
      .call((li) => li.select(".epoch-number").text((d) => `epoch ${d.row.epoch}`))
      .call((li) =>
        li
          .select(".epoch-cause")
          .text((d) => `${causeWords(d.row.cause)}${d.row.causeMemberId ? ` · ${shortId(d.row.causeMemberId)}` : ""} · ${formatClock(d.row.atMs)}`),
      )
      .call((li) => li.select(".epoch-outcome").text((d) => outcome(d.row, d.next)))
      .order();
    root.dataset.empty = rows.length ? "false" : "true";
  }

  return { update };
}
