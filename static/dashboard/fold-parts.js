// What every group kind's fold builds its model with (fold.js, handoff-fold.js,
// consumer-fold.js): partition keys, member records, a list's last entry replaced.
//
// Pure module (no DOM, no d3), imported by the folds and by what draws their model.

/** The key of a partition everywhere on the page (tiles' keyed join, owner maps). */
export function partitionKey(topic, partition) {
  return `${topic}-${partition}`;
}

/** The keys of [[topic, partition], ...] (an event's or the API's list; null: none). */
export function partitionKeys(pairs) {
  return (pairs || []).map(([topic, partition]) => partitionKey(topic, partition));
}

/** The keys of a set of partition keys in topic, then partition order. */
export function sortedKeys(keys) {
  const split = (key) => {
    const cut = key.lastIndexOf("-");
    return [key.slice(0, cut), Number(key.slice(cut + 1))];
  };
  return [...keys].sort((a, b) => {
    const [ta, pa] = split(a);
    const [tb, pb] = split(b);
    return ta < tb ? -1 : ta > tb ? 1 : pa - pb;
  });
}

/** A member's lane record. */
export function memberRecord(id, fields = {}) {
  return {
    id,
    instanceId: fields.instanceId ?? null,
    clientId: fields.clientId ?? null,
    clientHost: fields.clientHost ?? null,
    // How it reached the coordinator: "kafka", "websocket", "simulated"; null if unknown.
    connection: fields.connection ?? null,
    sessionTimeoutMs: fields.sessionTimeoutMs ?? null,
    rebalanceTimeoutMs: fields.rebalanceTimeoutMs ?? null,
    subscription: fields.subscription ?? null,
    joinedMs: fields.joinedMs ?? null,
  };
}

/** `list` with its last entry replaced by `entry` (a new array). */
export function replaceLast(list, entry) {
  return [...list.slice(0, -1), entry];
}
