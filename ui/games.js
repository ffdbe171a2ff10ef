// pathd visualiser: the questions games ask (issue 23), answered by the server.
//
// A set of goals (the nearest one wins: `goals`, `goal_index`), a start or goal snapped to
// the nearest usable cell (`snap`, `snapped`), a goal reached within a radius (`goal_radius`,
// `goal_visible`), a flight from a point (`flee`), and a table of path costs from the starts
// to the goals (`POST /v1/maps/{name}/matrix`). The engine in the tab answers none of them,
// so a query that asks one runs on the server (without a trace: the server has none for
// them) and says so; a plain query stays in the tab.
'use strict';

const GAMES = {
  goals: [],       // goals mode: the goals set (goals[0] is also S.goal, for the plain query)
  starts: [],      // goals mode, shift-click: more sources for the distance table
  matrix: null,    // { sources, targets, costs, map_version } of the table shown, or null
  matrixToken: 0,  // the latest table asked for; older answers are dropped
};
const GOAL = '#e05a5a';
const REACHED = '#ffd166';
const SNAP_LINK = '#f5f5f5';
const RANGE = 'rgba(255,209,102,0.9)';
const FLEE = 'rgba(255,120,200,0.9)';

const goalsMode = () => $('mode-goals').checked;
const numberIn = (id) => { const v = $(id).value.trim(); return v === '' || !Number.isFinite(+v) ? null : +v; };
const samePoint = (a, b) => !!a && !!b && a[0] === b[0] && a[1] === b[1];
const pt = (p) => `(${p[0]}, ${p[1]})`;

// Whether the query asks a game's question (then it runs on the server, see the top).
function gamesActive() {
  if (S.offline || S.source !== 'server') return false;
  return (goalsMode() && GAMES.goals.length >= 2) || $('flee').checked
    || numberIn('goal-radius') !== null || numberIn('snap') !== null;
}

// The query's body with the games' options (from `serverBody`): `goals` before `flee`
// before `goal_radius` (the server takes only one of them), `snap` with any.
function gamesBody(body) {
  if (!gamesActive()) return body;
  delete body.trace;
  const radius = numberIn('goal-radius');
  if (goalsMode() && GAMES.goals.length >= 2) {
    delete body.goal;
    body.goals = GAMES.goals.map((g) => g.slice());
  } else if ($('flee').checked) {
    delete body.goal;
    body.flee = { from: S.goal.slice(), distance: numberIn('flee-distance') || 0 };
  } else if (radius !== null) {
    body.goal_radius = radius;
    if ($('goal-visible').checked) body.goal_visible = true;
  }
  const snap = numberIn('snap');
  if (snap !== null) body.snap = snap;
  return body;
}

// What an answer says beyond its cost, for the message line ('' for a plain query).
function gamesNote(r) {
  const a = r && r.asked;
  if (!a) return '';
  const parts = [];
  if (a.goals) {
    parts.push(r.goal_index !== undefined
      ? `goal ${r.goal_index} of ${a.goals.length} reached ${pt(r.goal)}`
      : `none of ${a.goals.length} goals reached`);
  }
  if (a.flee) parts.push(r.goal ? `fled to ${pt(r.goal)}, at least ${fmt(a.flee.distance)} from ${pt(a.flee.from)}` : 'no cell far enough');
  if (a.goal_radius !== undefined) parts.push(r.goal ? `reached ${pt(r.goal)} within ${fmt(a.goal_radius)} of ${pt(a.goal)}` : `nothing within ${fmt(a.goal_radius)}`);
  if (a.snap !== undefined) {
    const moved = snapMoves(r);
    parts.push(moved.length
      ? 'snapped: ' + moved.map((m) => `${m.end} ${pt(m.asked)} → ${pt(m.used)}`).join(', ')
      : 'snap: nothing moved');
  }
  return parts.length ? ' · ' + parts.join(' · ') : '';
}

// The ends `snap` moved: [{ end: 'start' | 'goal', asked, used }].
function snapMoves(r) {
  const a = r && r.asked;
  if (!a || a.snap === undefined || !r.snapped) return [];
  const out = [];
  if (r.start && !samePoint(a.start, r.start)) out.push({ end: 'start', asked: a.start, used: r.start });
  // Only a single `goal` snaps (with `goals` or `flee` the answer's goal is the one reached).
  if (a.goal && a.goal_radius === undefined && r.goal && !samePoint(a.goal, r.goal)) out.push({ end: 'goal', asked: a.goal, used: r.goal });
  return out;
}

// ---------------------------------------------------------------- the goals set

function setGoals(goals) {
  GAMES.goals = goals;
  S.goal = goals.length ? goals[0] : null;
  if (!S.goal) clearAll();
  updatePoints();
  renderGoals();
  if (S.start && S.goal) runQuery();
}

