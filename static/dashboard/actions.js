// Staff actions on the group page (the panel exists only for staff: group.html).
//
// Every action is POST /api/admin/<action> with a JSON body and the CSRF header
// (docs/dashboard.md). Each first asks for confirmation in an in-page dialog (not
// window.confirm: automated browsers click its data-testid="confirm-action" button), then shows
// the server's answer in words in data-testid="action-result".

import { getJSON, postJSON } from "./common.js";
import { formatCount, shortId } from "./format.js";
import { kindConflict, spawnBody, spawnQuestion, spawnValues, wireSpawnForm } from "./spawn.js";

const SIMULATIONS_EVERY_MS = 3000;

/** A handoff group's outage switches (docs/dashboard.md, "handoff-switches"), in words. */
const SWITCH_NAMES = { partition_store: "partition store", discovery: "discovery" };

/** Reads a form's fields into the body of its action; throws Error(words) on bad input.
 *  `group.kind` is the shown group's kind ("classic", "handoff" or "consumer"; null while it does not
 *  exist). */
const BODIES = {
  // One form per switch: data-switch names it, data-to ("up" or "down") what a click does.
  "handoff-switches": (f, groupId, form) => ({ group_id: groupId, [form.dataset.switch]: form.dataset.to === "up" }),
  rebalance: (f, groupId) => ({ group_id: groupId }),
  "delete-group": (f, groupId) => ({ group_id: groupId }),
  cleanup: () => ({}),
  "remove-member": (f, groupId) => {
    if (!f.member_id.value) throw new Error("choose a member to remove");
    return { group_id: groupId, member_id: f.member_id.value };
  },
  spawn: (f, groupId, form, group) => {
    const body = spawnBody(spawnValues(f), groupId);
    const conflict = kindConflict(group.kind, body.protocol, groupId);
    if (conflict) throw new Error(conflict);
    return body;
  },
  partitions: (f) => {
    if (!f.topic.value.trim()) throw new Error("name the topic");
    return { topic: f.topic.value.trim(), partitions: Number(f.partitions.value) };
  },
  "reset-offsets": (f, groupId) => {
    const to = f.to.value === "offset" ? Number(f.offset.value) : f.to.value;
    if (f.to.value === "offset" && (f.offset.value === "" || !Number.isInteger(to) || to < 0)) {
      throw new Error("give the offset to reset to (a whole number, 0 or more)");
    }
    const body = { group_id: groupId, to };
    if (f.topic.value.trim()) body.topic = f.topic.value.trim();
    return body;
  },
  "delete-offsets": (f, groupId) => {
    const body = { group_id: groupId };
    if (f.topic.value.trim()) body.topic = f.topic.value.trim();
    return body;
  },
};

/** What the confirmation dialog asks, in words. */
const QUESTIONS = {
  rebalance: (b) => `Make group ${b.group_id} rebalance now? Every member will rejoin and partitions may move.`,
  "delete-group": (b) => `Delete group ${b.group_id} and its committed offsets? Only an Empty group can be deleted.`,
  cleanup: () => "Run offset expiry and the removal of expired empty groups now?",
  "remove-member": (b) => `Remove member ${shortId(b.member_id)} from ${b.group_id}? The group will rebalance without it.`,
  spawn: spawnQuestion,
  partitions: (b) => `Grow topic ${b.topic} to ${b.partitions} partitions? Partition counts only grow.`,
  "reset-offsets": (b) =>
    `Reset the committed offsets of ${b.group_id}${b.topic ? ` on ${b.topic}` : ""} to ${b.to}? The group must be Empty.`,
  "delete-offsets": (b) => `Delete the committed offsets of ${b.group_id}${b.topic ? ` on ${b.topic}` : ""}? The group must be Empty.`,
  simulation: (b) => `${b.do[0].toUpperCase()}${b.do.slice(1)} simulated consumer ${b.name}?`,
  "handoff-switches": (b) => {
    const [name, up] = Object.entries(b).find(([key]) => key in SWITCH_NAMES);
    return up
      ? `Bring the ${SWITCH_NAMES[name]} back up? Once both switches are up, every handoff group plans again.`
      : `Take the ${SWITCH_NAMES[name]} down (an outage)? Every handoff group of this coordinator keeps its current assignment until it is back.`;
  },
};

