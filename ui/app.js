// pathd visualiser: state, maps, queries and input.
//
// The engine runs in the tab (PathdWasm, the engine compiled to WebAssembly): the map on
// screen, a server map's cells, a dropped .map file or one drawn here, is searched locally,
// so every parameter change re-runs at once and traces have no cap. Connected (served by
// pathd) the page also lists the server's maps, sends strokes as patches with `if_version`,
// follows subscriptions and their repairs, runs HPA* (the server's abstraction) and, with
// "run on the server", any query there to compare. Opened as a file (file://) it works
// with no server at all (offline mode): nothing is installed, nothing is uploaded.
//
// Files: api.js (the JSON API, messages), trace.js (traces and the player), draw.js
// (drawing), live.js (painting, undo, subscriptions), lessons.js (the presets), mapf.js
// (many agents: plans, conflicts, re-plans on patches), this one.
'use strict';

const ALGORITHMS = ['astar', 'dijkstra', 'weighted_astar', 'jps', 'jps_plus', 'theta', 'hpa', 'auto', 'subgoal'];
// Run on the server only: they need a structure the server keeps per map version.
const SERVER_ONLY = ['hpa', 'subgoal'];
const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- state

const S = {
  offline: location.protocol === 'file:',
  engine: { ready: false, grid: null }, // the engine in the tab and the map's grid in it
  maps: [],           // summaries from GET /v1/maps
  localMaps: new Map(), // name -> { W, H, costs, movement }: dropped, drawn, lessons
  name: '',           // the selected server map ('' for none or a local map)
  profile: '',        // the unit-type profile shown and searched ('' the map's default)
  source: null,       // 'server' | 'local' | null
  summary: null,
  W: 0, H: 0, version: 0, movement: 'octile',
  costs: null,        // Uint8Array, row-major
  mapCanvas: null,    // offscreen, W x H
  view: { scale: 1, ox: 0, oy: 0 },
  start: null, goal: null,
  hover: null,
  panes: [],          // see makePane
  step: 0, total: 0, playing: false, carry: 0, lastTick: 0, frames: 0,
  runs: 0,            // queries run (tests watch it)
  queryToken: 0,      // the latest query; older server answers are dropped
  compare: null,      // a lesson's options for pane B (else B differs by algorithm only)
  lesson: null,
  flow: null,         // { dirs: Uint8Array, canvas } of the flow field to the goal
  paint: null,        // { cells: Map(idx -> cost) } while a stroke is drawn
  strokes: [],        // this tab's strokes, for undo: { base, cells: [{x, y, cost, old}] }
  patching: false,
  sub: null,          // { id, path, abort, events, shown }
  loading: false,
  dirty: true,
};

// ---------------------------------------------------------------- the engine

async function initEngine() {
  await PathdWasm.init();
  S.engine.ready = true;
  rebuildGrid();
}

// The map's grid in the engine, under the chosen movement rule: built when the page is
// next idle (drawing a large map first), or at once when something needs it (ensureGrid).
function rebuildGrid() {
  if (S.engine.grid) S.engine.grid.free();
  S.engine.grid = null;
  S.flow = null;
  if (!S.costs || !S.engine.ready) return;
  const idle = window.requestIdleCallback || ((f) => setTimeout(f, 30));
  idle(() => ensureGrid(), { timeout: 300 });
}

function ensureGrid() {
  if (S.engine.grid || !S.costs || !S.engine.ready) return S.engine.grid;
  S.engine.grid = new PathdWasm.Grid(S.W, S.H, S.costs, { movement: movementRule() });
  if ($('flow').checked) computeFlow();
  return S.engine.grid;
}

function movementRule() {
  return $('movement').value || S.movement;
}

// ---------------------------------------------------------------- maps

async function loadMapList(select) {
  if (S.offline) { fillMapSelect(); return; }
  const list = await (await api('GET', '/v1/maps')).json();
  S.maps = list.maps;
  S.damaged = list.damaged || [];
  fillMapSelect(select);
}

function fillMapSelect(select) {
  const sel = $('map-select');
  sel.textContent = '';
  sel.add(new Option(S.offline ? '(drop or draw a map)' : '(pick a map)', ''));
  for (const m of S.maps) {
    sel.add(new Option(`${m.name}  (${m.width}×${m.height}${m.uniform ? '' : ', weighted'})`, m.name));
  }
  for (const d of S.damaged || []) {
    const o = new Option(`${d.name} (damaged)`, d.name);
    o.disabled = true;
    sel.add(o);
  }
  for (const [name, m] of S.localMaps) sel.add(new Option(`${name}  (${m.W}×${m.H}, in this tab)`, 'local:' + name));
  const want = select !== undefined ? select : (S.source === 'local' ? 'local:' + S.localName : S.name);
  if (want && [...sel.options].some((o) => o.value === want)) sel.value = want;
}

