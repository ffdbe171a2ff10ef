// pathd visualiser: many agents at once (issue 26), planned by the server.
//
// Agents are placed by hand ("place agents": click a start, then its goal) or at random
// (N agents, a seed, on the cells of the map's largest connected region, so every goal is
// reachable from every start). "together" asks `POST /plans` for one collision-free plan;
// "each alone" asks `POST /paths` for each agent's own shortest path, padded with waits,
// which is what a game gets without MAPF: the same player shows both, and the same
// conflict check (`mapfConflicts`, ours, not the server's word) marks in red every vertex
// conflict (two agents in one cell at one step), swap (two agents trading cells in one step)
// and, on octile maps, crossing (two agents crossing the diagonals of one 2x2 square), at
// the step it happens, so a plan from the server that had one would show it too.
//
// A patch (painted here or by another client) while a plan is loaded: when it walls a cell
// some agent has still to visit, the page re-plans from the agents' cells at the current
// time step to their goals (a new request with those starts: agents at their goals stay
// there), and the animation goes on from that step with the new plan spliced in. The time
// line keeps the whole run: the old plan up to the step, the new one after.
'use strict';

const MAPF = {
  agents: [],        // [{ start: [x, y], goal: [x, y] }]
  pending: null,     // a start clicked, waiting for its goal
  paths: null,       // the plan played: [[x, y] per time step] per agent, all T + 1 long
  T: 0,              // its last time step
  segments: [],      // [{ from, kind, request, response }]: the plan, then each re-plan
  conflicts: [],     // mapfConflicts(paths) of the plan played
  t: 0,              // the time shown (fractional while playing: agents glide)
  playing: false,
  last: 0,           // the animation's previous frame time
  busy: false,       // a request is out (the animation holds while a re-plan is)
  again: false,      // the map changed while a re-plan was out: check again after it
  token: 0,          // the latest request; older answers are dropped
  stale: false,      // the plan crosses a wall and could not be re-planned
  drawn: [],         // the agents' cells as last drawn (the tests read them)
  replans: 0,
  blocked: null,     // the latest patch that forced a re-plan: { from, cells (walled on the
                     // way), old: [{ i, tail }] (the ways it cut, from the step re-planned) }
};
const MAPF_BATCH = 256; // queries per POST /paths (the server's default PATHD_MAX_BATCH)

const mapfPlacing = () => $('mode-agents').checked;
// Golden-angle hues, kept off red (25..340 degrees): red is for conflicts only.
const mapfColour = (i, a = 1) => `hsla(${25 + (i * 137.508) % 315}, 78%, ${i % 2 ? 62 : 50}%, ${a})`;

// ---------------------------------------------------------------- conflicts

// Every conflict of `paths` (an agent rests on its last cell once its path ends):
// `vertex` (two agents in one cell at step t, one per pair), `swap` (two agents trading
// cells between steps t - 1 and t) and, with `octile`, `cross` (two diagonal moves over one
// 2x2 square between t - 1 and t). Each is { t, kind, a, b, cell } (the swap's and
// crossing's cell is where agent a came from).
function mapfConflicts(paths, octile) {
  const out = [];
  const T = Math.max(0, ...paths.map((p) => p.length - 1));
  const at = (p, t) => p[Math.min(t, p.length - 1)];
  const key = (c) => c[0] * 65536 + c[1];
  for (let t = 0; t <= T; t++) {
    const here = new Map(); // cell -> agents in it at t
    const moves = new Map(); // "from>to" -> agent, for the moves into step t
    paths.forEach((p, i) => {
      if (!p.length) return;
      const c = at(p, t);
      const k = key(c);
      const list = here.get(k);
      if (list) {
        for (const j of list) out.push({ t, kind: 'vertex', a: j, b: i, cell: c });
        list.push(i);
      } else here.set(k, [i]);
      if (t > 0) {
        const f = at(p, t - 1);
        if (f[0] !== c[0] || f[1] !== c[1]) moves.set(`${key(f)}>${k}`, i);
      }
    });
    if (t === 0) continue;
    for (const [mv, i] of moves) {
      const [f, c] = mv.split('>').map(Number);
      const j = moves.get(`${c}>${f}`);
      if (j !== undefined && i < j) out.push({ t, kind: 'swap', a: i, b: j, cell: at(paths[i], t - 1) });
      if (!octile) continue;
      const fx = Math.floor(f / 65536), fy = f % 65536;
      const cx = Math.floor(c / 65536), cy = c % 65536;
      if (fx === cx || fy === cy) continue;
      // The other diagonal of the square: (cx, fy) -> (fx, cy), either way.
      for (const other of [`${cx * 65536 + fy}>${fx * 65536 + cy}`, `${fx * 65536 + cy}>${cx * 65536 + fy}`]) {
        const k2 = moves.get(other);
        if (k2 !== undefined && i < k2) out.push({ t, kind: 'cross', a: i, b: k2, cell: [fx, fy] });
      }
    }
  }
  return out;
}

