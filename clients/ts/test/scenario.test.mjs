// The shared client scenario (clients/SCENARIO.md) against a real pathd: the README's curl
// session, a subscription that survives forced reconnects (replay, then resync), flow
// fields, min_version, if_version, tokens and secrets.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { DecodedFlowField, PathdClient, PathdError, isBatchError, watchFlowField } from "../dist/index.js";
import { ADMIN_TOKEN, startPathd, startProxy, until } from "./harness.mjs";

const TINY = "type octile\nheight 3\nwidth 4\nmap\n....\n.@@.\n....\n";

let server, proxy, admin, anon, viaProxy;
before(async () => {
  server = await startPathd();
  proxy = await startProxy(server.port);
  admin = new PathdClient({ baseUrl: server.url, adminToken: ADMIN_TOKEN });
  anon = new PathdClient({ baseUrl: server.url });
  // The event stream goes through the proxy, which the test cuts.
  viaProxy = new PathdClient({ baseUrl: proxy.url, reconnectDelayMs: 50 });
});
after(async () => {
  await proxy?.stop();
  await server?.stop();
});

async function rejectsWith(promise, status, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof PathdError, String(e));
    assert.equal(e.status, status);
    assert.equal(e.code, code);
    return true;
  });
}

test("the shared scenario", async () => {
  // Health and the token: an anonymous write is refused with a typed error.
  assert.equal((await admin.ready()).status, "ready");
  await rejectsWith(anon.putMapText("tiny", TINY), 401, "unauthorized");

  // Upload (201 created), a JSON map with costs.
  const tiny = await admin.putMapText("tiny", TINY);
  assert.equal(tiny.created, true);
  assert.deepEqual([tiny.map.name, tiny.map.version, tiny.map.width, tiny.map.height], ["tiny", 1, 4, 3]);
  const hills = await admin.putMap("hills", { width: 3, height: 2, costs: [1, 5, 1, 1, 0, 1], movement: "octile" });
  assert.equal(hills.created, true);

  // Paths, as in the README.
  const p = await admin.findPath("tiny", { start: [0, 1], goal: [3, 1] });
  assert.equal(p.status, "found");
  assert.deepEqual(p.path, [[0, 1], [0, 0], [1, 0], [2, 0], [3, 0], [3, 1]]);
  assert.equal(p.cost, 5);
  assert.equal(p.algorithm, "astar");
  assert.equal(p.map_version, 1);
  const d = await admin.findPath("den520d", { start: [70, 50], goal: [200, 200], algorithm: "jps", smooth: true });
  assert.equal(d.cost, 215.89051812430688);
  assert.equal(d.path_cost, 225.52186130069825);
  assert.deepEqual(d.waypoints, [[70, 50], [71, 73], [140, 109], [149, 114], [200, 174], [200, 200]]);

  // A batch, answered in order; a bad query is an error item of its own.
  const b = await admin.findPaths("arena2", {
    queries: [
      { start: [5, 100], goal: [100, 100] },
      { start: [250, 190], goal: [250, 190] },
      { start: [9999, 0], goal: [1, 1] },
    ],
  });
  assert.equal(b.map_version, 1);
  assert.equal(b.results.length, 3);
  const [r0, r1, r2] = b.results;
  assert.ok(!isBatchError(r0) && !isBatchError(r1) && isBatchError(r2));
  assert.equal(r0.cost, 99.14213562373095);
  assert.deepEqual(r0.path.slice(0, 4), [[5, 100], [6, 100], [7, 100], [8, 101]]);
  assert.deepEqual(r1.path, [[250, 190]]);
  assert.equal(r1.cost, 0);
  assert.equal(r2.error.code, "out_of_bounds");

  // min_version: a version the map has is answered at once; one never written is 409.
  assert.equal((await admin.findPath("hills", { start: [0, 0], goal: [2, 0], min_version: 1 })).status, "found");
  await rejectsWith(admin.findPath("hills", { start: [0, 0], goal: [2, 0], min_version: 99 }), 409, "version_conflict");
  assert.equal((await admin.getMap("hills", { minVersion: 1 })).version, 1);

  // A subscription, followed through the proxy.
  const sub = await admin.createSubscription("tiny", { start: [0, 1], goal: [3, 1] });
  assert.equal(sub.cost, 5);
  assert.match(sub.id, /^[0-9a-f]{32}$/);
  assert.ok(sub.secret.length > 0);
  const stream = viaProxy.subscriptionEvents(sub.id);
  const events = stream[Symbol.asyncIterator]();
  const e1 = (await events.next()).value;
  assert.deepEqual([e1.reason, e1.seq, e1.cost], ["initial", 1, 5]);

  // Forced reconnect 1: the connection drops, a patch lands meanwhile; the stream comes
  // back with Last-Event-ID 1 and the server replays the missed event.
  assert.equal(proxy.cut(), 2, "the stream's connection (both ends) was open");
  const patched = await admin.patchMap("tiny", { cells: [{ x: 1, y: 0, cost: 0 }], if_version: 1 });
  assert.deepEqual([patched.version, patched.changed_cells], [2, 1]);
  await until("event 2 published", async () => (await anon.getSubscription(sub.id)).seq === 2);
  const e2 = (await events.next()).value;
  assert.deepEqual([e2.reason, e2.seq, e2.map_version], ["blocked", 2, 2]);
  assert.ok(stream.reconnects >= 1, `reconnects ${stream.reconnects}`);

  // A stale if_version is a typed conflict.
  await rejectsWith(admin.patchMap("tiny", { cells: [{ x: 0, y: 0, cost: 1 }], if_version: 1 }), 409, "version_conflict");

  // The agent moves along its path, with the secret.
  const moved = await anon.moveSubscription(sub.id, sub.secret, [0, 2]);
  assert.deepEqual(moved.path, [[0, 2], [1, 2], [2, 2], [3, 2], [3, 1]]);
  assert.deepEqual([moved.cost, moved.map_version], [4, 2]);
  assert.deepEqual(moved.position, [0, 2]);

  // Forced reconnect 2: two events while away, more than the server keeps (one): the
  // stream comes back with one resync holding the full state.
  const before = stream.reconnects;
  proxy.cut();
  await admin.patchMap("tiny", { cells: [{ x: 2, y: 2, cost: 0 }] });
  await admin.patchMap("tiny", { cells: [{ x: 2, y: 2, cost: 1 }] });
  await until("event 4 published", async () => (await anon.getSubscription(sub.id)).seq === 4);
  const e3 = (await events.next()).value;
  assert.deepEqual([e3.reason, e3.seq, e3.map_version, e3.cost], ["resync", 4, 4, 4]);
  assert.deepEqual(e3.path, moved.path);
  assert.ok(stream.reconnects > before);

  // Deleting needs the secret: 403 without, then the stream's final event.
  await rejectsWith(anon.deleteSubscription(sub.id, "not-the-secret"), 403, "forbidden");
  await anon.deleteSubscription(sub.id, sub.secret);
  const e4 = (await events.next()).value;
  assert.equal(e4.reason, "deleted");
  assert.equal((await events.next()).done, true);
  await rejectsWith(anon.getSubscription(sub.id), 404, "subscription_not_found");

  // A flow field, kept current: a patch's changed cells are applied to the local copy and
  // equal a fresh read.
  const ff = await admin.createFlowField("hills", { goal: [0, 0] });
  assert.ok(ff.secret);
  const watch = watchFlowField(admin, ff.id);
  const u1 = (await watch.next()).value;
  assert.equal(u1.event.reason, "current");
  assert.equal(u1.field.cost([0, 0]), 0);
  assert.equal(u1.field.cost([1, 0]), 3);
  await admin.patchMap("hills", { cells: [{ x: 1, y: 0, cost: 1 }] });
  const u2 = (await watch.next()).value;
  assert.equal(u2.event.reason, "changed");
  assert.equal(u2.field.cost([1, 0]), 1);
  const fresh = await admin.getFlowField(ff.id);
  const decoded = new DecodedFlowField(fresh);
  assert.deepEqual([...u2.field.costs], [...decoded.costs]);
  assert.deepEqual([...u2.field.directions], [...decoded.directions]);
  assert.deepEqual(u2.field.next([2, 0]), [1, 0]);
  await rejectsWith(anon.deleteFlowField(ff.id, "wrong"), 403, "forbidden");
  await anon.deleteFlowField(ff.id, ff.secret);
  let last = u2;
  for (;;) {
    const n = await watch.next();
    if (n.done) break;
    last = n.value;
  }
  assert.equal(last.event.reason, "deleted");

  // The other operations: liveness, the contract, a search trace.
  assert.equal((await anon.health()).status, "ok");
  assert.match(await anon.openapi(), /^openapi: 3\.2/);
  const trace = await anon.posthoc("tiny", { start: [0, 2], goal: [3, 1] });
  const kinds = trace.events.map((e) => e.type);
  assert.deepEqual([kinds[0], kinds.at(-1)], ["source", "end"]);

  // The rest of the README's session.
  const list = await admin.listMaps();
  const names = list.maps.map((m) => m.name);
  assert.deepEqual(names, [...names].sort());
  assert.ok(names.includes("tiny") && names.includes("Berlin_0_256"));
  assert.equal(await admin.getMapText("tiny"), "type octile\nheight 3\nwidth 4\nmap\n.@..\n.@@.\n....\n");
  const cells = await admin.getMapCells("tiny");
  assert.equal(Buffer.from(cells.costs, "base64").length, 12);
  await admin.deleteMap("tiny");
  await rejectsWith(admin.getMap("tiny"), 404, "map_not_found");
  assert.match(await admin.metrics(), /pathd_/);
});

