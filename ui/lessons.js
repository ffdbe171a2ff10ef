// pathd visualiser: the lessons of A*, each a preset (a map made here, a query, the
// options of pane A and of pane B to compare with) and a note saying what to see.
//
// The maps are built in the tab, so the lessons work offline. The worked example's table
// lists every event of the trace with g, h and f; the player's step marks how far it got.
'use strict';

function blank(W, H) {
  return new Uint8Array(W * H).fill(1);
}

function walls(c, W, rects) {
  for (const [x0, y0, x1, y1] of rects) for (let y = y0; y <= y1; y++) for (let x = x0; x <= x1; x++) c[y * W + x] = 0;
  return c;
}

// A small deterministic generator (the same maze for everyone).
function lcg(seed) {
  let s = seed >>> 0;
  return () => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s / 4294967296; };
}

const LESSONS = {
  worked3x3: {
    title: 'worked example: 3×3, obstacle at (1,1)',
    note: 'A* from (0,0) to (2,2) round the obstacle at (1,1), 4-way moves, Manhattan distance. ' +
      'Each row is one event: g is the cost so far, h the estimate to the goal, f = g + h. ' +
      'Every expansion has f = 4, the true cost: Manhattan is exact on an open 4-way grid, and ' +
      'ties go to the deeper node (larger g), so A* walks straight to the goal.',
    map: () => ({ W: 3, H: 3, costs: walls(blank(3, 3), 3, [[1, 1, 1, 1]]), movement: 'cardinal' }),
    start: [0, 0], goal: [2, 2],
    a: { algorithm: 'astar', heuristic: 'manhattan' },
    speed: 3,
  },
  manhattan_octile: {
    title: 'Manhattan on an 8-way grid: wrong paths',
    note: 'Manhattan overestimates a diagonal step: it counts 2 where the step costs √2. ' +
      'The heuristic is inadmissible on an octile map, so A* (pane A) settles for a longer path ' +
      'than the octile heuristic finds (pane B): the answer says optimal: false.',
    map: () => ({ W: 30, H: 20, costs: walls(blank(30, 20), 30, [[10, 3, 11, 16], [18, 0, 19, 12]]), movement: 'octile' }),
    start: [2, 2], goal: [27, 17],
    a: { algorithm: 'astar', heuristic: 'manhattan' },
    b: { algorithm: 'astar', heuristic: undefined, tieBreak: 'high_g' },
  },
  euclidean_cardinal: {
    title: 'Euclidean on a 4-way grid: slow paths',
    note: 'On a 4-way grid the straight-line distance underestimates every diagonal stretch, ' +
      'so A* with it (pane A) stays optimal but expands far more cells than with Manhattan ' +
      'distance (pane B), the exact estimate for 4-way moves.',
    map: () => ({ W: 40, H: 30, costs: walls(blank(40, 30), 40, [[20, 5, 20, 29]]), movement: 'cardinal' }),
    start: [5, 20], goal: [35, 20],
    a: { algorithm: 'astar', heuristic: 'euclidean' },
    b: { algorithm: 'astar', heuristic: undefined, tieBreak: 'high_g' },
  },
  ties: {
    title: 'ties: a fat diamond instead of a line',
    note: 'On open ground every cell between start and goal has the same f. With no tie-breaking ' +
      '(pane A) A* expands them all, a fat diamond; breaking ties toward the larger g (pane B, ' +
      'the default) finishes the deepest node first and goes along a line. Same cost.',
    map: () => ({ W: 40, H: 30, costs: blank(40, 30), movement: 'cardinal' }),
    start: [3, 3], goal: [36, 26],
    a: { algorithm: 'astar', tieBreak: 'none' },
    b: { algorithm: 'astar', heuristic: undefined, tieBreak: 'high_g' },
  },
  cross_product: {
    title: 'ties toward the start-goal line',
    note: 'Breaking ties by the cross product (pane A) prefers the cells nearest the straight ' +
      'line from start to goal: the path hugs the line instead of running one axis, then the ' +
      'other (pane B). Same cost, same expansions: it only picks another of the equal paths.',
    map: () => ({ W: 40, H: 30, costs: blank(40, 30), movement: 'cardinal' }),
    start: [3, 3], goal: [36, 26],
    a: { algorithm: 'astar', tieBreak: 'cross_product' },
    b: { algorithm: 'astar', heuristic: undefined, tieBreak: 'high_g' },
  },
  dijkstra_disc: {
    title: 'Dijkstra explores a disc, A* an ellipse',
    note: 'Dijkstra (pane A, h = 0) expands every cell closer than the goal, a disc (an octagon ' +
      'under 8-way moves) round the start; A* (pane B) only the cells whose g + h does not ' +
      'exceed the path cost, a thin ellipse toward the goal. Same cost.',
    map: () => ({ W: 61, H: 61, costs: blank(61, 61), movement: 'octile' }),
    start: [30, 30], goal: [52, 40],
    a: { algorithm: 'dijkstra' },
    b: { algorithm: 'astar', heuristic: undefined, tieBreak: 'high_g' },
  },
  weighted: {
    title: 'weighted A*: speed for optimality',
    note: 'Weighted A* (pane A, f = g + 2h) trusts the heuristic twice as much: it expands a ' +
      'fraction of A*\'s cells (pane B) and pays with a path up to w = 2 times the optimum ' +
      '(here a few percent more).',
    map: () => {
      const W = 64;
      const H = 40;
      const c = blank(W, H);
      const r = lcg(2);
      for (let i = 0; i < W * H; i++) if (r() < 0.3) c[i] = 0;
      c[20 * W + 3] = 1;
      c[20 * W + 60] = 1;
      return { W, H, costs: c, movement: 'octile' };
    },
    start: [3, 20], goal: [60, 20],
    a: { algorithm: 'weighted_astar', weight: 2 },
    b: { algorithm: 'astar', heuristic: undefined, tieBreak: 'high_g' },
  },
};