async function selectMap(value) {
  stopSubscription();
  S.lesson = null;
  S.compare = null;
  $('lesson').value = '';
  $('lesson-note').textContent = '';
  S.start = S.goal = null;
  resetGames();
  resetMapf();
  S.strokes = [];
  updateStrokes();
  clearAll();
  if (value && value.startsWith('local:')) {
    const name = value.slice(6);
    const m = S.localMaps.get(name);
    S.name = '';
    S.localName = name;
    setMap({ ...m, costs: m.costs.slice(), version: 1, source: 'local', summary: null });
    $('map-info').textContent = `· ${m.W}×${m.H} · ${m.movement} · in this tab`;
    fit();
    return;
  }
  S.name = value;
  S.profile = '';
  if (!value) {
    // Nothing selected: nothing of the previous map stays on screen.
    Object.assign(S, { source: null, costs: null, mapCanvas: null, W: 0, H: 0, summary: null });
    rebuildGrid();
    $('map-version').textContent = '–';
    $('map-info').textContent = '';
    updateAlgoOptions();
    S.dirty = true;
    return;
  }
  location.hash = encodeURIComponent(value);
  await reloadCells(true);
  fit();
}

// A new map on screen: its cells, image, grid in the engine, algorithms on offer.
function setMap({ W, H, costs, movement, version, source, summary }) {
  const resized = W !== S.W || H !== S.H;
  Object.assign(S, { W, H, costs, movement, source, summary });
  setVersion(version);
  renderMapImage();
  rebuildGrid();
  if (resized) {
    for (const p of S.panes) clearPaneResult(p);
    fit(); // at once: a click on the new map must land where it is drawn
  }
  updateAlgoOptions();
}

function clearAll() {
  setPlaying(false);
  for (const p of S.panes) clearPaneResult(p);
  clearResults();
  $('pane-a-title').textContent = $('algo-a').value;
  $('pane-b-title').textContent = $('algo-b').value || 'B';
  $('pane-a-title').className = 'pane-title';
  $('pane-b-title').className = 'pane-title';
  resetPlayer(false);
  updatePoints();
}

// Fetches a server map's cells (raw bytes) and summary, and redraws.
async function reloadCells(quiet) {
  if (!S.name) return;
  const name = S.name;
  S.loading = true;
  try {
    const [resp, summary] = await Promise.all([
      api('GET', `/v1/maps/${encodeURIComponent(name)}/cells${S.profile ? `?profile=${encodeURIComponent(S.profile)}` : ''}`,
        { accept: 'application/octet-stream' }),
      api('GET', `/v1/maps/${encodeURIComponent(name)}`).then((r) => r.json()),
    ]);
    const buf = new Uint8Array(await resp.arrayBuffer());
    if (name !== S.name) return;
    const W = +resp.headers.get('x-map-width');
    const H = +resp.headers.get('x-map-height');
    const version = +resp.headers.get('x-map-version');
    const changed = S.source === 'server' && S.costs && version !== S.version;
    setMap({ W, H, costs: buf, movement: summary.movement, version, source: 'server', summary });
    fillProfiles(summary);
    showSummary(summary);
    if (changed) onMapChanged();
    if (!quiet) say(`map ${name} reloaded at version ${version}`);
  } finally {
    S.loading = false;
  }
}

// The map's unit-type profiles on offer; the chosen one stays while the map has it.
function fillProfiles(summary) {
  const sel = $('profile');
  const names = (summary.profiles || []).map((p) => p.name);
  const def = summary.default_profile || 'default';
  if (S.profile && !names.includes(S.profile)) S.profile = '';
  sel.innerHTML = '';
  for (const n of names) {
    const o = document.createElement('option');
    o.value = n === def ? '' : n;
    o.textContent = n === def ? `${n} (default)` : n;
    sel.appendChild(o);
  }
  sel.value = S.profile;
  sel.disabled = names.length < 2;
}

function showSummary(summary) {
  const info = [`${summary.width}×${summary.height}`, summary.movement,
    summary.uniform ? 'uniform' : `costs ${summary.min_cost}–${summary.max_cost}`,
    `${summary.components} component${summary.components === 1 ? '' : 's'}`];
  if (summary.hpa) info.push(`HPA* ${summary.hpa.status}, clusters ${summary.hpa.cluster_size}`);
  $('map-info').textContent = '· ' + info.join(' · ');
}

