// memstack inspector: plain JavaScript over the REST API, no dependencies.
// Every value from the server is untrusted text: it reaches the page through
// textContent and setAttribute only, never through innerHTML.
"use strict";

const KEY_STORAGE = "memstack.transports.inspector.key";
const PAGE = 50;
const POLL_MS = 3000;

// generation: bumped by every user action, so a poll answered late cannot overwrite
// what the action showed; loading: requests in flight (aria-busy while any are).
const state = {
  key: null, view: "memories", offset: 0, total: 0, query: null, shown: {}, generation: 0, loading: 0,
};
const $ = (id) => document.getElementById(id);

// -- building the page ------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "onclick") node.addEventListener("click", value);
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  }
  return node;
}

function setStatus(text, isError) {
  const status = $("status");
  status.textContent = text;
  status.className = isError ? "error" : "";
}

const fixed = (n) => Number(n).toFixed(3);
const counted = (n, noun) => `${n} ${noun}${n === 1 ? "" : "s"}`;

// Where a memory came from: how it was learned, and the model, tool or source named.
function provenanceOf(memory) {
  if (!memory.provenance) return "unknown";
  return memory.provenance_detail ? `${memory.provenance} (${memory.provenance_detail})` : memory.provenance;
}
const when = (iso) => (iso ? iso.replace("T", " ").replace(/\.\d+Z$/, "Z") : "never");

// -- the REST API -------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${state.key}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const message = data && data.error ? data.error.message : `HTTP ${response.status}`;
    throw new ApiError(response.status, message);
  }
  return data;
}

function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== "" && value !== null && value !== undefined) search.set(name, value);
  }
  return search.toString();
}

function filters() {
  return {
    agent_id: $("f-agent").value.trim(),
    scope: $("f-scope").value,
    session_id: $("f-session").value.trim(),
    as_of: asOf($("f-as-of").value.trim()),
  };
}

// "As of": empty for now, else epoch seconds (as the API takes them) or an ISO 8601 time.
function asOf(text) {
  if (!text) return "";
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) {
    throw new Error(`As of: “${text}” is not a time; write one such as 2026-01-31T12:00Z, or epoch seconds.`);
  }
  return ms / 1000;
}

// -- signing in -----------------------------------------------------------------------

async function signIn(key) {
  state.key = key;
  try {
    await api("GET", `/api/memories?limit=1`);
  } catch (error) {
    signOut(error.status === 401 ? "That API key was refused: check it and try again." : error.message);
    return;
  }
  sessionStorage.setItem(KEY_STORAGE, key);
  $("login").hidden = true;
  $("app").hidden = false;
  $("forget").hidden = false;
  setStatus("");
  await show(state.view);
}

function signOut(message) {
  state.key = null;
  sessionStorage.removeItem(KEY_STORAGE);
  $("login").hidden = false;
  $("app").hidden = true;
  $("forget").hidden = true;
  setStatus(message || "", Boolean(message));
  $("api-key").focus();
}

// -- views ----------------------------------------------------------------------------

async function show(view) {
  state.view = view;
  for (const tab of document.querySelectorAll(".tab")) {
    tab.setAttribute("aria-pressed", String(tab.dataset.view === view));
  }
  for (const name of ["memories", "search", "knowledge", "users"]) {
    $(`view-${name}`).hidden = name !== view;
  }
  $("filters").hidden = view === "knowledge" || view === "users";
  await refresh(true);
}

async function refresh(force) {
  const generation = force ? ++state.generation : state.generation;
  const current = () => generation === state.generation;
  busy(+1);
  try {
    if (state.view === "memories") await loadMemories(force, current);
    else if (state.view === "knowledge") await loadDocuments(force, current);
    else if (state.view === "users") await loadUsers(force, current); // users.js
    else if (state.query) await runSearch(force, current);
  } catch (error) {
    if (!current()) return;
    if (error.status === 401) signOut("The API key was revoked or refused; enter a key.");
    else setStatus(error.message, true);
  } finally {
    busy(-1);
  }
}

function busy(change) {
  state.loading += change;
  $("app").setAttribute("aria-busy", String(state.loading > 0));
}

