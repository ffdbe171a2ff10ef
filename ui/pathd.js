// pathd-wasm: the pathd engine (Rust, compiled to WebAssembly) for browsers and Node.
//
// One file, no dependencies, no build step: a classic script in the browser (it defines
// `PathdWasm`; works from file:// pages too when the module comes as bytes or base64) and
// a CommonJS module in Node (`require('pathd-wasm')` or `import`), where the module is
// loaded synchronously from pathd_engine.wasm beside this file.
//
//   await PathdWasm.init();                      // browser: from PATHD_WASM_BASE64, or
//   await PathdWasm.init(bytesOrUrlOrResponse);  // ... from the given source
//   const grid = new PathdWasm.Grid(w, h, costs);  // costs: row-major, 0 wall, 1..255
//   const r = grid.findPath([0, 0], [9, 9], { algorithm: 'jps' });
//   r.status, r.cost, r.path  // 'found', 12.7279..., [[0, 0], [1, 1], ...]
//
// The wasm interface it wraps is documented in wasm/src/lib.rs.
(function (root, factory) {
  'use strict';
  const api = factory();
  if (typeof module === 'object' && module.exports) {
    // Node: load the module beside this file now, so `new Grid` works at once.
    const fs = require('fs');
    const path = require('path');
    api.initSync(fs.readFileSync(path.join(__dirname, 'pathd_engine.wasm')));
    module.exports = api;
  } else {
    root.PathdWasm = api;
  }
})(typeof globalThis !== 'undefined' ? globalThis : this, function () {
  'use strict';

  /** Algorithm wire names, in the engine's order (`hpa` needs the server's abstraction). */
  const ALGORITHMS = ['astar', 'dijkstra', 'weighted_astar', 'jps', 'jps_plus', 'theta', 'hpa', 'auto'];
  /** The lessons' heuristics (`null`/absent: the map's own, octile or Manhattan). */
  const HEURISTICS = ['octile', 'manhattan', 'euclidean', 'chebyshev', 'zero'];
  /** The lessons' tie-breaks (`high_g` is the default). */
  const TIE_BREAKS = ['none', 'high_g', 'cross_product', 'epsilon'];
  /** Event kinds of a trace, by their number. */
  const EVENT_KINDS = ['expand', 'push', 'decrease', 'reopen'];

  let wasm = null; // the instance's exports

  function instantiated(instance) {
    wasm = instance.exports;
    return api;
  }

  function base64Bytes(s) {
    if (typeof atob === 'function') {
      const bin = atob(s);
      const out = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
      return out;
    }
    return new Uint8Array(Buffer.from(s, 'base64'));
  }

  /** Loads the module synchronously from its bytes (Node, workers, small pages). */
  function initSync(bytes) {
    const module = new WebAssembly.Module(bytes);
    return instantiated(new WebAssembly.Instance(module, {}));
  }

  /**
   * Loads the module: from `source` (bytes, a URL or a fetch Response), else from the
   * global `PATHD_WASM_BASE64` (ui/pathd-wasm.js). Resolves to this API.
   */
  async function init(source) {
    if (wasm && source === undefined) return api;
    let bytes = source;
    if (source === undefined) {
      if (typeof globalThis.PATHD_WASM_BASE64 !== 'string') {
        throw new Error('pathd-wasm: no module given and no PATHD_WASM_BASE64 loaded');
      }
      bytes = base64Bytes(globalThis.PATHD_WASM_BASE64);
    } else if (typeof source === 'string' || source instanceof URL) {
      bytes = await (await fetch(source)).arrayBuffer();
    } else if (typeof Response !== 'undefined' && source instanceof Response) {
      bytes = await source.arrayBuffer();
    }
    const { instance } = await WebAssembly.instantiate(bytes, {});
    return instantiated(instance);
  }

  function need() {
    if (!wasm) throw new Error('pathd-wasm: call init() first');
    return wasm;
  }

  function outBytes() {
    const w = need();
    return new Uint8Array(w.memory.buffer, w.pathd_out_ptr(), w.pathd_out_len());
  }

  function outText() {
    return new TextDecoder().decode(outBytes());
  }

  /** Throws the engine's message for a negative return code. */
  function check(code, what) {
    if (code < 0) {
      const e = new Error(`${what}: ${outText()}`);
      e.code = code === -3 ? 'invalid_query' : code === -2 ? 'no_such_grid' : 'invalid';
      throw e;
    }
    return code;
  }

  /** Copies `bytes` into the module's memory; returns [ptr, len] (free with pathd_free). */
  function copyIn(bytes) {
    const w = need();
    const ptr = w.pathd_alloc(bytes.length);
    new Uint8Array(w.memory.buffer, ptr, bytes.length).set(bytes);
    return [ptr, bytes.length];
  }

  function pairs(flat) {
    const out = new Array(flat.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = [flat[2 * i], flat[2 * i + 1]];
    return out;
  }

  /**
   * A search trace: `count` events in order. Event i: `node(i)`, `parent(i)` (map indices
   * `y * width + x`), `kind(i)` (0 expand, 1 push, 2 decrease, 3 reopen), `g(i)`, `h(i)`,
   * `f(i)`; `event(i)` gives them as an object with `[x, y]` points. The raw views `u32`
   * (8 per event: node, parent | kind << 28, ...) and `f64` (4 per event: -, g, h, f) are
   * there for tight loops.
   */
  class Trace {
    constructor(bytes, info, width) {
      this.count = info.events;
      this.expansions = info.expansions;
      this.truncated = info.truncated;
      this.weight = info.weight;
      this.width = width;
      this.u32 = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
      this.f64 = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 8);
    }
    node(i) { return this.u32[8 * i]; }
    parent(i) { return this.u32[8 * i + 1] & 0x0fffffff; }
    kind(i) { return this.u32[8 * i + 1] >>> 28; }
    g(i) { return this.f64[4 * i + 1]; }
    h(i) { return this.f64[4 * i + 2]; }
    f(i) { return this.f64[4 * i + 3]; }
    event(i) {
      const W = this.width;
      const n = this.node(i);
      const p = this.parent(i);
      return {
        type: EVENT_KINDS[this.kind(i)], node: [n % W, Math.floor(n / W)],
        parent: [p % W, Math.floor(p / W)], g: this.g(i), h: this.h(i), f: this.f(i),
      };
    }
  }

  const FINALIZER = typeof FinalizationRegistry === 'function'
    ? new FinalizationRegistry((h) => { if (wasm) wasm.pathd_grid_free(h); })
    : null;

  /** A grid map in the engine's memory. */
  class Grid {
    /**
     * `width x height` cells, `costs` row-major (an array or Uint8Array: 0 wall,
     * 1..=255 terrain; a step costs the mean of its two cells times 1 or sqrt 2).
     * `options.movement`: `'octile'` (default, no corner cutting) or `'cardinal'`.
     */
    constructor(width, height, costs, options = {}) {
      if (width === undefined) return; // Grid.fromMap
      const w = need();
      const bytes = costs instanceof Uint8Array ? costs : Uint8Array.from(costs);
      if (bytes.length !== width * height) {
        throw new Error(`costs holds ${bytes.length} cells, not ${width} x ${height}`);
      }
      const [ptr, len] = copyIn(bytes);
      try {
        this._adopt(check(w.pathd_grid_new(width, height, ptr, options.movement === 'cardinal' ? 1 : 0), 'grid'));
      } finally {
        w.pathd_free(ptr, len);
      }
    }

    /** A grid from a Moving AI `.map` file's text. */
    static fromMap(text) {
      const w = need();
      const [ptr, len] = copyIn(new TextEncoder().encode(text));
      const g = new Grid();
      try {
        g._adopt(check(w.pathd_grid_parse(ptr, len), 'map'));
      } finally {
        w.pathd_free(ptr, len);
      }
      return g;
    }

    _adopt(handle) {
      const w = need();
      this.handle = handle;
      this.width = w.pathd_grid_width(handle);
      this.height = w.pathd_grid_height(handle);
      this.movement = w.pathd_grid_movement(handle) === 1 ? 'cardinal' : 'octile';
      if (FINALIZER) FINALIZER.register(this, handle, this);
    }

    /** The row-major costs (a copy). */
    costs() {
      check(need().pathd_grid_costs(this.handle), 'costs');
      return outBytes().slice();
    }

    /**
     * Changes cells at once: `cells` as `[x, y, cost]` triples or `{x, y, cost}` objects.
     * Returns how many cells changed. Throws (changing nothing) on a cell off the map.
     */
    patch(cells) {
      const w = need();
      const flat = new Uint32Array(cells.length * 3);
      cells.forEach((c, i) => {
        const [x, y, cost] = Array.isArray(c) ? c : [c.x, c.y, c.cost];
        flat[3 * i] = x; flat[3 * i + 1] = y; flat[3 * i + 2] = cost;
      });
      const ptr = w.pathd_alloc(flat.byteLength);
      new Uint32Array(w.memory.buffer, ptr, flat.length).set(flat);
      try {
        return check(w.pathd_grid_patch(this.handle, ptr, cells.length), 'patch');
      } finally {
        w.pathd_free(ptr, flat.byteLength);
      }
    }

    /**
     * A path from `start` to `goal` (`[x, y]` each). Options (all optional):
     * `algorithm` (ALGORITHMS, default `astar`), `weight` (weighted_astar, default 1.5),
     * `heuristic` (HEURISTICS), `tieBreak` (TIE_BREAKS), `maxExpansions`, `smooth`,
     * `partial`, `size` (agent side, default 1), `trace` (record a Trace), `traceCap`
     * (at most this many expansions recorded, default 5,000,000).
     *
     * Answers `{status, cost, path_cost, path, expanded, generated, algorithm, optimal,
     * limit?, waypoints?, waypoints_cost?, trace?, elapsed_ms}` with `status` one of
     * `found`, `partial`, `no_path`, `limit_reached`; throws on misuse (a blocked start,
     * an algorithm that does not apply).
     */
    findPath(start, goal, options = {}) {
      const w = need();
      const algo = ALGORITHMS.indexOf(options.algorithm || 'astar');
      if (algo < 0) throw new Error(`unknown algorithm ${options.algorithm}`);
      const heur = options.heuristic ? HEURISTICS.indexOf(options.heuristic) + 1 : 0;
      if (heur < 0 || (options.heuristic && heur === 0)) throw new Error(`unknown heuristic ${options.heuristic}`);
      const tie = TIE_BREAKS.indexOf(options.tieBreak || 'high_g');
      if (tie < 0) throw new Error(`unknown tieBreak ${options.tieBreak}`);
      const flags = (options.smooth ? 1 : 0) | (options.partial ? 2 : 0) | (options.trace ? 4 : 0);
      const t0 = typeof performance !== 'undefined' ? performance.now() : Date.now();
      const code = w.pathd_find_path(
        this.handle, start[0], start[1], goal[0], goal[1], algo,
        options.weight === undefined ? 1.5 : options.weight, heur, tie,
        options.maxExpansions === undefined || options.maxExpansions === null ? -1 : options.maxExpansions,
        flags, options.size || 1, options.traceCap === undefined ? 5000000 : options.traceCap,
      );
      const elapsed = (typeof performance !== 'undefined' ? performance.now() : Date.now()) - t0;
      check(code, 'query');
      const out = outBytes();
      const n = new DataView(out.buffer, out.byteOffset, 4).getUint32(0, true);
      const r = JSON.parse(new TextDecoder().decode(out.subarray(4, 4 + n)));
      r.path = pairs(r.path);
      if (r.waypoints) r.waypoints = pairs(r.waypoints);
      r.elapsed_ms = elapsed;
      if (r.trace) {
        const off = (4 + n + 7) & ~7;
        r.trace = new Trace(out.slice(off, off + 32 * r.trace.events), r.trace, this.width);
      }
      return r;
    }

    /**
     * The flow field towards `goal` for a `size x size` agent (default 1): one direction
     * byte per cell, row-major: 0..7 the move N, E, S, W, NE, SE, SW, NW that leads
     * towards the goal, 8 at the goal, 255 where the goal cannot be reached.
     */
    flowField(goal, size = 1) {
      check(need().pathd_flow_field(this.handle, goal[0], goal[1], size), 'flow field');
      return outBytes().slice();
    }

    /** Frees the grid's memory now (else it goes when the Grid is collected). */
    free() {
      if (this.handle && wasm) {
        wasm.pathd_grid_free(this.handle);
        if (FINALIZER) FINALIZER.unregister(this);
      }
      this.handle = 0;
    }
  }

  /** The moves of a flow field's direction bytes 0..7, as [dx, dy]. */
  const DIRECTIONS = [[0, -1], [1, 0], [0, 1], [-1, 0], [1, -1], [1, 1], [-1, 1], [-1, -1]];

  const api = { init, initSync, Grid, Trace, ALGORITHMS, HEURISTICS, TIE_BREAKS, EVENT_KINDS, DIRECTIONS,
    get ready() { return wasm !== null; } };
  return api;
});
