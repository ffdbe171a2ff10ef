// pathd visualiser: drawing.
//
// The map is drawn once per version into an offscreen canvas (one pixel per cell, colours
// from a 256-entry cost palette) and each frame draws it scaled under the current pan/zoom,
// with image smoothing off; each pane's trace overlay is another such canvas (trace.js).
// Vector layers go on top: parent links, HPA* entrances and abstract search, the flow
// field, paths, a subscription's repair, markers.
'use strict';

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
// Vector layers (canvas styles).
const ENTRANCE = 'rgba(255,209,102,0.95)';
const ABS_OPEN = '#ffe8a3';
const ABS_CLOSED = '#ff9f1c';
const ABSTRACT_PATH = '#ff6d00';
const REFINED = '#00b4d8';
// Parent links: dark and opaque enough to read over the closed cells' blue.
const LINKS = 'rgba(10,20,60,0.8)';
const JUMPS = 'rgba(10,20,60,0.9)';
// A repair: the cells it touched, light, under the repaired path, strong.
const TOUCHED = 'rgba(0,190,255,0.3)';
const SUB_PATH = 'rgba(230,40,200,0.95)';
const PATH = '#d62839';
const STALE_PATH = 'rgba(214,40,57,0.35)';
// A flow field coloured by direction (N, E, S, W, NE, SE, SW, NW).
const FLOW_HUES = [0, 90, 180, 270, 45, 135, 225, 315];

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

// Paints one cell of the map image (a brush stroke's preview, an undo).
function previewCell(x, y, cost) {
  const ctx = S.mapCanvas.getContext('2d');
  const c = PALETTE[cost];
  ctx.fillStyle = `rgb(${c & 255},${(c >> 8) & 255},${(c >> 16) & 255})`;
  ctx.fillRect(x, y, 1, 1);
  S.dirty = true;
}

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

// The whole map in view, above the hover bar (which covers the panes' bottom edge).
function fit() {
  if (!S.W) return;
  const r = S.panes[0].canvas.getBoundingClientRect();
  const bar = $('hover-info').getBoundingClientRect().height;
  const h = Math.max(1, r.height - bar);
  const scale = Math.min(r.width / S.W, h / S.H) * 0.96;
  S.view = { scale, ox: (r.width - S.W * scale) / 2, oy: (h - S.H * scale) / 2 };
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
  // 6 px when zoomed out (at least a third of a cell), 14 px at most when zoomed in.
  const r = Math.max(6 / S.view.scale, Math.min(0.35, 14 / S.view.scale));
  ctx.beginPath();
  ctx.arc(pt[0] + 0.5, pt[1] + 0.5, r, 0, Math.PI * 2);
  ctx.fillStyle = colour;
  ctx.fill();
  ctx.lineWidth = 1.5 / S.view.scale;
  ctx.strokeStyle = '#101418';
  ctx.stroke();
}

// The side, in cells, of an HPA* marker `px` screen pixels wide at zoom `scale`: never
// more than 0.8 of a cell, so neighbouring entrances stay apart instead of merging into
// bars when zoomed out.
function hpaMarkerSide(px, scale) {
  return Math.min(px / scale, 0.8);
}

function drawLinks(ctx, p, scale) {
  const tr = p.events;
  const last = stopAt(p, S.step).last;
  if (last < 0) return;
  const W = S.W;
  const alg = p.result.algorithm;
  const jumps = alg === 'jps' || alg === 'jps_plus';
  // The last 20,000 expansions up to the step (older links would be a solid mat).
  const ex = tr.expands;
  let hi = ex.length;
  while (hi > 0 && ex[hi - 1] > last) hi--;
  ctx.beginPath();
  for (let k = Math.max(0, hi - 20000); k < hi; k++) {
    const i = ex[k];
    if (tr.phase && tr.phase[i] === 1) continue;
    const a = tr.node[i];
    const b = tr.parent[i];
    if (a === b) continue;
    ctx.moveTo((b % W) + 0.5, Math.floor(b / W) + 0.5);
    ctx.lineTo((a % W) + 0.5, Math.floor(a / W) + 0.5);
  }
  ctx.strokeStyle = jumps ? JUMPS : LINKS;
  ctx.lineWidth = Math.max(1, Math.min(2, scale / 6)) / scale;
  ctx.stroke();
}

