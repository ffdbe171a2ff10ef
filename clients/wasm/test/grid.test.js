// node --test: the package against a reference Dijkstra written here, on seeded random
// maps, and its API's contracts (patches, traces, lessons, flow fields, errors).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Grid, HEURISTICS, TIE_BREAKS, DIRECTIONS } = require('..');

const SQRT2 = Math.SQRT2;

function lcg(seed) {
  let s = seed >>> 0;
  return () => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s / 4294967296; };
}

function randomMap(W, H, seed, density = 0.25, weighted = false) {
  const r = lcg(seed);
  const c = new Uint8Array(W * H);
  for (let i = 0; i < c.length; i++) c[i] = r() < density ? 0 : weighted ? 1 + Math.floor(r() * 5) : 1;
  return c;
}

// The rule the engine documents: 8 moves, a diagonal only when both cells beside it are
// open (no corner cutting), a step costing (cost(a) + cost(b)) / 2 times 1 or sqrt 2.
function reference(W, H, c, s, g, cardinal = false) {
  const dist = new Float64Array(W * H).fill(Infinity);
  const done = new Uint8Array(W * H);
  const open = (x, y) => x >= 0 && y >= 0 && x < W && y < H && c[y * W + x] > 0;
  dist[s[1] * W + s[0]] = 0;
  const dirs = cardinal ? [[0, -1], [1, 0], [0, 1], [-1, 0]] : DIRECTIONS;
  for (;;) {
    let best = -1;
    for (let i = 0; i < dist.length; i++) if (!done[i] && dist[i] < Infinity && (best < 0 || dist[i] < dist[best])) best = i;
    if (best < 0) return Infinity;
    if (best === g[1] * W + g[0]) return dist[best];
    done[best] = 1;
    const x = best % W;
    const y = (best - x) / W;
    for (const [dx, dy] of dirs) {
      const nx = x + dx;
      const ny = y + dy;
      if (!open(nx, ny)) continue;
      if (dx && dy && !(open(x + dx, y) && open(x, y + dy))) continue;
      const step = (dx && dy ? SQRT2 : 1) * (c[best] + c[ny * W + nx]) / 2;
      const j = ny * W + nx;
      if (dist[best] + step < dist[j]) dist[j] = dist[best] + step;
    }
  }
}

function openCells(W, c, r, n) {
  const out = [];
  while (out.length < n) {
    const i = Math.floor(r() * c.length);
    if (c[i]) out.push([i % W, Math.floor(i / W)]);
  }
  return out;
}

test('every optimal algorithm matches the reference on seeded random maps', () => {
  for (let seed = 1; seed <= 12; seed++) {
    const W = 24 + seed;
    const H = 17 + (seed % 5);
    const weighted = seed % 3 === 0;
    const c = randomMap(W, H, seed, 0.25, weighted);
    const grid = new Grid(W, H, c);
    const r = lcg(seed * 77);
    for (let q = 0; q < 8; q++) {
      const [s, g] = openCells(W, c, r, 2);
      const want = reference(W, H, c, s, g);
      const algos = weighted ? ['astar', 'dijkstra'] : ['astar', 'dijkstra', 'jps', 'jps_plus', 'auto'];
      for (const algorithm of algos) {
        const res = grid.findPath(s, g, { algorithm });
        if (want === Infinity) {
          assert.equal(res.status, 'no_path', `${algorithm} seed ${seed} ${s}->${g}`);
          continue;
        }
        assert.equal(res.status, 'found', `${algorithm} seed ${seed}`);
        assert.ok(Math.abs(res.cost - want) < 1e-9, `${algorithm} seed ${seed} ${s}->${g}: ${res.cost} vs ${want}`);
        assert.deepEqual(res.path[0], s);
        assert.deepEqual(res.path[res.path.length - 1], g);
      }
      if (!weighted && want < Infinity) {
        // Theta*'s any-angle path is never dearer than the grid optimum.
        const t = grid.findPath(s, g, { algorithm: 'theta' });
        assert.ok(t.cost <= want + 1e-9, `theta ${t.cost} > ${want}`);
      }
    }
    grid.free();
  }
});

test('cardinal maps move in 4 directions', () => {
  const W = 20;
  const H = 15;
  const c = randomMap(W, H, 5, 0.2);
  const grid = new Grid(W, H, c, { movement: 'cardinal' });
  assert.equal(grid.movement, 'cardinal');
  const r = lcg(9);
  for (let q = 0; q < 10; q++) {
    const [s, g] = openCells(W, c, r, 2);
    const want = reference(W, H, c, s, g, true);
    const res = grid.findPath(s, g);
    if (want === Infinity) assert.equal(res.status, 'no_path');
    else assert.equal(res.cost, want);
  }
});

test('a Moving AI map file parses and answers', () => {
  const text = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'maps', 'arena2.map'), 'utf8');
  const grid = Grid.fromMap(text);
  assert.equal(grid.width, 281);
  assert.equal(grid.height, 209);
  assert.equal(grid.costs().length, 281 * 209);
  const a = grid.findPath([5, 100], [250, 190]);
  const j = grid.findPath([5, 100], [250, 190], { algorithm: 'jps' });
  assert.equal(a.status, 'found');
  assert.ok(Math.abs(a.cost - j.cost) < 1e-9);
  assert.ok(j.expanded < a.expanded / 10, `jps ${j.expanded} vs astar ${a.expanded}`);
});