test("distance tables, line of sight and random points", async () => {
  await admin.putMapText("games", TINY);
  const m = await admin.matrix("games", { sources: [[0, 1], [3, 0]], targets: [[3, 1], [1, 1], [0, 1]] });
  assert.deepEqual(m.costs, [[5, null, 0], [1, null, 4]]);
  assert.equal(m.map_version, 1);
  const wide = Array.from({ length: 257 }, () => [0, 0]);
  await rejectsWith(admin.matrix("games", { sources: wide, targets: [] }), 400, "matrix_too_large");
  const l = await admin.los("games", { from: [0, 0], to: [3, 2] });
  assert.deepEqual([l.visible, l.blocked_at], [false, [1, 1]]);
  assert.deepEqual((await admin.los("games", { from: [0, 0], to: [3, 0] })).blocked_at, null);
  const r = await admin.random("games", { x: 0, y: 1, radius: 2, seed: 7 });
  assert.ok(r.distance <= 2 && r.candidates === 5 && r.seed === 7, JSON.stringify(r));
  assert.deepEqual(await admin.random("games", { x: 0, y: 1, radius: 2, seed: 7 }), r);
  await rejectsWith(admin.random("games", { x: 1, y: 1, radius: 2 }), 400, "start_blocked");
  await admin.deleteMap("games");
});

