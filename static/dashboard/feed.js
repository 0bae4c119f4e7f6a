// The live feeds: a reconnecting websocket, the backoff between attempts, and gap detection.
//
// The server sends a snapshot on connect, then ordered deltas (docs/dashboard.md). A client
// that sees a gap in a group's sequence numbers, or loses its socket, reconnects and starts
// again from a fresh snapshot. No DOM use: WebSocket and the timer functions are injected so
// the Node tests can drive a fake socket.

export const BACKOFF_FIRST_MS = 500;
export const BACKOFF_MAX_MS = 10_000;

/** Milliseconds to wait before reconnect attempt `attempt` (0-based): 0.5 s doubling to 10 s,
 *  with jitter (between half and all of it) so that many pages dropped together by a server
 *  restart do not all come back at the same instant. */
export function backoffDelay(attempt, random = Math.random) {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** Math.max(0, attempt));
  return ceiling / 2 + (random() * ceiling) / 2;
}

/** Verdicts on an incoming event. */
export const APPLY = "apply";
export const DUPLICATE = "duplicate";
export const GAP = "gap";

/** One group's sequence: the `seq` of the last event held (the snapshot's to start with). */
export class GroupSequence {
  constructor(seq) {
    this.seq = seq;
  }

  /** APPLY (and remember it), DUPLICATE (already reflected: ignore) or GAP (events were
   *  missed: take a new snapshot). */
  accept(event) {
    if (event.seq <= this.seq) return DUPLICATE;
    if (event.prev_seq !== this.seq) return GAP;
    this.seq = event.seq;
    return APPLY;
  }
}

/** Every group's sequence on the all-groups feed. Its snapshot carries one global `seq`, not
 *  one per group, so a group's first event after it is accepted when its `prev_seq` is at or
 *  below the snapshot's (that previous event is in the snapshot) and is a gap above it. */
export class GroupsSequence {
  constructor(snapshotSeq) {
    this.snapshotSeq = snapshotSeq;
    this.perGroup = new Map();
  }

  accept(event) {
    if (event.seq <= this.snapshotSeq) return DUPLICATE;
    const held = this.perGroup.get(event.group_id);
    if (held !== undefined) {
      if (event.seq <= held) return DUPLICATE;
      if (event.prev_seq !== held) return GAP;
    } else if (event.prev_seq > this.snapshotSeq) {
      return GAP;
    }
    this.perGroup.set(event.group_id, event.seq);
    return APPLY;
  }
}

/** `ws://` or `wss://` URL of a feed path on the page's own host. */
export function feedUrl(path, location = globalThis.location) {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${path}`;
}

export const LIVE = "live";
export const RECONNECTING = "reconnecting";

/**
 * A websocket that keeps itself connected.
 *
 * onMessage(message) gets each parsed JSON frame; onStatus(status, detail) gets LIVE once a
 * snapshot arrived, RECONNECTING (detail: {delayMs}) whenever the socket is gone. The backoff
 * resets only on a snapshot, so a server that accepts and at once drops the socket still gets
 * growing delays.
 */
export class LiveFeed {
  constructor(url, { onMessage, onStatus, WebSocketImpl, setTimer, clearTimer, random } = {}) {
    this.url = url;
    this.onMessage = onMessage || (() => {});
    this.onStatus = onStatus || (() => {});
    this.WebSocketImpl = WebSocketImpl || globalThis.WebSocket;
    this.setTimer = setTimer || ((fn, ms) => setTimeout(fn, ms));
    this.clearTimer = clearTimer || ((id) => clearTimeout(id));
    this.random = random || Math.random;
    this.socket = null;
    this.attempt = 0;
    this.timer = null;
    this.stopped = false;
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    if (this.timer !== null) this.clearTimer(this.timer);
    this.timer = null;
    this.drop();
  }

  /** Drop the socket and reconnect: the caller saw a gap, a fresh snapshot mends it. */
  resync() {
    this.drop();
    this.scheduleReconnect();
  }

  connect() {
    this.timer = null;
    const socket = new this.WebSocketImpl(this.url);
    this.socket = socket;
    socket.onmessage = (frame) => {
      if (socket !== this.socket) return; // a frame from a socket already dropped
      let message;
      try {
        message = JSON.parse(frame.data);
      } catch {
        return; // not JSON: nothing the page can use
      }
      if (message.type === "snapshot") {
        this.attempt = 0;
        this.onStatus(LIVE, {});
      }
      if (message.type === "events") {
        // The server batches the events it had ready; the pages take them one by one.
        for (const event of message.events) this.onMessage({ type: "event", event });
        return;
      }
      this.onMessage(message);
    };
    socket.onclose = (close) => {
      if (socket !== this.socket) return;
      this.socket = null;
      this.scheduleReconnect(close && close.code);
    };
    // An error is always followed by a close; the close reconnects.
    socket.onerror = () => {};
  }

  drop() {
    const socket = this.socket;
    this.socket = null;
    if (socket) {
      socket.onmessage = socket.onclose = socket.onerror = null;
      try {
        socket.close();
      } catch {
        // already closed or never opened: nothing to do
      }
    }
  }

  scheduleReconnect(closeCode) {
    if (this.stopped || this.timer !== null) return;
    const delayMs = backoffDelay(this.attempt, this.random);
    this.attempt += 1;
    this.onStatus(RECONNECTING, { delayMs, closeCode });
    this.timer = this.setTimer(() => this.connect(), delayMs);
  }
}