// Sum of costs and makespan of `paths`: each agent's cost is the step from which it rests
// at its goal for good (the MAPF benchmark's measure, as the server counts it).
function mapfCosts(paths, goals) {
  let soc = 0;
  let makespan = 0;
  paths.forEach((p, i) => {
    const g = goals[i];
    const atGoal = (c) => c[0] === g[0] && c[1] === g[1];
    let k = p.length - 1; // not at the goal at the end: all of it counts
    if (atGoal(p[k])) while (k > 0 && atGoal(p[k - 1])) k--;
    soc += k;
    makespan = Math.max(makespan, k);
  });
  return { soc, makespan };
}

// ---------------------------------------------------------------- agents

function mapfRandom32(seed) {
  // mulberry32: small, seeded, the same sequence in every browser.
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The cells of the largest 4-connected region of open cells: on octile maps diagonal steps
// may not cut corners, so they connect nothing 4-way steps do not.
function mapfLargestRegion() {
  const { W, H, costs } = S;
  const seen = new Uint8Array(W * H);
  const queue = new Int32Array(W * H);
  let best = null;
  for (let s = 0; s < W * H; s++) {
    if (seen[s] || costs[s] === 0) continue;
    let head = 0;
    let tail = 0;
    queue[tail++] = s;
    seen[s] = 1;
    while (head < tail) {
      const i = queue[head++];
      const x = i % W;
      const nb = [x > 0 ? i - 1 : -1, x < W - 1 ? i + 1 : -1, i - W, i + W];
      for (const n of nb) {
        if (n < 0 || n >= W * H || seen[n] || costs[n] === 0) continue;
        seen[n] = 1;
        queue[tail++] = n;
      }
    }
    if (!best || tail > best.length) best = queue.slice(0, tail);
  }
  return best || new Int32Array(0);
}

// N agents on 2N distinct cells of the largest region, from the seed.
function mapfRandomAgents(n, seed) {
  const cells = mapfLargestRegion();
  if (cells.length < 2 * n) throw new Error(`the largest region has ${cells.length} cells: too few for ${n} agents`);
  const rnd = mapfRandom32(seed);
  for (let k = 0; k < 2 * n; k++) { // a partial Fisher-Yates shuffle
    const j = k + Math.floor(rnd() * (cells.length - k));
    const tmp = cells[k]; cells[k] = cells[j]; cells[j] = tmp;
  }
  const pt = (i) => [i % S.W, Math.floor(i / S.W)];
  return Array.from({ length: n }, (_, k) => ({ start: pt(cells[k]), goal: pt(cells[n + k]) }));
}

function setAgents(agents) {
  MAPF.agents = agents;
  MAPF.pending = null;
  clearPlan();
  mapfShow();
}

function clearPlan() {
  MAPF.token++;
  Object.assign(MAPF, { paths: null, T: 0, segments: [], conflicts: [], t: 0, playing: false,
    busy: false, again: false, stale: false, replans: 0, blocked: null });
  mapfShow();
}

function resetMapf() {
  MAPF.agents = [];
  MAPF.pending = null;
  clearPlan();
}

// "place agents" mode: a click sets a start, the next its goal (starts apart, goals apart).
function mapfClick(cell) {
  if (S.costs[cell[1] * S.W + cell[0]] === 0) { say(`(${cell[0]}, ${cell[1]}) is a wall: pick an open cell`); return; }
  const same = (a) => a[0] === cell[0] && a[1] === cell[1];
  if (!MAPF.pending) {
    if (MAPF.agents.some((a) => same(a.start))) { say('another agent starts there'); return; }
    MAPF.pending = cell;
    say(`agent ${MAPF.agents.length}: start (${cell[0]}, ${cell[1]}); click its goal`);
  } else {
    if (MAPF.agents.some((a) => same(a.goal))) { say('another agent has that goal'); return; }
    const agents = MAPF.agents.concat([{ start: MAPF.pending, goal: cell }]);
    setAgents(agents);
    say(`${agents.length} agent(s): click another start, or plan`, 'ok');
  }
  mapfShow();
}

// ---------------------------------------------------------------- plans

function mapfRequest(starts) {
  const goals = MAPF.agents.map((a) => a.goal);
  if ($('mapf-mode').value === 'alone') {
    return { kind: 'alone', queries: starts.map((s, i) => ({ start: s, goal: goals[i], algorithm: 'astar' })) };
  }
  const body = { agents: starts.map((s, i) => ({ start: s, goal: goals[i] })), time_limit_ms: Math.max(1, Math.min(30000, +$('mapf-limit').value || 1000)) };
  if ($('mapf-first').checked) body.first_solution = true;
  return { kind: 'plan', body };
}

// Sends a request; answers { paths, status, sum_of_costs, makespan, lower_bound,
// map_version, elapsed_ms } (for "alone": the paths padded, the costs counted here).
async function mapfSend(req) {
  const at = `/v1/maps/${encodeURIComponent(S.name)}`;
  if (req.kind === 'plan') return (await api('POST', `${at}/plans`, { json: req.body })).json();
  const t0 = performance.now();
  const results = [];
  let version = 0;
  for (let k = 0; k < req.queries.length; k += MAPF_BATCH) {
    const r = await (await api('POST', `${at}/paths`, { json: { queries: req.queries.slice(k, k + MAPF_BATCH) } })).json();
    results.push(...r.results);
    version = r.map_version;
  }
  // No path (or an error item): the agent stays where it is.
  const own = results.map((r, i) => (r.path && r.path.length ? r.path : [req.queries[i].start]));
  const T = Math.max(...own.map((p) => p.length - 1));
  const paths = own.map((p) => p.concat(Array.from({ length: T + 1 - p.length }, () => p[p.length - 1])));
  const { soc, makespan } = mapfCosts(paths, req.queries.map((q) => q.goal));
  const stuck = results.filter((r) => r.status !== 'found').length;
  return { status: stuck ? `${stuck} without a path` : 'independent', paths, sum_of_costs: soc, makespan,
    lower_bound: null, map_version: version, elapsed_ms: performance.now() - t0 };
}

// Plans from the agents' starts (the whole plan anew).
async function mapfPlan() {
  if (S.source !== 'server' || !S.costs) { say('pick a server map first'); return; }
  if (!MAPF.agents.length) { say('place agents first (click a start, then its goal, or N random agents)'); return; }
  clearPlan();
  const req = mapfRequest(MAPF.agents.map((a) => a.start));
  const token = ++MAPF.token;
  MAPF.busy = true;
  mapfShow();
  say(`${req.kind === 'plan' ? 'planning' : 'finding the paths of'} ${MAPF.agents.length} agents on the server…`);
  try {
    const r = await mapfSend(req);
    if (token !== MAPF.token) return;
    MAPF.busy = false;
    MAPF.segments = [{ from: 0, kind: req.kind, request: req.body || { queries: req.queries }, response: r }];
    mapfSetPaths(r.paths);
    MAPF.t = 0;
    mapfSetPlaying(true);
    say(`${req.kind === 'plan' ? 'plan' : 'each alone'}: ${r.status}, sum of costs ${r.sum_of_costs}, makespan ${r.makespan}` +
      ` · ${MAPF.conflicts.length} conflict${MAPF.conflicts.length === 1 ? '' : 's'}`, MAPF.conflicts.length ? 'warn' : 'ok');
    // The map moved on while the plan was out (it may be of the older version).
    if (MAPF.again) { MAPF.again = false; mapfMapChanged(); }
  } catch (e) {
    if (token !== MAPF.token) return;
    MAPF.busy = false;
    sayError('plan failed', e);
  }
  mapfShow();
}

function mapfSetPaths(paths) {
  MAPF.paths = paths;
  MAPF.T = Math.max(0, ...paths.map((p) => p.length - 1));
  MAPF.conflicts = mapfConflicts(paths, S.movement === 'octile');
  $('mapf-t').max = String(MAPF.T);
  S.dirty = true;
}

// The agents' cells at (integer) step t.
function mapfCellsAt(t) {
  return MAPF.paths.map((p) => p[Math.min(t, p.length - 1)]);
}

// The map changed (app.js's onMapChanged): re-plan when a wall now lies on a cell some
// agent has still to visit, from the agents' cells at the current step.
function mapfMapChanged() {
  if (MAPF.busy) { MAPF.again = true; return; } // a plan is out: check its answer after
  if (!MAPF.paths || !S.costs) return;
  const t0 = Math.floor(MAPF.t);
  const hit = [];
  const cells = [];
  const old = [];
  MAPF.paths.forEach((p, i) => {
    for (let k = t0; k < p.length; k++) {
      if (S.costs[p[k][1] * S.W + p[k][0]] === 0) {
        hit.push(i);
        cells.push(p[k]);
        old.push({ i, tail: p.slice(t0, k + 1) });
        break;
      }
    }
  });
  if (!hit.length) {
    $('mapf-note').textContent = `map version ${S.version}: the patch walls no cell an agent has still to visit; the plan goes on`;
    return;
  }
  MAPF.blocked = { from: t0, cells, old };
  mapfReplan(t0, hit).catch((e) => sayError('re-plan', e));
}

async function mapfReplan(t0, hit) {
  const starts = mapfCellsAt(t0);
  const kind = $('mapf-mode').value;
  const req = mapfRequest(starts);
  const token = ++MAPF.token;
  MAPF.busy = true;
  MAPF.t = t0; // hold at the step re-planned from
  $('mapf-note').textContent = `map version ${S.version}: a wall on the way of agent${hit.length > 1 ? 's' : ''} ${hit.slice(0, 8).join(', ')}${hit.length > 8 ? '…' : ''}: re-planning from step ${t0}…`;
  mapfShow();
  let r;
  try {
    r = await mapfSend(req);
  } catch (e) {
    if (token !== MAPF.token) return;
    MAPF.busy = false;
    MAPF.stale = true;
    sayError(`re-plan from step ${t0} failed (the plan shown crosses the new wall)`, e);
    mapfShow();
    return;
  }
  if (token !== MAPF.token) return;
  MAPF.busy = false;
  MAPF.stale = false;
  MAPF.replans++;
  // The run so far, then the new plan (whose step 0 is the agents' cells at t0).
  const old = MAPF.paths;
  const T = Math.max(...r.paths.map((p) => p.length - 1));
  const spliced = old.map((p, i) => {
    const next = r.paths[i];
    const tail = next.concat(Array.from({ length: T + 1 - next.length }, () => next[next.length - 1]));
    return p.slice(0, t0).concat(tail);
  });
  MAPF.segments.push({ from: t0, kind, request: req.body || { queries: req.queries }, response: r });
  mapfSetPaths(spliced);
  MAPF.t = t0;
  MAPF.last = performance.now();
  say(`re-planned from step ${t0} at map version ${r.map_version}: ${r.status}, ${MAPF.conflicts.length} conflict${MAPF.conflicts.length === 1 ? '' : 's'}`,
    MAPF.conflicts.length || (r.status !== 'solved' && kind === 'plan') ? 'warn' : 'ok');
  $('mapf-note').textContent = `re-planned from step ${t0} (map version ${r.map_version}): the run so far is kept, the new plan goes on from step ${t0}; dashed: the ways the wall cut`;
  mapfShow();
  if (MAPF.again) { MAPF.again = false; mapfMapChanged(); }
}

// ---------------------------------------------------------------- player

function mapfSetPlaying(on) {
  MAPF.playing = !!on && !!MAPF.paths && MAPF.t < MAPF.T;
  MAPF.last = performance.now();
  $('mapf-play').textContent = MAPF.playing ? 'pause' : 'play';
}

function mapfSeek(t) {
  MAPF.t = Math.max(0, Math.min(MAPF.T, t));
  mapfShowStep();
  S.dirty = true;
}

const mapfSpeed = () => +$('mapf-speed').value; // steps per second

function mapfFrame(now) {
  if (MAPF.playing && !MAPF.busy && MAPF.paths) {
    // rAF's time is the frame's start, which may precede a click's performance.now().
    const dt = Math.max(0, Math.min(0.25, (now - MAPF.last) / 1000));
    const t = Math.min(MAPF.T, MAPF.t + dt * mapfSpeed());
    if (t !== MAPF.t) {
      MAPF.t = t;
      mapfShowStep();
      S.dirty = true;
    }
    if (MAPF.t >= MAPF.T) mapfSetPlaying(false);
  }
  MAPF.last = now;
  requestAnimationFrame(mapfFrame);
}

// ---------------------------------------------------------------- panel

function mapfShow() {
  const n = MAPF.agents.length;
  $('mapf-agents').textContent = `${n}${MAPF.pending ? ` (+ a start at (${MAPF.pending[0]}, ${MAPF.pending[1]}))` : ''}`;
  const seg = MAPF.segments[MAPF.segments.length - 1];
  const r = seg && seg.response;
  const set = (id, v, cls) => { $(id).textContent = v; $(id).className = cls || ''; };
  if (!r) {
    for (const id of ['status', 'soc', 'makespan', 'lb', 'version', 'time']) set(`mapf-${id}`, MAPF.busy ? '…' : '–', 'dim');
  } else {
    const whole = mapfCosts(MAPF.paths, MAPF.agents.map((a) => a.goal));
    const since = MAPF.segments.length > 1 ? ` (from step ${seg.from}: ${r.sum_of_costs})` : '';
    set('mapf-status', `${seg.kind === 'alone' ? 'each alone · ' : ''}${r.status}${MAPF.stale ? ' (stale: crosses a wall)' : ''}`,
      MAPF.stale ? 'error' : r.status === 'solved' ? 'found' : r.status === 'failed' ? 'error' : 'partial');
    set('mapf-soc', `${whole.soc}${since}`);
    set('mapf-makespan', `${MAPF.T}${MAPF.segments.length > 1 ? ` (from step ${seg.from}: ${r.makespan})` : ''}`);
    set('mapf-lb', r.lower_bound === null ? '– (no plan: each alone)' : `${r.lower_bound}${MAPF.segments.length > 1 ? ` (from step ${seg.from})` : ''}`,
      r.lower_bound === null ? 'dim' : '');
    set('mapf-version', `${r.map_version}${MAPF.replans ? ` · ${MAPF.replans} re-plan${MAPF.replans > 1 ? 's' : ''}` : ''}`);
    set('mapf-time', `${fmt(Math.round(r.elapsed_ms * 100) / 100)} ms`);
  }
  const c = MAPF.conflicts;
  const box = $('mapf-conflicts');
  if (!MAPF.paths) {
    box.textContent = 'conflicts: –';
    box.className = 'conflicts';
  } else {
    const by = (k) => c.filter((x) => x.kind === k).length;
    box.textContent = c.length
      ? `${c.length} conflict${c.length === 1 ? '' : 's'}: ${by('vertex')} vertex, ${by('swap')} swap${by('cross') ? `, ${by('cross')} crossing` : ''}`
      : '0 conflicts: collision-free';
    box.className = 'conflicts ' + (c.length ? 'bad' : 'good');
  }
  box.dataset.count = MAPF.paths ? String(c.length) : '';
  const list = $('mapf-conflict-list');
  list.textContent = '';
  for (const x of c.slice(0, 50)) {
    const li = document.createElement('li');
    li.textContent = `step ${x.t}: ${x.kind} · agents ${x.a} & ${x.b} · (${x.cell[0]}, ${x.cell[1]})`;
    li.addEventListener('click', () => { mapfSetPlaying(false); mapfSeek(x.t); });
    list.appendChild(li);
  }
  if (c.length > 50) list.appendChild(Object.assign(document.createElement('li'), { textContent: `… ${c.length - 50} more` }));
  $('mapf-play').disabled = !MAPF.paths;
  $('mapf-step').disabled = !MAPF.paths;
  $('mapf-t').disabled = !MAPF.paths;
  mapfShowStep();
  S.dirty = true;
}

// The time step in the panel: slider, counter, the conflicts now, the time line.
function mapfShowStep() {
  const t = Math.floor(MAPF.t);
  $('mapf-t').value = String(t);
  const now = MAPF.paths ? mapfConflictsNear(MAPF.t).length : 0;
  $('mapf-t-label').textContent = `step ${t} / ${MAPF.T}${now ? ` · ${now} here` : ''}`;
  $('mapf-t-label').className = now ? 'bad' : '';
  drawTimeline();
}

// The conflicts to mark at time `t`: a vertex conflict at its step, a swap or crossing
// while the agents are on the edge (the half step either side of its middle).
function mapfConflictsNear(t) {
  return MAPF.conflicts.filter((c) => Math.abs((c.kind === 'vertex' ? c.t : c.t - 0.5) - t) <= 0.5);
}

// Red ticks at the steps with conflicts, a cursor at the step shown.
function drawTimeline() {
  const cv = $('mapf-timeline');
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(cv.clientWidth * dpr));
  const h = Math.max(1, Math.round(cv.clientHeight * dpr));
  if (cv.width !== w || cv.height !== h) { cv.width = w; cv.height = h; }
  const ctx = cv.getContext('2d');
  ctx.fillStyle = '#2a323c';
  ctx.fillRect(0, 0, w, h);
  if (!MAPF.paths || MAPF.T === 0) return;
  const x = (t) => (t / MAPF.T) * (w - 2) + 1;
  ctx.fillStyle = '#e05a5a';
  for (const c of MAPF.conflicts) ctx.fillRect(Math.round(x(c.t)) - dpr, 0, 2 * dpr, h);
  ctx.fillStyle = '#9ad1ff';
  for (const s of MAPF.segments.slice(1)) ctx.fillRect(Math.round(x(s.from)) - dpr, 0, 2 * dpr, h / 2);
  ctx.fillStyle = '#f5b942';
  ctx.fillRect(Math.round(x(MAPF.t)) - dpr, 0, 2 * dpr, h);
}

