// Member lanes and partition tiles.
//
// One box per member (data-testid="member-<id>") plus the unowned area on top
// (data-testid="unassigned-partitions"), and above them one layer of tiles
// (data-testid="partition-<topic>-<partition>", data-owner: the box that holds it). Positions
// come from layout.js, not from the DOM: boxes are placed with CSS transforms, tiles by left/top
// in the panel (placeAt), over the slot of their box. A tile whose owner changes takes its new
// slot and a Web Animation of its transform carries it there from where it was on screen
// (FLIP). The compositor runs those flights, not the page's main thread; a flying tile is raised
// (z-index) so that no resting tile paints above it, which would have to be composited too.
// The tiles are one keyed d3 join by "topic-partition": a render touches only tiles whose
// owner or place changed, never re-creates the 1,000 of them.
//
// A handoff group's lanes also say what each member must close and start, and its tiles what
// of a handoff they are in (data-handoff); a consumer group's (KIP-848) say each member's
// epoch, state and target, and its tiles whether they are being revoked or wait for their new
// owner (data-consumer).

import { TILE_REVOKING, TILE_WAITING as CONSUMER_WAITING } from "./consumer-fold.js";
import { RELEASED_REVOKED, lanesOf, ownerOf, partitionList } from "./fold.js";
import { sortedKeys } from "./fold-parts.js";
import { memberHelp, memberStateWords, shortId, tileHelp } from "./format.js";
import { TILE_CLOSING, TILE_STARTING, TILE_WAITING } from "./handoff-fold.js";
import { MIN_BOX_H, MIN_HANDOFF_BOX_H, stackLayout, tilePlaces } from "./layout.js";
import { EASE_CUBIC_IN_OUT, setText } from "./common.js";

const UNOWNED = ""; // the unowned area's box id (and its tiles' data-owner)
const MOVE_MS = 650;
const ease = d3.easeCubicInOut;

const translate = (x, y) => `translate(${x}px,${y}px)`;
const LISTED = 4; // a handoff member's sets: keys named in the lane before "+n more"

/** A set of partition keys in words, at most LISTED named. */
function listed(keys) {
  if (!keys.length) return "—";
  const more = keys.length > LISTED ? ` +${keys.length - LISTED}` : "";
  return keys.slice(0, LISTED).join(", ") + more;
}

/** A handoff member's sets in its lane (docs/engine.md, "Handoff groups"): what it must close
 *  and start, and how many it owns of those its plan assigns it. */
function setsLine(node, sets) {
  const toClose = sortedKeys(sets.toClose);
  const toStart = sortedKeys(sets.toStart);
  const owned = sortedKeys(sets.owned);
  const assignment = sortedKeys(sets.assignment);
  setText(node, `to close: ${listed(toClose)} · to start: ${listed(toStart)}`);
  node.dataset.toClose = toClose.join(" ");
  node.dataset.toStart = toStart.join(" ");
  node.title =
    `to close (stop, commit, confirm): ${toClose.join(", ") || "nothing"}\n` +
    `to start (once granted, confirm): ${toStart.join(", ") || "nothing"}\n` +
    `owned (may be consuming): ${owned.join(", ") || "nothing"}\n` +
    `assignment (the plan's target): ${assignment.join(", ") || "nothing"}`;
}

/** A consumer member's line in its lane (docs/engine.md, "Consumer groups"): its epoch and
 *  state, and what of its target it does not hold yet or must revoke. */
function consumerLine(node, m) {
  const target = sortedKeys(m.target);
  const assigned = sortedKeys(m.assigned);
  const revoking = sortedKeys(m.pendingRevocation);
  const awaited = target.filter((key) => !m.assigned.has(key));
  const parts = [`epoch ${m.memberEpoch} · ${memberStateWords(m.state)}`];
  if (revoking.length) parts.push(`revoking: ${listed(revoking)}`);
  if (awaited.length) parts.push(`awaiting: ${listed(awaited)}`);
  if (!revoking.length && !awaited.length) parts.push(`target: ${listed(target)}`);
  setText(node, parts.join(" · "));
  node.dataset.memberEpoch = m.memberEpoch;
  node.dataset.memberState = m.state;
  node.dataset.assigned = assigned.join(" ");
  node.dataset.target = target.join(" ");
  node.dataset.revoking = revoking.join(" ");
  node.title =
    `member epoch ${m.memberEpoch} (previous ${m.previousMemberEpoch ?? "?"}), state ${m.state}\n` +
    `assigned (may consume): ${assigned.join(", ") || "nothing"}\n` +
    `pending revocation (must stop, then say so): ${revoking.join(", ") || "nothing"}\n` +
    `target (the coordinator's assignment for it): ${target.join(", ") || "nothing"}`;
}

