// The overview's "New group" (staff only, overview.html): simulated consumers of any
// protocol in a group named here, then the group's page. The group is created by its first
// consumer's join (a classic JoinGroup, a first HandoffHeartbeat for a handoff group, a first
// ConsumerGroupHeartbeat for a consumer group).

import { getJSON, postJSON } from "./common.js";
import { kindConflict, spawnBody, spawnValues, wireSpawnForm } from "./spawn.js";

/** `kindOf(groupId)`: the kind of a group the overview lists ("classic", "handoff" or "consumer"), or null. */
export function createNewGroup(section, { kindOf }) {
  const form = section.querySelector("form");
  const result = section.querySelector('[data-testid="new-group-result"]');
  const topicList = section.querySelector("#known-topics");
  wireSpawnForm(form);
  let busy = false;

  function show(text, ok) {
    result.textContent = text;
    result.classList.toggle("is-ok", ok);
    result.classList.toggle("is-error", !ok);
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (busy) return;
    let body;
    try {
      const groupId = form.elements.group_id.value.trim();
      body = spawnBody(spawnValues(form.elements), groupId);
      const conflict = kindConflict(kindOf(groupId), body.protocol, groupId);
      if (conflict) throw new Error(conflict);
    } catch (error) {
      show(`new group: ${error.message}`, false);
      return;
    }
    busy = true;
    section.classList.add("is-busy");
    show("new group: sending…", true);
    try {
      const answer = await postJSON("/api/admin/spawn", body);
      show(`new group: ${answer.result}; opening its page…`, true);
      window.location.assign(`/groups/${encodeURIComponent(body.group_id)}/`);
    } catch (error) {
      show(`new group failed: ${error.message}`, false);
      busy = false; // once it succeeded, the page is leaving
      section.classList.remove("is-busy");
    }
  });

  // The topics a consumer can subscribe to (topics are never created by a subscription).
  getJSON("/api/topics")
    .then(({ topics }) => {
      const names = topics.map((t) => t.name).sort();
      topicList.replaceChildren(...names.map((name) => new Option(name)));
      if (!form.elements.topics.value && names.length === 1) form.elements.topics.value = names[0];
    })
    .catch(() => {}); // only suggestions: the field still takes any name
}
