// The event log: the group's events in plain words, newest first. At most MAX_ROWS rows are in
// the DOM (a busy group emits hundreds of events a second); rows are added per frame, not
// rebuilt.

import { formatClock } from "./format.js";

export const MAX_ROWS = 200;

/** `list` is an <ol>; `onPick(seq)` is called when a row is clicked (time travel to it). */
export function createEventLog(list, { onPick }) {
  const entries = []; // {seq, atMs, kind, text}, oldest first, at most 2 × MAX_ROWS
  let unrendered = []; // entries added since the last render
  let showCommits = false;
  let rebuild = true;

  list.addEventListener("click", (event) => {
    const row = event.target.closest("li[data-seq]");
    if (row) onPick(Number(row.dataset.seq));
  });

  function visible(entry) {
    return showCommits || entry.kind !== "commit";
  }

  function row(entry) {
    const li = document.createElement("li");
    li.className = `log-row kind-${entry.kind}`;
    if (entry.seq != null) li.dataset.seq = entry.seq;
    const time = document.createElement("time");
    time.textContent = formatClock(entry.atMs);
    const text = document.createElement("span");
    text.textContent = entry.text;
    li.append(time, text);
    return li;
  }

  return {
    add(entry) {
      entries.push(entry);
      unrendered.push(entry);
      if (entries.length > 2 * MAX_ROWS) entries.splice(0, MAX_ROWS);
      if (unrendered.length > MAX_ROWS) unrendered = unrendered.slice(-MAX_ROWS);
    },

    /** Put earlier entries (from the loaded history) before those already shown. */
    seed(older) {
      const first = entries.find((e) => e.seq != null);
      const before = first ? older.filter((e) => e.seq < first.seq) : older;
      entries.unshift(...before.slice(-MAX_ROWS));
      rebuild = true;
    },

    setShowCommits(value) {
      showCommits = value;
      rebuild = true;
    },

    render() {
      if (rebuild) {
        rebuild = false;
        unrendered = [];
        list.replaceChildren(...entries.filter(visible).slice(-MAX_ROWS).reverse().map(row));
        return;
      }
      if (!unrendered.length) return;
      const fresh = unrendered.filter(visible);
      unrendered = [];
      if (!fresh.length) return;
      const fragment = document.createDocumentFragment();
      for (let i = fresh.length - 1; i >= 0; i--) fragment.append(row(fresh[i]));
      list.prepend(fragment);
      while (list.childElementCount > MAX_ROWS) list.lastElementChild.remove();
    },

    /** Mark the row of the event shown by time travel (null: none). */
    highlight(seq) {
      for (const li of list.querySelectorAll(".is-shown")) li.classList.remove("is-shown");
      if (seq == null) return;
      const li = list.querySelector(`li[data-seq="${seq}"]`);
      if (li) li.classList.add("is-shown");
    },
  };
}
