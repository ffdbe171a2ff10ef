// pathd visualiser: plain JavaScript on a canvas, talking to pathd's JSON API.
//
// Rendering: the map is drawn once per version into an offscreen canvas (one pixel per
// cell, colours from a 256-entry cost palette) and each frame draws it scaled under the
// current pan/zoom, with image smoothing off. Search traces are replayed into a second
// per-pane offscreen canvas through an ImageData whose dirty rectangle is flushed once per
// animation frame, so a long trace animates in batches rather than cell by cell.
//
// HPA* traces add vector layers drawn per frame over the overlay: the entrances (abstract
// nodes) of the clusters its abstract search reached, the abstract search's nodes and tree
// as they are expanded, the abstract path once that search is done, and the path as the
// refinement steps build it (each step appears when the player passes the events before
// it). A subscription's repair events name the cells the repair touched; they are shaded
// until the next event.
'use strict';

const ALGORITHMS = ['astar', 'dijkstra', 'weighted_astar', 'jps', 'jps_plus', 'theta', 'hpa', 'auto'];
const FINAL_REASONS = new Set(['deleted', 'map_deleted', 'map_replaced', 'expired']);
const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- state

const S = {
  maps: [],           // summaries from GET /v1/maps
  name: '',           // selected map
  summary: null,
  W: 0, H: 0, version: 0,
  costs: null,        // Uint8Array, row-major
  mapCanvas: null,    // offscreen, W x H
  view: { scale: 1, ox: 0, oy: 0 },
  start: null, goal: null,
  hover: null,
  panes: [],          // see makePane
  step: 0, total: 0, playing: false, carry: 0, lastTick: 0,
  paint: null,        // { cells: Map(idx -> cost) } while a stroke is drawn
  patching: false,
  sub: null,          // { id, path, abort }
  loading: false,
  dirty: true,
};

// ---------------------------------------------------------------- API

function tokenFor(write) {
  const admin = $('token-admin').value.trim();
  const query = $('token-query').value.trim();
  return write ? (admin || query) : (query || admin);
}

function headers(write, extra) {
  const h = Object.assign({}, extra || {});
  const t = tokenFor(write);
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
}

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, { body, json, write = false, accept, extra } = {}) {
  const h = headers(write, Object.assign(accept ? { Accept: accept } : {}, extra || {}));
  let payload = body;
  if (json !== undefined) {
    h['Content-Type'] = 'application/json';
    payload = JSON.stringify(json);
  } else if (typeof body === 'string') {
    h['Content-Type'] = 'text/plain';
  }
  const resp = await fetch(path, { method, headers: h, body: payload });
  if (!resp.ok) {
    let code = 'http_' + resp.status;
    let message = resp.statusText;
    try {
      const e = await resp.json();
      if (e && e.error) { code = e.error.code; message = e.error.message; }
    } catch (_) { /* not JSON */ }
    throw new ApiError(resp.status, code, message);
  }
  return resp;
}

function say(text, kind) {
  const m = $('message');
  m.textContent = text;
  m.className = kind || '';
  m.title = text;
}

function sayError(prefix, e) {
  const detail = e instanceof ApiError ? `${e.status} ${e.code}: ${e.message}` : String(e);
  say(`${prefix}: ${detail}`, 'error');
}

// ---------------------------------------------------------------- colours

// Little-endian RGBA packed into a Uint32.
const rgba = (r, g, b, a = 255) => ((a << 24) | (b << 16) | (g << 8) | r) >>> 0;
const PALETTE = (() => {
  const p = new Uint32Array(256);
  p[0] = rgba(32, 38, 46);
  p[1] = rgba(243, 239, 230);
  // 2..255 on a log scale from pale yellow through orange to deep brown.
  const stops = [[247, 224, 138], [240, 150, 60], [200, 80, 30], [110, 40, 10]];
  for (let c = 2; c < 256; c++) {
    const t = Math.log(c - 1) / Math.log(254); // 0 at 2, 1 at 255
    const s = Math.min(stops.length - 2, Math.floor(t * (stops.length - 1)));
    const u = t * (stops.length - 1) - s;
    const mix = (k) => Math.round(stops[s][k] + (stops[s + 1][k] - stops[s][k]) * u);
    p[c] = rgba(mix(0), mix(1), mix(2));
  }
  return p;
})();
const OPEN = rgba(80, 200, 120, 170);
const CLOSED = rgba(90, 140, 230, 170);
const REOPEN = rgba(190, 90, 220, 190);
const DEBUG = rgba(90, 140, 230, 120);
// Vector layers (canvas styles): HPA* entrances, abstract search, abstract path, refined
// path; cells a repair touched.
const ENTRANCE = 'rgba(255,209,102,0.95)';
const ABS_OPEN = '#ffe8a3';
const ABS_CLOSED = '#ff9f1c';
const ABSTRACT_PATH = '#ff6d00';
const REFINED = '#00b4d8';
const TOUCHED = 'rgba(255,0,200,0.5)';

function drawLegend() {
  const c = document.createElement('canvas');
  c.width = 256; c.height = 1;
  const ctx = c.getContext('2d');
  const img = ctx.createImageData(256, 1);
  new Uint32Array(img.data.buffer).set(PALETTE);
  ctx.putImageData(img, 0, 0);
  const box = $('cost-legend');
  box.textContent = 'cost 0 ';
  box.appendChild(c);
  box.appendChild(document.createTextNode(' 255'));
}

