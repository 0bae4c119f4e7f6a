// The spawn form: simulated consumers of any of the three group protocols (docs/dashboard.md,
// "Simulated consumers: the spawn body"), on the group page and in the overview's "New group".
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
  consumer: [
    { name: "steady", title: "Consumes and commits forever; reconciles to each new assignment" },
    { name: "slow", title: "Now and then too slow between polls: leaves (poll timeout) and joins again" },
    { name: "crash", title: "Stops dead after a while: the coordinator fences it when its session runs out" },
    { name: "flapping", title: "Leaves and joins again, over and over" },
    { name: "static_restart", title: "A static member that leaves with epoch -2 and comes back with its instance id: no rebalance (needs an instance id)" },
    { name: "graceful_leave", title: "Leaves properly after a while" },
    { name: "slow_revoke", title: "Holds each revocation past its rebalance timeout: the group waits in Reconciling until the coordinator fences it; it loses everything and joins again" },
  ],
};

/** The assignors each protocol's consumers may name: the client's for classic, the
 *  coordinator's (server-side) for consumer; a handoff group's coordinator plans alone. */
export const ASSIGNORS = {
  classic: ["range", "roundrobin", "sticky", "cooperative-sticky"],
  handoff: [],
  consumer: ["uniform", "range"],
};

export const PROTOCOLS = Object.keys(BEHAVIOURS);

/** The behaviours a protocol offers; throws Error(words) for an unknown protocol. */
export function behavioursFor(protocol) {
  const list = BEHAVIOURS[protocol];
  if (!list) {
    const names = `${PROTOCOLS.slice(0, -1).join(", ")} or ${PROTOCOLS.at(-1)}`;
    throw new Error(`protocol must be ${names}, not “${protocol}”`);
  }
  return list;
}

/**
 * The spawn action's body from a form's values ({protocol, behaviour, count, topics,
 * assignor, instanceId}: strings, as read from the form); throws Error(words) on bad input.
 * A handoff consumer has no assignor and no instance id (the coordinator plans), so neither
 * is sent for one; a consumer-protocol consumer's assignor is the coordinator's (uniform or
 * range).
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
  const assignors = ASSIGNORS[protocol];
  if (assignors.length) {
    const assignor = values.assignor || assignors[0];
    if (!assignors.includes(assignor)) {
      throw new Error(`assignor ${assignor} does not apply to protocol ${protocol}; one of ${assignors.join(", ")}`);
    }
    body.assignor = assignor;
    const instanceId = String(values.instanceId ?? "").trim();
    if (instanceId) body.instance_id = instanceId;
    else if (behaviour === "static_restart") throw new Error("static_restart needs an instance id");
  }
  return body;
}

/**
 * Why consumers of `protocol` cannot join group `groupId`, whose kind is `groupKind` ("classic",
 * "handoff", "consumer", or null while there is no such group), or null when they can. Kinds do not mix:
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
  if (b.protocol === "consumer") {
    return (
      `Start ${what} in consumer group ${b.group_id} ` +
      `(topics ${b.topics.join(", ")}, server assignor ${b.assignor}${b.instance_id ? `, instance id ${b.instance_id}` : ""})?`
    );
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
 * Keep a spawn form in step with its protocol select: the behaviour and assignor lists offer
 * that protocol's (keeping the chosen behaviour when it applies; the assignor starts at the
 * protocol's first), and what is marked
 * `data-protocol="…"` (space-separated protocols: the assignor and instance id are
 * `"classic consumer"`) is hidden and disabled for the other protocols. Returns
 * {setProtocol(protocol)}.
 */
export function wireSpawnForm(form) {
  const protocolSelect = form.elements.protocol;
  const behaviourSelect = form.elements.behaviour;
  const assignorSelect = form.elements.assignor;
  let shown = null;

  function fill(select, entries, keep) {
    const chosen = keep ? select.value : null;
    const options = entries.map(({ name, title }) => {
      const option = new Option(name, name, false, name === chosen);
      if (title) option.title = title;
      return option;
    });
    select.replaceChildren(...options);
    if (options.length && !options.some((option) => option.selected)) select.value = options[0].value;
  }

  function show(protocol) {
    if (protocol === shown) return;
    shown = protocol;
    fill(behaviourSelect, behavioursFor(protocol), true);
    // The protocol's default assignor: a classic "range" is the client's, not the coordinator's.
    if (ASSIGNORS[protocol].length) fill(assignorSelect, ASSIGNORS[protocol].map((name) => ({ name })), false);
    for (const node of form.querySelectorAll("[data-protocol]")) {
      const applies = node.dataset.protocol.split(" ").includes(protocol);
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