// Re-render only when the data changed, so polling never disturbs the reader, and
// never from an answer a later user action has made stale.
function changed(view, data, force, current) {
  if (!current()) return false;
  const signature = JSON.stringify(data);
  if (!force && state.shown[view] === signature) return false;
  state.shown[view] = signature;
  return true;
}

// A version that is no longer current (shown "as of" a past moment) can only be looked at.
function actions(memory) {
  const history = el(
    "button",
    { type: "button", "aria-label": `History ${memory.key}`, onclick: () => showHistory(memory) },
    "History",
  );
  if (memory.valid_to) return el("td", { class: "actions" }, history);
  return el(
    "td",
    { class: "actions" },
    el("button", { type: "button", "aria-label": `Edit ${memory.key}`, onclick: () => edit(memory) }, "Edit"),
    history,
    el("button", { type: "button", "aria-label": `Delete ${memory.key}`, onclick: () => remove(memory) }, "Delete"),
  );
}

const validity = (memory) =>
  memory.valid_to ? `${when(memory.valid_from)} – ${when(memory.valid_to)}` : `since ${when(memory.valid_from)}`;

function agentCell(memory) {
  const button = el("button", { type: "button", class: "link", title: "Show this agent's memories" }, memory.agent_id);
  button.addEventListener("click", () => {
    $("f-agent").value = memory.agent_id;
    state.offset = 0;
    show("memories");
  });
  return el("td", {}, button);
}

function memoryRow(memory) {
  const metadata = Object.keys(memory.metadata).length ? JSON.stringify(memory.metadata) : "";
  return el(
    "tr",
    { "data-id": memory.id },
    el("td", { class: "key" }, memory.key),
    el("td", { class: "value" }, memory.value),
    agentCell(memory),
    el("td", {}, memory.scope),
    el("td", {}, memory.session_id ?? ""),
    el("td", { class: "metadata" }, metadata),
    el("td", { class: "expires" }, when(memory.expires_at)),
    el("td", {}, when(memory.updated_at)),
    el("td", { class: "validity" }, validity(memory)),
    el("td", { class: "provenance" }, provenanceOf(memory)),
    actions(memory),
  );
}

async function loadMemories(force, current) {
  const page = await api("GET", `/api/memories?${query({ ...filters(), limit: PAGE, offset: state.offset })}`);
  if (!changed("memories", page, force, current)) return;
  state.total = page.total;
  rememberAgents(page.memories);
  $("memories").tBodies[0].replaceChildren(...page.memories.map(memoryRow));
  const first = page.total ? page.offset + 1 : 0;
  const last = page.offset + page.memories.length;
  const noun = page.total === 1 ? "memory" : "memories";
  $("memories-count").textContent = `${first}–${last} of ${page.total} ${noun}, newest first`;
  $("prev").disabled = page.offset === 0;
  $("next").disabled = last >= page.total;
}

function rememberAgents(memories) {
  const list = $("agents");
  const known = new Set([...list.options].map((o) => o.value));
  for (const memory of memories) {
    if (!known.has(memory.agent_id)) {
      known.add(memory.agent_id);
      list.append(el("option", { value: memory.agent_id }));
    }
  }
}

async function runSearch(force, current) {
  const body = { query: state.query, mode: $("mode").value, limit: 20 };
  for (const [name, value] of Object.entries(filters())) if (value) body[name] = value;
  const found = await api("POST", "/api/memories/search", body);
  if (!changed("search", [body, found], force, current)) return;
  const rows = found.results.map((hit) =>
    el(
      "tr",
      { "data-id": hit.memory.id },
      el("td", { class: "score" }, fixed(hit.score)),
      el("td", { class: "similarity" }, fixed(hit.similarity)),
      el("td", { class: "keyword" }, fixed(hit.keyword)),
      el("td", { class: "key" }, hit.memory.key),
      el("td", { class: "value" }, hit.memory.value),
      agentCell(hit.memory),
      el("td", {}, hit.memory.scope),
      el("td", { class: "provenance" }, provenanceOf(hit.memory)),
      actions(hit.memory),
    ),
  );
  $("results").tBodies[0].replaceChildren(...rows);
  setStatus(`${found.results.length} results for “${state.query}”.`);
}