export function createActions(panel, { groupId, onSwitches = () => {} }) {
  const result = panel.querySelector('[data-testid="action-result"]');
  const dialog = panel.querySelector("dialog.confirm");
  const question = dialog.querySelector(".confirm-question");
  const removeSelect = panel.querySelector('[name="member_id"]');
  const topicsInput = panel.querySelector('form[data-action="spawn"] [name="topics"]');
  const assignorSelect = panel.querySelector('form[data-action="spawn"] [name="assignor"]');
  const protocolSelect = panel.querySelector('form[data-action="spawn"] [name="protocol"]');
  const spawnForm = wireSpawnForm(panel.querySelector('form[data-action="spawn"]'));
  const group = { kind: null }; // the live group's kind, for the spawn form's check
  const topicList = panel.querySelector("#known-topics");
  const simBody = panel.querySelector(".simulations tbody");
  let pending = null; // {action, body} awaiting confirmation
  let busy = false;

  function show(text, ok) {
    result.textContent = text;
    result.classList.toggle("is-ok", ok);
    result.classList.toggle("is-error", !ok);
  }

  function ask(action, body) {
    pending = { action, body };
    question.textContent = QUESTIONS[action](body);
    dialog.showModal();
  }

  async function run({ action, body }) {
    busy = true;
    panel.classList.add("is-busy");
    show(`${action}: sending…`, true);
    try {
      const answer = await postJSON(`/api/admin/${action}`, body);
      show(`${action}: ${answer.result || "done"}`, true);
      if (answer.switches) onSwitches(answer.switches);
    } catch (error) {
      show(`${action} failed: ${error.message}`, false);
    } finally {
      busy = false;
      panel.classList.remove("is-busy");
      if (action === "spawn" || action === "simulation") refreshSimulations();
    }
  }

  dialog.querySelector('[data-testid="confirm-action"]').addEventListener("click", () => {
    dialog.close();
    const chosen = pending;
    pending = null;
    if (!chosen) return;
    if (busy) show("another action is still waiting for its answer: try again in a moment", false);
    else run(chosen);
  });
  dialog.addEventListener("cancel", () => (pending = null)); // Escape closes it
  dialog.querySelector('[data-testid="cancel-action"]').addEventListener("click", () => {
    dialog.close();
    pending = null;
    show("cancelled: nothing was done", true);
  });

  // Each action is a form (button-only actions too, so Enter and clicks work the same way).
  for (const form of panel.querySelectorAll("form[data-action]")) {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const action = form.dataset.action;
      try {
        ask(action, BODIES[action](form.elements, groupId, form, group));
      } catch (error) {
        show(`${action}: ${error.message}`, false);
      }
    });
  }
  const resetTo = panel.querySelector('form[data-action="reset-offsets"] [name="to"]');
  const resetOffset = panel.querySelector('form[data-action="reset-offsets"] [name="offset"]');
  resetTo.addEventListener("change", () => {
    resetOffset.disabled = resetTo.value !== "offset";
  });

  // What the staff member chose themselves is no longer filled in from the group.
  for (const input of [topicsInput, assignorSelect, protocolSelect]) {
    input.addEventListener("input", () => (input.dataset.touched = "true"));
  }

  simBody.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-do]");
    if (button) ask("simulation", { name: button.dataset.name, do: button.dataset.do });
  });

  async function refreshSimulations() {
    if (document.hidden) return;
    let consumers;
    try {
      consumers = (await getJSON("/api/simulations")).consumers || [];
    } catch (error) {
      simBody.replaceChildren(messageRow(`Could not list simulated consumers: ${error.message}`));
      return;
    }
    const mine = consumers.filter((c) => c.spec && c.spec.group_id === groupId);
    if (!mine.length) {
      simBody.replaceChildren(messageRow("No simulated consumers in this group. Spawn some above."));
      return;
    }
    for (const tr of simBody.querySelectorAll("tr.message")) tr.remove();
    d3.select(simBody)
      .selectAll("tr")
      .data(mine, (c) => c.name)
      .join((enter) => {
        const tr = enter.append("tr");
        tr.append("th").attr("scope", "row").text((c) => c.name);
        for (let i = 0; i < 4; i++) tr.append("td");
        const buttons = tr.append("td").attr("class", "sim-buttons");
        for (const verb of ["pause", "resume", "stop", "kill"]) {
          buttons
            .append("button")
            .attr("type", "button")
            .attr("data-do", verb)
            .attr("data-name", (c) => c.name)
            .attr("data-testid", (c) => `sim-${verb}-${c.name}`)
            .attr("title", SIM_HELP[verb])
            .text(verb);
        }
        return tr;
      })
      .each(function (c) {
        const cells = this.children;
        cells[1].textContent = c.spec.behaviour;
        cells[2].textContent = c.error ? `${c.status}: ${c.error}` : c.status;
        cells[3].textContent = c.member_id ? shortId(c.member_id) : "—";
        cells[3].title = c.member_id || "";
        cells[4].textContent = `${c.assignment.length} partitions, ${formatCount(c.consumed)} consumed`;
      });
  }
  refreshSimulations();
  setInterval(refreshSimulations, SIMULATIONS_EVERY_MS);

  const switchForms = panel.querySelectorAll('form[data-action="handoff-switches"]');
  let shownMembers = null;
  let shownTopics = null;
  let shownProtocol = null;
  let shownKind;
  let shownSwitches = null;
  return {
    /** Keep the member select, the topic suggestions and the assignor (a newcomer must offer
     *  the group's protocol, or the coordinator refuses it: INCONSISTENT_GROUP_PROTOCOL) in
     *  step with the live group; so is the spawn form's protocol (kinds do not mix). */
    update(model) {
      const kind = model.exists ? model.kind : null;
      if (kind !== shownKind) {
        shownKind = group.kind = kind;
        if (kind && !protocolSelect.dataset.touched) spawnForm.setProtocol(kind);
      }
      if (model.switches !== shownSwitches) {
        // Each switch's button says how it is now; a click turns it the other way.
        shownSwitches = model.switches;
        for (const form of switchForms) {
          const up = !model.switches || model.switches[form.dataset.switch] !== false;
          form.dataset.to = up ? "down" : "up";
          const button = form.querySelector("button");
          button.textContent = `${SWITCH_NAMES[form.dataset.switch]}: ${up ? "up" : "down"}`;
          button.title = up ? "Reachable. Click to simulate an outage (take it down)." : "Unreachable. Click to bring it back up.";
          button.classList.toggle("is-down", !up);
        }
      }
      if (model.protocol !== shownProtocol) {
        shownProtocol = model.protocol;
        const known = [...assignorSelect.options].some((option) => option.value === model.protocol);
        if (known && !assignorSelect.dataset.touched) assignorSelect.value = model.protocol;
      }
      if (model.members !== shownMembers) {
        shownMembers = model.members;
        const chosen = removeSelect.value;
        const options = [new Option("choose a member…", "")];
        for (const id of model.members.keys()) options.push(new Option(shortId(id), id, false, id === chosen));
        removeSelect.replaceChildren(...options);
      }
      if (model.topics !== shownTopics) {
        shownTopics = model.topics;
        const names = Object.keys(model.topics).sort();
        topicList.replaceChildren(...names.map((name) => new Option(name)));
        if (!topicsInput.value && !topicsInput.dataset.touched) topicsInput.value = names.join(", ");
      }
    },
  };
}

const SIM_HELP = {
  pause: "Stop polling for records (it stays in the group and keeps its heartbeats)",
  resume: "Poll for records again",
  stop: "Close the consumer: it commits and leaves the group (a graceful leave)",
  kill: "Stop it dead: no goodbye, the coordinator notices when its session times out",
};

function messageRow(text) {
  const tr = document.createElement("tr");
  tr.className = "message";
  const td = document.createElement("td");
  td.colSpan = 6;
  td.className = "muted";
  td.textContent = text;
  tr.append(td);
  return tr;
}