// ---------------------------------------------------------------- maps

async function loadMapList(select) {
  const list = await (await api('GET', '/v1/maps')).json();
  S.maps = list.maps;
  const sel = $('map-select');
  sel.textContent = '';
  const none = new Option('(pick a map)', '');
  sel.add(none);
  for (const m of list.maps) {
    sel.add(new Option(`${m.name}  (${m.width}×${m.height}${m.uniform ? '' : ', weighted'})`, m.name));
  }
  for (const d of list.damaged || []) {
    const o = new Option(`${d.name} (damaged)`, d.name);
    o.disabled = true;
    sel.add(o);
  }
  const want = select !== undefined ? select : S.name;
  if (want && list.maps.some((m) => m.name === want)) {
    sel.value = want;
  }
}

async function selectMap(name) {
  stopSubscription();
  S.name = name;
  S.start = S.goal = null;
  for (const p of S.panes) clearPaneResult(p);
  clearResults();
  $('pane-a-title').textContent = $('algo-a').value;
  $('pane-b-title').textContent = $('algo-b').value || 'B';
  resetPlayer(false);
  updatePoints();
  if (!name) { S.costs = null; S.mapCanvas = null; S.dirty = true; return; }
  location.hash = encodeURIComponent(name);
  await reloadCells(true);
  fit();
}

// Fetches the cells (raw bytes) and the summary, and redraws the map image.
async function reloadCells(quiet) {
  if (!S.name) return;
  const name = S.name;
  S.loading = true;
  try {
    const [resp, summary] = await Promise.all([
      api('GET', `/v1/maps/${encodeURIComponent(name)}/cells`, { accept: 'application/octet-stream' }),
      api('GET', `/v1/maps/${encodeURIComponent(name)}`).then((r) => r.json()),
    ]);
    const buf = new Uint8Array(await resp.arrayBuffer());
    if (name !== S.name) return;
    const W = +resp.headers.get('x-map-width');
    const H = +resp.headers.get('x-map-height');
    const version = +resp.headers.get('x-map-version');
    const resized = W !== S.W || H !== S.H;
    S.W = W; S.H = H; S.costs = buf; S.summary = summary;
    setVersion(version);
    renderMapImage();
    if (resized) for (const p of S.panes) clearPaneResult(p);
    const info = [`${W}×${H}`, summary.movement, summary.uniform ? 'uniform' : `costs ${summary.min_cost}–${summary.max_cost}`,
      `${summary.components} component${summary.components === 1 ? '' : 's'}`];
    if (summary.hpa) info.push(`HPA* ${summary.hpa.status}, clusters ${summary.hpa.cluster_size}`);
    $('map-info').textContent = '· ' + info.join(' · ');
    if (!quiet) say(`map ${name} reloaded at version ${version}`);
  } finally {
    S.loading = false;
  }
}

function setVersion(v) {
  S.version = v;
  $('map-version').textContent = String(v);
}

function renderMapImage() {
  const { W, H, costs } = S;
  if (!S.mapCanvas || S.mapCanvas.width !== W || S.mapCanvas.height !== H) {
    S.mapCanvas = document.createElement('canvas');
    S.mapCanvas.width = W;
    S.mapCanvas.height = H;
  }
  const ctx = S.mapCanvas.getContext('2d');
  const img = ctx.createImageData(W, H);
  const px = new Uint32Array(img.data.buffer);
  for (let i = 0; i < costs.length; i++) px[i] = PALETTE[costs[i]];
  ctx.putImageData(img, 0, 0);
  S.dirty = true;
}

// Paints one cell of the map image (a preview of a brush stroke).
function previewCell(x, y, cost) {
  const ctx = S.mapCanvas.getContext('2d');
  const c = PALETTE[cost];
  ctx.fillStyle = `rgb(${c & 255},${(c >> 8) & 255},${(c >> 16) & 255})`;
  ctx.fillRect(x, y, 1, 1);
}

// Another client may patch the map: follow its version.
async function pollVersion() {
  if (!S.name || S.loading || S.patching || S.paint) return;
  try {
    const m = await (await api('GET', `/v1/maps/${encodeURIComponent(S.name)}`)).json();
    if (m.version !== S.version && !S.loading && !S.patching) {
      await reloadCells(true);
      say(`map ${S.name} changed: now version ${m.version}`);
    }
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) {
      say(`map ${S.name} is gone`, 'error');
      await loadMapList('');
    }
  }
}

async function uploadFile(file) {
  let name = file.name.replace(/\.map$/i, '').replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '');
  name = (name || 'uploaded').slice(0, 64);
  try {
    const text = await file.text();
    const resp = await api('PUT', `/v1/maps/${encodeURIComponent(name)}`, { body: text, write: true });
    const m = await resp.json();
    say(`uploaded ${name} (${m.width}×${m.height}, version ${m.version})`, 'ok');
    await loadMapList(name);
    await selectMap(name);
  } catch (e) {
    sayError(`upload of ${file.name} failed`, e);
  }
}

// ---------------------------------------------------------------- panes and traces

