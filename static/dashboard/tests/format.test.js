import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  REMOVAL_REASONS,
  describeEvent,
  formatCount,
  formatDuration,
  memberHelp,
  removalReason,
  shortId,
} from "../format.js";
import * as ev from "./events.js";

test("every removal reason of the engine reads in plain words", () => {
  const engine = ["left", "session_timeout", "join_timeout", "rebalance_timeout", "sync_timeout", "fenced", "removed_by_admin", "group_max_size"];
  assert.deepEqual(Object.keys(REMOVAL_REASONS).sort(), engine.sort());
  assert.match(removalReason("session_timeout"), /session timeout/);
  assert.match(removalReason("removed_by_admin"), /removed by an admin/);
  assert.equal(removalReason("new_reason"), "new reason");
});

test("member ids shorten to the client id and a bit of the uuid", () => {
  assert.equal(shortId("orders-steady-1-5be79b4a-ce7a-4d91-9924-ca4544ae7d26"), "orders-steady-1·5be7");
  assert.equal(shortId("plain"), "plain");
  assert.equal(shortId(null), "—");
});

test("durations and counts", () => {
  assert.equal(formatDuration(7), "7 ms");
  assert.equal(formatDuration(3_210), "3.2 s");
  assert.equal(formatDuration(42_000), "42 s");
  assert.equal(formatDuration(245_000), "4 min 5 s");
  assert.equal(formatDuration(2 * 3600_000 + 180_000), "2 h 3 min");
  assert.equal(formatDuration(null), "—");
  assert.equal(formatCount(1234567), "1,234,567");
  assert.equal(formatCount(999), "999");
  assert.equal(formatCount(-1000), "-1,000");
  assert.equal(formatCount(0), "0");
  assert.equal(formatCount(null), "—");
});

test("events in words", () => {
  assert.equal(
    describeEvent(ev.memberRemoved("orders-1-5be79b4a-ce7a-4d91-9924-ca4544ae7d26", "session_timeout")).text,
    "orders-1·5be7 removed: session timeout: it stopped sending heartbeats",
  );
  assert.match(describeEvent(ev.memberJoined("m", { rejoined: true })).text, /^m rejoined for the rebalance/);
  assert.match(describeEvent(ev.memberJoined("m", { group_instance_id: "i-1" })).text, /static instance i-1/);
  assert.equal(
    describeEvent(ev.stateChanged("Stable", "PreparingRebalance", "admin requested a rebalance")).text,
    "Stable → PreparingRebalance: admin requested a rebalance",
  );
  assert.equal(
    describeEvent(
      ev.stateChanged("Stable", "PreparingRebalance", "removing member m-1 on heartbeat expiration", {
        cause: "session_timeout",
        cause_member_id: "m-1",
      }),
    ).text,
    "Stable → PreparingRebalance (cause: session timeout, member m-1): removing member m-1 on heartbeat expiration",
  );
  assert.match(describeEvent(ev.generationStarted(3, ["a", "b"])).text, /generation 3 started with 2 members; leader a/);
  assert.match(describeEvent(ev.generationStarted(4, [])).text, /no members/);
  const stored = ev.assignmentStored(5, { a: [["t", 0], ["t", 1]], b: [] });
  assert.equal(describeEvent(stored).text, "generation 5: 2 partitions assigned to 2 members");
  assert.match(describeEvent(stored, { revoked: 1 }).text, /1 partition revoked, waiting for the next round/);
  assert.match(describeEvent(ev.staticReplaced("i", "old", "new")).text, /static instance i came back as new/);
  assert.match(describeEvent(ev.groupRemoved()).text, /an admin deleted it/);
  assert.match(describeEvent(ev.offsetsRemoved([["t", 0]], "expired")).text, /expired/);
  assert.equal(describeEvent(ev.pendingRemoved("p", "joined")).kind, "pending");
});

test("a member's tooltip says how it is connected, when the coordinator knows", () => {
  const member = { id: "m-1", instanceId: null, clientId: "billing", clientHost: "/10.0.0.5" };
  const kafka = memberHelp({ ...member, connection: "kafka" }, { leader: false });
  assert.match(kafka, /client billing on \/10\.0\.0\.5/);
  assert.match(kafka, /connected over Kafka's wire protocol \(a real Kafka client\)/);
  assert.match(memberHelp({ ...member, connection: "simulated" }, { leader: false }), /in-process/);
  assert.doesNotMatch(memberHelp({ ...member, connection: null }, { leader: false }), /connected/);
});

test("a handoff group's events in words", async () => {
  const { describeEvent } = await import("../format.js");
  const closing = describeEvent({ type: "HandoffPartitionsClosing", member_id: "a", partitions: [["t", 1], ["t", 2]] });
  assert.deepEqual(closing, { kind: "assignment", text: "a must close t-1, t-2 (stop, commit, confirm)" });
  const plan = describeEvent({ type: "HandoffPlanMade", epoch: 3, assignment: { a: [["t", 0]], b: [["t", 1], ["t", 2]] } });
  assert.equal(plan.text, "plan 3: 3 partitions planned for 2 members");
  assert.equal(describeEvent({ type: "HandoffPartitionsGranted", member_id: "b", partitions: [["t", 1]] }).text, "b may start t-1: nobody else holds them now");
});

test("a consumer group's events in words, each of the recorded ones", () => {
  const fixture = JSON.parse(readFileSync(new URL("./fixtures/consumer.json", import.meta.url), "utf8"));
  for (const e of fixture.events) assert.notEqual(describeEvent(e).kind, "other", e.type);
  const at = (seq) => describeEvent(fixture.events.find((e) => e.seq === seq)).text;
  assert.equal(at(8), "group epoch 2 (cause: member joined by b): a new target assignment is due");
  assert.equal(at(9), "target assignment of epoch 2 (uniform): 6 partitions for 2 members");
  assert.equal(at(12), "a: Stable → unrevoked at epoch 1 (was 1)");
  assert.equal(at(13), "a must revoke t-3, t-4, t-5 (stop consuming, then say so in a heartbeat)");
  assert.equal(at(16), "b was given t-3, t-4, t-5 at epoch 2");
  assert.equal(at(11), "Stable → Reconciling (cause: member joined, member b): a new target moves partitions, or a static member is away (epoch -2)");
  const left = { type: "ConsumerStaticMemberLeft", member_id: "m", instance_id: "i-1" };
  assert.match(describeEvent(left).text, /static instance i-1\) left for a while \(epoch -2\)/);
});