// Goals mode: a click adds a goal, or removes the one clicked; with shift, the same for the
// distance table's other starts.
function toggleGoal(cell, shift) {
  const list = shift ? GAMES.starts : GAMES.goals;
  const at = list.findIndex((g) => samePoint(g, cell));
  const next = at >= 0 ? list.filter((_, i) => i !== at) : [...list, cell];
  if (shift) {
    GAMES.starts = next;
    renderGoals();
    S.dirty = true;
    runMatrix();
  } else setGoals(next);
}

function resetGames() {
  GAMES.goals = [];
  GAMES.starts = [];
  GAMES.matrix = null;
  GAMES.matrixToken++;
  renderGoals();
  renderMatrix();
}

// The goals list: each goal, the one reached (pane A's answer) marked with its cost.
function renderGoals() {
  const r = S.panes[0] && S.panes[0].result;
  const reached = r && r.asked && r.asked.goals ? r.goal_index : undefined;
  const ol = $('goals-list');
  ol.textContent = '';
  GAMES.goals.forEach((g, i) => {
    const li = document.createElement('li');
    li.textContent = pt(g) + (i === reached ? ` reached · cost ${fmt(r.cost)}` : '');
    if (i === reached) li.className = 'reached';
    ol.appendChild(li);
  });
  $('goals-label').textContent = GAMES.goals.length
    ? `${GAMES.goals.length}${GAMES.starts.length ? ` · ${GAMES.starts.length + 1} starts` : ''}`
    : '–';
  const how = [];
  if (gamesActive()) how.push('answered on the server, without a trace (the engine in the tab has no goals, radius, flee or snap)');
  else if (S.source === 'local' && (numberIn('snap') !== null || numberIn('goal-radius') !== null || $('flee').checked)) how.push('these options need a server map');
  $('games-note').textContent = how.join(' ');
}

// After every query: the list, the table.
function showGames() {
  renderGoals();
  runMatrix();
  S.dirty = true;
}

// ---------------------------------------------------------------- the distance table

// Rows: the start and the other starts; columns: the goals (or the one goal). Asked again
// after every query while "distance table" is on.
async function runMatrix() {
  const token = ++GAMES.matrixToken;
  if (!$('matrix').checked || S.source !== 'server' || S.offline || !S.start) {
    GAMES.matrix = null;
    renderMatrix();
    return;
  }
  const targets = GAMES.goals.length && goalsMode() ? GAMES.goals : (S.goal ? [S.goal] : []);
  if (!targets.length) { GAMES.matrix = null; renderMatrix(); return; }
  const body = { sources: [S.start, ...GAMES.starts], targets: targets.map((t) => t.slice()) };
  if (S.profile) body.profile = S.profile;
  const size = Math.max(1, Math.min(8, +$('size').value || 1));
  if (size > 1) body.size = size;
  try {
    const m = await (await api('POST', `/v1/maps/${encodeURIComponent(S.name)}/matrix`, { json: body })).json();
    if (token !== GAMES.matrixToken) return;
    GAMES.matrix = { sources: body.sources, targets: body.targets, costs: m.costs, map_version: m.map_version };
  } catch (e) {
    if (token !== GAMES.matrixToken) return;
    GAMES.matrix = null;
    if (e instanceof ApiError && e.status === 404 && e.code === 'not_found') {
      // A server from before distance tables: no such route.
      $('matrix').checked = false;
      say('this server has no distance tables (POST /v1/maps/{name}/matrix)', 'warn');
    } else sayError('distance table', e);
  }
  renderMatrix();
}

// A cost's colour: green (the table's cheapest) through yellow to red (its dearest).
function heat(c, lo, hi) {
  const t = hi > lo ? (c - lo) / (hi - lo) : 0;
  return `hsl(${Math.round(120 * (1 - t))}, 65%, 32%)`;
}

function renderMatrix() {
  const table = $('matrix-table');
  const m = GAMES.matrix;
  table.textContent = '';
  table.hidden = !m;
  if (!m) return;
  const finite = m.costs.flat().filter((c) => c !== null);
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  const head = table.createTHead().insertRow();
  head.appendChild(document.createElement('th')).textContent = 'from \\ to';
  m.targets.forEach((t, j) => { head.appendChild(document.createElement('th')).textContent = `${j} ${pt(t)}`; });
  const body = table.createTBody();
  m.sources.forEach((s, i) => {
    const row = body.insertRow();
    row.appendChild(document.createElement('th')).textContent = (i ? `start ${i}` : 'start') + ` ${pt(s)}`;
    const best = Math.min(...m.costs[i].filter((c) => c !== null));
    m.costs[i].forEach((c) => {
      const td = row.insertCell();
      td.textContent = c === null ? '–' : fmt(c);
      if (c !== null) td.style.background = heat(c, lo, hi);
      td.className = c === null ? 'dim' : (c === best ? 'best' : '');
    });
  });
  table.title = `path costs at map version ${m.map_version}, from ${m.sources.length} start(s) to ${m.targets.length} goal(s): green the cheapest, red the dearest, bold each start's nearest, – unreachable`;
}

// ---------------------------------------------------------------- drawing