test('patch changes cells at once and the next search sees them', () => {
  const grid = new Grid(5, 1, [1, 1, 1, 1, 1]);
  assert.equal(grid.findPath([0, 0], [4, 0]).cost, 4);
  assert.equal(grid.patch([[2, 0, 9], { x: 3, y: 0, cost: 1 }]), 1);
  assert.equal(grid.findPath([0, 0], [4, 0]).cost, 12); // 1 + (1 + 9) / 2 + (9 + 1) / 2 + 1
  assert.throws(() => grid.patch([[1, 0, 0], [7, 0, 0]]), /outside|bounds/);
  assert.equal(grid.costs()[1], 1, 'a refused patch changes nothing');
  grid.patch([[2, 0, 0]]);
  assert.equal(grid.findPath([0, 0], [4, 0]).status, 'no_path');
});

test('a trace holds every expansion, each after its parent', () => {
  const W = 40;
  const c = randomMap(W, 30, 3, 0.2);
  c[0] = 1; c[c.length - 1] = 1;
  const grid = new Grid(W, 30, c);
  const r = grid.findPath([0, 0], [39, 29], { trace: true, partial: true });
  const t = r.trace;
  assert.equal(t.expansions, r.expanded);
  assert.equal(t.event(0).type, 'push');
  assert.deepEqual(t.event(0).node, [0, 0]);
  const closed = new Set();
  let expands = 0;
  for (let i = 0; i < t.count; i++) {
    if (t.kind(i) !== 0) continue;
    expands++;
    assert.ok(t.parent(i) === t.node(i) || closed.has(t.parent(i)), `event ${i}: parent not expanded`);
    assert.ok(Math.abs(t.f(i) - (t.g(i) + t.h(i))) < 1e-9);
    closed.add(t.node(i));
  }
  assert.equal(expands, r.expanded);
  const capped = grid.findPath([0, 0], [39, 29], { trace: true, traceCap: 10 });
  assert.equal(capped.trace.expansions, 10);
  assert.equal(capped.trace.truncated, r.expanded > 10);
});

test('lessons: Manhattan on an octile map is flagged and can be longer; ties change the work only', () => {
  const W = 30;
  const c = new Uint8Array(W * 20).fill(1);
  for (let y = 3; y <= 16; y++) { c[y * W + 10] = 0; c[y * W + 11] = 0; }
  for (let y = 0; y <= 12; y++) { c[y * W + 18] = 0; c[y * W + 19] = 0; }
  const grid = new Grid(W, 20, c);
  const best = grid.findPath([2, 2], [27, 17]);
  const m = grid.findPath([2, 2], [27, 17], { heuristic: 'manhattan' });
  assert.equal(best.optimal, true);
  assert.equal(m.optimal, false);
  assert.ok(m.cost > best.cost + 1e-9, `${m.cost} vs ${best.cost}`);
  for (const h of HEURISTICS.filter((k) => k !== 'manhattan')) {
    const r = grid.findPath([2, 2], [27, 17], { heuristic: h });
    assert.equal(r.optimal, true, h);
    assert.ok(Math.abs(r.cost - best.cost) < 1e-9, h);
  }
  const open = new Grid(40, 30, new Uint8Array(1200).fill(1), { movement: 'cardinal' });
  const none = open.findPath([3, 3], [36, 26], { tieBreak: 'none' });
  const high = open.findPath([3, 3], [36, 26], { tieBreak: 'high_g' });
  assert.equal(none.cost, high.cost);
  assert.ok(none.expanded > 5 * high.expanded, `${none.expanded} vs ${high.expanded}`);
  for (const t of TIE_BREAKS) {
    const r = open.findPath([3, 3], [36, 26], { tieBreak: t });
    assert.equal(r.cost, high.cost, t);
    assert.equal(r.optimal, t !== 'epsilon', t);
  }
  assert.throws(() => grid.findPath([2, 2], [27, 17], { algorithm: 'jps', heuristic: 'zero' }), /apply/);
});

test('a flow field leads every cell to the goal at the path cost', () => {
  const W = 30;
  const c = randomMap(W, 20, 11, 0.2);
  const goal = [15, 10];
  c[10 * W + 15] = 1;
  const grid = new Grid(W, 20, c);
  const dirs = grid.flowField(goal);
  assert.equal(dirs.length, W * 20);
  assert.equal(dirs[10 * W + 15], 8);
  for (let i = 0; i < c.length; i++) {
    if (!c[i] || dirs[i] === 255) continue;
    let [x, y] = [i % W, Math.floor(i / W)];
    let cost = 0;
    for (let n = 0; dirs[y * W + x] !== 8; n++) {
      assert.ok(n < 2000, 'a loop');
      const [dx, dy] = DIRECTIONS[dirs[y * W + x]];
      cost += (dx && dy ? SQRT2 : 1) * (c[y * W + x] + c[(y + dy) * W + x + dx]) / 2;
      x += dx; y += dy;
    }
    const p = grid.findPath([i % W, Math.floor(i / W)], goal);
    assert.ok(Math.abs(p.cost - cost) < 1e-9, `from ${i}: ${cost} vs ${p.cost}`);
  }
});

test('misuse throws with the engine\'s message', () => {
  const grid = new Grid(3, 1, [1, 0, 1]);
  assert.throws(() => grid.findPath([1, 0], [2, 0]), /start .* blocked/);
  assert.throws(() => grid.findPath([0, 0], [9, 0]), /outside/);
  assert.throws(() => new Grid(2, 2, [1, 1, 1]), /costs holds 3 cells/);
  assert.throws(() => grid.findPath([0, 0], [2, 0], { algorithm: 'bogus' }), /unknown algorithm/);
  assert.throws(() => Grid.fromMap('type octile\nheight 1\n'), /./);
  assert.equal(grid.findPath([0, 0], [2, 0]).status, 'no_path');
  const w = grid.findPath([0, 0], [0, 0], { algorithm: 'weighted_astar', weight: 2 });
  assert.equal(w.cost, 0);
  assert.throws(() => grid.findPath([0, 0], [2, 0], { weight: 0.5 }), /weight/);
});
