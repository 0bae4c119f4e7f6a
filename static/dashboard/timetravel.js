// The loaded history of one group, and the group as it was at any event of it.
//
// Pure module. Events are folded from an empty model (fold.js); since GenerationStarted and
// AssignmentStored each carry a whole membership / assignment, the model is complete from the
// first GenerationStarted on (the scrubber starts there). Handoff and consumer groups have no
// such event: held from their creation (`fromCreation`), they are complete from their first
// event, which finds them in their first state (Initial, Empty); held from later on, from their
// first StateChanged, which names their state. Every `checkpointEvery` events the
// folded model is kept (models are copy-on-write, so a checkpoint costs nothing), so showing an
// event folds at most that many events. Past `cap` events the oldest are dropped a whole
// checkpoint at a time: the first kept checkpoint becomes the base, nothing is refolded.

import { applyEvent, emptyModel } from "./fold.js";

export const HISTORY_CAP = 5000;
export const CHECKPOINT_EVERY = 250;

export class History {
  constructor(groupId, { cap = HISTORY_CAP, checkpointEvery = CHECKPOINT_EVERY } = {}) {
    this.groupId = groupId;
    this.cap = cap;
    this.every = checkpointEvery;
    this.base = emptyModel(groupId); // the model before events[0]
    this.events = [];
    this.checkpoints = []; // checkpoints[i]: the model after events[0 .. (i+1)*every - 1]
    this.end = this.base; // the model after every event
    this.firstGeneration = -1; // index of the first GenerationStarted held (-1: none)
  }

  get length() {
    return this.events.length;
  }

  /** The seq of the last event held (0 when empty). */
  get lastSeq() {
    return this.events.length ? this.events[this.events.length - 1].seq : this.base.seq;
  }

  /** Add events in seq order; those not after lastSeq are already held and skipped. */
  append(events) {
    for (const event of events) {
      if (event.seq <= this.lastSeq) continue;
      this.events.push(event);
      if (this.firstGeneration < 0 && event.type === "GenerationStarted") this.firstGeneration = this.events.length - 1;
      this.end = applyEvent(this.end, event);
      if (this.events.length % this.every === 0) this.checkpoints.push(this.end);
    }
    this.trim();
  }

  trim() {
    // Drop whole checkpoints so the kept ones stay aligned with the events they follow.
    const excess = this.events.length - this.cap;
    const drop = Math.floor(excess / this.every);
    if (drop <= 0) return;
    this.base = this.checkpoints[drop - 1];
    this.checkpoints = this.checkpoints.slice(drop);
    this.events = this.events.slice(drop * this.every);
    this.firstGeneration -= drop * this.every;
    if (this.firstGeneration < 0) this.firstGeneration = this.events.findIndex((e) => e.type === "GenerationStarted");
  }

  /** The group right after events[index]. */
  modelAt(index) {
    if (index < 0 || this.events.length === 0) return this.base;
    const at = Math.min(index, this.events.length - 1);
    const done = Math.floor((at + 1) / this.every); // whole checkpoints before or at `at`
    let model = done > 0 ? this.checkpoints[done - 1] : this.base;
    for (let i = done * this.every; i <= at; i++) model = applyEvent(model, this.events[i]);
    return model;
  }

  /** Say that the events to come start at the group's creation (call before any append). */
  fromCreation() {
    if (this.events.length === 0) this.base = this.end = { ...this.base, created: true };
  }

  /** Index of the first event from which the model is whole (see the module's comment). */
  firstCompleteIndex() {
    if (this.firstGeneration >= 0) return this.firstGeneration;
    if (this.base.created) return 0;
    return Math.max(0, this.events.findIndex((e) => e.type === "StateChanged"));
  }

  /** Index of the last event with seq <= `seq` (-1 if none). */
  indexOfSeq(seq) {
    let lo = 0;
    let hi = this.events.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.events[mid].seq <= seq) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  }
}

/**
 * Load the last `want` events of a group up to `untilSeq` through the events API.
 *
 * `fetchPage(after, limit)` resolves to the API's `{events, last_seq}` (oldest first). Sequence
 * numbers are global (shared by all groups), so the window of seqs that holds the group's last
 * `want` events is unknown: start with a window of `want` seqs before `untilSeq` and widen
 * it fourfold until it holds enough events or reaches back to the start. `after` > 0 continues
 * from events already held instead. Resolves to the events, oldest first, seq <= untilSeq.
 */
export async function loadHistory(fetchPage, { untilSeq, after = 0, want = HISTORY_CAP, pageLimit = 10_000 }) {
  let window = want;
  for (;;) {
    const from = after > 0 ? after : Math.max(0, untilSeq - window);
    const events = await readRange(fetchPage, from, untilSeq, want, pageLimit);
    if (events.length >= want || from === after || from === 0) return events.slice(-want);
    window *= 4;
  }
}

/** Events with from < seq <= untilSeq, page after page, keeping the last `want`. */
async function readRange(fetchPage, from, untilSeq, want, pageLimit) {
  let kept = [];
  let cursor = from;
  for (;;) {
    const page = await fetchPage(cursor, pageLimit);
    const events = page.events || [];
    kept = kept.concat(events.filter((e) => e.seq <= untilSeq));
    if (kept.length > want * 2) kept = kept.slice(-want);
    const reachedEnd = events.length < pageLimit || page.last_seq >= untilSeq || page.last_seq <= cursor;
    if (reachedEnd) return kept;
    cursor = page.last_seq;
  }
}
