// memstack inspector, the Users view: the tenant's users and, for one of them, its
// long-term memory: conversation turns by session, facts with their provenance and
// history, a recall with its scores, and forgetting one memory.
// It runs after inspector.js and uses its helpers (el, api, query, when, fixed, busy,
// changed, validity, refresh, setStatus, state, $). Every value from the server is
// untrusted text: it reaches the page through el(), that is textContent, never as HTML.
"use strict";

const USERS_PAGE = 100; // user ids a request
const USER_PAGE = 200; // memories a request
const USER_BATCH = 2000; // memories loaded before "Load more memories" asks for the rest
const TURN_KIND = "event";

// list/listCursor: the user ids shown and where the next page of them starts (null: none).
// open: the chosen user; memories/cursor: what is loaded of it and where the rest starts;
// first: its first page as last seen, so a poll reloads only when something changed.
// recall: the last recall's request, run again after a forget so the ranking shown is true.
const users = {
  list: [], listCursor: null, open: null, memories: [], cursor: null, first: null, recall: null,
};

const userPath = (userId, rest) => `/api/users/${encodeURIComponent(userId)}${rest || ""}`;

// A turn is stored as kind "event" with its speaker, session and place in it (which the
// API lifts out of the metadata). Neither alone makes a turn: a fact may be an "event",
// and a fact's own metadata may name the session it was learned in.
const isTurn = (memory) => memory.kind === TURN_KIND && memory.session_id !== null && memory.speaker !== null;
const kindOf = (memory) => (isTurn(memory) ? "turn" : memory.kind);
const clip = (text) => (text.length > 80 ? `${text.slice(0, 79)}…` : text);
const metadataText = (metadata) => (Object.keys(metadata).length ? JSON.stringify(metadata) : "");

function showUsersError(message) {
  $("users-error").textContent = message;
  $("users-error").hidden = !message;
}

// -- loading ------------------------------------------------------------------------------

// Called by refresh() while the Users view is shown. A 403 (long-term memory off for this
// key) or a refused user id is the server's message in the view, not an empty page.
async function loadUsers(force, current) {
  try {
    await loadUserList(force, current);
    if (users.open) await loadUser(force, current);
    if (current()) showUsersError("");
  } catch (error) {
    if (error.status === 401 || !current()) throw error;
    showUsersError(error.message);
    if (force) {
      $("user").hidden = true;
      users.first = null;
    }
  }
}

async function loadUserList(force, current) {
  if (!force && users.list.length > USERS_PAGE) return; // the reader paged on: leave it
  const page = await api("GET", `/api/users?${query({ limit: USERS_PAGE })}`);
  if (!changed("users", page, force, current)) return;
  users.list = page.users;
  users.listCursor = page.next_cursor;
  renderUserList();
}

async function moreUsers() {
  busy(+1);
  try {
    const page = await api("GET", `/api/users?${query({ limit: USERS_PAGE, cursor: users.listCursor })}`);
    users.list.push(...page.users);
    users.listCursor = page.next_cursor;
    renderUserList();
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    busy(-1);
  }
}

function userPage(userId, cursor, superseded) {
  const params = query({ limit: USER_PAGE, cursor, include_superseded: superseded || "" });
  return api("GET", userPath(userId, `/memories?${params}`));
}

// The memories of `page` and the pages after it, through next_cursor, until `budget` are
// loaded or none are left.
async function following(userId, page, superseded, budget) {
  const memories = [...page.memories];
  let cursor = page.next_cursor;
  while (cursor !== null && memories.length < budget) {
    const next = await userPage(userId, cursor, superseded);
    memories.push(...next.memories);
    cursor = next.next_cursor;
  }
  return { memories, cursor };
}

async function loadUser(force, current) {
  const userId = users.open;
  const superseded = $("user-superseded").checked;
  const first = await userPage(userId, null, superseded);
  const signature = JSON.stringify([userId, superseded, first]);
  if (!force && users.first === signature) return;
  const loaded = await following(userId, first, superseded, USER_BATCH);
  if (!changed("user", [userId, superseded, loaded], force, current)) return;
  users.first = signature;
  users.memories = loaded.memories;
  users.cursor = loaded.cursor;
  renderUser(userId);
}