/** A tile's move in a consumer group, in words, for its tooltip. */
const CONSUMER_WORDS = {
  [TILE_REVOKING]: "revoking: its owner must stop consuming it and say so in a heartbeat before its new owner gets it",
  [CONSUMER_WAITING]: "waiting: revoked by its old owner; its new owner gets it at its next heartbeat",
};

/** A tile's handoff in words, for its tooltip. */
const HANDOFF_WORDS = {
  [TILE_CLOSING]: "closing: its owner must stop consuming it and commit before anyone else may start it",
  [TILE_STARTING]: "starting: granted to this member, which has not confirmed its start yet",
  [TILE_WAITING]: "waiting: closed by its old owner; its new owner is granted it once every close of the plan is confirmed",
};

/** A resting tile is placed by left/top, not by a transform: a transform makes each of the
 *  1,000 tiles a node of its own in the compositor's property trees, and every frame paid for
 *  sorting them into layers (Chromium's "Layerize", ~3.5 ms a frame under bench/dashboard.py). */
function placeAt(node, { x, y }) {
  node.style.left = `${x}px`;
  node.style.top = `${y}px`;
}

export function createLanes(root, { topicColor, onResize }) {
  let width = root.clientWidth;
  let drawn = false; // tiles animate from the second render on
  let deps = [];
  let model = null;
  // The tiles are one layer above the boxes, placed in the panel's coordinates: a tile that
  // changes owner gets new coordinates, it is not moved to another parent (re-parenting
  // hundreds of tiles made Chromium style and lay each out again).
  const tileLayer = root.appendChild(document.createElement("div"));
  tileLayer.className = "tiles";

  new ResizeObserver(() => {
    if (root.clientWidth !== width) {
      width = root.clientWidth;
      onResize();
    }
  }).observe(root);

  // What part of the lanes is on screen (the panel scrolls): tiles moving entirely outside it
  // jump instead of animating. Read in events, never during a render (that forces a layout).
  const scroller = root.parentElement;
  let view = { top: 0, height: window.innerHeight };
  scroller.addEventListener("scroll", () => (view = { ...view, top: scroller.scrollTop }), { passive: true });
  new ResizeObserver(([entry]) => (view = { ...view, height: entry.contentRect.height })).observe(scroller);
  const onScreen = (y0, y1) => Math.max(y0, y1) + 40 > view.top && Math.min(y0, y1) - 40 < view.top + view.height;

  // Offsets change every second: tooltips read them when shown, not on every change.
  root.addEventListener("mouseover", (event) => {
    const tile = event.target.closest(".tile");
    if (!tile || !model) return;
    const d = d3.select(tile).datum();
    const help = tileHelp({
      topic: d.topic,
      partition: d.partition,
      owner: ownerOf(model, d.key),
      released: model.released.get(d.key),
      offsets: model.offsets.get(d.key),
    });
    const handoff = model.handoffTiles.get(d.key);
    const consumer = model.consumerTiles.get(d.key);
    tile.title = handoff ? `${help}\n${HANDOFF_WORDS[handoff]}` : consumer ? `${help}\n${CONSUMER_WORDS[consumer]}` : help;
  });

  function renderBoxes(boxes, next) {
    const selection = d3
      .select(root)
      .selectChildren(".box")
      .data(boxes, (d) => d.id);
    const entered = selection
      .enter()
      .insert("div", ".tiles")
      .attr("class", (d) => (d.id === UNOWNED ? "box unowned" : "box lane"))
      .attr("data-box", (d) => d.id)
      .attr("data-testid", (d) => (d.id === UNOWNED ? "unassigned-partitions" : `member-${d.id}`))
      .each(function (d) {
        const head = d3.select(this).append("div").attr("class", "box-head");
        if (d.id === UNOWNED) {
          head.append("span").attr("class", "box-name").text("Unassigned / revoked");
          head.append("span").attr("class", "box-note");
          head.attr(
            "title",
            "Partitions with no owner: revoked in the first round of a cooperative rebalance, left behind by a member that went away, or never assigned. The next assignment gives them out.",
          );
        } else {
          head.append("span").attr("class", "box-name");
          head.append("span").attr("class", "badge badge-leader").attr("title", "The leader computes the assignment in each rebalance").text("leader");
          head.append("span").attr("class", "badge badge-static");
          head.append("span").attr("class", "box-note");
          head.append("span").attr("class", "handoff-sets").attr("data-testid", `handoff-sets-${d.id}`);
          head.append("span").attr("class", "consumer-member").attr("data-testid", `consumer-member-${d.id}`);
        }
      });
    entered.merge(selection).each(function (d) {
      const place = next.boxes.get(d.id);
      if (this.__y !== place.y) {
        this.__y = place.y;
        this.style.transform = `translateY(${place.y}px)`;
      }
      if (this.__h !== place.height) {
        this.__h = place.height;
        this.style.height = `${place.height}px`;
      }
      const head = this.firstChild;
      if (d.id === UNOWNED) {
        setText(head.lastChild, d.keys.length ? `${d.keys.length} waiting` : "none");
        return;
      }
      const m = d.member;
      const isLeader = model.leader === d.id;
      if (this.__member !== m || this.__leader !== isLeader) {
        this.__member = m;
        this.__leader = isLeader;
        setText(head.children[0], shortId(d.id));
        head.children[1].hidden = !isLeader;
        head.children[2].hidden = !m.instanceId;
        setText(head.children[2], m.instanceId ? `static: ${m.instanceId}` : "");
        head.title = memberHelp(m, { leader: isLeader });
        this.classList.toggle("is-leader", isLeader);
      }
      const sets = model.handoff.get(d.id);
      // A handoff member: what it owns (its lane's tiles) against what its plan assigns it.
      const assigned = sets ? ` · ${sets.assignment.size} assigned` : "";
      setText(head.children[3], `${d.keys.length} partition${d.keys.length === 1 ? "" : "s"}${sets ? " owned" : ""}${assigned}`);
      head.children[4].hidden = !sets;
      if (sets && this.__sets !== sets) {
        this.__sets = sets;
        setsLine(head.children[4], sets);
      }
      const consumer = model.consumer.get(d.id);
      head.children[5].hidden = !consumer;
      if (consumer && this.__consumer !== consumer) {
        this.__consumer = consumer;
        consumerLine(head.children[5], consumer);
      }
    });
    return selection.exit(); // removed once their tiles have moved out
  }

  function renderTiles(partitions, places, animate) {
    const moving = new Map(); // tile node → {from, to}
    const tiles = d3
      .select(tileLayer)
      .selectChildren(".tile")
      .data(partitions, (d) => d.key);
    tiles.exit().remove();
    tiles
      .enter()
      .append("div")
      .attr("class", "tile")
      .attr("data-testid", (d) => `partition-${d.key}`)
      .style("--topic", (d) => topicColor(d.topic))
      .text((d) => d.partition)
      .merge(tiles)
      .each(function (d) {
        const place = places.get(d.key);
        const owner = place.box;
        const released = owner === UNOWNED ? model.released.get(d.key) : undefined;
        const handoff = model.handoffTiles.get(d.key) ?? "";
        const consumer = model.consumerTiles.get(d.key) ?? "";
        const moved = this.__box !== owner || this.__slot !== place.slot;
        if (this.__box !== owner || this.__released !== released || this.__handoff !== handoff || this.__consumer !== consumer) {
          this.setAttribute("data-owner", owner);
          this.setAttribute("data-handoff", handoff);
          this.setAttribute("data-consumer", consumer);
          this.__released = released;
          this.__handoff = handoff;
          this.__consumer = consumer;
          const waiting = handoff === TILE_WAITING || consumer === CONSUMER_WAITING;
          this.classList.toggle("is-unowned", owner === UNOWNED && !waiting);
          this.classList.toggle("is-revoked", released === RELEASED_REVOKED);
          this.classList.toggle("is-closing", handoff === TILE_CLOSING);
          this.classList.toggle("is-starting", handoff === TILE_STARTING);
          this.classList.toggle("is-waiting", waiting);
          this.classList.toggle("is-revoking", consumer === TILE_REVOKING);
          const help = tileHelp({ topic: d.topic, partition: d.partition, owner, released });
          const words = handoff ? HANDOFF_WORDS[handoff] : consumer ? CONSUMER_WORDS[consumer] : null;
          this.title = words ? `${help}\n${words}` : help;
        }
        const to = { x: place.ax, y: place.ay };
        const placed = this.__to; // where its last render put it (undefined: a new tile)
        this.__box = owner;
        this.__slot = place.slot;
        this.__to = to;
        if (animate && placed && moved && onScreen(this.__y, to.y)) {
          moving.set(this, { from: { x: this.__x, y: this.__y }, to });
        } else if (!placed || placed.x !== to.x || placed.y !== to.y) {
          // New, moving off screen, or carried along by its box (a box above it changed size).
          rest(this, to);
        }
      });
    const now = performance.now();
    for (const [node, { from, to }] of moving) {
      // FLIP: the tile takes its new place at once and an animation of its transform carries
      // it there from where it was drawn.
      const at = flightPosition(node, now) ?? from;
      if (node.__flight) node.__flight.animation.cancel();
      placeAt(node, to);
      node.__x = to.x;
      node.__y = to.y;
      node.classList.add("is-flying");
      const animation = node.animate([{ transform: translate(at.x - to.x, at.y - to.y) }, { transform: "none" }], {
        duration: MOVE_MS,
        easing: EASE_CUBIC_IN_OUT,
      });
      node.__flight = { animation, at, to, start: now };
      animation.onfinish = () => land(node);
    }
  }

  /** Where a flying tile is drawn now (undefined: it is not flying). */
  function flightPosition(node, now) {
    const f = node.__flight;
    if (!f) return undefined;
    const t = ease(Math.min(1, (now - f.start) / MOVE_MS));
    return { x: f.at.x + (f.to.x - f.at.x) * t, y: f.at.y + (f.to.y - f.at.y) * t };
  }

  function land(node) {
    node.__flight = null;
    node.classList.remove("is-flying");
  }

  /** Put `node` in its place at once, ending any flight. */
  function rest(node, to) {
    if (node.__flight) {
      node.__flight.animation.cancel();
      land(node);
    }
    node.__x = to.x;
    node.__y = to.y;
    placeAt(node, to);
  }

  /** Draw `next` (a fold.js model); nothing to do unless what the lanes show changed. */
  function update(next, { animate }) {
    const nextDeps = [
      next.members,
      next.owners,
      next.released,
      next.topics,
      next.offsets.size,
      next.leader,
      next.handoff,
      next.handoffTiles,
      next.consumer,
      next.consumerTiles,
      width,
    ];
    model = next;
    if (nextDeps.every((d, i) => d === deps[i])) return;
    deps = nextDeps;
    const partitions = partitionList(next);
    const { lanes, unowned } = lanesOf(next, partitions);
    const boxes = [{ id: UNOWNED, keys: unowned }, ...lanes];
    const nextLayout = stackLayout(
      boxes.map((b) => ({ id: b.id, count: b.keys.length })),
      width,
      { minBoxHeight: next.kind === "handoff" || next.kind === "consumer" ? MIN_HANDOFF_BOX_H : MIN_BOX_H },
    );
    const places = tilePlaces(nextLayout, boxes);
    root.style.height = `${nextLayout.height}px`;
    root.classList.toggle("is-narrow", nextLayout.narrow);
    const leaving = renderBoxes(boxes, nextLayout);
    renderTiles(partitions, places, animate && drawn);
    leaving.remove();
    drawn = true;
  }

  return { update };
}
