// pathd visualiser: painting (with undo and "reset to version N"), subscriptions (with a
// player for the events they receive), Posthoc downloads.
//
// A stroke on a server map is one PATCH with `if_version` (a refused one is not kept); on a
// map in the tab it is a patch of the engine's grid. Either way the tab remembers what each
// of its strokes overwrote, so undo writes the old costs back (a new version: strokes are
// durable and shared, nothing is rewound on the server) and "reset to version N" writes
// back everything this tab's strokes changed since N, as one patch.
'use strict';

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
    if (S.costs[idx] !== cost) cells.push({ x: idx % S.W, y: Math.floor(idx / S.W), cost, old: S.costs[idx] });
  }
  if (cells.length === 0) return;
  const base = stroke.version;
  if (await writeCells(cells, base, 'patched')) {
    S.strokes.push({ base, cells });
    updateStrokes();
  }
}

// Writes `cells` ({x, y, cost}) at version `base`: true when applied.
async function writeCells(cells, base, verb) {
  if (S.source === 'local') {
    ensureGrid().patch(cells);
    for (const c of cells) {
      S.costs[c.y * S.W + c.x] = c.cost;
      previewCell(c.x, c.y, c.cost);
    }
    setVersion(S.version + 1);
    $('paint-status').textContent = `${verb} ${cells.length} cell(s) in this tab: version ${base} → ${S.version}`;
    onMapChanged();
    return true;
  }
  S.patching = true;
  $('paint-status').textContent = `sending ${cells.length} cell(s) at version ${base}…`;
  let ok = false;
  try {
    const body = { cells: cells.map(({ x, y, cost }) => ({ x, y, cost })), if_version: base };
    const r = await (await api('PATCH', `/v1/maps/${encodeURIComponent(S.name)}`, { json: body, write: true })).json();
    $('paint-status').textContent = `${verb} ${r.changed_cells} cell(s): version ${base} → ${r.version}` +
      ` · ${r.affected_subscriptions} subscription(s) affected`;
    say(`patch applied: map ${S.name} is at version ${r.version}`, 'ok');
    ok = true;
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
  return ok;
}

async function undoStroke() {
  const s = S.strokes.pop();
  if (!s) { say('nothing to undo'); return; }
  const cells = s.cells.map((c) => ({ x: c.x, y: c.y, cost: c.old }));
  if (!(await writeCells(cells, S.version, 'undid: wrote back'))) S.strokes.push(s);
  updateStrokes();
}

// Writes back what this tab's strokes since version N overwrote (the oldest value of each
// cell), as one patch.
async function resetTo(version) {
  const later = S.strokes.filter((s) => s.base >= version);
  if (!later.length) { say(`no stroke of this tab since version ${version}`); return; }
  const old = new Map();
  for (let i = later.length - 1; i >= 0; i--) for (const c of later[i].cells) old.set(c.y * S.W + c.x, c.old);
  const cells = [...old].map(([idx, cost]) => ({ x: idx % S.W, y: Math.floor(idx / S.W), cost }));
  if (await writeCells(cells, S.version, `reset to version ${version}: wrote back`)) {
    S.strokes = S.strokes.filter((s) => s.base < version);
  }
  updateStrokes();
}

function updateStrokes() {
  $('undo').disabled = S.strokes.length === 0;
  const sel = $('reset-version');
  sel.textContent = '';
  for (const s of S.strokes) sel.add(new Option(`version ${s.base}`, String(s.base)));
  $('reset').disabled = S.strokes.length === 0;
}

// ---------------------------------------------------------------- subscriptions

async function startSubscription() {
  if (S.source !== 'server' || !S.start || !S.goal) { say('pick a server map, then set a start and a goal first'); return; }
  stopSubscription();
  try {
    const resp = await api('POST', `/v1/maps/${encodeURIComponent(S.name)}/subscriptions`,
      { json: { start: S.start, goal: S.goal, ...(S.profile ? { profile: S.profile } : {}) } });
    const sub = await resp.json();
    const abort = new AbortController();
    // The secret (shown only in the create answer) is what lets this tab end it.
    S.sub = { id: sub.id, secret: sub.secret, path: sub.path, abort, map: S.name, events: [], shown: null };
    $('sub-log').textContent = '';
    $('unsubscribe').disabled = false;
    recordSubEvent({ seq: sub.seq, reason: 'created', status: sub.status, cost: sub.cost, map_version: sub.map_version, path: sub.path });
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
      recordSubEvent(ev);
      if (ev.reason !== 'initial') {
        say(`subscription ${sub.id}: ${ev.reason} at map version ${ev.map_version}: ${ev.status}, cost ${fmt(ev.cost)}`,
          ev.status === 'found' ? 'ok' : 'error');
      }
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

const FINAL_REASONS = new Set(['deleted', 'map_deleted', 'map_replaced', 'expired']);

// Keeps an event for the player and shows it if the player follows the latest.
function recordSubEvent(ev) {
  const sub = S.sub;
  const i = sub.events.length;
  sub.events.push(ev);
  const li = document.createElement('li');
  li.textContent = `${new Date().toLocaleTimeString()} ${ev.reason} · ${ev.status} · cost ${fmt(ev.cost)} · v${ev.map_version}${ev.touched_count ? ` · touched ${ev.touched_count}` : ''}`;
  li.dataset.index = String(i);
  li.title = 'show this event\'s path (and the cells its repair touched)';
  li.addEventListener('click', () => showSubEvent(i));
  const log = $('sub-log');
  log.insertBefore(li, log.firstChild);
  while (log.children.length > 200) log.removeChild(log.lastChild);
  if (sub.shown === null || sub.shown === i - 1) showSubEvent(i);
}

// The subscription player: shows event i (its path, the cells its repair touched).
function showSubEvent(i) {
  const sub = S.sub;
  if (!sub || !sub.events[i]) return;
  const ev = sub.events[i];
  sub.shown = i;
  if (ev.path) sub.path = ev.path;
  sub.touched = ev.touched || null;
  sub.touchedCount = ev.touched_count || 0;
  const touched = ev.touched ? `, repair touched ${ev.touched_count} cell${ev.touched_count === 1 ? '' : 's'}${ev.touched_truncated ? ` (${ev.touched.length} shown)` : ''}` : '';
  const where = i === sub.events.length - 1 ? '' : ` (event ${i + 1} of ${sub.events.length})`;
  $('sub-status').textContent = `#${ev.seq} ${ev.reason}: ${ev.status}, cost ${fmt(ev.cost)}, map version ${ev.map_version}${touched}${where}`;
  $('sub-status').dataset.seq = String(ev.seq);
  $('sub-status').dataset.reason = ev.reason;
  for (const li of $('sub-log').children) li.classList.toggle('shown', li.dataset.index === String(i));
  S.dirty = true;
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

// Downloads the query's search trace as a Posthoc document (server maps; open it in
// Posthoc with the map's .map file).
async function downloadPosthoc() {
  if (S.source !== 'server' || !S.start || !S.goal) { say('pick a server map and set a start and a goal first'); return; }
  try {
    const body = serverBody(queryOptions($('algo-a').value, 0));
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

function bindLive() {
  $('undo').addEventListener('click', () => undoStroke().catch((e) => sayError('undo', e)));
  $('reset').addEventListener('click', () => resetTo(+$('reset-version').value).catch((e) => sayError('reset', e)));
  $('subscribe').addEventListener('click', startSubscription);
  $('unsubscribe').addEventListener('click', stopSubscription);
  updateStrokes();
}
