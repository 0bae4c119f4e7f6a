// What both pages share in the browser: the connection badge, one render per animation frame,
// the benchmark's hooks, and JSON requests with Django's CSRF token.

import { LIVE } from "./feed.js";

/** The test and benchmark hooks: window.__rebalanceLab = {lastAppliedSeq, renderedSeq,
 *  latenciesMs}. latenciesMs gets, for every event applied, the wall time from the engine's
 *  timestamp (at_ms) to the end of the first frame that rendered it. */
const MAX_LATENCIES = 200_000;

export class LabHooks {
  constructor() {
    this.hooks = window.__rebalanceLab = { lastAppliedSeq: 0, renderedSeq: 0, latenciesMs: [] };
    this.unrendered = []; // at_ms of events applied since the last frame
  }

  applied(event) {
    this.hooks.lastAppliedSeq = event.seq;
    this.unrendered.push(event.at_ms);
  }

  /** Called at the end of a frame's render: the DOM now reflects everything applied. */
  rendered() {
    const hooks = this.hooks;
    hooks.renderedSeq = hooks.lastAppliedSeq;
    if (!this.unrendered.length) return;
    const now = Date.now();
    const latencies = hooks.latenciesMs; // the same array always: the benchmark empties it
    for (const atMs of this.unrendered) latencies.push(now - atMs);
    this.unrendered.length = 0;
    if (latencies.length > MAX_LATENCIES) latencies.splice(0, latencies.length - MAX_LATENCIES / 2);
  }

  /** A snapshot replaced the model: what was applied before it needs no latency. */
  resetTo(seq) {
    this.hooks.lastAppliedSeq = seq;
    this.unrendered.length = 0;
  }
}

/** Runs `render` at most once per animation frame, however many times it is requested. */
export class FrameScheduler {
  constructor(render) {
    this.render = render;
    this.pending = false;
  }

  request() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.render();
    });
  }
}

/** d3.easeCubicInOut as a CSS easing, for Web Animations that go with d3's. */
export const EASE_CUBIC_IN_OUT = "cubic-bezier(0.65, 0, 0.35, 1)";

/** A rate limit for a redraw: `due()` says whether it may run now (at most once per
 *  `everyMs`); when it may not, `request` is called once it may (to ask for a frame). */
export class Every {
  constructor(everyMs, request) {
    this.everyMs = everyMs;
    this.request = request;
    this.at = -Infinity;
    this.timer = null;
  }

  due() {
    const now = performance.now();
    const wait = this.everyMs - (now - this.at);
    if (wait <= 0) {
      this.at = now;
      return true;
    }
    if (this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.request();
      }, wait);
    }
    return false;
  }
}

/** The header's badge: `live` or `reconnecting` (with when the next attempt is). */
export function showConnection(status, detail = {}) {
  const badge = document.querySelector('[data-testid="connection-status"]');
  if (!badge) return;
  badge.hidden = false;
  badge.textContent = status;
  badge.classList.toggle("is-live", status === LIVE);
  badge.classList.toggle("is-reconnecting", status !== LIVE);
  badge.title =
    status === LIVE
      ? "Connected: the page follows the coordinator live."
      : `Connection lost; trying again${detail.delayMs ? ` in ${(detail.delayMs / 1000).toFixed(1)} s` : ""}. ` +
        "The page catches up from a fresh snapshot when it is back.";
  document.body.classList.toggle("is-disconnected", status !== LIVE);
}

export function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.content : "";
}

/** An error with the words the server gave (JSON `error`, string or {message}) or its status. */
export class RequestError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function readJSON(response) {
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null; // an HTML error page (a CSRF failure, a proxy): described by its status
  }
  if (!response.ok || (body && body.ok === false)) {
    const error = body && body.error;
    const words = typeof error === "string" ? error : error && error.message;
    throw new RequestError(response.status, words || `the server answered ${response.status} ${response.statusText}`);
  }
  return body;
}

export async function getJSON(url) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  return readJSON(response);
}

export async function postJSON(url, body) {
  const response = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
    body: JSON.stringify(body),
  });
  return readJSON(response);
}

/** Set an element's text only when it changes (a write costs style work even when equal), in
 *  place when the element holds one text node: setting textContent replaces that node, and
 *  Chromium then takes the old one out of the layout tree and puts a new one in. */
export function setText(node, text) {
  const value = String(text);
  const only = node.firstChild;
  if (only !== null && only === node.lastChild && only.nodeType === Node.TEXT_NODE) {
    if (only.data !== value) only.data = value;
  } else if (node.textContent !== value) {
    node.textContent = value;
  }
}

/** One colour per topic, stable for the page's life (topics are named in sorted order). */
export function topicColors() {
  const palette = d3.schemeTableau10;
  const assigned = new Map();
  return (topic) => {
    if (!assigned.has(topic)) assigned.set(topic, palette[assigned.size % palette.length]);
    return assigned.get(topic);
  };
}