function setVersion(v) {
  S.version = v;
  $('map-version').textContent = String(v);
}

// `hpa` and `subgoal` need the server's abstraction or subgoal graph of this map: offered
// only when it has one ready.
function updateAlgoOptions() {
  const ready = (k) => S.source === 'server' && S.summary && S.summary[k] && S.summary[k].status === 'ready';
  const why = {
    hpa: 'hpa needs the server\'s HPA* abstraction of this map, which it has not (built for large maps)',
    subgoal: 'subgoal needs the server\'s subgoal graph of this map, which it has not (uniform octile maps up to --subgoal-max-cells)',
  };
  for (const algo of SERVER_ONLY) {
    const on = ready(algo);
    for (const id of ['algo-a', 'algo-b']) {
      const o = $(id).querySelector(`option[value=${algo}]`);
      if (!o) continue;
      o.disabled = !on;
      o.title = on ? '' : why[algo];
      if (!on && $(id).value === algo) $(id).value = id === 'algo-a' ? 'astar' : '';
    }
  }
}

// The map moved on (a patch, ours or another client's): answers computed here are
// recomputed at once; the server's are marked stale until the next query.
function onMapChanged() {
  mapfMapChanged();
  S.flow = null;
  if ($('flow').checked) computeFlow();
  const ps = S.panes.filter((p) => p.result);
  if (!ps.length) { S.dirty = true; return; }
  if (ps.some((p) => p.result.source === 'local') && S.start && S.goal) {
    // Quietly: the message line keeps what the change said (a patch, a conflict).
    runQuery({ keep: true, onlyLocal: true, quiet: true });
  }
  S.panes.forEach((p, i) => {
    if (p.result && p.result.source === 'server' && p.result.map_version !== S.version) {
      p.stale = true;
      showResult('ab'[i], p.result, null, p);
    }
  });
  S.dirty = true;
}

// Another client may patch the map: follow its version (and its abstraction's status).
async function pollVersion() {
  if (!S.name || S.source !== 'server' || S.loading || S.patching || S.paint) return;
  try {
    const m = await (await api('GET', `/v1/maps/${encodeURIComponent(S.name)}`)).json();
    if (m.version !== S.version && !S.loading && !S.patching) {
      await reloadCells(true);
      say(`map ${S.name} changed: now version ${m.version}`);
    } else {
      S.summary = m;
      showSummary(m);
      updateAlgoOptions();
    }
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) {
      say(`map ${S.name} is gone`, 'error');
      await loadMapList('');
    }
  }
}

async function openFile(file) {
  let name = file.name.replace(/\.map$/i, '').replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '');
  name = (name || 'uploaded').slice(0, 64);
  const text = await file.text();
  if (S.offline || $('keep-local').checked) {
    try {
      const g = PathdWasm.Grid.fromMap(text);
      addLocalMap(name, { W: g.width, H: g.height, costs: g.costs(), movement: g.movement });
      g.free();
      say(`opened ${name} (${S.W}×${S.H}) in this tab: nothing was uploaded`, 'ok');
    } catch (e) {
      sayError(`could not read ${file.name}`, e);
    }
    return;
  }
  try {
    const resp = await api('PUT', `/v1/maps/${encodeURIComponent(name)}`, { body: text, write: true });
    const m = await resp.json();
    say(`uploaded ${name} (${m.width}×${m.height}, version ${m.version})`, 'ok');
    await loadMapList(name);
    await selectMap(name);
  } catch (e) {
    sayError(`upload of ${file.name} failed`, e);
  }
}

function addLocalMap(name, m) {
  S.localMaps.set(name, m);
  fillMapSelect('local:' + name);
  selectMap('local:' + name);
}

function newMap() {
  const W = Math.max(1, Math.min(1024, +$('new-w').value || 64));
  const H = Math.max(1, Math.min(1024, +$('new-h').value || 48));
  addLocalMap(`drawn-${W}x${H}`, { W, H, costs: new Uint8Array(W * H).fill(1), movement: 'octile' });
  say(`a blank ${W}×${H} map: paint walls and costs, then click a start and a goal`, 'ok');
}

// ---------------------------------------------------------------- queries

