// pathd visualiser: search traces and the player.
//
// A trace, from the engine in the tab or from the server, becomes one shape: typed arrays
// of events (node and parent as map indices, kind, g, h, f, HPA* phase) and the indices of
// its expansions. Nothing per event is an object, so a million expansions replay without
// a million allocations. The player's step k shows the events before expansion k (and
// before HPA*'s k-th refinement step, see buildStops); each frame applies the events up to
// the new step to the pane's ImageData and flushes its dirty rectangle once.
'use strict';

const KIND = { expand: 0, push: 1, decrease: 2, reopen: 3 };

// A trace from the engine's Trace (PathdWasm) or the server's JSON events.
function traceFromLocal(t) {
  const n = t.count;
  const tr = emptyTrace(n);
  const u = t.u32;
  const d = t.f64;
  let e = 0;
  for (let i = 0; i < n; i++) {
    tr.node[i] = u[8 * i];
    const pk = u[8 * i + 1];
    tr.parent[i] = pk & 0x0fffffff;
    const k = pk >>> 28;
    tr.kind[i] = k;
    tr.g[i] = d[4 * i + 1];
    tr.h[i] = d[4 * i + 2];
    tr.f[i] = d[4 * i + 3];
    if (k === 0) tr.expands[e++] = i;
  }
  tr.expands = tr.expands.subarray(0, e);
  tr.truncated = t.truncated;
  return tr;
}

function traceFromServer(t, W) {
  const n = t.events.length;
  const tr = emptyTrace(n);
  tr.phase = new Uint8Array(n);
  let e = 0;
  t.events.forEach((ev, i) => {
    tr.node[i] = ev.node[1] * W + ev.node[0];
    tr.parent[i] = ev.parent[1] * W + ev.parent[0];
    tr.kind[i] = KIND[ev.type];
    tr.g[i] = ev.g; tr.h[i] = ev.h; tr.f[i] = ev.f;
    tr.phase[i] = ev.phase === 'abstract' ? 1 : 0;
    if (ev.type === 'expand') tr.expands[e++] = i;
  });
  tr.expands = tr.expands.subarray(0, e);
  tr.truncated = t.truncated;
  return tr;
}

function emptyTrace(n) {
  return {
    count: n, node: new Int32Array(n), parent: new Int32Array(n), kind: new Uint8Array(n),
    g: new Float64Array(n), h: new Float64Array(n), f: new Float64Array(n), phase: null,
    expands: new Int32Array(n), truncated: false,
  };
}

// ---------------------------------------------------------------- panes

function makePane(key) {
  const canvas = $('canvas-' + key);
  return {
    key, canvas, ctx: canvas.getContext('2d'), el: $('pane-' + key),
    result: null,        // the answer (local or server), with .source
    events: null,        // the trace (see emptyTrace), or null
    stops: null,         // HPA* traces only: [{ limit, refined, last }] (see buildStops)
    overlay: null, img: null, px: null,
    applied: 0,          // events applied to the overlay
    dirtyRect: null,
    box: null,           // the trace's bounding box (rewinds clear only that)
    hpa: null,           // the trace's HPA* record (entrances, abstract path, refinement)
    abs: new Map(),      // HPA*: abstract node idx -> 'open' | 'closed', as of the step
    absLinks: [],        // HPA*: [node, parent] points of abstract expansions applied
    hpaView: null,       // HPA*: what the step shows, see hpaAt
    stale: false,        // the map moved on since this answer (server answers)
  };
}