async function loadDocuments(force, current) {
  const page = await api("GET", "/api/knowledge?limit=500");
  if (!changed("knowledge", page, force, current)) return;
  const rows = page.documents.map((doc) =>
    el(
      "tr",
      { "data-id": doc.id },
      el("td", { class: "title" }, doc.title),
      el("td", {}, doc.tags.join(", ")),
      el("td", {}, doc.source ?? ""),
      el("td", {}, doc.chars),
      el("td", {}, when(doc.created_at)),
      el(
        "td",
        { class: "actions" },
        el("button", { type: "button", "aria-label": `View ${doc.title}`, onclick: () => viewDocument(doc.id) }, "View"),
        el("button", { type: "button", "aria-label": `Delete ${doc.title}`, onclick: () => removeDocument(doc) }, "Delete"),
      ),
    ),
  );
  $("documents").tBodies[0].replaceChildren(...rows);
}

async function viewDocument(id) {
  try {
    const doc = await api("GET", `/api/knowledge/${encodeURIComponent(id)}`);
    $("document-title").textContent = doc.title;
    $("document-text").textContent = doc.text;
    $("document").hidden = false;
    $("document-close").focus();
  } catch (error) {
    setStatus(error.message, true);
  }
}

async function removeDocument(doc) {
  if (!window.confirm(`Delete the document “${doc.title}”?`)) return;
  try {
    await api("DELETE", `/api/knowledge/${encodeURIComponent(doc.id)}`);
    $("document").hidden = true;
    setStatus(`Deleted the document “${doc.title}”.`);
    await refresh(true);
  } catch (error) {
    setStatus(error.message, true);
  }
}

// -- adding a knowledge document -----------------------------------------------------------

// The document the form describes: a chosen file's text (its name the default title and
// source), else the pasted text. What the form lacks is named before anything is sent.
async function uploadBody() {
  const file = $("u-file").files[0];
  const text = file ? await file.text() : $("u-text").value;
  const title = $("u-title").value.trim() || (file ? file.name.replace(/\.[^.]+$/, "") : "");
  if (!title) throw new Error("Title: give the document a title, or choose a file (its name is used).");
  if (!text.trim()) {
    throw new Error(file ? `File: “${file.name}” has no text; choose a text file.` : "Text: paste the document's text, or choose a file.");
  }
  const body = { title, text };
  const tags = $("u-tags").value.split(",").map((tag) => tag.trim()).filter(Boolean);
  if (tags.length) body.tags = tags;
  const source = $("u-source").value.trim() || (file ? file.name : "");
  if (source) body.source = source;
  return body;
}

async function upload(event) {
  event.preventDefault();
  $("upload-error").textContent = "";
  $("upload-submit").disabled = true;
  busy(+1);
  try {
    const doc = await api("POST", "/api/knowledge", await uploadBody());
    $("upload-form").reset();
    const progress = doc.status === "indexing"
      ? `; indexing in the background, ${doc.passages_done} of ${counted(doc.passages_total, "passage")} so far`
      : `: ${counted(doc.passages_total, "passage")}, searchable now`;
    setStatus(`Added the document “${doc.title}”${progress}.`);
    await refresh(true);
  } catch (error) {
    $("upload-error").textContent = error.message;
  } finally {
    $("upload-submit").disabled = false;
    busy(-1);
  }
}

// -- the history of a memory ------------------------------------------------------------

async function showHistory(memory) {
  busy(+1);
  try {
    const history = await api("GET", `/api/memories/${encodeURIComponent(memory.id)}/history`);
    const rows = history.versions.map((version, i) =>
      el(
        "tr",
        version.valid_to ? {} : { class: "current" },
        el("td", {}, i + 1),
        el("td", { class: "value" }, version.value),
        el("td", {}, when(version.valid_from)),
        el("td", {}, version.valid_to ? when(version.valid_to) : "current"),
        el("td", {}, endedBy(version, i, history)),
      ),
    );
    $("versions").tBodies[0].replaceChildren(...rows);
    const noun = rows.length === 1 ? "version" : "versions";
    $("history-title").textContent = `History of “${memory.key}”`;
    $("history-id").textContent = `${history.id}: ${rows.length} ${noun}, oldest first`;
    if (!$("history").open) $("history").showModal();
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    busy(-1);
  }
}

