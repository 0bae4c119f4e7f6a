// The timeline of generations: one row per generation, newest first, with its rebalance's two
// phases as bars (join: from the rebalance's start to CompletingRebalance; sync: from
// CompletingRebalance to Stable) and their durations in words.

import { formatClock, formatDuration, shortId } from "./format.js";

const ROWS = 40;

function durations(g) {
  return {
    join: g.completingMs - g.joinStartedMs,
    sync: g.stableMs == null ? null : g.stableMs - g.completingMs,
  };
}

function rowText(g) {
  const { join, sync } = durations(g);
  if (g.memberCount === 0) return `join ${formatDuration(join)} · no members: the group went Empty`;
  let syncText;
  if (g.syncAborted) syncText = "sync interrupted by a new rebalance";
  else if (sync == null) syncText = "sync under way";
  else syncText = `sync ${formatDuration(sync)}`;
  return `join ${formatDuration(join)} · ${syncText} · ${g.memberCount} member${g.memberCount === 1 ? "" : "s"}`;
}

function rowHelp(g) {
  return [
    `Generation ${g.generation}${g.protocol ? ` (assignor ${g.protocol})` : ""}, leader ${shortId(g.leader)}`,
    `Rebalance started ${formatClock(g.joinStartedMs)}${g.reason ? ` because: ${g.reason}` : ""}`,
    `Join phase (members rejoin): ${formatClock(g.joinStartedMs)} → ${formatClock(g.completingMs)}`,
    g.stableMs == null
      ? "Sync phase (the leader hands out partitions): not finished"
      : `Sync phase (the leader hands out partitions): ${formatClock(g.completingMs)} → ${formatClock(g.stableMs)}`,
  ].join("\n");
}

/** `root` is a list element; `update(generations, rebalance)` redraws what changed. */
export function createTimeline(root, note) {
  let shown = null;
  let shownRebalance;

  function update(generations, rebalance) {
    if (generations === shown && rebalance === shownRebalance) return;
    shown = generations;
    shownRebalance = rebalance;
    const rows = generations.slice(-ROWS).reverse();
    // One scale for every bar, so phases compare across generations; a square root keeps a
    // 5 ms sync visible next to a 3 s join.
    const longest = d3.max(rows, (g) => durations(g).join + (durations(g).sync ?? 0)) || 1;
    const scale = d3.scaleSqrt().domain([0, longest]).range([0, 100]);

    d3.select(root)
      .selectAll("li")
      .data(rows, (g) => g.seq)
      .join((enter) => {
        const li = enter.append("li").attr("class", "tl-row");
        li.append("span").attr("class", "tl-gen");
        const bar = li.append("span").attr("class", "tl-bar");
        bar.append("span").attr("class", "tl-join");
        bar.append("span").attr("class", "tl-sync");
        li.append("span").attr("class", "tl-text");
        return li;
      })
      .attr("title", rowHelp)
      .classed("is-aborted", (g) => g.syncAborted)
      .call((li) => li.select(".tl-gen").text((g) => `gen ${g.generation}`))
      .call((li) => li.select(".tl-join").style("width", (g) => `${Math.max(1, scale(durations(g).join))}%`))
      .call((li) =>
        li
          .select(".tl-sync")
          .style("width", (g) => {
            const { join, sync } = durations(g);
            if (sync == null) return "0%";
            return `${Math.max(1, scale(join + sync) - scale(join))}%`;
          }),
      )
      .call((li) => li.select(".tl-text").text(rowText))
      .order();

    if (rebalance) {
      note.hidden = false;
      note.textContent = `A rebalance is under way${rebalance.startedMs ? ` since ${formatClock(rebalance.startedMs)}` : ""}${rebalance.reason ? `: ${rebalance.reason}` : ""}`;
    } else {
      note.hidden = true;
    }
    root.dataset.empty = rows.length ? "false" : "true";
  }

  return { update };
}