// ---------------------------------------------------------------- drawing

// Pane A: the agents' goals, their paths still to go, the agents (gliding between cells
// while playing) and the conflicts at this moment, in red.
function drawMapf(ctx, p, scale) {
  if (p !== S.panes[0]) return;
  const agents = MAPF.agents;
  if (!agents.length && !MAPF.pending) { MAPF.drawn = []; return; }
  const px = 1 / scale;
  const t = MAPF.t;
  const k = Math.floor(t);
  const u = t - k;
  if (MAPF.paths && $('mapf-show-paths').checked) {
    MAPF.paths.forEach((path, i) => {
      if (k >= path.length - 1) return;
      polyline(ctx, path.slice(k), mapfColour(i, 0.55), 2);
    });
  }
  // Goals: squares in the agent's colour.
  const gs = Math.max(0.8, 9 * px);
  agents.forEach((a, i) => {
    ctx.strokeStyle = mapfColour(i);
    ctx.lineWidth = 2.5 * px;
    ctx.strokeRect(a.goal[0] + 0.5 - gs / 2, a.goal[1] + 0.5 - gs / 2, gs, gs);
  });
  // The latest re-plan's cause: the ways the patch cut (dashed) and the walled cells (X).
  const b = MAPF.blocked;
  if (b) {
    for (const o of b.old) polyline(ctx, o.tail, mapfColour(o.i, 0.8), 2, [4, 4]);
    ctx.strokeStyle = '#ff9f1c';
    ctx.lineWidth = 3 * px;
    ctx.beginPath();
    for (const [x, y] of b.cells) {
      ctx.rect(x + 0.1, y + 0.1, 0.8, 0.8);
      ctx.moveTo(x + 0.2, y + 0.2); ctx.lineTo(x + 0.8, y + 0.8);
      ctx.moveTo(x + 0.8, y + 0.2); ctx.lineTo(x + 0.2, y + 0.8);
    }
    ctx.stroke();
  }
  // All the plan's conflict cells, faint: where to look.
  if (MAPF.conflicts.length) {
    ctx.strokeStyle = 'rgba(255,40,40,0.55)';
    ctx.lineWidth = 1.5 * px;
    for (const c of MAPF.conflicts) ctx.strokeRect(c.cell[0], c.cell[1], 1, 1);
  }
  const pos = agents.map((a, i) => {
    if (!MAPF.paths) return a.start;
    const path = MAPF.paths[i];
    const c0 = path[Math.min(k, path.length - 1)];
    const c1 = path[Math.min(k + 1, path.length - 1)];
    return [c0[0] + (c1[0] - c0[0]) * u, c0[1] + (c1[1] - c0[1]) * u];
  });
  const near = MAPF.paths ? mapfConflictsNear(t) : [];
  const inConflict = new Set();
  for (const c of near) { inConflict.add(c.a); inConflict.add(c.b); }
  const r = Math.max(0.38, 4.5 * px);
  pos.forEach((q, i) => {
    ctx.beginPath();
    ctx.arc(q[0] + 0.5, q[1] + 0.5, r, 0, Math.PI * 2);
    ctx.fillStyle = mapfColour(i);
    ctx.fill();
    ctx.lineWidth = (inConflict.has(i) ? 3 : 1) * px;
    ctx.strokeStyle = inConflict.has(i) ? '#ff1a1a' : '#101418';
    ctx.stroke();
  });
  if (scale >= 16) {
    ctx.save();
    ctx.fillStyle = '#101418';
    ctx.font = `600 ${Math.min(0.55, 13 * px)}px system-ui, sans-serif`;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    pos.forEach((q, i) => ctx.fillText(String(i), q[0] + 0.5, q[1] + 0.52));
    ctx.restore();
  }
  // The conflicts now: a red ring and cross on the cell, a red bar between swapping agents.
  for (const c of near) {
    const R = Math.max(0.9, 13 * px);
    const x = c.cell[0] + 0.5;
    const y = c.cell[1] + 0.5;
    ctx.strokeStyle = '#ff1a1a';
    ctx.lineWidth = 3.5 * px;
    ctx.beginPath();
    ctx.arc(x, y, R, 0, Math.PI * 2);
    ctx.moveTo(x - R * 0.6, y - R * 0.6); ctx.lineTo(x + R * 0.6, y + R * 0.6);
    ctx.moveTo(x + R * 0.6, y - R * 0.6); ctx.lineTo(x - R * 0.6, y + R * 0.6);
    ctx.stroke();
    if (c.kind !== 'vertex') polyline(ctx, [pos[c.a], pos[c.b]], '#ff1a1a', 4);
  }
  if (MAPF.pending) {
    ctx.beginPath();
    ctx.arc(MAPF.pending[0] + 0.5, MAPF.pending[1] + 0.5, r, 0, Math.PI * 2);
    ctx.strokeStyle = '#ffffff';
    ctx.lineWidth = 2 * px;
    ctx.stroke();
  }
  MAPF.drawn = pos;
}