async function moreMemories() {
  const userId = users.open;
  const superseded = $("user-superseded").checked;
  busy(+1);
  try {
    const page = await userPage(userId, users.cursor, superseded);
    const loaded = await following(userId, page, superseded, USER_BATCH);
    if (userId !== users.open) return;
    users.memories.push(...loaded.memories);
    users.cursor = loaded.cursor;
    renderUser(userId);
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    busy(-1);
  }
}

// -- rendering -----------------------------------------------------------------------------

function renderUserList() {
  const items = users.list.map((userId) =>
    el(
      "li",
      {},
      el(
        "button",
        {
          type: "button",
          class: "link",
          "aria-current": String(userId === users.open),
          onclick: () => openUser(userId),
        },
        userId,
      ),
    ),
  );
  $("users-list").replaceChildren(...items);
  const more = users.listCursor === null ? "" : " (more below)";
  $("users-count").textContent = users.list.length
    ? `${counted(users.list.length, "user")}${more}`
    : "No user holds a memory yet.";
  $("users-more").hidden = users.listCursor === null;
}

function renderUser(userId) {
  const turns = users.memories.filter(isTurn);
  const facts = users.memories.filter((memory) => !isTurn(memory));
  const sessions = bySession(turns);
  $("user").hidden = false;
  $("user-title").textContent = `User “${userId}”`;
  const more = users.cursor === null ? "" : ", more to load";
  const turnsIn = `${counted(turns.length, "turn")} in ${counted(sessions.length, "session")}`;
  $("user-count").textContent = users.memories.length
    ? `${turnsIn}, ${counted(facts.length, "fact")}${more}`
    : "No memories for this user.";
  $("user-more").hidden = users.cursor === null;
  $("facts").tBodies[0].replaceChildren(...facts.map(factRow));
  $("sessions").replaceChildren(...sessions.map(sessionBlock));
  renderUserList();
}

// Turns by session, each in the order it was said (its time, then its place in the
// session); the session with the latest turn first.
function bySession(turns) {
  const sessions = new Map();
  for (const turn of turns) {
    if (!sessions.has(turn.session_id)) sessions.set(turn.session_id, []);
    sessions.get(turn.session_id).push(turn);
  }
  const said = (a, b) => Date.parse(a.created_at) - Date.parse(b.created_at) || a.turn_seq - b.turn_seq;
  const groups = [...sessions].map(([id, list]) => ({ id, turns: list.sort(said) }));
  const last = (group) => Date.parse(group.turns[group.turns.length - 1].created_at);
  return groups.sort((a, b) => last(b) - last(a) || (a.id < b.id ? -1 : 1));
}

function sessionBlock(group) {
  const first = group.turns[0];
  const last = group.turns[group.turns.length - 1];
  const header = ["When", "Speaker", "Said", "Metadata", "Actions"].map((name) => el("th", { scope: "col" }, name));
  const span = `${when(first.created_at)} – ${when(last.created_at)}`;
  return el(
    "section",
    { class: "session", "data-session": group.id },
    el("h5", {}, `Session “${group.id}”: ${counted(group.turns.length, "turn")}, ${span}`),
    el(
      "table",
      { class: "turns" },
      el("thead", {}, el("tr", {}, ...header)),
      el("tbody", {}, ...group.turns.map(turnRow)),
    ),
  );
}

function turnRow(turn) {
  const prefix = `${turn.speaker}: `;
  const said = turn.text.startsWith(prefix) ? turn.text.slice(prefix.length) : turn.text;
  return el(
    "tr",
    { "data-id": turn.id },
    el("td", {}, when(turn.created_at)),
    el("td", { class: "speaker" }, turn.speaker),
    el("td", { class: "value" }, said),
    el("td", { class: "metadata" }, metadataText(turn.metadata)),
    el("td", { class: "actions" }, forgetButton(turn)),
  );
}

function factRow(fact) {
  return el(
    "tr",
    { "data-id": fact.id },
    el("td", {}, fact.kind),
    el("td", { class: "value" }, fact.text),
    el("td", {}, fixed(fact.importance)),
    el("td", { class: "metadata" }, metadataText(fact.metadata)),
    el("td", { class: "provenance" }, provenanceOf(fact)),
    el("td", { class: "validity" }, validity(fact)),
    el("td", { class: "actions" }, historyButton(fact), forgetButton(fact)),
  );
}