// Why a version stopped holding. One superseded while the memory has a later version was
// replaced by that version (whichever id the server names it by: its version_id, or the
// memory's id for a version closed before versions had ids); one without, by the memory
// the server names.
function endedBy(version, index, history) {
  if (!version.valid_to) return "";
  const reason = version.closed_reason || "closed";
  const by = version.superseded_by;
  const next = index + 1 < history.versions.length;
  if (reason === "superseded" && next) return `superseded by version ${index + 2}`;
  const nextId = next ? history.versions[index + 1].version_id : null;
  return by && by !== history.id && by !== nextId ? `${reason}, replaced by ${by}` : reason;
}

// -- changing memories ------------------------------------------------------------------

let editing = null;

function edit(memory) {
  editing = memory;
  $("edit-id").textContent = `${memory.key} (${memory.id}), expires: ${when(memory.expires_at)}`;
  $("e-value").value = memory.value;
  $("e-metadata").value = JSON.stringify(memory.metadata, null, 2);
  $("e-ttl").value = "";
  $("e-no-ttl").checked = false;
  $("edit-error").textContent = "";
  $("editor").showModal();
}

function editedBody() {
  let metadata;
  try {
    metadata = JSON.parse($("e-metadata").value.trim() || "{}");
  } catch (error) {
    throw new Error(`metadata: not valid JSON (${error.message}); write an object such as {"source": "chat"}.`);
  }
  if (metadata === null || typeof metadata !== "object" || Array.isArray(metadata)) {
    throw new Error('metadata: must be a JSON object such as {"source": "chat"}.');
  }
  const body = { value: $("e-value").value, metadata };
  const ttl = $("e-ttl").value.trim();
  if ($("e-no-ttl").checked) body.ttl = null;
  else if (ttl) body.ttl = /^\d+(\.\d+)?$/.test(ttl) ? Number(ttl) : ttl;
  return body;
}

async function save(event) {
  event.preventDefault();
  try {
    const saved = await api("PUT", `/api/memories/${encodeURIComponent(editing.id)}`, editedBody());
    $("editor").close();
    setStatus(`Saved “${saved.key}”.`);
    await refresh(true);
  } catch (error) {
    $("edit-error").textContent = error.message;
  }
}

async function remove(memory) {
  if (!window.confirm(`Delete the memory “${memory.key}”?`)) return;
  try {
    await api("DELETE", `/api/memories/${encodeURIComponent(memory.id)}`);
    setStatus(`Deleted “${memory.key}”.`);
    await refresh(true);
  } catch (error) {
    setStatus(error.message, true);
  }
}

// -- wiring -------------------------------------------------------------------------------

function poll() {
  const dialogs = ["editor", "history", "user-history"];
  const idle = !dialogs.some((id) => $(id).open) && !document.hidden;
  if (state.key && $("live").checked && idle) refresh(false);
}

function wire() {
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    signIn($("api-key").value.trim());
    $("api-key").value = "";
  });
  $("forget").addEventListener("click", () => signOut("Key forgotten."));
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => show(tab.dataset.view));
  }
  $("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    state.offset = 0;
    refresh(true);
  });
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.query = $("q").value.trim();
    refresh(true);
  });
  $("prev").addEventListener("click", () => {
    state.offset = Math.max(0, state.offset - PAGE);
    refresh(true);
  });
  $("next").addEventListener("click", () => {
    state.offset += PAGE;
    refresh(true);
  });
  $("edit-form").addEventListener("submit", save);
  $("upload-form").addEventListener("submit", upload);
  $("edit-cancel").addEventListener("click", () => $("editor").close());
  $("history-close").addEventListener("click", () => $("history").close());
  $("document-close").addEventListener("click", () => {
    $("document").hidden = true;
  });
  setInterval(poll, POLL_MS);
  const saved = sessionStorage.getItem(KEY_STORAGE);
  if (saved) signIn(saved);
  else $("api-key").focus();
}

document.addEventListener("DOMContentLoaded", wire);