// ---------------------------------------------------------------- input

function bindMapf() {
  $('mapf-random').addEventListener('click', () => {
    if (!S.costs) { say('pick a map first'); return; }
    const n = Math.max(1, Math.min(2000, Math.floor(+$('mapf-n').value) || 1));
    const seed = Math.floor(+$('mapf-seed').value) || 0;
    try {
      setAgents(mapfRandomAgents(n, seed));
      say(`${n} random agents (seed ${seed}) on the largest region: plan them`, 'ok');
    } catch (e) {
      sayError('random agents', e);
    }
  });
  $('mapf-clear').addEventListener('click', () => { resetMapf(); say('agents cleared'); });
  $('mapf-plan').addEventListener('click', () => mapfPlan());
  $('mapf-mode').addEventListener('change', (e) => { e.target.blur(); if (MAPF.agents.length && S.source === 'server') mapfPlan(); });
  $('mapf-play').addEventListener('click', () => {
    if (!MAPF.playing && MAPF.t >= MAPF.T) mapfSeek(0);
    mapfSetPlaying(!MAPF.playing);
  });
  $('mapf-step').addEventListener('click', () => { mapfSetPlaying(false); mapfSeek(Math.floor(MAPF.t) + 1); });
  $('mapf-t').addEventListener('input', (e) => { mapfSetPlaying(false); mapfSeek(+e.target.value); });
  const showSpeed = () => { $('mapf-speed-label').textContent = `${mapfSpeed()} steps/s`; };
  $('mapf-speed').addEventListener('input', showSpeed);
  showSpeed();
  $('mapf-show-paths').addEventListener('change', () => { S.dirty = true; });
  mapfShow();
  requestAnimationFrame(mapfFrame);
}
