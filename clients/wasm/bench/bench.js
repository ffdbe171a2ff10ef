// pathd-wasm against PathFinding.js (npm `pathfinding`) on the same maps and queries.
//
//   cd clients/wasm && npm ci && node bench/bench.js [queries=200] [seed=1]
//
// Maps: arena2 (281x209) and maze512-1-0 (512x512) from maps/. Queries: seeded random
// pairs of open cells that pathd connects. Both libraries move 8-way without cutting
// corners (PathFinding.js's DiagonalMovement.OnlyWhenNoObstacles, the engine's rule);
// PathFinding.js needs a fresh grid per search (grid.clone(), timed, as its README says).
// Reports the mean time per query and how many answers cost more than the optimum (the
// engine's A*, cross-checked by its tests against a reference Dijkstra).
'use strict';

const fs = require('fs');
const path = require('path');
const PF = require('pathfinding');
const { Grid } = require('..');

const queries = +(process.argv[2] || 200);
const seed = +(process.argv[3] || 1);

function lcg(s) {
  s >>>= 0;
  return () => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s / 4294967296; };
}

function pfCost(p) {
  let c = 0;
  for (let i = 1; i < p.length; i++) {
    const dx = Math.abs(p[i][0] - p[i - 1][0]);
    const dy = Math.abs(p[i][1] - p[i - 1][1]);
    // JPS answers jump points: expand a segment as straight and diagonal steps.
    const d = Math.min(dx, dy);
    c += d * Math.SQRT2 + (Math.max(dx, dy) - d);
  }
  return c;
}

function time(fn) {
  const t0 = process.hrtime.bigint();
  const out = fn();
  return [Number(process.hrtime.bigint() - t0) / 1e6, out];
}

function bench(name) {
  const text = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'maps', `${name}.map`), 'utf8');
  const grid = Grid.fromMap(text);
  const W = grid.width;
  const H = grid.height;
  const costs = grid.costs();
  const matrix = [];
  for (let y = 0; y < H; y++) matrix.push(Array.from(costs.subarray(y * W, (y + 1) * W), (c) => (c ? 0 : 1)));
  const pfGrid = new PF.Grid(W, H, matrix);
  const r = lcg(seed);
  const open = () => { for (;;) { const i = Math.floor(r() * W * H); if (costs[i]) return [i % W, Math.floor(i / W)]; } };
  const qs = [];
  while (qs.length < queries) {
    const s = open();
    const g = open();
    const a = grid.findPath(s, g);
    if (a.status === 'found') qs.push([s, g, a.cost]);
  }
  const rows = [];
  const run = (label, fn) => {
    let ms = 0;
    let worse = 0;
    let missing = 0;
    for (const [s, g, best] of qs) {
      const [t, cost] = time(() => fn(s, g));
      ms += t;
      if (!Number.isFinite(cost)) missing++;
      else if (cost > best + 1e-6) worse++;
    }
    rows.push({ label, ms: ms / qs.length, worse, missing });
  };
  for (const algorithm of ['astar', 'jps', 'jps_plus']) {
    if (algorithm === 'jps_plus') grid.findPath(qs[0][0], qs[0][1], { algorithm }); // builds its table
    run(`pathd-wasm ${algorithm}`, (s, g) => grid.findPath(s, g, { algorithm }).cost);
  }
  const opts = { diagonalMovement: PF.DiagonalMovement.OnlyWhenNoObstacles };
  const finders = {
    'PathFinding.js AStarFinder': new PF.AStarFinder(opts),
    'PathFinding.js JumpPointFinder': new PF.JumpPointFinder(opts),
  };
  for (const [label, f] of Object.entries(finders)) {
    run(label, (s, g) => {
      const p = f.findPath(s[0], s[1], g[0], g[1], pfGrid.clone());
      return p.length ? pfCost(p) : Infinity;
    });
  }
  console.log(`\n${name} (${W}x${H}), ${qs.length} queries, seed ${seed}: mean ms per query, answers above the optimum`);
  for (const row of rows) {
    console.log(`  ${row.label.padEnd(32)} ${row.ms.toFixed(3).padStart(9)} ms   ${row.worse} suboptimal${row.missing ? `, ${row.missing} not found` : ''}`);
  }
}

console.log(`node ${process.version}, pathfinding ${require('pathfinding/package.json').version}`);
bench('arena2');
bench('maze512-1-0');