// The flow field: arrows when cells are large enough, else colour by direction.
function drawFlow(ctx, scale) {
  const f = S.flow;
  if (!f) return;
  if (scale >= 10) {
    const r = S.panes[0].canvas.getBoundingClientRect();
    const x0 = Math.max(0, Math.floor(-S.view.ox / scale));
    const y0 = Math.max(0, Math.floor(-S.view.oy / scale));
    const x1 = Math.min(S.W, Math.ceil((r.width - S.view.ox) / scale));
    const y1 = Math.min(S.H, Math.ceil((r.height - S.view.oy) / scale));
    ctx.beginPath();
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const d = f.dirs[y * S.W + x];
        if (d > 7) continue;
        const [dx, dy] = PathdWasm.DIRECTIONS[d];
        const len = Math.hypot(dx, dy);
        const ux = dx / len * 0.35;
        const uy = dy / len * 0.35;
        const cx = x + 0.5;
        const cy = y + 0.5;
        ctx.moveTo(cx - ux, cy - uy);
        ctx.lineTo(cx + ux, cy + uy);
        ctx.lineTo(cx + ux - 0.5 * (ux - uy * 0.6), cy + uy - 0.5 * (uy + ux * 0.6));
        ctx.moveTo(cx + ux, cy + uy);
        ctx.lineTo(cx + ux - 0.5 * (ux + uy * 0.6), cy + uy - 0.5 * (uy - ux * 0.6));
      }
    }
    ctx.strokeStyle = 'rgba(20,30,40,0.8)';
    ctx.lineWidth = 1.2 / scale;
    ctx.stroke();
    return;
  }
  if (!f.canvas) {
    f.canvas = document.createElement('canvas');
    f.canvas.width = S.W;
    f.canvas.height = S.H;
    const c2 = f.canvas.getContext('2d');
    const img = c2.createImageData(S.W, S.H);
    const px = new Uint32Array(img.data.buffer);
    const lut = FLOW_HUES.map((hue) => {
      const k = (n) => (n + hue / 30) % 12;
      const a = 0.6;
      const ch = (n) => Math.round(255 * (0.55 - a * 0.5 * Math.max(-1, Math.min(k(n) - 3, 9 - k(n), 1))));
      return rgba(ch(0), ch(8), ch(4), 150);
    });
    for (let i = 0; i < f.dirs.length; i++) if (f.dirs[i] <= 7) px[i] = lut[f.dirs[i]];
    c2.putImageData(img, 0, 0);
  }
  ctx.drawImage(f.canvas, 0, 0);
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
  if ($('flow').checked) drawFlow(ctx, scale);
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
  if (p.events && ($('links').checked || alg === 'jps' || alg === 'jps_plus' || alg === 'theta')) drawLinks(ctx, p, scale);
  if (p.hpa) drawHpa(ctx, p, scale);
  if (p.events && scale >= 44 && p.events.count <= 5000) drawValues(ctx, p, scale);
  const finished = !p.events || S.step >= paneSteps(p);
  if (p.result && p.result.path.length) {
    polyline(ctx, p.result.path, finished && !p.stale ? PATH : STALE_PATH, 3, p.stale ? [4, 4] : null);
    if (p.result.waypoints) polyline(ctx, p.result.waypoints, '#1565c0', 2, [6, 4]);
    drawFootprints(ctx, p.result.path, scale);
  }
  if (S.sub && S.sub.map === S.name) {
    // The cells the shown repair touched, light, then the repaired path over them.
    if (S.sub.touched && S.sub.touched.length) {
      ctx.fillStyle = TOUCHED;
      for (const [x, y] of S.sub.touched) ctx.fillRect(x, y, 1, 1);
    }
    polyline(ctx, S.sub.path, SUB_PATH, 2.5);
  }
  const cur = currentNode(p, S.step);
  if (cur && !finished) {
    if (scale >= 20) {
      // Zoomed in: a frame, so the cell's values stay readable.
      ctx.strokeStyle = '#ff7a1a';
      ctx.lineWidth = 4 / scale;
      ctx.strokeRect(cur[0] + 2 / scale, cur[1] + 2 / scale, 1 - 4 / scale, 1 - 4 / scale);
    } else {
      ctx.fillStyle = '#ff7a1a';
      const pad = Math.max(0, 3 / scale - 0.5);
      ctx.fillRect(cur[0] - pad, cur[1] - pad, 1 + 2 * pad, 1 + 2 * pad);
    }
  }
  marker(ctx, S.start, '#4ec27a');
  marker(ctx, S.goal, '#e05a5a');
  drawGames(ctx, p, scale);
  drawMapf(ctx, p, scale);
  if (S.hover) {
    ctx.strokeStyle = '#f5b942';
    ctx.lineWidth = 2 / scale;
    ctx.strokeRect(S.hover[0], S.hover[1], 1, 1);
  }
}