function makePane(key) {
  const canvas = $('canvas-' + key);
  return {
    key, canvas, ctx: canvas.getContext('2d'), el: $('pane-' + key),
    result: null,        // the API answer
    events: null,        // trace events
    expands: [],         // indices of expand events
    stops: [],           // per player step: { limit, refined, last } (see buildStops)
    overlay: null, img: null, px: null,
    applied: 0,          // events applied to the overlay
    info: new Map(),     // cell index -> { g, h, f, parent, state }
    dirtyRect: null,
    links: [],           // [node idx, parent idx] of expansions applied
    hpa: null,           // the trace's HPA* record (entrances, abstract path, refinement)
    abs: new Map(),      // HPA*: abstract node idx -> 'open' | 'closed', as of the step
    absLinks: [],        // HPA*: [node, parent] points of abstract expansions applied
    hpaView: null,       // HPA*: what the step shows, see hpaAt
  };
}

function clearPaneResult(p) {
  p.result = null;
  p.events = null;
  p.expands = [];
  p.stops = [];
  p.applied = 0;
  p.info = new Map();
  p.links = [];
  p.hpa = null;
  p.abs = new Map();
  p.absLinks = [];
  p.hpaView = null;
  p.overlay = null;
  p.img = null;
  p.px = null;
  S.dirty = true;
}

function ensureOverlay(p) {
  if (p.overlay && p.overlay.width === S.W && p.overlay.height === S.H) {
    p.px.fill(0);
    p.overlay.getContext('2d').clearRect(0, 0, S.W, S.H);
    return;
  }
  p.overlay = document.createElement('canvas');
  p.overlay.width = S.W;
  p.overlay.height = S.H;
  p.img = p.overlay.getContext('2d').createImageData(S.W, S.H);
  p.px = new Uint32Array(p.img.data.buffer);
}

function markDirty(p, x, y) {
  const r = p.dirtyRect;
  if (!r) p.dirtyRect = { x0: x, y0: y, x1: x, y1: y };
  else {
    if (x < r.x0) r.x0 = x; if (x > r.x1) r.x1 = x;
    if (y < r.y0) r.y0 = y; if (y > r.y1) r.y1 = y;
  }
}

function flushOverlay(p) {
  const r = p.dirtyRect;
  if (!r || !p.overlay) return;
  p.overlay.getContext('2d').putImageData(p.img, 0, 0, r.x0, r.y0, r.x1 - r.x0 + 1, r.y1 - r.y0 + 1);
  p.dirtyRect = null;
  S.dirty = true;
}

function loadTrace(p, result) {
  p.result = result;
  p.events = null;
  p.expands = [];
  p.stops = [];
  p.applied = 0;
  p.info = new Map();
  p.links = [];
  p.abs = new Map();
  p.absLinks = [];
  p.hpa = (result.trace && result.trace.hpa) || null;
  p.hpaView = null;
  if (result.trace) {
    p.events = result.trace.events;
    // The trace's bounding box: rewinding clears and redraws only this part of the overlay.
    const box = { x0: S.W, y0: S.H, x1: 0, y1: 0 };
    p.events.forEach((e, i) => {
      if (e.type === 'expand') p.expands.push(i);
      const [x, y] = e.node;
      if (x < box.x0) box.x0 = x; if (x > box.x1) box.x1 = x;
      if (y < box.y0) box.y0 = y; if (y > box.y1) box.y1 = y;
    });
    p.box = box.x0 <= box.x1 ? box : null;
    p.stops = buildStops(p);
    ensureOverlay(p);
  } else if (result.expanded_cells) {
    ensureOverlay(p);
    for (const [x, y] of result.expanded_cells) {
      p.px[y * S.W + x] = DEBUG;
      markDirty(p, x, y);
    }
    flushOverlay(p);
  } else {
    p.overlay = null;
  }
  S.dirty = true;
}

// The player's steps through pane `p`'s trace: each expansion is one, and so is each HPA*
// refinement step, in the order they happened (a refinement step sits between the events
// before it and the rest). Stop k, after k of them: `limit` events applied (up to the next
// expansion or refinement step), `refined` refinement steps done, `last` the index of the
// last expansion event (-1 before the first).
function buildStops(p) {
  const items = p.expands.map((e) => ({ key: 2 * e, at: e, exp: true }));
  if (p.hpa) p.hpa.refinement.forEach((r) => items.push({ key: 2 * r.after_events - 1, at: r.after_events, exp: false }));
  items.sort((a, b) => a.key - b.key);
  const stops = [];
  let refined = 0;
  let last = -1;
  for (let k = 0; k <= items.length; k++) {
    stops.push({ limit: k < items.length ? items[k].at : p.events.length, refined, last });
    if (k < items.length) {
      if (items[k].exp) last = items[k].at;
      else refined++;
    }
  }
  return stops;
}