function recalledRow(hit) {
  const terms = Object.entries(hit.scores)
    .filter(([name]) => name !== "score")
    .map(([name, value]) => `${name} ${fixed(value)}`);
  return el(
    "tr",
    { "data-id": hit.id },
    el("td", { class: "score" }, fixed(hit.score)),
    el("td", {}, kindOf(hit)),
    el("td", { class: "value" }, hit.text),
    el("td", { class: "provenance" }, provenanceOf(hit)),
    el("td", { class: "terms" }, terms.join(", ")),
    el("td", { class: "actions" }, historyButton(hit), forgetButton(hit)),
  );
}

const rowButton = (label, memory, onclick) =>
  el("button", { type: "button", "aria-label": `${label} ${memory.id}`, onclick: () => onclick(memory) }, label);
const historyButton = (memory) => rowButton("History", memory, showUserHistory);
const forgetButton = (memory) => rowButton("Forget", memory, forgetMemory);

// -- acting on a user ----------------------------------------------------------------------

function openUser(userId) {
  users.open = userId;
  users.recall = null;
  users.first = null;
  $("user-id").value = userId;
  $("recalled").hidden = true;
  $("recalled").tBodies[0].replaceChildren();
  refresh(true);
}

// The inspector only looks: a recall here does not mark what it finds as used
// (touch: false), so looking never changes how the user's memories rank.
async function recall(event) {
  event.preventDefault();
  const k = Number($("recall-k").value) || 10;
  users.recall = { query: $("recall-q").value.trim(), k, touch: false };
  await runRecall();
}

async function runRecall() {
  const userId = users.open;
  const asked = users.recall;
  if (!userId || !asked) return;
  busy(+1);
  try {
    const found = await api("POST", userPath(userId, "/recall"), asked);
    if (userId !== users.open || asked !== users.recall) return;
    $("recalled").tBodies[0].replaceChildren(...found.results.map(recalledRow));
    $("recalled").hidden = false;
    const noun = found.results.length === 1 ? "memory" : "memories";
    setStatus(`${found.results.length} ${noun} recalled for “${asked.query}”.`);
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    busy(-1);
  }
}

async function showUserHistory(memory) {
  const userId = users.open;
  busy(+1);
  try {
    const history = await api("GET", userPath(userId, `/memories/${encodeURIComponent(memory.id)}/history`));
    const rows = history.versions.map((version, i) =>
      el(
        "tr",
        version.valid_to ? { "data-id": version.id } : { "data-id": version.id, class: "current" },
        el("td", {}, i + 1),
        el("td", { class: "value" }, version.text),
        el("td", {}, when(version.valid_from)),
        el("td", {}, version.valid_to ? when(version.valid_to) : "current"),
        el("td", {}, replacedBy(version, history.versions)),
      ),
    );
    $("user-versions").tBodies[0].replaceChildren(...rows);
    $("user-history-title").textContent = `History of “${clip(memory.text)}”`;
    $("user-history-id").textContent = `${memory.id}: ${counted(rows.length, "version")}, oldest first`;
    if (!$("user-history").open) $("user-history").showModal();
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    busy(-1);
  }
}

// What replaced a version: the version of this history it points to, else its id; for a
// version closed without a successor, why it closed.
function replacedBy(version, versions) {
  const by = version.superseded_by;
  if (!by) return version.valid_to ? version.closed_reason || "closed" : "";
  const at = versions.findIndex((other) => other.id === by);
  return at >= 0 ? `version ${at + 1} (${by})` : by;
}

async function forgetMemory(memory) {
  const userId = users.open;
  if (!window.confirm(`Forget this memory of “${userId}”?\n\n${clip(memory.text)}`)) return;
  try {
    await api("DELETE", userPath(userId, `/memories/${encodeURIComponent(memory.id)}`));
    await refresh(true);
    await runRecall();
    setStatus(`Forgot a memory of “${userId}”: “${clip(memory.text)}”.`);
  } catch (error) {
    setStatus(error.message, true);
  }
}

function wireUsers() {
  $("user-form").addEventListener("submit", (event) => {
    event.preventDefault();
    openUser($("user-id").value.trim());
  });
  $("users-more").addEventListener("click", moreUsers);
  $("user-more").addEventListener("click", moreMemories);
  $("user-superseded").addEventListener("change", () => refresh(true));
  $("recall-form").addEventListener("submit", recall);
  $("user-history-close").addEventListener("click", () => $("user-history").close());
}

document.addEventListener("DOMContentLoaded", wireUsers);