function queryOptions(algorithm, pane) {
  const o = {
    algorithm,
    weight: algorithm === 'weighted_astar' ? (+$('weight').value || 1.5) : 1.5,
    heuristic: $('heuristic').value || undefined,
    tieBreak: $('tie-break').value,
    smooth: $('smooth').checked,
    partial: $('partial').checked,
    size: Math.max(1, Math.min(8, +$('size').value || 1)),
    trace: $('trace').checked,
  };
  const maxExp = $('max-exp').value.trim();
  if (maxExp !== '') o.maxExpansions = +maxExp;
  if (pane === 1 && S.compare) Object.assign(o, S.compare);
  return o;
}

function serverBody(o) {
  const body = { start: S.start, goal: S.goal, algorithm: o.algorithm };
  if (S.profile) body.profile = S.profile;
  if (o.algorithm === 'weighted_astar') body.weight = o.weight;
  if (o.maxExpansions !== undefined) body.max_expansions = o.maxExpansions;
  const timeout = $('timeout').value.trim();
  if (timeout !== '') body.timeout_ms = +timeout;
  if (o.heuristic) body.heuristic = o.heuristic;
  if (o.tieBreak && o.tieBreak !== 'high_g') body.tie_break = o.tieBreak;
  if (o.size > 1) body.size = o.size;
  if (o.smooth) body.smooth = true;
  if (o.partial) body.partial = true;
  if (o.trace) body.trace = true;
  if ($('debug').checked) body.debug = true;
  return gamesBody(body);
}

function useServer(algorithm) {
  return S.source === 'server' && !S.offline && (SERVER_ONLY.includes(algorithm) || $('on-server').checked || gamesActive());
}

function localOutcome(o) {
  try {
    const r = S.engine.grid.findPath(S.start, S.goal, o);
    r.source = 'local';
    r.map_version = S.version;
    r.elapsed_us = Math.round(r.elapsed_ms * 1000);
    const trace = r.trace ? traceFromLocal(r.trace) : null;
    if (r.trace) r.trace = { expansions: r.trace.expansions, events: r.trace.count, truncated: r.trace.truncated };
    return { r, trace };
  } catch (err) {
    return { err };
  }
}

async function serverOutcome(o) {
  try {
    const body = serverBody(o);
    const r = await (await api('POST', `/v1/maps/${encodeURIComponent(S.name)}/path`, { json: body })).json();
    r.source = 'server';
    if (gamesActive()) r.asked = body; // what games.js draws and says beside the answer
    const trace = r.trace ? traceFromServer(r.trace, S.W) : null;
    if (r.trace) r.trace = { expansions: r.trace.expansions, events: r.trace.events.length, truncated: r.trace.truncated, hpa: r.trace.hpa };
    return { r, trace };
  } catch (err) {
    return { err };
  }
}

// Runs the query in both panes. `how.keep`: a parameter changed, so the player continues
// from the same step; `how.drag`: the start or goal is being dragged (local only, shown
// finished); `how.onlyLocal`: skip the panes answered by the server.
function runQuery(how = {}) {
  if (!S.costs || !S.start || !S.goal) {
    say(S.costs ? 'click a start and a goal cell' : 'pick a map, then click a start and a goal cell');
    return;
  }
  if (!ensureGrid()) { say('the engine is still loading'); return; }
  S.runs++;
  const token = ++S.queryToken;
  const algos = [$('algo-a').value];
  if ($('algo-b').value) algos.push($('algo-b').value);
  layoutPanes(algos);
  const opts = algos.map((a, i) => queryOptions(a, i));
  // While a marker is dragged, paths only (the trace comes with the drop).
  if (how.drag) for (const o of opts) o.trace = false;
  S.lastOpts = opts;
  const remote = opts.map((o) => useServer(o.algorithm));
  if (how.drag && remote.some(Boolean)) return; // the server answers when the drag ends
  if (how.onlyLocal && remote.every(Boolean)) return;
  const local = opts.map((o, i) => (remote[i] ? null : localOutcome(o)));
  if (!remote.some(Boolean)) {
    showOutcomes(algos, local, how);
    return;
  }
  say(`running ${algos.join(' vs ')} on the server…`);
  Promise.all(opts.map((o, i) => (remote[i] ? serverOutcome(o) : local[i]))).then((outcomes) => {
    if (token === S.queryToken) showOutcomes(algos, outcomes, how);
  });
}

