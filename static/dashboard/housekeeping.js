// The Housekeeping page: whether a Celery worker and beat answer (their own ping: nothing runs
// when they are gone, whatever the schedules say), each task's schedule, last run, result and
// next run, polled from /api/housekeeping every two seconds (runs are minutes apart: a live
// feed would buy nothing), and, for staff, a button that queues a run now
// (POST /api/admin/run-task).

import { getJSON, postJSON, setText } from "./common.js";

const POLL_MS = 2000;
const table = document.querySelector("table.housekeeping");
const isStaff = table.dataset.staff === "1";
const tbody = table.querySelector("tbody");
const message = document.querySelector(".housekeeping-message");

const RESULT_WORDS = {
  offsets_expired: "offsets expired",
  groups_tombstoned: "groups tombstoned",
  records_dropped: "records compacted",
  records_after: "records left",
  rebalances: "rebalances",
  events: "events analysed",
};

function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  const seconds = Math.round((date.getTime() - Date.now()) / 1000);
  const span = Math.abs(seconds);
  const words = span < 60 ? `${span} s` : span < 3600 ? `${Math.round(span / 60)} min` : `${(span / 3600).toFixed(1)} h`;
  return seconds >= 0 ? `in ${words}` : `${words} ago`;
}

function resultText(run) {
  if (!run) return "—";
  if (run.status === "FAILURE") return `failed: ${run.error}`;
  const result = run.result || {};
  const parts = Object.entries(RESULT_WORDS)
    .filter(([key]) => key in result)
    .map(([key, words]) => `${result[key]} ${words}`);
  return parts.join(", ") || "done";
}

function row(task) {
  const tr = document.createElement("tr");
  tr.dataset.task = task.key;
  for (const name of ["title", "schedule", "last", "result", "next"]) {
    const td = document.createElement("td");
    td.className = `hk-${name}`;
    tr.append(td);
  }
  if (isStaff) {
    const td = document.createElement("td");
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "Run now";
    button.dataset.testid = `run-${task.key}`;
    button.addEventListener("click", () => runNow(task, button));
    td.append(button);
    tr.append(td);
  }
  return tr;
}

function render(tasks) {
  for (const task of tasks) {
    let tr = tbody.querySelector(`tr[data-task="${task.key}"]`);
    if (!tr) {
      tr = row(task);
      tbody.append(tr);
    }
    const schedules = task.schedules.filter((s) => s.enabled);
    setText(tr.querySelector(".hk-title"), task.title);
    setText(tr.querySelector(".hk-schedule"), schedules.map((s) => s.every).join("; ") || "not scheduled");
    const last = task.last_run;
    const status = task.in_progress ? (task.latest.status === "STARTED" ? "running now" : "queued") : "";
    setText(tr.querySelector(".hk-last"), [last ? `${when(last.done_at)} (${last.status.toLowerCase()})` : "never", status].filter(Boolean).join(" · "));
    const result = tr.querySelector(".hk-result");
    setText(result, resultText(last));
    result.classList.toggle("error", Boolean(last && last.status === "FAILURE"));
    const next = schedules.map((s) => s.next_run_at).filter(Boolean).sort()[0];
    setText(tr.querySelector(".hk-next"), next ? when(next) : "—");
    const button = tr.querySelector("button");
    if (button) button.disabled = task.in_progress;
  }
}

/** One process's line: alive (green), silent (red) or not asked yet. */
function renderProcess(name, text, alive) {
  setText(document.querySelector(`[data-testid="hk-${name}"]`), text);
  const dot = document.querySelector(`[data-testid="hk-${name}-dot"]`);
  dot.classList.toggle("alive", alive === true);
  dot.classList.toggle("dead", alive === false);
}

function renderProcesses(processes) {
  const { worker, beat, error } = processes;
  const why = error ? ` (${error})` : "";
  renderProcess(
    "worker",
    worker.alive === null ? "asking…" : worker.alive ? `alive (${worker.names.join(", ")})` : `not answering${why}: no task runs`,
    worker.alive,
  );
  renderProcess(
    "beat",
    beat.alive === null ? "asking…" : beat.alive ? `alive (pid ${beat.seen.pid} on ${beat.seen.host})` : `silent${why}: nothing is scheduled`,
    beat.alive,
  );
}

async function runNow(task, button) {
  button.disabled = true;
  try {
    const answer = await postJSON("/api/admin/run-task", { task: task.key });
    setText(message, answer.result);
  } catch (error) {
    setText(message, `${task.title}: ${error.message}`);
    button.disabled = false;
  }
  poll();
}

async function poll() {
  try {
    const status = await getJSON("/api/housekeeping");
    renderProcesses(status.processes);
    render(status.tasks);
  } catch (error) {
    setText(message, `Could not read the housekeeping status: ${error.message}`);
  }
}

poll();
setInterval(poll, POLL_MS);
