import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  APPLY,
  BACKOFF_MAX_MS,
  DUPLICATE,
  GAP,
  GroupSequence,
  GroupsSequence,
  LIVE,
  LiveFeed,
  RECONNECTING,
  backoffDelay,
  feedUrl,
} from "../feed.js";

describe("backoff", () => {
  test("0.5 s doubling to 10 s, jittered between half and all of it", () => {
    const ceilings = [500, 1000, 2000, 4000, 8000, 10_000, 10_000, 10_000];
    ceilings.forEach((ceiling, attempt) => {
      assert.equal(backoffDelay(attempt, () => 1), ceiling, `attempt ${attempt}`);
      assert.equal(backoffDelay(attempt, () => 0), ceiling / 2);
    });
    for (let attempt = 0; attempt < 40; attempt++) {
      assert.ok(backoffDelay(attempt) <= BACKOFF_MAX_MS);
    }
  });
});

describe("gap detection on one group's feed", () => {
  test("events chain by prev_seq from the snapshot's seq", () => {
    const s = new GroupSequence(10);
    assert.equal(s.accept({ seq: 14, prev_seq: 10 }), APPLY);
    assert.equal(s.accept({ seq: 20, prev_seq: 14 }), APPLY);
    assert.equal(s.seq, 20);
  });

  test("a prev_seq that is not the seq held is a gap, and is not taken", () => {
    const s = new GroupSequence(10);
    assert.equal(s.accept({ seq: 14, prev_seq: 12 }), GAP);
    assert.equal(s.seq, 10);
  });

  test("events already in the snapshot are duplicates", () => {
    const s = new GroupSequence(10);
    assert.equal(s.accept({ seq: 9, prev_seq: 3 }), DUPLICATE);
    assert.equal(s.accept({ seq: 10, prev_seq: 9 }), DUPLICATE);
  });
});

describe("gap detection on the all-groups feed", () => {
  test("each group's first event may follow anything in the snapshot", () => {
    const s = new GroupsSequence(100);
    assert.equal(s.accept({ seq: 101, prev_seq: 57, group_id: "a" }), APPLY);
    assert.equal(s.accept({ seq: 102, prev_seq: 0, group_id: "b" }), APPLY);
    assert.equal(s.accept({ seq: 103, prev_seq: 101, group_id: "a" }), APPLY);
  });

  test("a group's event after one never seen is a gap", () => {
    const s = new GroupsSequence(100);
    assert.equal(s.accept({ seq: 105, prev_seq: 103, group_id: "a" }), GAP);
    s.accept({ seq: 106, prev_seq: 90, group_id: "b" });
    assert.equal(s.accept({ seq: 110, prev_seq: 108, group_id: "b" }), GAP);
  });
});

test("feedUrl follows the page's scheme and host", () => {
  assert.equal(feedUrl("/ws/x/", { protocol: "https:", host: "h:1" }), "wss://h:1/ws/x/");
  assert.equal(feedUrl("/ws/x/", { protocol: "http:", host: "h" }), "ws://h/ws/x/");
});

/** A fake WebSocket: the tests play the server. */
function harness() {
  const sockets = [];
  class FakeSocket {
    constructor(url) {
      this.url = url;
      this.closed = false;
      sockets.push(this);
    }
    close() {
      this.closed = true;
    }
    serverSends(message) {
      this.onmessage?.({ data: JSON.stringify(message) });
    }
    serverCloses(code = 1006) {
      this.onclose?.({ code });
    }
  }
  const timers = [];
  const messages = [];
  const statuses = [];
  const feed = new LiveFeed("ws://h/ws/", {
    WebSocketImpl: FakeSocket,
    setTimer: (fn, ms) => timers.push({ fn, ms }) - 1,
    clearTimer: () => {},
    random: () => 1,
    onMessage: (m) => messages.push(m),
    onStatus: (s, d) => statuses.push([s, d.delayMs]),
  });
  const runTimer = () => timers.shift().fn();
  return { feed, sockets, timers, messages, statuses, runTimer };
}

describe("LiveFeed", () => {
  test("live on the snapshot; a dropped socket reconnects with growing delays", () => {
    const h = harness();
    h.feed.start();
    assert.equal(h.sockets.length, 1);
    h.sockets[0].serverSends({ type: "snapshot", seq: 1 });
    assert.deepEqual(h.statuses, [[LIVE, undefined]]);
    assert.equal(h.messages[0].seq, 1);

    h.sockets[0].serverCloses();
    h.runTimer();
    h.sockets[1].serverCloses(); // refused again, before any snapshot
    h.runTimer();
    assert.deepEqual(
      h.statuses.slice(1).map(([s, d]) => [s, d]),
      [
        [RECONNECTING, 500],
        [RECONNECTING, 1000],
      ],
    );
    // A snapshot resets the backoff.
    h.sockets[2].serverSends({ type: "snapshot", seq: 2 });
    h.sockets[2].serverCloses();
    assert.deepEqual(h.statuses.at(-1), [RECONNECTING, 500]);
  });

  test("resync drops the socket, ignores its late frames, and reconnects", () => {
    const h = harness();
    h.feed.start();
    const first = h.sockets[0];
    first.serverSends({ type: "snapshot", seq: 1 });
    h.feed.resync();
    assert.ok(first.closed);
    first.serverSends({ type: "event", event: { seq: 9 } }); // still in flight: ignored
    assert.equal(h.messages.length, 1);
    assert.equal(h.timers.length, 1);
    h.runTimer();
    assert.equal(h.sockets.length, 2);
    assert.equal(h.statuses.at(-1)[0], RECONNECTING);
  });

  test("stop: no reconnect", () => {
    const h = harness();
    h.feed.start();
    h.feed.stop();
    assert.ok(h.sockets[0].closed);
    assert.equal(h.timers.length, 0);
  });
});