function showOutcomes(algos, outcomes, how) {
  clearResults();
  outcomes.forEach((o, i) => {
    const p = S.panes[i];
    const k = 'ab'[i];
    const title = $(`pane-${k}-title`);
    if (o.err) {
      clearPaneResult(p);
      showResult(k, null, o.err);
      title.textContent = `${algos[i]} · ${o.err.code || 'error'}`;
      title.className = 'pane-title bad';
      return;
    }
    loadTrace(p, o.r, o.trace);
    showResult(k, o.r, null, p);
    const r = o.r;
    const label = paneLabel(i, r.algorithm);
    const ok = r.status === 'found' || r.status === 'partial';
    title.textContent = `${label} · ${r.status}${ok ? ` · cost ${fmt(r.cost)}` : ''}${r.optimal === false ? ' (not optimal)' : ''} · ${r.expanded} expanded${r.source === 'server' ? ' · server' : ''}`;
    title.className = 'pane-title' + (ok ? (r.optimal === false ? ' warn' : '') : ' bad');
  });
  const bad = outcomes.find((o) => o.err);
  const failed = outcomes.find((o) => o.r && o.r.status !== 'found');
  if (how.quiet && !bad) {
    // a re-run after a map change: the table and panes say it
  } else if (bad) sayError('query failed', bad.err);
  else {
    const text = outcomes.map((o) => `${o.r.algorithm}: ${o.r.status}${o.r.status === 'found' || o.r.status === 'partial' ? `, cost ${fmt(o.r.cost)}` : ''}${o.r.optimal === false ? ' (not optimal)' : ''}${gamesNote(o.r)}`).join(' · ');
    say(text, failed ? 'warn' : 'ok');
  }
  updateLessonNote(outcomes);
  if (how.drag) {
    S.total = Math.max(0, ...S.panes.map(paneSteps));
    $('scrub').max = String(S.total);
    for (const p of S.panes) p.applied = Number.MAX_SAFE_INTEGER;
    S.step = -1;
    setPlaying(false);
    seek(S.total);
  } else {
    resetPlayer(!how.keep, how.keep);
  }
  if ($('flow').checked) computeFlow();
  showGames();
}

// A pane's label: its algorithm, and the options in which the two panes differ or that
// are not the defaults (a lesson's point).
function paneLabel(i, algorithm) {
  const o = S.lastOpts && S.lastOpts[i];
  if (!o) return algorithm;
  const all = S.lastOpts;
  const anyH = all.some((x) => x.heuristic);
  const anyT = all.some((x) => x.tieBreak && x.tieBreak !== 'high_g');
  const own = movementRule() === 'cardinal' ? 'manhattan' : 'octile';
  return [algorithm, anyH ? `h ${o.heuristic || own}` : '', anyT ? `ties ${o.tieBreak}` : '',
    o.algorithm === 'weighted_astar' ? `w ${o.weight}` : ''].filter(Boolean).join(' · ');
}

function compareLabel() {
  return paneLabel(1, (S.compare && S.compare.algorithm) || $('algo-b').value);
}

// Why an answer is not optimal, in words (the lessons' point).
function updateLessonNote(outcomes) {
  const notes = [];
  const lesson = S.lesson && LESSONS[S.lesson];
  if (lesson) notes.push(lesson.note);
  const h = $('heuristic').value;
  const mv = movementRule();
  if (outcomes.some((o) => o.r && o.r.optimal === false)) {
    if (h === 'manhattan' && mv === 'octile' && !(lesson && lesson.note.includes('Manhattan overestimates'))) {
      notes.push('Manhattan overestimates a diagonal step (it counts 2 where the step costs √2), so A* may settle for a longer path: optimal: false.');
    }
    if ($('tie-break').value === 'epsilon') notes.push('The epsilon nudge weighs h by 1.001: ties tip toward the goal, the cost may exceed the optimum by that factor (optimal: false).');
  } else if (h === 'euclidean' && mv === 'cardinal' && !lesson) {
    notes.push('Euclidean distance underestimates 4-way moves a lot: still optimal, but it expands far more than Manhattan.');
  }
  $('lesson-note').textContent = notes.join(' ');
}

function clearResults() {
  for (const k of ['a', 'b']) {
    for (const f of ['status', 'cost', 'expanded', 'generated', 'time', 'len', 'way', 'version', 'trace']) {
      const td = $(`res-${k}-${f}`);
      td.textContent = '';
      td.className = '';
    }
  }
}