// Replays pane `p` to step `k` (see buildStops).
function seekPane(p, k) {
  if (!p.events) return;
  const stop = p.stops[Math.min(k, p.stops.length - 1)];
  const limit = stop.limit;
  if (limit < p.applied) {
    // Rewind: clear the trace's box and replay from the first event.
    const b = p.box;
    if (b && p.px) {
      for (let y = b.y0; y <= b.y1; y++) p.px.fill(0, y * S.W + b.x0, y * S.W + b.x1 + 1);
      p.dirtyRect = { x0: b.x0, y0: b.y0, x1: b.x1, y1: b.y1 };
    }
    p.info = new Map();
    p.links = [];
    p.abs = new Map();
    p.absLinks = [];
    p.applied = 0;
  }
  const W = S.W;
  for (let i = p.applied; i < limit; i++) {
    const e = p.events[i];
    const [x, y] = e.node;
    const idx = y * W + x;
    if (e.phase === 'abstract') {
      // Abstract nodes are entrances: drawn as markers and tree edges, not cells.
      if (e.type === 'expand') {
        p.abs.set(idx, 'closed');
        if (e.parent[0] !== x || e.parent[1] !== y) p.absLinks.push([e.node, e.parent]);
      } else if (p.abs.get(idx) !== 'closed') p.abs.set(idx, 'open');
      p.info.set(idx, { g: e.g, h: e.h, f: e.f, parent: e.parent, state: p.abs.get(idx), phase: 'abstract' });
      continue;
    }
    let state;
    let colour;
    switch (e.type) {
      case 'expand': state = 'closed'; colour = CLOSED; p.links.push([idx, e.parent[1] * W + e.parent[0]]); break;
      case 'reopen': state = 'reopened'; colour = REOPEN; break;
      default: state = 'open'; colour = OPEN;
    }
    p.info.set(idx, { g: e.g, h: e.h, f: e.f, parent: e.parent, state, phase: e.phase });
    p.px[idx] = colour;
    markDirty(p, x, y);
  }
  p.applied = limit;
  p.hpaView = hpaAt(p, stop.refined);
}

// What an HPA* trace shows once `refined` refinement steps are done: whether the abstract
// search is (then its path is drawn; the first step comes right after it), and the path the
// steps made so far (replayed as the API documents: appending steps continue the path,
// replacing steps replace it).
function hpaAt(p, refined) {
  const h = p.hpa;
  if (!h) return null;
  const done = h.refinement.slice(0, refined);
  let path = [];
  for (const s of done) {
    if (['corridor', 'straighten', 'window'].includes(s.kind) || !path.length) path = s.cells.slice();
    else path = path.concat(s.cells.slice(1));
  }
  return {
    abstractShown: h.abstract_path.length > 0 && refined > 0,
    steps: done.length,
    lastStep: done.length ? done[done.length - 1].kind : null,
    refined: path,
  };
}

// The pane's current (last expanded) node at step k.
function currentNode(p, k) {
  if (!p.events || k === 0) return null;
  const i = p.stops[Math.min(k, p.stops.length - 1)].last;
  return i < 0 ? null : p.events[i].node;
}

function seek(k) {
  S.step = Math.max(0, Math.min(S.total, k));
  for (const p of S.panes) {
    seekPane(p, S.step);
    flushOverlay(p);
  }
  $('scrub').value = String(S.step);
  $('step-counter').textContent = `step ${S.step} / ${S.total}`;
  updateHover();
  S.dirty = true;
}

function resetPlayer(autoplay) {
  S.total = Math.max(0, ...S.panes.map((p) => Math.max(0, p.stops.length - 1)));
  $('scrub').max = String(S.total);
  S.step = -1;
  for (const p of S.panes) p.applied = Number.MAX_SAFE_INTEGER; // force a rebuild
  seek(0);
  if (autoplay && S.total > 0) {
    // Play the whole search in about four seconds (the slider can change it).
    $('speed').value = String(Math.max(0, Math.min(50, Math.round(10 * Math.log10(Math.max(1, S.total / 4))))));
    $('speed-label').textContent = `${speed()}/s`;
  }
  setPlaying(autoplay && S.total > 0);
}

function setPlaying(on) {
  S.playing = on && S.step < S.total;
  $('play').textContent = S.playing ? 'pause' : 'play';
  S.lastTick = performance.now();
  S.carry = 0;
}

function speed() {
  // 1 .. 100 000 expansions per second, log scale.
  return Math.round(Math.pow(10, (+$('speed').value) / 10));
}

// ---------------------------------------------------------------- queries

