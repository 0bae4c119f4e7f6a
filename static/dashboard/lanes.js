// Member lanes and partition tiles.
//
// One box per member (data-testid="member-<id>") plus the unowned area on top
// (data-testid="unassigned-partitions"); each tile (data-testid="partition-<topic>-<partition>",
// data-owner) is a child of the box that holds it. Positions come from layout.js, not from the
// DOM: boxes are placed with CSS transforms, tiles by left/top in their box (placeAt). A tile
// whose owner changes is moved into its new box and a d3 transition of a transform carries it
// from where it was on screen to its new slot (FLIP); the transform goes when it lands.
// The tiles are one keyed d3 join by "topic-partition": a render touches only tiles whose
// owner or slot changed, never re-creates the 1,000 of them.

import { RELEASED_REVOKED, lanesOf, ownerOf, partitionList } from "./fold.js";
import { memberHelp, shortId, tileHelp } from "./format.js";
import { stackLayout, tilePlaces } from "./layout.js";
import { setText } from "./common.js";

const UNOWNED = ""; // the unowned area's box id (and its tiles' data-owner)
const MOVE_MS = 650;

const translate = (x, y) => `translate(${x}px,${y}px)`;

/** A resting tile is placed by left/top, not by a transform: a transform makes each of the
 *  1,000 tiles a node of its own in the compositor's property trees, and every frame paid for
 *  sorting them into layers (Chromium's "Layerize", ~3.5 ms a frame under bench/dashboard.py). */
function placeAt(node, { x, y }) {
  node.style.left = `${x}px`;
  node.style.top = `${y}px`;
}

export function createLanes(root, { topicColor, onResize }) {
  let width = root.clientWidth;
  let layout = null; // the layout of the last render
  let deps = [];
  let model = null;
  const boxNodes = new Map(); // box id → its element

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
    tile.title = tileHelp({
      topic: d.topic,
      partition: d.partition,
      owner: ownerOf(model, d.key),
      released: model.released.get(d.key),
      offsets: model.offsets.get(d.key),
    });
  });

  function renderBoxes(boxes, next) {
    const selection = d3
      .select(root)
      .selectChildren(".box")
      .data(boxes, (d) => d.id);
    const entered = selection
      .enter()
      .append("div")
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
        }
      });
    boxNodes.clear();
    entered.merge(selection).each(function (d) {
      boxNodes.set(d.id, this);
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
      setText(head.children[3], `${d.keys.length} partition${d.keys.length === 1 ? "" : "s"}`);
    });
    return selection.exit(); // removed once their tiles have moved out
  }

  function renderTiles(partitions, places, next, animate) {
    const moving = new Map(); // tile node → {from, to}
    const tiles = d3
      .select(root)
      .selectAll(".tile")
      .data(partitions, (d) => d.key);
    tiles.exit().remove();
    // New tiles are created unattached: enter.append() would insert them next to their
    // neighbours in data order, but those live in other boxes. Each goes to its box below.
    const created = tiles
      .enter()
      .data()
      .map((d) => {
        const node = document.createElement("div");
        node.__data__ = d;
        return node;
      });
    d3.selectAll(created)
      .attr("class", "tile")
      .attr("data-testid", (d) => `partition-${d.key}`)
      .style("--topic", (d) => topicColor(d.topic))
      .text((d) => d.partition);
    d3.selectAll([...tiles.nodes(), ...created]).each(function (d) {
      const place = places.get(d.key);
      const owner = place.box;
      const released = owner === UNOWNED ? model.released.get(d.key) : undefined;
      if (this.getAttribute("data-owner") !== owner || this.__released !== released) {
        this.setAttribute("data-owner", owner);
        this.__released = released;
        this.classList.toggle("is-revoked", released === RELEASED_REVOKED);
        this.title = tileHelp({ topic: d.topic, partition: d.partition, owner, released });
      }
      let from = null; // where the tile is on screen now, in its new box's coordinates
      if (this.__box !== owner) {
        if (this.__box !== undefined && layout && layout.boxes.has(this.__box)) {
          const oldY = layout.boxes.get(this.__box).y;
          from = { x: this.__x, y: oldY + this.__y - next.boxes.get(owner).y };
        }
        boxNodes.get(owner).appendChild(this);
        this.__box = owner;
      } else if (this.__x !== place.x || this.__y !== place.y) {
        from = { x: this.__x, y: this.__y };
      } else {
        return;
      }
      const boxY = next.boxes.get(owner).y;
      if (animate && from && onScreen(boxY + from.y, boxY + place.y)) {
        moving.set(this, { from, to: place });
      } else {
        d3.select(this).interrupt("move");
        this.__x = place.x;
        this.__y = place.y;
        placeAt(this, place);
        this.style.transform = "";
      }
    });
    if (!moving.size) return;
    // Boxes paint in order, so a box receiving tiles is raised while they fly, or they would
    // pass under the boxes below their starting point.
    const nodes = [...moving.keys()];
    d3.selectAll(nodes).interrupt("move");
    for (const node of nodes) {
      // FLIP: the tile takes its new place at once and a transform carries it there from
      // where it was drawn; the transform goes when it lands.
      const { from, to } = moving.get(node);
      placeAt(node, to);
      node.style.transform = translate(from.x - to.x, from.y - to.y);
      const box = node.parentNode;
      box.__arrivals = (box.__arrivals || 0) + 1;
      box.classList.add("is-receiving");
      node.__arrivingIn = box;
    }
    const landed = function () {
      const box = this.__arrivingIn;
      this.__arrivingIn = null;
      if (box && --box.__arrivals === 0) box.classList.remove("is-receiving");
    };
    // One transition for all the tiles that move: a single shared timer, not one per tile.
    // (The tiles keep their bound partition: the keyed join reads it back next render.)
    d3.selectAll(nodes)
      .transition("move")
      .duration(MOVE_MS)
      .ease(d3.easeCubicInOut)
      .styleTween("transform", function () {
        const { from, to } = moving.get(this);
        return (t) => {
          this.__x = from.x + (to.x - from.x) * t;
          this.__y = from.y + (to.y - from.y) * t;
          return translate(this.__x - to.x, this.__y - to.y);
        };
      })
      .on("end", function () {
        this.style.transform = "";
        landed.call(this);
      })
      .on("interrupt cancel", landed);
  }

  /** Draw `next` (a fold.js model); nothing to do unless what the lanes show changed. */
  function update(next, { animate }) {
    const nextDeps = [next.members, next.owners, next.released, next.topics, next.offsets.size, next.leader, width];
    model = next;
    if (nextDeps.every((d, i) => d === deps[i])) return;
    deps = nextDeps;
    const partitions = partitionList(next);
    const { lanes, unowned } = lanesOf(next, partitions);
    const boxes = [{ id: UNOWNED, keys: unowned }, ...lanes];
    const nextLayout = stackLayout(
      boxes.map((b) => ({ id: b.id, count: b.keys.length })),
      width,
    );
    const places = tilePlaces(nextLayout, boxes);
    root.style.height = `${nextLayout.height}px`;
    root.classList.toggle("is-narrow", nextLayout.narrow);
    const leaving = renderBoxes(boxes, nextLayout);
    renderTiles(partitions, places, nextLayout, animate && layout !== null);
    leaving.remove();
    layout = nextLayout;
  }

  return { update };
}