function clearPaneResult(p) {
  Object.assign(p, {
    result: null, events: null, stops: null, applied: 0, box: null, hpa: null, abs: new Map(),
    absLinks: [], hpaView: null, overlay: null, img: null, px: null, stale: false,
  });
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

// Shows `result` (with `trace`, a trace or null) in pane p.
function loadTrace(p, result, trace) {
  const { overlay, img, px } = p; // reused when the map's size is the same
  clearPaneResult(p);
  Object.assign(p, { overlay, img, px });
  p.result = result;
  p.hpa = (result.trace && result.trace.hpa) || null;
  if (trace) {
    p.events = trace;
    const W = S.W;
    let x0 = S.W, y0 = S.H, x1 = 0, y1 = 0;
    for (let i = 0; i < trace.count; i++) {
      const n = trace.node[i];
      const x = n % W;
      const y = (n - x) / W;
      if (x < x0) x0 = x; if (x > x1) x1 = x;
      if (y < y0) y0 = y; if (y > y1) y1 = y;
    }
    p.box = x0 <= x1 ? { x0, y0, x1, y1 } : null;
    p.stops = p.hpa ? buildStops(p) : null;
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

// The number of player steps of pane p.
function paneSteps(p) {
  if (!p.events) return 0;
  return p.stops ? p.stops.length - 1 : p.events.expands.length;
}

// Stop k of pane p: `limit` events applied (up to the next expansion or refinement step),
// `refined` refinement steps done, `last` the event index of the last expansion (-1
// before the first).
function stopAt(p, k) {
  if (p.stops) return p.stops[Math.min(k, p.stops.length - 1)];
  const ex = p.events.expands;
  const kk = Math.min(k, ex.length);
  return { limit: kk < ex.length ? ex[kk] : p.events.count, refined: 0, last: kk > 0 ? ex[kk - 1] : -1 };
}

// HPA* traces: each expansion is one step, and so is each refinement step, in the order
// they happened (a refinement step sits between the events before it and the rest).
function buildStops(p) {
  const ex = p.events.expands;
  const items = [];
  for (let i = 0; i < ex.length; i++) items.push({ key: 2 * ex[i], at: ex[i], exp: true });
  p.hpa.refinement.forEach((r) => items.push({ key: 2 * r.after_events - 1, at: r.after_events, exp: false }));
  items.sort((a, b) => a.key - b.key);
  const stops = [];
  let refined = 0;
  let last = -1;
  for (let k = 0; k <= items.length; k++) {
    stops.push({ limit: k < items.length ? items[k].at : p.events.count, refined, last });
    if (k < items.length) {
      if (items[k].exp) last = items[k].at;
      else refined++;
    }
  }
  return stops;
}

// Replays pane p to step k.
function seekPane(p, k) {
  if (!p.events) return;
  const tr = p.events;
  const stop = stopAt(p, k);
  const limit = stop.limit;
  const W = S.W;
  if (limit < p.applied) {
    // Rewind: clear the trace's box and replay from the first event.
    const b = p.box;
    if (b && p.px) {
      for (let y = b.y0; y <= b.y1; y++) p.px.fill(0, y * W + b.x0, y * W + b.x1 + 1);
      p.dirtyRect = { x0: b.x0, y0: b.y0, x1: b.x1, y1: b.y1 };
    }
    p.abs = new Map();
    p.absLinks = [];
    p.applied = 0;
  }
  const px = p.px;
  let r = p.dirtyRect;
  for (let i = p.applied; i < limit; i++) {
    const idx = tr.node[i];
    const kind = tr.kind[i];
    if (tr.phase && tr.phase[i] === 1) {
      // Abstract nodes are entrances: drawn as markers and tree edges, not cells.
      if (kind === 0) {
        p.abs.set(idx, 'closed');
        if (tr.parent[i] !== idx) p.absLinks.push([idx, tr.parent[i]]);
      } else if (p.abs.get(idx) !== 'closed') p.abs.set(idx, 'open');
      continue;
    }
    px[idx] = kind === 0 ? CLOSED : kind === 3 ? REOPEN : OPEN;
    const x = idx % W;
    const y = (idx - x) / W;
    if (!r) r = p.dirtyRect = { x0: x, y0: y, x1: x, y1: y };
    else {
      if (x < r.x0) r.x0 = x; if (x > r.x1) r.x1 = x;
      if (y < r.y0) r.y0 = y; if (y > r.y1) r.y1 = y;
    }
  }
  p.applied = limit;
  p.hpaView = hpaAt(p, stop.refined);
}

// What pane p knows of cell idx as of its applied events: the last event on it.
function infoAt(p, idx) {
  const tr = p.events;
  if (!tr) return null;
  let closed = false;
  let last = -1;
  for (let i = p.applied - 1; i >= 0; i--) {
    if (tr.node[i] !== idx) continue;
    if (last < 0) last = i;
    if (tr.kind[i] === 0) { closed = true; break; }
  }
  if (last < 0) return null;
  const W = S.W;
  const par = tr.parent[last];
  const abstract = tr.phase && tr.phase[last] === 1;
  const kind = tr.kind[last];
  return {
    g: tr.g[last], h: tr.h[last], f: tr.f[last], parent: [par % W, Math.floor(par / W)],
    state: kind === 3 ? 'reopened' : closed ? 'closed' : 'open', abstract,
  };
}

// What an HPA* trace shows once `refined` refinement steps are done: whether the abstract
// search is (then its path is drawn; the first step comes right after it), and the path the
// steps made so far (appending steps continue the path, replacing steps replace it).
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

// The pane's current (last expanded) node at step k, as [x, y].
function currentNode(p, k) {
  if (!p.events || k === 0) return null;
  const i = stopAt(p, k).last;
  if (i < 0) return null;
  const n = p.events.node[i];
  return [n % S.W, Math.floor(n / S.W)];
}

// Counts the overlay's cells of one state (tests and the status line).
function countOverlay(p, state) {
  if (!p.px) return 0;
  const c = { closed: CLOSED, open: OPEN, reopened: REOPEN }[state];
  let n = 0;
  for (let i = 0; i < p.px.length; i++) if (p.px[i] === c) n++;
  return n;
}

// ---------------------------------------------------------------- player

function seek(k) {
  S.step = Math.max(0, Math.min(S.total, k));
  for (const p of S.panes) {
    seekPane(p, S.step);
    flushOverlay(p);
  }
  $('scrub').value = String(S.step);
  $('step-counter').textContent = `step ${S.step} / ${S.total}`;
  updateHover();
  if (typeof showLessonTable === 'function') showLessonTable();
  S.dirty = true;
}

// After new answers: `keep` continues from the same step (a parameter changed while the
// search played or stood still mid-way); otherwise rewinds and autoplays.
function resetPlayer(autoplay, keep) {
  const wasAtEnd = S.total > 0 && S.step >= S.total;
  const from = S.step;
  const playing = S.playing;
  S.total = Math.max(0, ...S.panes.map(paneSteps));
  $('scrub').max = String(S.total);
  for (const p of S.panes) p.applied = Number.MAX_SAFE_INTEGER; // force a rebuild
  if (keep && (S.total > 0)) {
    S.step = -1;
    seek(wasAtEnd ? S.total : from);
    setPlaying(playing);
    return;
  }
  S.step = -1;
  seek(0);
  if (autoplay && S.total > 0) {
    // Play the whole search in about four seconds (the slider can change it).
    $('speed').value = String(Math.max(0, Math.min(60, Math.round(10 * Math.log10(Math.max(1, S.total / 4))))));
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
  // 1 .. 1 000 000 expansions per second, log scale.
  return Math.round(Math.pow(10, (+$('speed').value) / 10));
}