function showResult(k, r, err, p) {
  const set = (f, v, cls) => { const td = $(`res-${k}-${f}`); td.textContent = v; td.className = cls || ''; };
  if (err) {
    set('status', err instanceof ApiError ? err.code : (err.code || 'error'), 'error');
    $(`res-${k}-status`).title = err.message || '';
    for (const f of ['cost', 'expanded', 'generated', 'time', 'len', 'way', 'version', 'trace']) set(f, '');
    return;
  }
  const ok = r.status === 'found' || r.status === 'partial';
  const notOptimal = r.optimal === false;
  set('status', r.status + (r.limit ? ` (${r.limit})` : '') + (notOptimal ? ' (not optimal)' : ''),
    notOptimal && r.status === 'found' ? 'partial' : r.status);
  set('cost', ok ? fmt(r.cost) : '–', ok ? '' : 'dim');
  set('expanded', String(r.expanded));
  set('generated', String(r.generated));
  const t = r.elapsed_us >= 1000 ? `${(r.elapsed_us / 1000).toFixed(2)} ms` : `${r.elapsed_us} µs`;
  set('time', `${t} · ${r.source === 'server' ? 'server' : 'in the tab'}`);
  set('len', String(r.path.length));
  set('way', r.waypoints ? `${r.waypoints.length}${r.path_cost !== undefined && r.path_cost !== r.cost ? ' · cell path cost ' + fmt(r.path_cost) : ''}` : '–');
  set('version', String(r.map_version) + (p && p.stale ? ` (stale: the map is at ${S.version})` : ''), p && p.stale ? 'partial' : '');
  set('trace', r.trace ? `${r.trace.expansions} exp · ${r.trace.events} events${r.trace.truncated ? ' (cut by the server\'s --max-debug-cells)' : ''}` : '–',
    r.trace && r.trace.truncated ? 'partial' : '');
}

function layoutPanes(algos) {
  const changed = $('pane-b').hidden !== (algos.length < 2);
  $('pane-b').hidden = algos.length < 2;
  $('res-a-head').textContent = algos[0];
  $('res-a-head').textContent = paneLabel(0, algos[0]);
  $('res-b-head').textContent = algos.length > 1 ? paneLabel(1, algos[1]) : 'B';
  if (algos.length < 2) clearPaneResult(S.panes[1]);
  if (changed) { resizeCanvases(); fit(); }
}

function updatePoints() {
  const f = (p) => (p ? `[${p[0]}, ${p[1]}]` : '–');
  $('start-label').textContent = f(S.start);
  $('goal-label').textContent = f(S.goal);
  S.dirty = true;
}

// The flow field to the goal (for the agent size), from the engine in the tab.
function computeFlow() {
  S.flow = null;
  if (S.goal && ensureGrid()) {
    try {
      S.flow = { dirs: S.engine.grid.flowField(S.goal, Math.max(1, Math.min(8, +$('size').value || 1))), canvas: null };
    } catch (e) {
      sayError('flow field', e);
    }
  }
  S.dirty = true;
}

// Runs pane A's query on the server as well and says whether both agree (the same cost and
// expansions: the same engine, two builds).
async function verifyOnServer() {
  const p = S.panes[0];
  if (S.source !== 'server' || !p.result || p.result.source !== 'local') {
    say('run a query on a server map first (in the tab, not on the server)');
    return;
  }
  const mine = p.result;
  const o = serverOutcome(queryOptions($('algo-a').value, 0));
  const { r, err } = await o;
  if (err) { sayError('the server refused the query', err); return; }
  const same = r.status === mine.status && r.cost === mine.cost && r.expanded === mine.expanded;
  say(same
    ? `server agrees: ${r.status}, cost ${fmt(r.cost)}, ${r.expanded} expanded (version ${r.map_version})`
    : `server differs: ${r.status}, cost ${fmt(r.cost)}, ${r.expanded} expanded against the tab's ${mine.status}, cost ${fmt(mine.cost)}, ${mine.expanded} expanded`,
  same ? 'ok' : 'error');
}

// A parameter changed: re-run at once, continuing the animation from the same step.
function onParamChange(e) {
  if (e && e.target && e.target.tagName === 'SELECT') e.target.blur(); // arrows step again
  if (e && e.target && e.target.id === 'algo-b') S.compare = null;
  if (e && e.target && e.target.id === 'movement') rebuildGrid();
  if (e && e.target && e.target.id === 'size' && $('flow').checked) computeFlow();
  if (S.start && S.goal && S.costs) runQuery({ keep: true });
  else updateLessonNote([]);
}

// ---------------------------------------------------------------- input

function nearMarker(cell, pt) {
  if (!cell || !pt) return false;
  const r = Math.max(1, Math.ceil(6 / S.view.scale));
  return Math.abs(cell[0] - pt[0]) <= r && Math.abs(cell[1] - pt[1]) <= r;
}

