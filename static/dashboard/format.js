// Words and numbers for people who do not know Kafka: event descriptions, removal reasons,
// durations, short member ids. Pure module.

/** Why a member left, in plain words (MemberRemoved.reason, a RemovalReason value). */
export const REMOVAL_REASONS = {
  left: "left the group (it said goodbye)",
  session_timeout: "session timeout: it stopped sending heartbeats",
  join_timeout: "join timeout: it never came back to finish joining",
  rebalance_timeout: "did not rejoin in time for the rebalance",
  sync_timeout: "sync timeout: it never collected its assignment",
  fenced: "fenced: its static instance came back under a new member id",
  removed_by_admin: "removed by an admin",
  group_max_size: "turned away: the group is at its maximum size",
};

/** Why a pending member stopped being pending (PendingMemberRemoved.reason). */
const PENDING_REASONS = {
  joined: "it joined with its new member id",
  session_timeout: "it never came back (session timeout)",
  left: "it left before joining",
  group_max_size: "the group is at its maximum size",
};

const OFFSET_REMOVAL_REASONS = {
  expired: "they expired (retention)",
  deleted: "an admin deleted them",
  group_deleted: "the group was deleted",
};

const GROUP_REMOVAL_REASONS = {
  deleted: "an admin deleted it",
  expired: "it was empty with no offsets left, so it expired",
  offsets_deleted: "its last committed offsets were deleted",
};

export function removalReason(reason) {
  return REMOVAL_REASONS[reason] || (reason ? reason.replaceAll("_", " ") : "unknown reason");
}

/** Member ids are "<client id>-<uuid>": keep the client id and the uuid's first 4 digits. */
export function shortId(memberId) {
  if (!memberId) return "—";
  const m = /^(.*)-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.exec(memberId);
  return m ? `${m[1]}·${m[2].slice(0, 4)}` : memberId;
}