function requestBody(algorithm) {
  const body = { start: S.start, goal: S.goal, algorithm };
  if (algorithm === 'weighted_astar') body.weight = +$('weight').value || 1.5;
  const maxExp = $('max-exp').value.trim();
  if (maxExp !== '') body.max_expansions = +maxExp;
  const timeout = $('timeout').value.trim();
  if (timeout !== '') body.timeout_ms = +timeout;
  if ($('smooth').checked) body.smooth = true;
  if ($('partial').checked) body.partial = true;
  if ($('trace').checked) body.trace = true;
  if ($('debug').checked) body.debug = true;
  return body;
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

function showResult(k, r, err) {
  const set = (f, v, cls) => { const td = $(`res-${k}-${f}`); td.textContent = v; td.className = cls || ''; };
  if (err) {
    set('status', err instanceof ApiError ? err.code : 'error', 'error');
    for (const f of ['cost', 'expanded', 'generated', 'time', 'len', 'way', 'version', 'trace']) set(f, '');
    return;
  }
  set('status', r.status + (r.limit ? ` (${r.limit})` : ''), r.status);
  set('cost', fmt(r.cost));
  set('expanded', String(r.expanded));
  set('generated', String(r.generated));
  set('time', r.elapsed_us >= 1000 ? `${(r.elapsed_us / 1000).toFixed(2)} ms` : `${r.elapsed_us} µs`);
  set('len', String(r.path.length));
  set('way', r.waypoints ? `${r.waypoints.length}${r.path_cost !== undefined && r.path_cost !== r.cost ? ' · cell path cost ' + fmt(r.path_cost) : ''}` : '–');
  set('version', String(r.map_version));
  set('trace', r.trace ? `${r.trace.expansions} exp · ${r.trace.events.length} events${r.trace.truncated ? ' (cut)' : ''}` : '–');
}

const fmt = (v) => (Number.isInteger(v) ? String(v) : v.toFixed(4).replace(/0+$/, ''));

async function runQuery() {
  if (!S.name || !S.start || !S.goal) {
    say('pick a map, then click a start and a goal cell');
    return;
  }
  const algos = [$('algo-a').value];
  if ($('algo-b').value) algos.push($('algo-b').value);
  layoutPanes(algos);
  say(`running ${algos.join(' vs ')}…`);
  const outcomes = await Promise.all(algos.map((a) =>
    api('POST', `/v1/maps/${encodeURIComponent(S.name)}/path`, { json: requestBody(a) })
      .then((r) => r.json()).then((r) => ({ r }), (err) => ({ err }))));
  const ks = ['a', 'b'];
  clearResults();
  outcomes.forEach((o, i) => {
    const p = S.panes[i];
    if (o.err) {
      clearPaneResult(p);
      showResult(ks[i], null, o.err);
    } else {
      loadTrace(p, o.r);
      showResult(ks[i], o.r);
      $(`pane-${ks[i]}-title`).textContent = `${o.r.algorithm} · ${o.r.status} · cost ${fmt(o.r.cost)} · ${o.r.expanded} expanded`;
    }
  });
  const bad = outcomes.find((o) => o.err);
  if (bad) sayError('query failed', bad.err);
  else say(outcomes.map((o) => `${o.r.algorithm}: ${o.r.status}, cost ${fmt(o.r.cost)}`).join(' · '), 'ok');
  resetPlayer(true);
}

// Downloads the query's search trace as a Posthoc document (open it in Posthoc with the
// map's .map file).
async function downloadPosthoc() {
  if (!S.name || !S.start || !S.goal) { say('set a start and a goal first'); return; }
  try {
    const body = requestBody($('algo-a').value);
    delete body.trace;
    delete body.debug;
    const text = await (await api('POST', `/v1/maps/${encodeURIComponent(S.name)}/posthoc`, { json: body })).text();
    const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = `${S.name}-${body.algorithm}-${S.start.join('_')}-${S.goal.join('_')}.trace.json`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    say(`Posthoc trace saved as ${a.download}`, 'ok');
  } catch (e) {
    sayError('Posthoc trace failed', e);
  }
}

function layoutPanes(algos) {
  const changed = $('pane-b').hidden !== (algos.length < 2);
  $('pane-b').hidden = algos.length < 2;
  $('res-a-head').textContent = algos[0];
  $('res-b-head').textContent = algos[1] || 'B';
  $('pane-a-title').textContent = algos[0];
  $('pane-b-title').textContent = algos[1] || 'B';
  if (algos.length < 2) clearPaneResult(S.panes[1]);
  resizeCanvases();
  if (changed) fit();
}

function updatePoints() {
  const f = (p) => (p ? `[${p[0]}, ${p[1]}]` : '–');
  $('start-label').textContent = f(S.start);
  $('goal-label').textContent = f(S.goal);
  S.dirty = true;
}

// ---------------------------------------------------------------- painting

function brushCells(x, y) {
  const size = Math.max(1, Math.min(64, +$('brush-size').value || 1));
  const out = [];
  const x0 = x - Math.floor((size - 1) / 2);
  const y0 = y - Math.floor((size - 1) / 2);
  for (let yy = y0; yy < y0 + size; yy++) {
    for (let xx = x0; xx < x0 + size; xx++) {
      if (xx >= 0 && yy >= 0 && xx < S.W && yy < S.H) out.push([xx, yy]);
    }
  }
  return out;
}

function paintAt(x, y) {
  const cost = +$('brush-cost').value;
  for (const [cx, cy] of brushCells(x, y)) {
    const idx = cy * S.W + cx;
    if (S.paint.cells.has(idx)) continue;
    S.paint.cells.set(idx, cost);
    previewCell(cx, cy, cost);
  }
  S.dirty = true;
}

async function finishStroke() {
  const stroke = S.paint;
  S.paint = null;
  if (!stroke || stroke.cells.size === 0) return;
  const cells = [];
  for (const [idx, cost] of stroke.cells) {
    if (S.costs[idx] !== cost) cells.push({ x: idx % S.W, y: Math.floor(idx / S.W), cost });
  }
  if (cells.length === 0) return;
  const base = stroke.version;
  S.patching = true;
  $('paint-status').textContent = `sending ${cells.length} cell(s) at version ${base}…`;
  try {
    const r = await (await api('PATCH', `/v1/maps/${encodeURIComponent(S.name)}`,
      { json: { cells, if_version: base }, write: true })).json();
    for (const c of cells) S.costs[c.y * S.W + c.x] = c.cost;
    setVersion(r.version);
    $('paint-status').textContent = `patched ${r.changed_cells} cell(s): version ${base} → ${r.version}` +
      ` · ${r.affected_subscriptions} subscription(s) affected`;
    say(`patch applied: map ${S.name} is at version ${r.version}`, 'ok');
  } catch (e) {
    if (e instanceof ApiError && e.status === 409) {
      $('paint-status').textContent = 'version conflict: nothing was applied; map reloaded';
      say(`version conflict: ${S.name} changed since version ${base} (${e.message}); your stroke was NOT applied, the map was reloaded — paint again`, 'error');
    } else {
      $('paint-status').textContent = 'patch failed; map reloaded';
      sayError('patch failed', e);
    }
  } finally {
    S.patching = false;
  }
  // Always resync with the server's cells (also drops a refused stroke's preview).
  try { await reloadCells(true); } catch (e) { sayError('reload failed', e); }
}

// ---------------------------------------------------------------- subscriptions

async function startSubscription() {
  if (!S.name || !S.start || !S.goal) { say('set a start and a goal first'); return; }
  stopSubscription();
  try {
    const resp = await api('POST', `/v1/maps/${encodeURIComponent(S.name)}/subscriptions`,
      { json: { start: S.start, goal: S.goal } });
    const sub = await resp.json();
    const abort = new AbortController();
    // The secret (shown only in the create answer) is what lets this tab end it.
    S.sub = { id: sub.id, secret: sub.secret, path: sub.path, abort, map: S.name };
    $('sub-log').textContent = '';
    $('unsubscribe').disabled = false;
    showSubEvent({ seq: sub.seq, reason: 'created', status: sub.status, cost: sub.cost, map_version: sub.map_version });
    followEvents(S.sub).catch((e) => {
      if (S.sub && S.sub.abort === abort && e.name !== 'AbortError') sayError('event stream failed', e);
    });
    S.dirty = true;
  } catch (e) {
    sayError('subscription failed', e);
  }
}

async function followEvents(sub) {
  const resp = await api('GET', `/v1/subscriptions/${encodeURIComponent(sub.id)}/events`,
    { accept: 'text/event-stream' });
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  sub.signalReader = reader;
  sub.abort.signal.addEventListener('abort', () => reader.cancel().catch(() => {}));
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value.replace(/\r\n/g, '\n');
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const data = frame.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
      if (!data) continue;
      const ev = JSON.parse(data);
      if (S.sub !== sub) return;
      sub.path = ev.path;
      // A repair names the cells it touched: shade them until the next event.
      sub.touched = ev.touched || null;
      sub.touchedCount = ev.touched_count || 0;
      showSubEvent(ev);
      if (ev.reason !== 'initial') {
        say(`subscription ${sub.id}: ${ev.reason} at map version ${ev.map_version}: ${ev.status}, cost ${fmt(ev.cost)}`,
          ev.status === 'found' ? 'ok' : 'error');
      }
      S.dirty = true;
      if (ev.map_version > S.version && sub.map === S.name) {
        reloadCells(true).catch((e) => sayError('reload failed', e));
      }
      if (FINAL_REASONS.has(ev.reason)) {
        $('unsubscribe').disabled = true;
        return;
      }
    }
  }
}

