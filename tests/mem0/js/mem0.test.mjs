// mem0's official TypeScript client (npm mem0ai, pinned in package.json) against a live
// `memstack serve`: MEMSTACK_URL and MEMSTACK_KEY name the server and a key of it.
// tests/mem0/test_ts_client.py starts the server and runs `node --test` here, with
// MEM0_TELEMETRY=false and MEM0_DIR set; this file refuses any request that leaves the
// machine, as the Python suite's conftest does.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { before, test } from "node:test";

import MemoryClient, {
  AuthenticationError,
  MemoryNotFoundError,
  ValidationError,
} from "mem0ai";

const URL_ = process.env.MEMSTACK_URL;
const KEY = process.env.MEMSTACK_KEY;
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);
const realFetch = globalThis.fetch;
const refused = [];

globalThis.fetch = (resource, options) => {
  const url = new URL(resource instanceof Request ? resource.url : String(resource));
  if (!LOOPBACK.has(url.hostname)) {
    refused.push(url.href);
    return Promise.reject(new Error(`tests must not reach the network (tried ${url.href})`));
  }
  return realFetch(resource, { ...options, signal: AbortSignal.timeout(30_000) });
};

const name = (prefix) => `${prefix}-${randomUUID().slice(0, 8)}`;
const ids = (page) => new Set(page.results.map((m) => m.id));
const texts = (page) => new Set(page.results.map((m) => m.memory));
const conversation = (who) => [
  { role: "user", content: `${who} is vegetarian and allergic to peanuts.` },
  { role: "assistant", content: `Noted: ${who} eats vegetarian, never peanuts.` },
];

let client;

before(() => {
  assert.ok(URL_ && KEY, "set MEMSTACK_URL and MEMSTACK_KEY");
  assert.equal(process.env.MEM0_TELEMETRY, "false");
  client = new MemoryClient({ apiKey: KEY, host: URL_ });
});

test("ping: the key's tenant is mem0's organization and project", async () => {
  await client.ping();
  assert.equal(client.organizationId, "default");
  assert.equal(client.projectId, "default");
});

test("add, search, getAll, get, update, history, delete, deleteAll", async () => {
  const alice = name("alice");
  const bob = name("bob");
  const added = await client.add(conversation("Alice"), {
    userId: alice,
    infer: false,
    metadata: { topic: "food" },
  });
  assert.deepEqual(
    added.results.map((r) => r.event),
    ["ADD", "ADD"],
  );
  const bobs = await client.add(conversation("Bob"), { userId: bob, infer: false });
  const bobIds = ids(bobs);

  // search: one user's memories only, never the other's
  for (const who of [alice, bob]) {
    const found = await client.search("vegetarian peanuts", {
      filters: { user_id: who },
      topK: 10,
      threshold: 0,
    });
    assert.equal(found.results.length, 2);
    for (const m of found.results) {
      assert.equal(m.userId, who);
      assert.equal(typeof m.score, "number");
    }
  }
  const alices = await client.search("Bob", { filters: { user_id: alice }, threshold: 0 });
  for (const m of alices.results) assert.ok(!bobIds.has(m.id));

  // getAll, paginated
  const all = await client.getAll({ filters: { user_id: alice } });
  assert.equal(all.count, 2);
  assert.deepEqual(ids(all), ids(added));
  const first = await client.getAll({ filters: { user_id: alice }, page: 1, pageSize: 1 });
  assert.equal(first.results.length, 1);
  assert.equal(first.count, 2);
  assert.ok(first.next);
  assert.equal(first.previous, null);

  // get
  const mid = added.results[0].id;
  const got = await client.get(mid);
  assert.equal(got.memory, "Alice is vegetarian and allergic to peanuts.");
  assert.deepEqual(got.metadata, { topic: "food" });
  assert.equal(got.userId, alice);

  // update: text, then metadata
  const changed = await client.update(mid, { text: "Alice is vegan now." });
  assert.equal(changed.memory, "Alice is vegan now.");
  const tagged = await client.update(mid, { metadata: { topic: "diet" } });
  assert.deepEqual(tagged.metadata, { topic: "diet" });
  assert.equal((await client.get(mid)).memory, "Alice is vegan now.");

  // delete, then history: ADD, UPDATE, DELETE
  await client.delete(mid);
  const history = await client.history(mid);
  assert.deepEqual(
    history.map((e) => e.event),
    ["ADD", "UPDATE", "DELETE"],
  );
  assert.deepEqual(
    history.map((e) => [e.oldMemory, e.newMemory]),
    [
      [null, "Alice is vegetarian and allergic to peanuts."],
      ["Alice is vegetarian and allergic to peanuts.", "Alice is vegan now."],
      ["Alice is vegan now.", null],
    ],
  );
  await assert.rejects(client.get(mid), MemoryNotFoundError);

  // deleteAll of one user leaves the other whole
  await client.deleteAll({ userId: alice });
  assert.equal((await client.getAll({ filters: { user_id: alice } })).count, 0);
  assert.deepEqual(ids(await client.getAll({ filters: { user_id: bob } })), bobIds);
});

test("batchUpdate, batchDelete and users", async () => {
  const carol = name("carol");
  const bot = name("bot");
  const made = [];
  for (const n of ["a", "b", "c"]) {
    const done = await client.add(`Carol's memory ${n}.`, { userId: carol, infer: false });
    made.push(done.results[0].id);
  }
  const [a, b, c] = made;
  await client.batchUpdate([
    { memoryId: a, text: "Carol's memory a, rewritten." },
    { memoryId: b, text: "Carol's memory b, rewritten." },
  ]);
  assert.equal((await client.get(a)).memory, "Carol's memory a, rewritten.");
  assert.equal((await client.get(b)).memory, "Carol's memory b, rewritten.");
  await client.batchDelete([a, b]);
  await assert.rejects(client.get(a), MemoryNotFoundError);
  await assert.rejects(client.get(b), MemoryNotFoundError);
  assert.deepEqual(texts(await client.getAll({ filters: { user_id: carol } })), new Set([
    "Carol's memory c.",
  ]));
  assert.equal((await client.get(c)).memory, "Carol's memory c.");

  await client.add("The deploy window is 21:00 UTC.", { agentId: bot, infer: false });
  const agents = await client.getAll({ filters: { agent_id: bot } });
  assert.deepEqual(texts(agents), new Set(["The deploy window is 21:00 UTC."]));
  const users = await client.users();
  const byName = new Map(users.results.map((e) => [`${e.type}:${e.name}`, e]));
  assert.equal(byName.get(`user:${carol}`).totalMemories, 1);
  assert.equal(byName.get(`agent:${bot}`).totalMemories, 1);
});

test("errors: a wrong key, an unknown id, a bad filter", async () => {
  const wrong = new MemoryClient({ apiKey: "msk_0123456789abcdef_wrong", host: URL_ });
  await assert.rejects(
    wrong.add("A fact.", { userId: name("dan"), infer: false }),
    (err) => err instanceof AuthenticationError && /invalid or revoked API key/.test(err.message),
  );
  await assert.rejects(client.get("mem_unknown"), MemoryNotFoundError);
  await assert.rejects(
    client.getAll({ filters: { user_id: "dan", created_at: { between: [1, 2] } } }),
    (err) => err instanceof ValidationError && /filters\.created_at\.between/.test(err.message),
  );
  assert.deepEqual(refused, [], "the client tried to reach the network");
});
