// The spawn form: simulated consumers of either group protocol (docs/dashboard.md, "Simulated
// consumers: the spawn body"), on the group page and in the overview's "New group".
//
// The pure part (the behaviours of each protocol, the action's body, the kind check and the
// question) is tested under Node; wireSpawnForm keeps a form's fields in step with its chosen
// protocol.

/** Most simulated consumers one spawn starts (the server's MAX_SPAWN). */
export const MAX_SPAWN = 50;

/** What each protocol's consumers may do, as webapp/simulation/consumer.py's BEHAVIOURS. */
export const BEHAVIOURS = {
  classic: [
    { name: "steady", title: "Consumes and commits forever" },
    { name: "slow", title: "Now and then too slow between polls: leaves and rejoins" },
    { name: "crash", title: "Stops dead after a while: the session times out" },
    { name: "flapping", title: "Leaves and joins again, over and over" },
    { name: "static_restart", title: "A static member that restarts without a rebalance (needs an instance id)" },
    { name: "graceful_leave", title: "Leaves properly after a while" },
  ],
  handoff: [
    { name: "steady", title: "Consumes what it was let start, and closes what it is asked to close, forever" },
    { name: "crash", title: "Stops dead after a while: its connection ends and it leaves at once" },
    { name: "flapping", title: "Leaves and joins again, over and over: its partitions move each time" },
    { name: "graceful_leave", title: "Leaves properly after a while: its partitions go to the others" },
    { name: "slow_close", title: "Takes a while to confirm each close: the group waits in Closing" },
  ],
};

export const PROTOCOLS = Object.keys(BEHAVIOURS);

/** The behaviours a protocol offers; throws Error(words) for an unknown protocol. */
export function behavioursFor(protocol) {
  const list = BEHAVIOURS[protocol];
  if (!list) throw new Error(`protocol must be ${PROTOCOLS.join(" or ")}, not “${protocol}”`);
  return list;
}

/**
 * The spawn action's body from a form's values ({protocol, behaviour, count, topics,
 * assignor, instanceId}: strings, as read from the form); throws Error(words) on bad input.
 * A handoff consumer has no assignor and no instance id (the coordinator plans), so neither
 * is sent for one.
 */
export function spawnBody(values, groupId) {
  if (typeof groupId !== "string" || !groupId.trim()) throw new Error("name the group");
  const protocol = values.protocol || "classic";
  const behaviours = behavioursFor(protocol);
  const behaviour = values.behaviour;
  if (!behaviours.some((b) => b.name === behaviour)) {
    throw new Error(`behaviour ${behaviour} does not apply to ${protocol} consumers; one of ${behaviours.map((b) => b.name).join(", ")}`);
  }
  const topics = String(values.topics ?? "")
    .split(/[\s,]+/)
    .filter(Boolean);
  if (!topics.length) throw new Error("name at least one topic to subscribe to");
  const text = String(values.count ?? "").trim();
  const count = Number(text);
  if (!text || !Number.isInteger(count) || count < 1 || count > MAX_SPAWN) {
    throw new Error(`how many: a whole number from 1 to ${MAX_SPAWN}`);
  }
  const body = { group_id: groupId, protocol, topics, behaviour, count };
  if (protocol === "classic") {
    body.assignor = values.assignor || "range";
    const instanceId = String(values.instanceId ?? "").trim();
    if (instanceId) body.instance_id = instanceId;
    else if (behaviour === "static_restart") throw new Error("static_restart needs an instance id");
  }
  return body;
}

/**
 * Why consumers of `protocol` cannot join group `groupId`, whose kind is `groupKind` ("classic",
 * "handoff", or null while there is no such group), or null when they can. Kinds do not mix:
 * the coordinator answers the other kind's requests with INCONSISTENT_GROUP_PROTOCOL.
 */
export function kindConflict(groupKind, protocol, groupId) {
  if (!groupKind || groupKind === protocol) return null;
  return (
    `group ${groupId} is a ${groupKind} group and kinds do not mix: the coordinator would refuse ` +
    `${protocol} consumers (INCONSISTENT_GROUP_PROTOCOL). Choose protocol ${groupKind}, or another group id.`
  );
}

/** The confirmation's question for a spawn body. */
export function spawnQuestion(b) {
  const what = `${b.count} simulated ${b.behaviour} consumer${b.count === 1 ? "" : "s"}`;
  if (b.protocol === "handoff") {
    return `Start ${what} in handoff group ${b.group_id} (topics ${b.topics.join(", ")})?`;
  }
  return (
    `Start ${what} in ${b.group_id} ` +
    `(topics ${b.topics.join(", ")}, assignor ${b.assignor}${b.instance_id ? `, instance id ${b.instance_id}` : ""})?`
  );
}

// ------------------------------------------------------------------ the form (browser only)

/** The values spawnBody reads, from a form's elements. */
export function spawnValues(elements) {
  return {
    protocol: elements.protocol.value,
    behaviour: elements.behaviour.value,
    count: elements.count.value,
    topics: elements.topics.value,
    assignor: elements.assignor.value,
    instanceId: elements.instance_id.value,
  };
}

/**
 * Keep a spawn form in step with its protocol select: the behaviour list offers that
 * protocol's behaviours (keeping the chosen one when it applies), and what is marked
 * `data-protocol="classic"` (the assignor, the instance id) is hidden and disabled for a
 * handoff consumer, and the other way round. Returns {setProtocol(protocol)}.
 */
export function wireSpawnForm(form) {
  const protocolSelect = form.elements.protocol;
  const behaviourSelect = form.elements.behaviour;
  let shown = null;

  function show(protocol) {
    if (protocol === shown) return;
    shown = protocol;
    const chosen = behaviourSelect.value;
    const options = behavioursFor(protocol).map(({ name, title }) => {
      const option = new Option(name, name, false, name === chosen);
      option.title = title;
      return option;
    });
    behaviourSelect.replaceChildren(...options);
    if (!options.some((option) => option.selected)) behaviourSelect.value = options[0].value;
    for (const node of form.querySelectorAll("[data-protocol]")) {
      const applies = node.dataset.protocol === protocol;
      node.hidden = !applies;
      for (const input of node.querySelectorAll("input, select")) input.disabled = !applies;
    }
  }

  protocolSelect.addEventListener("change", () => show(protocolSelect.value));
  show(protocolSelect.value);
  return {
    setProtocol(protocol) {
      protocolSelect.value = protocol;
      show(protocol);
    },
  };
}