function bindCanvas(p) {
  const c = p.canvas;
  let drag = null;
  c.addEventListener('contextmenu', (e) => e.preventDefault());
  c.addEventListener('pointerdown', (e) => {
    c.setPointerCapture(e.pointerId);
    const paint = $('mode-paint').checked && e.button === 0;
    const cell = cellAt(c, e.clientX, e.clientY);
    let what = null;
    if (!paint && e.button === 0 && S.start && S.goal && !mapfPlacing()) {
      if (nearMarker(cell, S.goal) && !goalsMode()) what = 'goal';
      if (nearMarker(cell, S.start)) what = 'start';
    }
    drag = { x: e.clientX, y: e.clientY, ox: S.view.ox, oy: S.view.oy, moved: false, paint, button: e.button, what };
    if (paint && S.costs) {
      S.paint = { cells: new Map(), version: S.version };
      if (cell) paintAt(cell[0], cell[1]);
    }
  });
  c.addEventListener('pointermove', (e) => {
    const cell = cellAt(c, e.clientX, e.clientY);
    if (String(cell) !== String(S.hover)) {
      S.hover = cell;
      updateHover();
      S.dirty = true;
    }
    if (!drag) return;
    const dx = e.clientX - drag.x;
    const dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 4) drag.moved = true;
    if (drag.paint) {
      if (cell && S.paint) paintAt(cell[0], cell[1]);
    } else if (drag.what) {
      // Dragging the start or the goal: re-search (in the tab) at every new cell.
      if (drag.moved && cell && S.costs[cell[1] * S.W + cell[0]] !== 0 && String(cell) !== String(S[drag.what])) {
        S[drag.what] = cell;
        updatePoints();
        runQuery({ drag: true });
      }
    } else if (drag.moved) {
      S.view.ox = drag.ox + dx;
      S.view.oy = drag.oy + dy;
      S.dirty = true;
    }
  });
  c.addEventListener('pointerup', (e) => {
    const d = drag;
    drag = null;
    if (!d) return;
    if (d.paint) { finishStroke(); return; }
    if (d.what && d.moved) { runQuery({ keep: true }); return; }
    if (d.moved || d.button !== 0 || !S.costs) return;
    const cell = cellAt(c, e.clientX, e.clientY);
    if (!cell) return;
    if (mapfPlacing()) { mapfClick(cell); return; }
    // A wall is a start or goal only for a query that may move it (snap) or stop short of
    // it (a goal radius).
    const mayBeWall = numberIn('snap') !== null || (S.start && numberIn('goal-radius') !== null);
    if (S.costs[cell[1] * S.W + cell[0]] === 0 && !mayBeWall) {
      say(`(${cell[0]}, ${cell[1]}) is a wall: pick an open cell (or set "snap R" or a goal radius)`);
      return;
    }
    if (goalsMode() && S.start) { toggleGoal(cell, e.shiftKey); return; }
    if (e.shiftKey && S.start) S.goal = cell;
    else if (!S.start || S.goal) {
      // A new start: the old search and its drawing go.
      S.start = cell;
      S.goal = null;
      clearAll();
      S.flow = null;
    } else S.goal = cell;
    updatePoints();
    if (S.start && S.goal) runQuery();
  });
  c.addEventListener('pointerleave', () => { S.hover = null; updateHover(); S.dirty = true; });
  c.addEventListener('wheel', (e) => {
    e.preventDefault();
    const r = c.getBoundingClientRect();
    const mx = e.clientX - r.left;
    const my = e.clientY - r.top;
    const k = Math.exp(-e.deltaY * 0.0015);
    const scale = Math.max(0.05, Math.min(80, S.view.scale * k));
    const f = scale / S.view.scale;
    S.view = { scale, ox: mx - (mx - S.view.ox) * f, oy: my - (my - S.view.oy) * f };
    S.dirty = true;
  }, { passive: false });
}

function bindDrop(el) {
  el.addEventListener('dragover', (e) => { e.preventDefault(); el.classList.add('over'); });
  el.addEventListener('dragleave', () => el.classList.remove('over'));
  el.addEventListener('drop', (e) => {
    e.preventDefault();
    el.classList.remove('over');
    const f = e.dataTransfer.files[0];
    if (f) openFile(f);
  });
}