/** "850 ms", "3.2 s", "4 min 5 s", "2 h 3 min". */
export function formatDuration(ms) {
  if (ms == null || !Number.isFinite(ms)) return "—";
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** 1234567 → "1,234,567"; null → "—". (Not toLocaleString: it is slow enough to matter for
 *  thousands of cells a second.) */
export function formatCount(n) {
  if (n == null || !Number.isFinite(n)) return "—";
  const digits = String(Math.abs(Math.round(n))).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return n < 0 ? `-${digits}` : digits;
}

/** "14:03:07.250" in the viewer's time zone. */
export function formatClock(ms) {
  if (ms == null) return "—";
  const d = new Date(ms);
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/** [[topic, partition], ...] in words: "orders-1, orders-2" (the first few). */
function partitionWords(pairs) {
  const names = pairs.map(([topic, partition]) => `${topic}-${partition}`);
  return names.length > 6 ? `${names.slice(0, 6).join(", ")} and ${names.length - 6} more` : names.join(", ");
}

function countPartitions(partitions) {
  let n = 0;
  for (const pairs of Object.values(partitions || {})) n += pairs.length;
  return n;
}

/** A rebalance cause (a RebalanceCause value) in words: "member joined". */
export function causeWords(cause) {
  return cause ? cause.replaceAll("_", " ") : "none";
}

/** A consumer group member's state (Kafka's MemberState name) in words. */
export function memberStateWords(state) {
  return MEMBER_STATES[state] ?? state;
}

const MEMBER_STATES = {
  STABLE: "Stable",
  UNREVOKED_PARTITIONS: "unrevoked",
  UNRELEASED_PARTITIONS: "unreleased",
  UNKNOWN: "unknown",
};

/**
 * One event in plain words: {kind, text}, kind being a short tag for the log's colour
 * ("join", "leave", "state", "generation", "assignment", "commit", "offsets", "pending", "static",
 * "group").
 * `revoked`: for an AssignmentStored, how many partitions it left without an owner.
 */
export function describeEvent(e, { revoked = 0 } = {}) {
  const who = shortId(e.member_id);
  switch (e.type) {
    case "StateChanged": {
      // A move that starts a rebalance says why as data (RebalanceCause): shown before the
      // engine's own sentence.
      const member = e.cause_member_id ? `, member ${e.cause_member_id}` : "";
      const cause = e.cause ? ` (cause: ${causeWords(e.cause)}${member})` : "";
      return { kind: "state", text: `${e.from_state} → ${e.to_state}${cause}: ${e.reason}` };
    }
    case "GenerationStarted":
      if (!e.member_ids.length) {
        return { kind: "generation", text: `generation ${e.generation_id} started with no members: the group is empty` };
      }
      return {
        kind: "generation",
        text:
          `generation ${e.generation_id} started with ${plural(e.member_ids.length, "member")}` +
          `; leader ${shortId(e.leader_id)}, protocol ${e.protocol_name ?? "none"}`,
      };
    case "MemberJoined": {
      const statik = e.group_instance_id ? ` (static instance ${e.group_instance_id})` : "";
      const verb = e.rejoined ? "rejoined for the rebalance" : "joined";
      const why = e.reason ? ` — “${e.reason}”` : "";
      return { kind: "join", text: `${who}${statik} ${verb}${why}` };
    }
    case "MemberRemoved": {
      const detail = e.detail ? ` (${e.detail})` : "";
      return { kind: "leave", text: `${who} removed: ${removalReason(e.reason)}${detail}` };
    }
    case "StaticMemberReplaced":
      return {
        kind: "static",
        text:
          `static instance ${e.group_instance_id} came back as ${shortId(e.new_member_id)}; ` +
          `its partitions move with it, the old id ${shortId(e.old_member_id)} is fenced`,
      };
    case "PendingMemberAdded":
      return { kind: "pending", text: `${who} asked to join and got its member id; it must rejoin with it (pending)` };
    case "PendingMemberRemoved":
      return { kind: "pending", text: `${who} no longer pending: ${PENDING_REASONS[e.reason] || e.reason}` };
    case "AssignmentStored": {
      if (!e.partitions) {
        return { kind: "assignment", text: `generation ${e.generation_id}: the leader's assignment was stored` };
      }
      const members = Object.keys(e.partitions).length;
      return {
        kind: "assignment",
        text:
          `generation ${e.generation_id}: ${plural(countPartitions(e.partitions), "partition")} ` +
          `assigned to ${plural(members, "member")}` +
          (revoked ? `; ${plural(revoked, "partition")} revoked, waiting for the next round` : ""),
      };
    }
    case "OffsetsCommitted":
      return { kind: "commit", text: `${who} committed ${plural(e.offsets.length, "offset")}` };
    case "OffsetsRemoved":
      return {
        kind: "offsets",
        text: `committed offsets of ${plural(e.partitions.length, "partition")} removed: ${OFFSET_REMOVAL_REASONS[e.reason] || e.reason}`,
      };
    case "GroupRemoved":
      return { kind: "group", text: `the group was removed: ${GROUP_REMOVAL_REASONS[e.reason] || e.reason}` };
    // A handoff group's (docs/engine.md, "Handoff groups").
    case "HandoffMemberJoined":
      return { kind: "join", text: `${who} joined (topics ${e.topics.join(", ") || "none"}); the next plan gives it partitions` };
    case "HandoffPlanMade": {
      const members = Object.keys(e.assignment).length;
      return {
        kind: "assignment",
        text: `plan ${e.epoch}: ${plural(countPartitions(e.assignment), "partition")} planned for ${plural(members, "member")}`,
      };
    }
    case "HandoffPartitionsClosing":
      return { kind: "assignment", text: `${who} must close ${partitionWords(e.partitions)} (stop, commit, confirm)` };
    case "HandoffPartitionsClosed":
      return { kind: "assignment", text: `${who} closed ${partitionWords(e.partitions)}` };
    case "HandoffPartitionsGranted":
      return { kind: "assignment", text: `${who} may start ${partitionWords(e.partitions)}: nobody else holds them now` };
    case "HandoffPartitionsStarted":
      return { kind: "assignment", text: `${who} started ${partitionWords(e.partitions)}` };
    // A consumer group's (KIP-848; docs/engine.md, "Consumer groups").
    case "ConsumerMemberJoined": {
      const statik = e.instance_id ? ` (static instance ${e.instance_id})` : "";
      const topics = [...e.subscribed_topic_names, ...(e.subscribed_topic_regex ? [`/${e.subscribed_topic_regex}/`] : [])];
      return { kind: "join", text: `${who}${statik} joined at epoch 0 (topics ${topics.join(", ") || "none"})` };
    }
    case "ConsumerGroupEpochBumped": {
      const member = e.cause_member_id ? ` by ${shortId(e.cause_member_id)}` : "";
      return { kind: "generation", text: `group epoch ${e.epoch} (cause: ${causeWords(e.cause)}${member}): a new target assignment is due` };
    }
    case "ConsumerTargetAssignmentComputed": {
      const members = Object.keys(e.assignment).length;
      return {
        kind: "assignment",
        text: `target assignment of epoch ${e.epoch} (${e.assignor}): ${plural(countPartitions(e.assignment), "partition")} for ${plural(members, "member")}`,
      };
    }
    case "ConsumerMemberStateChanged":
      return {
        kind: "state",
        text: `${who}: ${memberStateWords(e.from_state)} → ${memberStateWords(e.to_state)} at epoch ${e.member_epoch} (was ${e.previous_member_epoch})`,
      };
    case "ConsumerPartitionsRevoked":
      return { kind: "assignment", text: `${who} must revoke ${partitionWords(e.partitions)} (stop consuming, then say so in a heartbeat)` };
    case "ConsumerPartitionsAssigned":
      return { kind: "assignment", text: `${who} was given ${partitionWords(e.partitions)} at epoch ${e.member_epoch}` };
    case "ConsumerStaticMemberLeft":
      return { kind: "static", text: `${who} (static instance ${e.instance_id}) left for a while (epoch -2): it keeps its partitions` };
    default:
      return { kind: "other", text: e.type };
  }
}

/** A tile's tooltip: whose partition it is, or why nobody's, and its offsets when known. */
export function tileHelp({ topic, partition, owner, released, offsets }) {
  let who;
  if (owner) who = `read by ${shortId(owner)}`;
  else if (released === "revoked") who = "revoked: its old owner gave it up in the first round of a cooperative rebalance; the next round assigns it";
  else if (released === "owner-left") who = "unowned: its reader left; the next assignment gives it to someone";
  else if (released === "handoff") who = "between owners: its old owner closed it, its new owner has not been granted it yet";
  else if (released === "consumer-revoked") who = "between owners: its old owner revoked it; its new owner gets it at its next heartbeat";
  else who = "not assigned to any member";
  const lines = [`${topic}, partition ${partition} — ${who}`];
  if (offsets) {
    lines.push(
      `committed offset ${formatCount(offsets.offset)}, log end ${formatCount(offsets.logEnd)}, lag ${formatCount(offsets.lag)}` +
        " (lag: messages written but not yet consumed)",
    );
  }
  return lines.join("\n");
}

/** How a member reached the coordinator, in words. */
const CONNECTIONS = {
  kafka: "over Kafka's wire protocol (a real Kafka client)",
  websocket: "over the websocket consumer protocol",
  simulated: "in-process (a simulated consumer)",
};

/** A lane's tooltip: who the member is. */
export function memberHelp(member, { leader }) {
  const lines = [`member id ${member.id}`];
  if (leader) lines.push("leader: this member computes everyone's assignment in each rebalance");
  if (member.instanceId) {
    lines.push(`static member, instance id ${member.instanceId}: it can restart without a rebalance`);
  }
  if (member.clientId) lines.push(`client ${member.clientId} on ${member.clientHost ?? "?"}`);
  if (member.connection) lines.push(`connected ${CONNECTIONS[member.connection] ?? member.connection}`);
  if (member.rebalanceTimeoutMs != null && member.sessionTimeoutMs == null) {
    lines.push(`fenced if it takes over ${formatDuration(member.rebalanceTimeoutMs)} to revoke (rebalance timeout)`);
  }
  if (member.sessionTimeoutMs != null) {
    lines.push(`removed if silent for ${formatDuration(member.sessionTimeoutMs)} (session timeout)`);
  }
  return lines.join("\n");
}