function showSubEvent(ev) {
  const touched = ev.touched ? `, repair touched ${ev.touched_count} cell${ev.touched_count === 1 ? '' : 's'}${ev.touched_truncated ? ` (${ev.touched.length} shown)` : ''}` : '';
  $('sub-status').textContent = `#${ev.seq} ${ev.reason}: ${ev.status}, cost ${fmt(ev.cost)}, map version ${ev.map_version}${touched}`;
  $('sub-status').dataset.seq = String(ev.seq);
  $('sub-status').dataset.reason = ev.reason;
  const li = document.createElement('li');
  li.textContent = `${new Date().toLocaleTimeString()} ${ev.reason} · ${ev.status} · cost ${fmt(ev.cost)} · v${ev.map_version}`;
  const log = $('sub-log');
  log.insertBefore(li, log.firstChild);
  while (log.children.length > 50) log.removeChild(log.lastChild);
}

function stopSubscription() {
  const sub = S.sub;
  if (!sub) return;
  S.sub = null;
  sub.abort.abort();
  api('DELETE', `/v1/subscriptions/${encodeURIComponent(sub.id)}`,
    { extra: { 'X-Subscription-Secret': sub.secret } }).catch(() => {});
  $('unsubscribe').disabled = true;
  $('sub-status').textContent = 'stopped';
  S.dirty = true;
}

// ---------------------------------------------------------------- view

function resizeCanvases() {
  const dpr = window.devicePixelRatio || 1;
  for (const p of S.panes) {
    const r = p.canvas.getBoundingClientRect();
    const w = Math.max(1, Math.round(r.width * dpr));
    const h = Math.max(1, Math.round(r.height * dpr));
    if (p.canvas.width !== w || p.canvas.height !== h) {
      p.canvas.width = w;
      p.canvas.height = h;
    }
  }
  S.dirty = true;
}

function fit() {
  if (!S.W) return;
  const r = S.panes[0].canvas.getBoundingClientRect();
  const scale = Math.min(r.width / S.W, r.height / S.H) * 0.96;
  S.view = { scale, ox: (r.width - S.W * scale) / 2, oy: (r.height - S.H * scale) / 2 };
  S.dirty = true;
}

function cellAt(canvas, clientX, clientY) {
  const r = canvas.getBoundingClientRect();
  const x = Math.floor((clientX - r.left - S.view.ox) / S.view.scale);
  const y = Math.floor((clientY - r.top - S.view.oy) / S.view.scale);
  return x >= 0 && y >= 0 && x < S.W && y < S.H ? [x, y] : null;
}

function polyline(ctx, pts, colour, width, dash) {
  if (!pts || pts.length < 2) return;
  ctx.beginPath();
  ctx.moveTo(pts[0][0] + 0.5, pts[0][1] + 0.5);
  for (let i = 1; i < pts.length; i++) ctx.lineTo(pts[i][0] + 0.5, pts[i][1] + 0.5);
  ctx.strokeStyle = colour;
  ctx.lineWidth = width / S.view.scale;
  ctx.setLineDash(dash ? dash.map((d) => d / S.view.scale) : []);
  ctx.lineJoin = 'round';
  ctx.lineCap = 'round';
  ctx.stroke();
  ctx.setLineDash([]);
}