function init() {
  S.panes = [makePane('a'), makePane('b')];
  for (const a of ALGORITHMS) {
    $('algo-a').add(new Option(a, a));
    $('algo-b').add(new Option(a, a));
  }
  $('algo-a').value = 'astar';
  document.body.classList.toggle('offline', S.offline);
  $('mode-badge').textContent = S.offline ? 'offline: everything runs in this tab' : 'connected: searches run in this tab';
  for (const id of ['token-query', 'token-admin']) {
    $(id).value = sessionStorage.getItem('pathd-' + id) || '';
    $(id).addEventListener('change', () => {
      sessionStorage.setItem('pathd-' + id, $(id).value);
      loadMapList().catch((e) => sayError('map list', e));
    });
  }
  drawLegend();
  initLessons();
  S.panes.forEach(bindCanvas);
  bindDrop($('stage'));
  bindDrop($('drop'));
  $('file-input').addEventListener('change', (e) => { const f = e.target.files[0]; if (f) openFile(f); e.target.value = ''; });
  $('map-select').addEventListener('change', (e) => { e.target.blur(); selectMap(e.target.value).catch((err) => sayError('map', err)); });
  $('profile').addEventListener('change', (e) => {
    e.target.blur();
    S.profile = e.target.value;
    clearAll();
    reloadCells(true).then(() => say(`unit type ${S.profile || 'default'}: its costs shown and searched`, 'ok'))
      .catch((err) => sayError('map', err));
  });
  $('map-reload').addEventListener('click', async () => {
    try { await loadMapList(); await reloadCells(false); } catch (e) { sayError('reload', e); }
  });
  $('new-map').addEventListener('click', newMap);
  $('fit').addEventListener('click', fit);
  $('run').addEventListener('click', () => runQuery());
  $('posthoc').addEventListener('click', downloadPosthoc);
  $('verify').addEventListener('click', () => verifyOnServer().catch((e) => sayError('check', e)));
  $('clear-points').addEventListener('click', () => { S.start = S.goal = null; S.flow = null; clearAll(); });
  for (const id of ['algo-a', 'algo-b', 'heuristic', 'tie-break', 'movement']) $(id).addEventListener('change', onParamChange);
  for (const id of ['smooth', 'partial', 'trace', 'debug', 'on-server']) $(id).addEventListener('change', onParamChange);
  for (const id of ['weight', 'max-exp', 'timeout', 'size']) $(id).addEventListener('input', onParamChange);
  $('flow').addEventListener('change', () => { if ($('flow').checked) computeFlow(); else S.flow = null; S.dirty = true; });
  $('play').addEventListener('click', () => {
    if (!S.playing && S.step >= S.total) seek(0);
    setPlaying(!S.playing);
  });
  $('step').addEventListener('click', () => { setPlaying(false); seek(S.step + 1); });
  $('back').addEventListener('click', () => { setPlaying(false); seek(S.step - 1); });
  $('to-end').addEventListener('click', () => { setPlaying(false); seek(S.total); });
  $('scrub').addEventListener('input', (e) => { setPlaying(false); seek(+e.target.value); });
  const showSpeed = () => { $('speed-label').textContent = `${speed()}/s`; };
  $('speed').addEventListener('input', showSpeed);
  showSpeed();
  for (const id of ['links', 'clusters']) $(id).addEventListener('change', () => { S.dirty = true; });
  bindLive();
  bindGames();
  bindMapf();
  window.addEventListener('resize', () => resizeCanvases());
  window.addEventListener('keydown', (e) => {
    if (e.target.tagName === 'INPUT' && e.target.type !== 'checkbox' && e.target.type !== 'radio') return;
    if (e.target.tagName === 'SELECT' || e.target.tagName === 'TEXTAREA') return;
    if (e.key === ' ') { e.preventDefault(); $('play').click(); }
    if (e.key === 'ArrowRight') { e.preventDefault(); $('step').click(); }
    if (e.key === 'ArrowLeft') { e.preventDefault(); $('back').click(); }
  });
  resizeCanvases();
  requestAnimationFrame(frame);
  const engine = initEngine().catch((e) => sayError('the engine did not load', e));
  if (S.offline) {
    fillMapSelect();
    say('offline: drop a .map file, draw a map or pick a lesson; everything runs in this tab');
    return;
  }
  setInterval(pollVersion, 2000);
  const wanted = decodeURIComponent(location.hash.slice(1));
  loadMapList().then(async () => {
    await engine;
    say(`${S.maps.length} map(s) on this server: pick one`);
    if (wanted && S.maps.some((m) => m.name === wanted)) {
      $('map-select').value = wanted;
      await selectMap(wanted);
    }
  }).catch((e) => sayError('could not list maps', e));
}

init();