function initLessons() {
  const sel = $('lesson');
  sel.add(new Option('(none)', ''));
  for (const [name, l] of Object.entries(LESSONS)) sel.add(new Option(l.title, name));
  sel.addEventListener('change', (e) => {
    e.target.blur();
    applyLesson(e.target.value).catch((err) => sayError('lesson', err));
  });
}

async function applyLesson(name) {
  const L = LESSONS[name];
  if (!L) {
    S.lesson = null;
    S.compare = null;
    $('lesson-note').textContent = '';
    showLessonTable();
    return;
  }
  const key = `lesson-${name}`;
  S.localMaps.set(key, L.map());
  fillMapSelect('local:' + key);
  await selectMap('local:' + key);
  $('lesson').value = name;
  S.lesson = name;
  $('algo-a').value = L.a.algorithm;
  $('heuristic').value = L.a.heuristic || '';
  $('tie-break').value = L.a.tieBreak || 'high_g';
  if (L.a.weight) $('weight').value = String(L.a.weight);
  $('movement').value = '';
  $('size').value = '1';
  $('max-exp').value = '';
  $('smooth').checked = false;
  $('partial').checked = false;
  $('trace').checked = true;
  $('algo-b').value = L.b ? L.b.algorithm : '';
  S.compare = L.b ? { ...L.b } : null;
  rebuildGrid();
  S.start = L.start.slice();
  S.goal = L.goal.slice();
  updatePoints();
  runQuery();
  if (L.speed) {
    $('speed').value = String(Math.round(10 * Math.log10(L.speed)));
    $('speed-label').textContent = `${speed()}/s`;
  }
  $('lesson-note').textContent = L.note;
}

// The events of pane A's trace with g, h and f (small traces: a lesson's), the ones the
// player has applied marked done, the last of them current.
function showLessonTable() {
  const box = $('lesson-table');
  const p = S.panes[0];
  const tr = p && p.events;
  if (!tr || tr.count > 400) { box.hidden = true; return; }
  box.hidden = false;
  const body = box.tBodies[0];
  if (box.dataset.trace !== String(S.runs)) {
    box.dataset.trace = String(S.runs);
    body.textContent = '';
    const W = S.W;
    for (let i = 0; i < tr.count; i++) {
      const row = body.insertRow();
      const n = tr.node[i];
      const vals = [['expand', 'push', 'decrease', 'reopen'][tr.kind[i]], `(${n % W}, ${Math.floor(n / W)})`,
        fmt(tr.g[i]), fmt(tr.h[i]), fmt(tr.f[i])];
      for (const v of vals) row.insertCell().textContent = v;
    }
  }
  const rows = body.rows;
  for (let i = 0; i < rows.length; i++) {
    rows[i].classList.toggle('done', i < p.applied);
    rows[i].classList.toggle('current', i === p.applied - 1);
  }
}