function marker(ctx, pt, colour) {
  if (!pt) return;
  const r = Math.max(0.6, 6 / S.view.scale);
  ctx.beginPath();
  ctx.arc(pt[0] + 0.5, pt[1] + 0.5, r, 0, Math.PI * 2);
  ctx.fillStyle = colour;
  ctx.fill();
  ctx.lineWidth = 1.5 / S.view.scale;
  ctx.strokeStyle = '#101418';
  ctx.stroke();
}

function drawPane(p) {
  const ctx = p.ctx;
  const dpr = window.devicePixelRatio || 1;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.fillStyle = '#0e1114';
  ctx.fillRect(0, 0, p.canvas.width, p.canvas.height);
  if (!S.mapCanvas) return;
  const { scale, ox, oy } = S.view;
  ctx.setTransform(dpr * scale, 0, 0, dpr * scale, dpr * ox, dpr * oy);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(S.mapCanvas, 0, 0);
  if (p.overlay) ctx.drawImage(p.overlay, 0, 0);
  // HPA* cluster borders (always under an HPA* trace).
  const clusterSize = p.hpa ? p.hpa.cluster_size : (S.summary && S.summary.hpa && S.summary.hpa.cluster_size);
  if (clusterSize && ($('clusters').checked || p.hpa)) {
    const c = clusterSize;
    ctx.beginPath();
    for (let x = c; x < S.W; x += c) { ctx.moveTo(x, 0); ctx.lineTo(x, S.H); }
    for (let y = c; y < S.H; y += c) { ctx.moveTo(0, y); ctx.lineTo(S.W, y); }
    ctx.strokeStyle = 'rgba(245,185,66,0.7)';
    ctx.lineWidth = 1 / scale;
    ctx.stroke();
  }
  // Parent links (jumps for JPS and JPS+, line-of-sight parents for Theta*).
  const alg = p.result && p.result.algorithm;
  const jumps = alg === 'jps' || alg === 'jps_plus';
  if (p.events && ($('links').checked || jumps || alg === 'theta')) {
    ctx.beginPath();
    const W = S.W;
    const n = Math.min(p.links.length, 20000);
    for (let i = p.links.length - n; i < p.links.length; i++) {
      const [a, b] = p.links[i];
      if (a === b) continue;
      ctx.moveTo((b % W) + 0.5, Math.floor(b / W) + 0.5);
      ctx.lineTo((a % W) + 0.5, Math.floor(a / W) + 0.5);
    }
    ctx.strokeStyle = jumps ? 'rgba(30,50,130,0.8)' : 'rgba(40,60,120,0.3)';
    ctx.lineWidth = 1 / scale;
    ctx.stroke();
  }
  if (p.hpa) drawHpa(ctx, p, scale);
  const finished = !p.events || S.step >= p.stops.length - 1;
  if (p.result && p.result.path.length) {
    polyline(ctx, p.result.path, finished ? '#d62839' : 'rgba(214,40,57,0.35)', 3);
    if (p.result.waypoints) polyline(ctx, p.result.waypoints, '#1565c0', 2, [6, 4]);
  }
  if (S.sub && S.sub.map === S.name) {
    // The cells the last repair touched, then the repaired path over them.
    if (S.sub.touched && S.sub.touched.length) {
      ctx.fillStyle = TOUCHED;
      for (const [x, y] of S.sub.touched) ctx.fillRect(x, y, 1, 1);
    }
    polyline(ctx, S.sub.path, 'rgba(230,40,200,0.9)', 2.5, [2, 3]);
  }
  const cur = currentNode(p, S.step);
  if (cur && !finished) {
    ctx.fillStyle = '#ff7a1a';
    const pad = Math.max(0, 3 / scale - 0.5);
    ctx.fillRect(cur[0] - pad, cur[1] - pad, 1 + 2 * pad, 1 + 2 * pad);
  }
  marker(ctx, S.start, '#4ec27a');
  marker(ctx, S.goal, '#e05a5a');
  if (S.hover) {
    ctx.strokeStyle = '#f5b942';
    ctx.lineWidth = 2 / scale;
    ctx.strokeRect(S.hover[0], S.hover[1], 1, 1);
  }
}

// HPA* layers: entrances, the abstract search (nodes and tree), the abstract path once
// found, and the path the refinement has built so far.
function drawHpa(ctx, p, scale) {
  const h = p.hpa;
  const v = p.hpaView;
  const sq = (pt, size, fill) => {
    const r = Math.max(0.5, size / scale / 2);
    ctx.fillStyle = fill;
    ctx.fillRect(pt[0] + 0.5 - r, pt[1] + 0.5 - r, 2 * r, 2 * r);
  };
  for (const e of h.entrances) sq(e, 5, ENTRANCE);
  if (p.absLinks.length) {
    ctx.beginPath();
    for (const [a, b] of p.absLinks) {
      ctx.moveTo(b[0] + 0.5, b[1] + 0.5);
      ctx.lineTo(a[0] + 0.5, a[1] + 0.5);
    }
    ctx.strokeStyle = 'rgba(255,159,28,0.55)';
    ctx.lineWidth = 1.2 / scale;
    ctx.stroke();
  }
  const W = S.W;
  for (const [idx, st] of p.abs) sq([idx % W, Math.floor(idx / W)], st === 'closed' ? 7 : 6, st === 'closed' ? ABS_CLOSED : ABS_OPEN);
  if (v && v.abstractShown) {
    polyline(ctx, h.abstract_path, ABSTRACT_PATH, 3, [7, 4]);
    for (const n of h.abstract_path) sq(n, 8, ABSTRACT_PATH);
  }
  if (v && v.refined.length > 1) polyline(ctx, v.refined, REFINED, 2.5);
}

