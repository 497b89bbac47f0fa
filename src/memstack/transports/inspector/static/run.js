// The live panel of one agent run: working-memory entries over server-sent events.
// Entries are untrusted text: rendered with textContent only.
"use strict";

const $ = (id) => document.getElementById(id);
let ended = false;

function cell(text, className) {
  const td = document.createElement("td");
  if (className) td.className = className;
  td.textContent = text ?? "";
  return td;
}

function show(entry) {
  const row = document.createElement("tr");
  row.dataset.key = entry.key;
  const value = typeof entry.value === "string" ? entry.value : JSON.stringify(entry.value, null, 2);
  row.append(
    cell(entry.key, "key"),
    cell(entry.kind),
    cell(entry.title),
    cell(entry.source),
    cell(value, "value"),
    cell(new Date(entry.created_at).toISOString()),
  );
  const body = $("entries").tBodies[0];
  const old = [...body.rows].find((r) => r.dataset.key === entry.key);
  if (old) old.replaceWith(row);
  else body.append(row);
}

function count() {
  const n = $("entries").tBodies[0].rows.length;
  return `${n} ${n === 1 ? "entry" : "entries"}`;
}

function connect() {
  const events = new EventSource("events");
  events.addEventListener("open", () => {
    if (!ended) $("status").textContent = "Live: the run is in progress.";
  });
  events.addEventListener("entry", (event) => {
    show(JSON.parse(event.data));
    if (!ended) $("status").textContent = `Live: the run is in progress (${count()}).`;
  });
  events.addEventListener("end", () => {
    ended = true;
    events.close();
    $("status").textContent = `The run finished (${count()}).`;
  });
  events.addEventListener("error", () => {
    if (!ended) $("status").textContent = "Disconnected from the run; retrying…";
  });
}

document.addEventListener("DOMContentLoaded", connect);