// A sized agent (size > 1): its square footprint at the ends and along the path (its
// anchor is the top-left cell, which the path follows).
function drawFootprints(ctx, path, scale) {
  const k = Math.max(1, Math.min(8, +$('size').value || 1));
  if (k < 2 || !path.length) return;
  ctx.strokeStyle = 'rgba(214,40,57,0.45)';
  ctx.lineWidth = 1.5 / scale;
  const every = Math.max(1, Math.round(k * 1.5));
  for (let i = 0; i < path.length; i += every) ctx.strokeRect(path[i][0], path[i][1], k, k);
  const end = path[path.length - 1];
  ctx.strokeStyle = 'rgba(214,40,57,0.9)';
  ctx.strokeRect(path[0][0], path[0][1], k, k);
  ctx.strokeRect(end[0], end[1], k, k);
}

// Zoomed in on a small trace (the lessons): each reached cell shows its g, h and f as of
// the step, f large, g and h above it.
function drawValues(ctx, p, scale) {
  const tr = p.events;
  const last = new Map();
  for (let i = 0; i < p.applied; i++) if (!(tr.phase && tr.phase[i] === 1)) last.set(tr.node[i], i);
  const dpr = window.devicePixelRatio || 1;
  const { ox, oy } = S.view;
  ctx.save();
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0); // screen pixels: fonts in px
  ctx.textAlign = 'center';
  ctx.textBaseline = 'middle';
  ctx.fillStyle = '#101418';
  const small = `${Math.round(Math.min(22, scale * 0.15))}px system-ui, sans-serif`;
  const big = `600 ${Math.round(Math.min(40, scale * 0.26))}px system-ui, sans-serif`;
  for (const [n, i] of last) {
    const x = n % S.W;
    const y = (n - x) / S.W;
    const cx = ox + (x + 0.5) * scale;
    ctx.font = small;
    ctx.fillText(`g ${fmt(tr.g[i])}   h ${fmt(tr.h[i])}`, cx, oy + (y + 0.2) * scale);
    ctx.font = big;
    ctx.fillText(`f ${fmt(tr.f[i])}`, cx, oy + (y + 0.8) * scale);
  }
  ctx.restore();
}

// HPA* layers: entrances, the abstract search (nodes and tree), the abstract path once
// found, and the path the refinement has built so far.
function drawHpa(ctx, p, scale) {
  const h = p.hpa;
  const v = p.hpaView;
  const sq = (pt, size, fill) => {
    const r = hpaMarkerSide(size, scale) / 2;
    ctx.fillStyle = fill;
    ctx.fillRect(pt[0] + 0.5 - r, pt[1] + 0.5 - r, 2 * r, 2 * r);
  };
  for (const e of h.entrances) sq(e, 5, ENTRANCE);
  if (p.absLinks.length) {
    const W = S.W;
    ctx.beginPath();
    for (const [a, b] of p.absLinks) {
      ctx.moveTo((b % W) + 0.5, Math.floor(b / W) + 0.5);
      ctx.lineTo((a % W) + 0.5, Math.floor(a / W) + 0.5);
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
    const info = infoAt(p, idx);
    if (!info) { parts.push(`${name}: unreached`); return; }
    const what = info.abstract ? `abstract ${info.state}` : info.state;
    parts.push(`${name}: ${what} g=${fmt(info.g)} h=${fmt(info.h)} f=${fmt(info.f)} parent (${info.parent[0]}, ${info.parent[1]})`);
  });
  if (S.flow && S.flow.dirs[idx] <= 8) parts.push(`flow: ${['N', 'E', 'S', 'W', 'NE', 'SE', 'SW', 'NW', 'goal'][S.flow.dirs[idx]]}`);
  box.textContent = parts.join(' · ');
}

function frame(now) {
  S.frames++;
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
