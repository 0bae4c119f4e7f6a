import assert from "node:assert/strict";
import { test } from "node:test";

import { ASSIGNORS, BEHAVIOURS, MAX_SPAWN, PROTOCOLS, behavioursFor, kindConflict, spawnBody, spawnQuestion } from "../spawn.js";

const classic = { protocol: "classic", behaviour: "steady", count: "2", topics: "orders, payments", assignor: "sticky", instanceId: "" };
const handoff = { protocol: "handoff", behaviour: "slow_close", count: "3", topics: " events ", assignor: "range", instanceId: "box" };
const consumer = { protocol: "consumer", behaviour: "slow_revoke", count: "2", topics: "orders", assignor: "uniform", instanceId: "" };

test("each protocol offers the behaviours the simulation runs for it", () => {
  assert.deepEqual(PROTOCOLS, ["classic", "handoff", "consumer"]);
  const names = (protocol) => behavioursFor(protocol).map((b) => b.name);
  assert.deepEqual(names("classic"), ["steady", "slow", "crash", "flapping", "static_restart", "graceful_leave"]);
  assert.deepEqual(names("handoff"), ["steady", "crash", "flapping", "graceful_leave", "slow_close"]);
  assert.deepEqual(names("consumer"), ["steady", "slow", "crash", "flapping", "static_restart", "graceful_leave", "slow_revoke"]);
  for (const { title } of Object.values(BEHAVIOURS).flat()) assert.ok(title.length > 10);
  assert.match(BEHAVIOURS.handoff.find((b) => b.name === "slow_close").title, /waits in Closing/);
  assert.match(BEHAVIOURS.consumer.find((b) => b.name === "slow_revoke").title, /until the coordinator fences it/);
  assert.throws(() => behavioursFor("eager"), /protocol must be classic, handoff or consumer/);
});

test("a classic body carries the assignor and, when given, the instance id", () => {
  assert.deepEqual(spawnBody(classic, "g"), {
    group_id: "g",
    protocol: "classic",
    topics: ["orders", "payments"],
    behaviour: "steady",
    count: 2,
    assignor: "sticky",
  });
  const statics = spawnBody({ ...classic, behaviour: "static_restart", instanceId: " box " }, "g");
  assert.equal(statics.instance_id, "box");
  assert.throws(() => spawnBody({ ...classic, behaviour: "static_restart" }, "g"), /static_restart needs an instance id/);
});

test("a handoff body has neither assignor nor instance id", () => {
  assert.deepEqual(spawnBody(handoff, "h"), {
    group_id: "h",
    protocol: "handoff",
    topics: ["events"],
    behaviour: "slow_close",
    count: 3,
  });
});

test("a consumer-protocol body carries the coordinator's assignor and, when given, the instance id", () => {
  assert.deepEqual(ASSIGNORS.consumer, ["uniform", "range"]);
  assert.deepEqual(spawnBody(consumer, "k"), {
    group_id: "k",
    protocol: "consumer",
    topics: ["orders"],
    behaviour: "slow_revoke",
    count: 2,
    assignor: "uniform",
  });
  assert.equal(spawnBody({ ...consumer, assignor: "" }, "k").assignor, "uniform", "the first is the default");
  const statics = spawnBody({ ...consumer, behaviour: "static_restart", instanceId: "box" }, "k");
  assert.equal(statics.instance_id, "box");
  assert.throws(() => spawnBody({ ...consumer, behaviour: "static_restart" }, "k"), /static_restart needs an instance id/);
  assert.throws(() => spawnBody({ ...consumer, assignor: "sticky" }, "k"), /assignor sticky does not apply to protocol consumer; one of uniform, range/);
  assert.throws(() => spawnBody({ ...classic, assignor: "uniform" }, "g"), /assignor uniform does not apply to protocol classic/);
  assert.equal(
    spawnQuestion(spawnBody(consumer, "k")),
    "Start 2 simulated slow_revoke consumers in consumer group k (topics orders, server assignor uniform)?",
  );
  assert.match(kindConflict("consumer", "classic", "k"), /^group k is a consumer group and kinds do not mix.*Choose protocol consumer/);
  assert.match(kindConflict("handoff", "consumer", "h"), /refuse consumer consumers .* Choose protocol handoff/);
});

test("a behaviour of the other protocol is refused in words", () => {
  assert.throws(() => spawnBody({ ...handoff, behaviour: "slow" }, "h"), /behaviour slow does not apply to handoff consumers; one of steady, crash/);
  assert.throws(() => spawnBody({ ...classic, behaviour: "slow_close" }, "g"), /slow_close does not apply to classic consumers/);
});

test("bad input: no group, no topic, a count out of range", () => {
  assert.throws(() => spawnBody(classic, ""), /name the group/);
  assert.throws(() => spawnBody(classic, "  "), /name the group/);
  assert.throws(() => spawnBody({ ...classic, topics: " , " }, "g"), /at least one topic/);
  for (const count of ["", "0", "1.5", String(MAX_SPAWN + 1), "two"]) {
    assert.throws(() => spawnBody({ ...classic, count }, "g"), /a whole number from 1 to 50/, `count ${JSON.stringify(count)}`);
  }
  assert.equal(spawnBody({ ...classic, count: String(MAX_SPAWN) }, "g").count, MAX_SPAWN);
  assert.equal(spawnBody({ ...classic, protocol: "" }, "g").protocol, "classic", "classic is the default");
});

test("kinds do not mix: the other kind's consumers are refused, a new group takes either", () => {
  assert.equal(kindConflict(null, "handoff", "new"), null);
  assert.equal(kindConflict(null, "classic", "new"), null);
  assert.equal(kindConflict("handoff", "handoff", "h"), null);
  assert.equal(kindConflict("classic", "classic", "g"), null);
  const refused = kindConflict("handoff", "classic", "h");
  assert.match(refused, /^group h is a handoff group and kinds do not mix/);
  assert.match(refused, /INCONSISTENT_GROUP_PROTOCOL/);
  assert.match(refused, /Choose protocol handoff/);
  assert.match(kindConflict("classic", "handoff", "g"), /refuse handoff consumers .* Choose protocol classic/);
});

test("the question says what will be started", () => {
  assert.equal(
    spawnQuestion(spawnBody(classic, "g")),
    "Start 2 simulated steady consumers in g (topics orders, payments, assignor sticky)?",
  );
  assert.equal(
    spawnQuestion(spawnBody({ ...classic, count: "1", behaviour: "static_restart", instanceId: "box" }, "g")),
    "Start 1 simulated static_restart consumer in g (topics orders, payments, assignor sticky, instance id box)?",
  );
  assert.equal(spawnQuestion(spawnBody(handoff, "h")), "Start 3 simulated slow_close consumers in handoff group h (topics events)?");
});