test("a 503 abstraction_building is retried after Retry-After", async () => {
  // A fresh uniform map: its JPS+ jump table is built in the background, meanwhile
  // jps_plus answers 503 abstraction_building with Retry-After; the client waits it out.
  const rows = Array.from({ length: 512 }, () => ".".repeat(512));
  await admin.putMap("open512", { width: 512, height: 512, rows });
  const r = await admin.findPath("open512", { start: [0, 0], goal: [511, 511], algorithm: "jps_plus" });
  assert.equal(r.status, "found");
  assert.equal(r.algorithm, "jps_plus");
});

test("a live plan: created, followed, progressed, re-planned after a wall, deleted", async () => {
  const CORRIDOR = "type octile\nheight 3\nwidth 6\nmap\n......\n.@@@@.\n......\n";
  await admin.putMapText("corridor", CORRIDOR, { movement: "cardinal" });
  const plain = await admin.planAgents("corridor", { agents: [{ start: [0, 0], goal: [5, 0] }] });
  assert.equal(plain.status, "solved");
  const live = await admin.createLivePlan("corridor", {
    agents: [{ start: [0, 0], goal: [5, 0] }, { start: [5, 2], goal: [0, 2] }],
    time_limit_ms: 200,
  });
  assert.equal(live.status, "solved");
  assert.equal(live.seq, 1);
  assert.equal(live.secret.length, 32);
  const events = admin.planEvents(live.id);
  const it = events[Symbol.asyncIterator]();
  const first = (await it.next()).value;
  assert.equal(first.reason, "initial");
  assert.deepEqual(first.paths, live.paths);
  const moved = await admin.reportPlanProgress(live.id, live.secret, { time_step: 1 });
  assert.equal(moved.time_step, 1);
  assert.deepEqual(moved.positions, [live.paths[0][1], live.paths[1][1]]);
  // A wall on agent 0's way along the top row: a new plan is pushed.
  await admin.patchMap("corridor", { cells: [{ x: 3, y: 0, cost: 0 }] });
  const ev = (await it.next()).value;
  assert.equal(ev.reason, "blocked");
  assert.equal(ev.start_step, 1);
  assert.ok(ev.paths.every((p) => p.every(([x, y]) => !(x === 3 && y === 0))));
  assert.deepEqual((await admin.getPlan(live.id)).paths, ev.paths);
  await rejectsWith(anon.reportPlanProgress(live.id, "wrong", { time_step: 2 }), 403, "forbidden");
  await admin.deletePlan(live.id, live.secret);
  const last = (await it.next()).value;
  assert.equal(last.reason, "deleted");
  assert.equal((await it.next()).done, true);
  await rejectsWith(admin.getPlan(live.id), 404, "plan_not_found");
  events.close?.();
});