function updateHover() {
  const h = S.hover;
  const box = $('hover-info');
  if (!h || !S.costs) { box.textContent = 'hover a cell'; return; }
  const idx = h[1] * S.W + h[0];
  const parts = [`(${h[0]}, ${h[1]}) cost ${S.costs[idx]}`];
  S.panes.forEach((p, i) => {
    if (!p.events) return;
    const name = (p.result && p.result.algorithm) || (i ? 'B' : 'A');
    const info = p.info.get(idx);
    if (!info) { parts.push(`${name}: unreached`); return; }
    const what = info.phase === 'abstract' ? `abstract ${info.state}` : info.state;
    parts.push(`${name}: ${what} g=${fmt(info.g)} h=${fmt(info.h)} f=${fmt(info.f)} parent (${info.parent[0]}, ${info.parent[1]})`);
  });
  box.textContent = parts.join(' · ');
}

function frame(now) {
  if (S.playing) {
    const dt = Math.min(0.25, (now - S.lastTick) / 1000);
    S.lastTick = now;
    S.carry += dt * speed();
    const n = Math.floor(S.carry);
    if (n > 0) {
      S.carry -= n;
      seek(S.step + n);
      if (S.step >= S.total) setPlaying(false);
    }
  }
  if (S.dirty) {
    S.dirty = false;
    for (const p of S.panes) if (!p.el.hidden) drawPane(p);
  }
  requestAnimationFrame(frame);
}

// ---------------------------------------------------------------- input

function bindCanvas(p) {
  const c = p.canvas;
  let drag = null;
  c.addEventListener('contextmenu', (e) => e.preventDefault());
  c.addEventListener('pointerdown', (e) => {
    c.setPointerCapture(e.pointerId);
    const paint = $('mode-paint').checked && e.button === 0;
    drag = { x: e.clientX, y: e.clientY, ox: S.view.ox, oy: S.view.oy, moved: false, paint, button: e.button };
    if (paint && S.costs) {
      S.paint = { cells: new Map(), version: S.version };
      const cell = cellAt(c, e.clientX, e.clientY);
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
    if (d.moved || d.button !== 0 || !S.costs) return;
    const cell = cellAt(c, e.clientX, e.clientY);
    if (!cell) return;
    if (S.costs[cell[1] * S.W + cell[0]] === 0) { say(`(${cell[0]}, ${cell[1]}) is a wall: pick an open cell`); return; }
    if (e.shiftKey && S.start) S.goal = cell;
    else if (!S.start || S.goal) { S.start = cell; S.goal = null; }
    else S.goal = cell;
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
    if (f) uploadFile(f);
  });
}

function init() {
  S.panes = [makePane('a'), makePane('b')];
  for (const a of ALGORITHMS) {
    $('algo-a').add(new Option(a, a));
    $('algo-b').add(new Option(a, a));
  }
  $('algo-a').value = 'astar';
  for (const id of ['token-query', 'token-admin']) {
    $(id).value = sessionStorage.getItem('pathd-' + id) || '';
    $(id).addEventListener('change', () => {
      sessionStorage.setItem('pathd-' + id, $(id).value);
      loadMapList().catch((e) => sayError('map list', e));
    });
  }
  drawLegend();
  S.panes.forEach(bindCanvas);
  bindDrop($('stage'));
  bindDrop($('drop'));
  $('file-input').addEventListener('change', (e) => { const f = e.target.files[0]; if (f) uploadFile(f); e.target.value = ''; });
  $('map-select').addEventListener('change', (e) => selectMap(e.target.value).catch((err) => sayError('map', err)));
  $('map-reload').addEventListener('click', async () => {
    try { await loadMapList(); await reloadCells(false); } catch (e) { sayError('reload', e); }
  });
  $('fit').addEventListener('click', fit);
  $('run').addEventListener('click', runQuery);
  $('posthoc').addEventListener('click', downloadPosthoc);
  $('clear-points').addEventListener('click', () => { S.start = S.goal = null; updatePoints(); });
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
  $('subscribe').addEventListener('click', startSubscription);
  $('unsubscribe').addEventListener('click', stopSubscription);
  window.addEventListener('resize', () => resizeCanvases());
  window.addEventListener('keydown', (e) => {
    if (e.target.tagName === 'INPUT' || e.target.tagName === 'SELECT') return;
    if (e.key === ' ') { e.preventDefault(); $('play').click(); }
    if (e.key === 'ArrowRight') $('step').click();
    if (e.key === 'ArrowLeft') $('back').click();
  });
  resizeCanvases();
  requestAnimationFrame(frame);
  setInterval(pollVersion, 2000);
  const wanted = decodeURIComponent(location.hash.slice(1));
  loadMapList().then(async () => {
    say(`${S.maps.length} map(s) on this server: pick one`);
    if (wanted && S.maps.some((m) => m.name === wanted)) {
      $('map-select').value = wanted;
      await selectMap(wanted);
    }
  }).catch((e) => sayError('could not list maps', e));
}

init();
