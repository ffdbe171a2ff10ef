// pathd visualiser: the server's JSON API (connected mode), messages and number format.
'use strict';

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

// kind: '' (neutral), 'ok', 'warn' (an answer that is not a success), 'error'.
function say(text, kind) {
  const m = $('message');
  m.textContent = text;
  m.className = kind || '';
  m.title = text;
}

function sayError(prefix, e) {
  const detail = e instanceof ApiError ? `${e.status} ${e.code}: ${e.message}` : (e && e.message) || String(e);
  say(`${prefix}: ${detail}`, 'error');
}

const fmt = (v) => (Number.isInteger(v) ? String(v) : v.toFixed(4).replace(/0+$/, ''));