function ring(ctx, p, colour, width, scale, dash) {
  const r = Math.max(8 / scale, Math.min(0.5, 16 / scale));
  ctx.beginPath();
  ctx.arc(p[0] + 0.5, p[1] + 0.5, r, 0, Math.PI * 2);
  ctx.strokeStyle = colour;
  ctx.lineWidth = width / scale;
  ctx.setLineDash(dash ? dash.map((d) => d / scale) : []);
  ctx.stroke();
  ctx.setLineDash([]);
}

function circle(ctx, c, radius, colour, scale) {
  ctx.beginPath();
  ctx.arc(c[0] + 0.5, c[1] + 0.5, radius, 0, Math.PI * 2);
  ctx.strokeStyle = colour;
  ctx.lineWidth = 2 / scale;
  ctx.setLineDash([6 / scale, 4 / scale]);
  ctx.stroke();
  ctx.setLineDash([]);
}

function label(ctx, p, text, scale) {
  const dpr = window.devicePixelRatio || 1;
  ctx.save();
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.font = '600 12px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  const x = S.view.ox + (p[0] + 0.5) * scale + Math.max(8, Math.min(0.5 * scale, 16)) + 2;
  const y = S.view.oy + (p[1] + 0.5) * scale;
  ctx.lineWidth = 3;
  ctx.strokeStyle = '#101418';
  ctx.strokeText(text, x, y);
  ctx.fillStyle = '#ffffff';
  ctx.fillText(text, x, y);
  ctx.restore();
}

// Over the markers: the goals (the one reached gold, ringed), the other starts, the ends
// `snap` moved (asked: a dashed ring, used: a marker, a link between), the goal radius and
// the flee distance. What it drew is kept in `p.games` (the browser test reads it).
function drawGames(ctx, p, scale) {
  const r = p.result;
  const a = r && r.asked;
  const drawn = { goals: [], reached: null, snapped: [], radius: null, flee: null };
  if (goalsMode()) {
    const reached = a && a.goals ? r.goal_index : undefined;
    GAMES.goals.forEach((g, i) => {
      marker(ctx, g, i === reached ? REACHED : GOAL);
      if (i === reached) { ring(ctx, g, REACHED, 3, scale); drawn.reached = g; }
      if (GAMES.goals.length > 1) label(ctx, g, String(i), scale);
      drawn.goals.push(g);
    });
    GAMES.starts.forEach((s, i) => { marker(ctx, s, '#4ec27a'); label(ctx, s, `start ${i + 1}`, scale); });
  }
  if (a && a.goal_radius !== undefined && a.goal) {
    circle(ctx, a.goal, a.goal_radius, RANGE, scale);
    drawn.radius = { centre: a.goal, radius: a.goal_radius };
    if (r.goal) { marker(ctx, r.goal, REACHED); ring(ctx, r.goal, REACHED, 3, scale); drawn.reached = r.goal; }
  }
  if (a && a.flee) {
    // Path cost is at least the straight-line distance, so every cell outside this circle
    // is far enough; the answer's cell may be inside it (round a wall).
    circle(ctx, a.flee.from, a.flee.distance, FLEE, scale);
    drawn.flee = { from: a.flee.from, distance: a.flee.distance };
    if (r.goal) { marker(ctx, r.goal, REACHED); ring(ctx, r.goal, REACHED, 3, scale); drawn.reached = r.goal; }
  }
  for (const m of snapMoves(r)) {
    polyline(ctx, [m.asked, m.used], SNAP_LINK, 2, [3, 3]);
    ring(ctx, m.asked, SNAP_LINK, 2, scale, [3, 2]);
    marker(ctx, m.used, m.end === 'start' ? '#4ec27a' : GOAL);
    ring(ctx, m.used, SNAP_LINK, 2, scale);
    label(ctx, m.used, `${m.end} snapped`, scale);
    drawn.snapped.push({ end: m.end, asked: m.asked, used: m.used });
  }
  p.games = drawn;
}

// ---------------------------------------------------------------- input

function bindGames() {
  $('clear-goals').addEventListener('click', () => {
    GAMES.starts = [];
    setGoals([]);
    runMatrix();
  });
  $('clear-points').addEventListener('click', () => { resetGames(); S.dirty = true; });
  for (const el of document.querySelectorAll('input[name=mode]')) {
    el.addEventListener('change', () => {
      // Into goals mode the goal on screen becomes the first goal; out of it, the first
      // goal stays as the goal.
      if (goalsMode() && S.goal && !GAMES.goals.length) GAMES.goals = [S.goal];
      if (!goalsMode() && GAMES.goals.length) S.goal = GAMES.goals[0];
      updatePoints();
      renderGoals();
      if (!$('mode-paint').checked && S.start && S.goal) runQuery();
    });
  }
  for (const id of ['snap', 'goal-radius', 'flee-distance']) $(id).addEventListener('input', (e) => { renderGoals(); onParamChange(e); });
  for (const id of ['goal-visible', 'flee']) $(id).addEventListener('change', (e) => { renderGoals(); onParamChange(e); });
  $('matrix').addEventListener('change', () => runMatrix());
  renderGoals();
}
