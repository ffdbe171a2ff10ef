// The client's own behaviour against a scripted HTTP server: retries honouring
// Retry-After, typed errors, timeouts, cancellation, connection errors, the SSE reader.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, test } from "node:test";

import {
  PathdClient,
  PathdConnectionError,
  PathdError,
  PathdTimeoutError,
  readFrames,
} from "../dist/index.js";

let server, base;
const handlers = [];
before(async () => {
  server = http.createServer((req, res) => {
    const h = handlers.shift();
    if (h) h(req, res);
    else res.writeHead(500).end("no handler");
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${server.address().port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const overloaded = (ra) => (req, res) =>
  res
    .writeHead(503, { "content-type": "application/json", "retry-after": String(ra) })
    .end(JSON.stringify({ error: { code: "overloaded", message: "busy" } }));
const found = (req, res) =>
  res.writeHead(200, { "content-type": "application/json" }).end(
    JSON.stringify({ status: "found", path: [[0, 0]], cost: 0 }),
  );

test("a 503 with Retry-After is retried after the time asked for", async () => {
  const slept = [];
  const c = new PathdClient({ baseUrl: base, sleep: async (ms) => void slept.push(ms) });
  handlers.push(overloaded(2), overloaded(1), found);
  const r = await c.findPath("m", { start: [0, 0], goal: [0, 0] });
  assert.equal(r.status, "found");
  assert.deepEqual(slept, [2000, 1000]);
});

test("retries stop after `retries`, and the error carries code and Retry-After", async () => {
  const slept = [];
  const c = new PathdClient({ baseUrl: base, retries: 1, sleep: async (ms) => void slept.push(ms) });
  handlers.push(overloaded(3), overloaded(3));
  await assert.rejects(c.findPath("m", { start: [0, 0], goal: [0, 0] }), (e) => {
    assert.ok(e instanceof PathdError);
    assert.deepEqual([e.status, e.code, e.retryAfter, e.retryable], [503, "overloaded", 3, true]);
    return true;
  });
  assert.deepEqual(slept, [3000]);
});

test("the wait is capped by maxRetryDelayMs; a 503 without Retry-After is not retried", async () => {
  const slept = [];
  const c = new PathdClient({ baseUrl: base, maxRetryDelayMs: 500, sleep: async (ms) => void slept.push(ms) });
  handlers.push(overloaded(60), found);
  await c.findPath("m", { start: [0, 0], goal: [0, 0] });
  assert.deepEqual(slept, [500]);
  handlers.push((req, res) =>
    res.writeHead(503, { "content-type": "application/json" })
      .end(JSON.stringify({ error: { code: "map_damaged", message: "damaged" } })),
  );
  await assert.rejects(c.getMap("m"), (e) => e instanceof PathdError && e.code === "map_damaged" && !e.retryable);
  assert.equal(handlers.length, 0);
});

test("4xx answers are typed errors with the stable code, sent once", async () => {
  const c = new PathdClient({ baseUrl: base });
  handlers.push((req, res) =>
    res.writeHead(404, { "content-type": "application/json" })
      .end(JSON.stringify({ error: { code: "map_not_found", message: "no map named m" } })),
  );
  await assert.rejects(c.getMap("m"), (e) => {
    assert.ok(e instanceof PathdError);
    assert.deepEqual([e.status, e.code, e.message], [404, "map_not_found", "404 map_not_found: no map named m"]);
    return true;
  });
});

test("tokens: admin on writes, query on reads", async () => {
  const seen = [];
  const c = new PathdClient({ baseUrl: base, adminToken: "A", queryToken: "Q" });
  const record = (status, body) => (req, res) => {
    seen.push([req.method, req.headers.authorization, req.headers["x-subscription-secret"]]);
    res.writeHead(status, { "content-type": "application/json" }).end(body);
  };
  handlers.push(record(200, '{"version":2,"changed_cells":1,"affected_subscriptions":0}'));
  handlers.push(record(200, '{"status":"found"}'));
  handlers.push(record(204, ""));
  handlers.push(record(204, ""));
  await c.patchMap("m", { cells: [{ x: 0, y: 0, cost: 0 }], if_version: 1 });
  await c.findPath("m", { start: [0, 0], goal: [0, 0] });
  await c.deleteSubscription("s", "SECRET");
  await c.deleteSubscription("s");
  assert.deepEqual(seen, [
    ["PATCH", "Bearer A", undefined],
    ["POST", "Bearer Q", undefined],
    ["DELETE", "Bearer Q", "SECRET"],
    ["DELETE", "Bearer A", undefined],
  ]);
});

test("a request without an answer times out with a typed error", async () => {
  const c = new PathdClient({ baseUrl: base, timeoutMs: 100 });
  handlers.push(() => {}); // never answers
  await assert.rejects(c.getMap("m"), (e) => e instanceof PathdTimeoutError && e.timeoutMs === 100);
});

test("a request is cancelled by its signal", async () => {
  const c = new PathdClient({ baseUrl: base });
  handlers.push(() => {});
  const ctl = new AbortController();
  const p = c.findPath("m", { start: [0, 0], goal: [0, 0] }, { signal: ctl.signal });
  setTimeout(() => ctl.abort(new Error("caller gave up")), 20);
  await assert.rejects(p, /caller gave up/);
});

test("cancelling also stops a retry wait", async () => {
  const c = new PathdClient({ baseUrl: base });
  handlers.push(overloaded(600));
  const ctl = new AbortController();
  const p = c.findPath("m", { start: [0, 0], goal: [0, 0] }, { signal: ctl.signal });
  setTimeout(() => ctl.abort(new Error("stop waiting")), 50);
  await assert.rejects(p, /stop waiting/);
});

test("an unreachable server is a connection error", async () => {
  const probe = http.createServer();
  await new Promise((r) => probe.listen(0, "127.0.0.1", r));
  const port = probe.address().port;
  await new Promise((r) => probe.close(r));
  const c = new PathdClient({ baseUrl: `http://127.0.0.1:${port}` });
  await assert.rejects(c.health(), (e) => e instanceof PathdConnectionError);
});

test("the SSE reader: fields, multi-line data, comments, CRLF, split chunks", async () => {
  const text = ": keep-alive\r\nid: 1\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nretry: 250\nid: 2\ndata: x\n\n: only a comment\n\n";
  const enc = new TextEncoder().encode(text);
  const body = new ReadableStream({
    start(ctl) {
      for (let i = 0; i < enc.length; i += 3) ctl.enqueue(enc.slice(i, i + 3));
      ctl.close();
    },
  });
  const frames = [];
  for await (const f of readFrames(body)) frames.push(f);
  assert.deepEqual(frames, [
    { id: "1", event: undefined, data: '{"a":\n1}', retry: undefined },
    { id: "2", event: undefined, data: "x", retry: 250 },
  ]);
});
