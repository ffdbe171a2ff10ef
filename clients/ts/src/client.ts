import { PathdConnectionError, PathdError, PathdTimeoutError } from "./errors.js";
import { readFrames } from "./sse.js";
import type {
  BatchRequest,
  BatchResponse,
  ErrorCode,
  FlowField,
  FlowFieldEvent,
  FlowFieldRequest,
  Health,
  LivePlan,
  LivePlanCreated,
  LivePlanEvent,
  LosRequest,
  LosResponse,
  MapCells,
  NearestCell,
  MapCosts,
  MapList,
  MapPatch,
  MapRows,
  MapTerrain,
  MapSummary,
  MatrixRequest,
  MatrixResponse,
  Movement,
  PatchResult,
  PathRequest,
  PathResult,
  PlanProgress,
  PlanRequest,
  PlanResult,
  Point,
  RandomRequest,
  RandomResponse,
  Subscription,
  SubscriptionCreated,
  SubscriptionEvent,
} from "./types.js";

export interface ClientOptions {
  /** E.g. `http://localhost:8080`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer` on map writes (PUT, PATCH, DELETE of maps). */
  adminToken?: string;
  /** Sent on reads, queries and subscriptions (the admin token is used when unset). */
  queryToken?: string;
  /** Per attempt: headers and body must arrive within this (default 30 000 ms). */
  timeoutMs?: number;
  /** Retries of a `503` that carries `Retry-After` (default 3; 0 turns retrying off). */
  retries?: number;
  /** The longest wait between retries, whatever `Retry-After` says (default 30 000 ms). */
  maxRetryDelayMs?: number;
  /** The wait before an event stream reconnects (default 500 ms; `retry:` overrides). */
  reconnectDelayMs?: number;
  /** Consecutive failed reconnects before an event stream gives up (default 10). */
  maxReconnectFailures?: number;
  /** A fetch implementation (default the global one). */
  fetch?: typeof fetch;
  /** How to wait (default a timer); tests pass their own. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Per call: cancellation and a timeout of its own. */
export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface MapReadOptions extends CallOptions {
  /** Wait until this replica has applied this version (`503 replica_behind` otherwise). */
  minVersion?: number;
}

export interface StreamOptions {
  /** Resume after this `seq` (the SSE `Last-Event-ID`). */
  lastEventId?: number;
  signal?: AbortSignal;
}

/** The answer of `putMap`: the summary, and whether the name was new (201) or replaced (200). */
export interface PutResult {
  created: boolean;
  map: MapSummary;
}

const FINAL = new Set(["deleted", "map_deleted", "map_replaced", "profile_removed", "expired"]);

type Auth = "admin" | "query" | "none";

interface Req {
  method: string;
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: string;
  contentType?: string;
  accept?: string;
  headers?: Record<string, string>;
  auth: Auth;
  call: CallOptions | undefined;
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", abort);
      resolve();
    }
    function abort() {
      clearTimeout(t);
      reject(signal!.reason);
    }
    signal?.addEventListener("abort", abort, { once: true });
  });
}

/**
 * A pathd client. Every method maps to one operation of openapi.yaml; error answers throw a
 * {@link PathdError} with the stable code, `503` answers with `Retry-After` are retried
 * after the time the server asked for, and every call can be cancelled (`signal`) and has
 * a timeout.
 */
export class PathdClient {
  private readonly base: string;
  private readonly opts: Required<Omit<ClientOptions, "adminToken" | "queryToken">> &
    Pick<ClientOptions, "adminToken" | "queryToken">;

  constructor(options: ClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, "");
    this.opts = {
      timeoutMs: 30_000,
      retries: 3,
      maxRetryDelayMs: 30_000,
      reconnectDelayMs: 500,
      maxReconnectFailures: 10,
      fetch: globalThis.fetch.bind(globalThis),
      sleep: defaultSleep,
      ...options,
    };
  }

  // --- operations -------------------------------------------------------------------

  /** `GET /healthz`. */
  health(call?: CallOptions): Promise<Health> {
    return this.json({ method: "GET", path: "/healthz", auth: "none", call });
  }

  /** `GET /readyz` (throws `not_ready` while the startup maps load). */
  ready(call?: CallOptions): Promise<Health> {
    return this.json({ method: "GET", path: "/readyz", auth: "none", call });
  }

  /** `GET /metrics`: Prometheus text. */
  metrics(call?: CallOptions): Promise<string> {
    return this.text({ method: "GET", path: "/metrics", auth: "none", call });
  }

  /** `GET /openapi.yaml`: the contract, as text. */
  openapi(call?: CallOptions): Promise<string> {
    return this.text({ method: "GET", path: "/openapi.yaml", auth: "none", call });
  }

  /** `GET /v1/maps`: every map's summary, sorted by name. */
  listMaps(call?: CallOptions): Promise<MapList> {
    return this.json({ method: "GET", path: "/v1/maps", auth: "query", call });
  }

  /** `GET /v1/maps/{name}`: the summary. */
  getMap(name: string, call?: MapReadOptions): Promise<MapSummary> {
    return this.json({
      method: "GET",
      path: `/v1/maps/${seg(name)}`,
      query: { min_version: call?.minVersion },
      auth: "query",
      call,
    });
  }

  /** `GET /v1/maps/{name}` with `Accept: text/plain`: the map as a Moving AI file. */
  getMapText(name: string, call?: MapReadOptions): Promise<string> {
    return this.text({
      method: "GET",
      path: `/v1/maps/${seg(name)}`,
      query: { min_version: call?.minVersion },
      accept: "text/plain",
      auth: "query",
      call,
    });
  }

  /** `GET /v1/maps/{name}/cells`: the costs (base64) of the current version. */
  getMapCells(name: string, call?: CallOptions): Promise<MapCells> {
    return this.json({ method: "GET", path: `/v1/maps/${seg(name)}/cells`, auth: "query", call });
  }

  /** `GET /v1/maps/{name}/nearest`: the usable cell nearest to `at` (`no_usable_cell` when
   * none lies within `radius`, default 8). */
  nearest(
    name: string,
    at: Point,
    call?: CallOptions & { radius?: number; size?: number },
  ): Promise<NearestCell> {
    return this.json({
      method: "GET",
      path: `/v1/maps/${seg(name)}/nearest`,
      query: { x: at[0], y: at[1], radius: call?.radius, size: call?.size },
      auth: "query",
      call,
    });
  }

  /** `PUT /v1/maps/{name}` with a Moving AI `.map` file. */
  putMapText(
    name: string,
    text: string,
    call?: CallOptions & { movement?: Movement },
  ): Promise<PutResult> {
    return this.put(name, text, "text/plain", call);
  }

  /** `PUT /v1/maps/{name}` with JSON costs or rows. */
  putMap(name: string, map: MapCosts | MapRows | MapTerrain, call?: CallOptions): Promise<PutResult> {
    return this.put(name, JSON.stringify(map), "application/json", call);
  }

  /** `DELETE /v1/maps/{name}`. */
  async deleteMap(name: string, call?: CallOptions): Promise<void> {
    await this.send({ method: "DELETE", path: `/v1/maps/${seg(name)}`, auth: "admin", call }, drain);
  }

  /** `PATCH /v1/maps/{name}`: cells and rectangles, atomically; `if_version` guards it. */
  patchMap(name: string, patch: MapPatch, call?: CallOptions): Promise<PatchResult> {
    return this.json({
      method: "PATCH",
      path: `/v1/maps/${seg(name)}`,
      body: JSON.stringify(patch),
      contentType: "application/json",
      auth: "admin",
      call,
    });
  }

  /** `POST /v1/maps/{name}/path`. "No path" is a result (`status: no_path`), not an error. */
  findPath(name: string, query: PathRequest, call?: CallOptions): Promise<PathResult> {
    return this.post(`/v1/maps/${seg(name)}/path`, query, call);
  }

  /** `POST /v1/maps/{name}/paths`: answered in order; a bad query gets an error item. */
  findPaths(name: string, batch: BatchRequest, call?: CallOptions): Promise<BatchResponse> {
    return this.post(`/v1/maps/${seg(name)}/paths`, batch, call);
  }

  /** `POST /v1/maps/{name}/posthoc`: the query's search trace as a Posthoc document. */
  posthoc(name: string, query: PathRequest, call?: CallOptions): Promise<Record<string, unknown>> {
    return this.post(`/v1/maps/${seg(name)}/posthoc`, query, call);
  }

  /** `POST /v1/maps/{name}/matrix`: path costs from each source to each target. */
  matrix(name: string, table: MatrixRequest, call?: CallOptions): Promise<MatrixResponse> {
    return this.post(`/v1/maps/${seg(name)}/matrix`, table, call);
  }

  /** `POST /v1/maps/{name}/los`: line of sight, with the first blocking cell. */
  los(name: string, sight: LosRequest, call?: CallOptions): Promise<LosResponse> {
    return this.post(`/v1/maps/${seg(name)}/los`, sight, call);
  }

  /** `GET /v1/maps/{name}/random`: a uniformly random cell within path cost `radius`. */
  random(name: string, query: RandomRequest, call?: CallOptions): Promise<RandomResponse> {
    return this.json({
      method: "GET",
      path: `/v1/maps/${seg(name)}/random`,
      query: { ...query },
      auth: "query",
      call,
    });
  }

  /** `POST /v1/maps/{name}/subscriptions`: keep the answer's `secret` to move or delete it. */
  createSubscription(
    name: string,
    query: PathRequest,
    call?: CallOptions,
  ): Promise<SubscriptionCreated> {
    return this.post(`/v1/maps/${seg(name)}/subscriptions`, query, call);
  }

  /** `GET /v1/subscriptions/{id}`. */
  getSubscription(id: string, call?: CallOptions): Promise<Subscription> {
    return this.json({ method: "GET", path: `/v1/subscriptions/${seg(id)}`, auth: "query", call });
  }

  /**
   * `PATCH /v1/subscriptions/{id}`: the agent moved. `secret` may be omitted when the
   * client has the admin token.
   */
  moveSubscription(
    id: string,
    secret: string | undefined,
    position: Point,
    call?: CallOptions,
  ): Promise<Subscription> {
    return this.json({
      method: "PATCH",
      path: `/v1/subscriptions/${seg(id)}`,
      body: JSON.stringify({ position }),
      contentType: "application/json",
      headers: secret === undefined ? {} : { "x-subscription-secret": secret },
      auth: secret === undefined ? "admin" : "query",
      call,
    });
  }

  /** `DELETE /v1/subscriptions/{id}` (the secret, or the admin token when omitted). */
  async deleteSubscription(id: string, secret?: string, call?: CallOptions): Promise<void> {
    await this.send(
      {
        method: "DELETE",
        path: `/v1/subscriptions/${seg(id)}`,
        headers: secret === undefined ? {} : { "x-subscription-secret": secret },
        auth: secret === undefined ? "admin" : "query",
        call,
      },
      drain,
    );
  }

  /**
   * `GET /v1/subscriptions/{id}/events`: the subscription's events, as they happen. A
   * dropped connection is resumed with `Last-Event-ID`, so no event is missed: either the
   * server replays the missed ones, or it sends one `resync` event with the full state
   * (treat it as the new state). Ends after a final event (`deleted`, `map_deleted`,
   * `map_replaced`, `expired`); `close()` or the signal stops it.
   */
  subscriptionEvents(id: string, options: StreamOptions = {}): EventStream<SubscriptionEvent> {
    return new EventStream(this, `/v1/subscriptions/${seg(id)}/events`, options);
  }

  /** `POST /v1/maps/{name}/flowfields`: keep the answer's `secret` to delete it. */
  createFlowField(name: string, req: FlowFieldRequest, call?: CallOptions): Promise<FlowField> {
    return this.post(`/v1/maps/${seg(name)}/flowfields`, req, call);
  }

  /** `GET /v1/flowfields/{id}`. */
  getFlowField(id: string, call?: CallOptions): Promise<FlowField> {
    return this.json({ method: "GET", path: `/v1/flowfields/${seg(id)}`, auth: "query", call });
  }

  /** `DELETE /v1/flowfields/{id}` (the secret, or the admin token when omitted). */
  async deleteFlowField(id: string, secret?: string, call?: CallOptions): Promise<void> {
    await this.send(
      {
        method: "DELETE",
        path: `/v1/flowfields/${seg(id)}`,
        headers: secret === undefined ? {} : { "x-flowfield-secret": secret },
        auth: secret === undefined ? "admin" : "query",
        call,
      },
      drain,
    );
  }

  /**
   * `GET /v1/flowfields/{id}/events`, resumed with `Last-Event-ID` like
   * {@link subscriptionEvents}. On `resync`, fetch the field again ({@link watchFlowField}
   * does that for you).
   */
  flowFieldEvents(id: string, options: StreamOptions = {}): EventStream<FlowFieldEvent> {
    return new EventStream(this, `/v1/flowfields/${seg(id)}/events`, options);
  }

  /** `POST /v1/maps/{name}/plans`: one collision-free plan for many agents. */
  planAgents(name: string, req: PlanRequest, call?: CallOptions): Promise<PlanResult> {
    return this.post(`/v1/maps/${seg(name)}/plans`, { ...req, subscribe: false }, call);
  }

  /**
   * `POST /v1/maps/{name}/plans` with `subscribe`: a live plan, re-planned when patches wall
   * its agents' ways and when they fall behind; keep the answer's `secret`.
   */
  createLivePlan(name: string, req: PlanRequest, call?: CallOptions): Promise<LivePlanCreated> {
    return this.post(`/v1/maps/${seg(name)}/plans`, { ...req, subscribe: true }, call);
  }

  /** `GET /v1/plans/{id}`. */
  getPlan(id: string, call?: CallOptions): Promise<LivePlan> {
    return this.json({ method: "GET", path: `/v1/plans/${seg(id)}`, auth: "query", call });
  }

  /**
   * `PATCH /v1/plans/{id}`: the agents' progress (the secret, or the admin token when
   * omitted). Delayed agents are re-planned before the answer.
   */
  reportPlanProgress(
    id: string,
    secret: string | undefined,
    progress: PlanProgress,
    call?: CallOptions,
  ): Promise<LivePlan> {
    return this.json({
      method: "PATCH",
      path: `/v1/plans/${seg(id)}`,
      body: JSON.stringify(progress),
      contentType: "application/json",
      headers: secret === undefined ? {} : { "x-plan-secret": secret },
      auth: secret === undefined ? "admin" : "query",
      call,
    });
  }

  /** `DELETE /v1/plans/{id}` (the secret, or the admin token when omitted). */
  async deletePlan(id: string, secret?: string, call?: CallOptions): Promise<void> {
    await this.send(
      {
        method: "DELETE",
        path: `/v1/plans/${seg(id)}`,
        headers: secret === undefined ? {} : { "x-plan-secret": secret },
        auth: secret === undefined ? "admin" : "query",
        call,
      },
      drain,
    );
  }

  /**
   * `GET /v1/plans/{id}/events`: every new plan (each event is the whole plan), resumed
   * with `Last-Event-ID` like {@link subscriptionEvents}.
   */
  planEvents(id: string, options: StreamOptions = {}): EventStream<LivePlanEvent> {
    return new EventStream(this, `/v1/plans/${seg(id)}/events`, options);
  }

  // --- transport ----------------------------------------------------------------------

  private async put(
    name: string,
    body: string,
    contentType: string,
    call?: CallOptions & { movement?: Movement },
  ): Promise<PutResult> {
    return this.send(
      {
        method: "PUT",
        path: `/v1/maps/${seg(name)}`,
        query: { movement: call?.movement },
        body,
        contentType,
        auth: "admin",
        call,
      },
      async (r) => ({ created: r.status === 201, map: (await r.json()) as MapSummary }),
    );
  }

  private post<T>(path: string, body: unknown, call?: CallOptions): Promise<T> {
    return this.json({
      method: "POST",
      path,
      body: JSON.stringify(body),
      contentType: "application/json",
      auth: "query",
      call,
    });
  }

  private json<T>(req: Req): Promise<T> {
    return this.send(req, async (r) => (await r.json()) as T);
  }

  private text(req: Req): Promise<string> {
    return this.send(req, (r) => r.text());
  }

  /** @internal Opens an event stream (no timeout on the body, only on the headers). */
  async openStream(path: string, lastEventId: number | undefined, signal: AbortSignal): Promise<Response> {
    return this.send(
      {
        method: "GET",
        path,
        accept: "text/event-stream",
        headers: lastEventId === undefined ? {} : { "last-event-id": String(lastEventId) },
        auth: "query",
        call: { signal },
      },
      async (r) => r,
      true,
    );
  }

  /** @internal */
  get settings() {
    return this.opts;
  }

  /**
   * One request with its retries: each attempt has the timeout (headers and, unless
   * `stream`, the body read by `read`); a `503` with `Retry-After` is retried after that
   * many seconds (at most `maxRetryDelayMs`), up to `retries` times.
   */
  private async send<T>(req: Req, read: (r: Response) => Promise<T>, stream = false): Promise<T> {
    const url = new URL(this.base + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = { ...req.headers };
    headers["accept"] = req.accept ?? "application/json";
    if (req.contentType) headers["content-type"] = req.contentType;
    const token =
      req.auth === "admin"
        ? (this.opts.adminToken ?? this.opts.queryToken)
        : req.auth === "query"
          ? (this.opts.queryToken ?? this.opts.adminToken)
          : undefined;
    if (token !== undefined) headers["authorization"] = `Bearer ${token}`;
    const timeoutMs = req.call?.timeoutMs ?? this.opts.timeoutMs;
    const outer = req.call?.signal;
    for (let attempt = 0; ; attempt++) {
      outer?.throwIfAborted();
      const timer = new AbortController();
      const t = setTimeout(() => timer.abort(new PathdTimeoutError(timeoutMs, url.href)), timeoutMs);
      const signal = outer ? AbortSignal.any([outer, timer.signal]) : timer.signal;
      let retryAfter: number | undefined;
      try {
        let resp: Response;
        try {
          resp = await this.opts.fetch(url, {
            method: req.method,
            headers,
            body: req.body ?? null,
            signal,
          });
        } catch (e) {
          throw this.failure(e, outer, timer.signal, url.href);
        }
        if (resp.ok) {
          if (stream) {
            clearTimeout(t);
            return await read(resp);
          }
          try {
            return await read(resp);
          } catch (e) {
            throw this.failure(e, outer, timer.signal, url.href);
          }
        }
        const err = await errorOf(resp).catch((e) => {
          throw this.failure(e, outer, timer.signal, url.href);
        });
        if (!err.retryable || attempt >= this.opts.retries) throw err;
        retryAfter = err.retryAfter;
      } finally {
        clearTimeout(t);
      }
      await this.opts.sleep(Math.min(retryAfter! * 1000, this.opts.maxRetryDelayMs), outer);
    }
  }

  /** What a failed fetch or body read means: cancelled, timed out, or unreachable. */
  private failure(e: unknown, outer: AbortSignal | undefined, timer: AbortSignal, url: string): unknown {
    if (outer?.aborted) return outer.reason;
    if (timer.aborted) return timer.reason;
    if (e instanceof PathdError) return e;
    return new PathdConnectionError(url, e);
  }
}

/** Reads an error answer into a PathdError. */
async function errorOf(resp: Response): Promise<PathdError> {
  const text = await resp.text();
  let code = "internal" as ErrorCode;
  let message = text;
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (body.error?.code) code = body.error.code as ErrorCode;
    if (body.error?.message !== undefined) message = body.error.message;
  } catch {
    // not JSON: keep the text as the message
  }
  const ra = resp.headers.get("retry-after");
  const retryAfter = ra !== null && /^\d+$/.test(ra.trim()) ? Number(ra.trim()) : undefined;
  return new PathdError(resp.status, code, message, retryAfter);
}

async function drain(r: Response): Promise<void> {
  await r.arrayBuffer();
}

function seg(s: string): string {
  return encodeURIComponent(s);
}

/**
 * An event stream that survives dropped connections: iterate it with `for await`. It
 * reconnects with `Last-Event-ID` (the last `seq` it yielded) after a network error or an
 * end without a final event, and ends after a final event, on `close()`, or on the signal.
 */
export class EventStream<E extends { seq: number; reason: string }> implements AsyncIterable<E> {
  /** The `seq` of the last event yielded (sent as `Last-Event-ID` on a reconnect). */
  lastEventId: number | undefined;
  /** How many times the stream reconnected. */
  reconnects = 0;
  private readonly stop = new AbortController();
  private readonly signal: AbortSignal;

  constructor(
    private readonly client: PathdClient,
    private readonly path: string,
    options: StreamOptions,
  ) {
    this.lastEventId = options.lastEventId;
    this.signal = options.signal
      ? AbortSignal.any([options.signal, this.stop.signal])
      : this.stop.signal;
  }

  /** Stops the stream (an iteration in progress ends). */
  close(): void {
    this.stop.abort(new DOMException("the stream was closed", "AbortError"));
  }

  async *[Symbol.asyncIterator](): AsyncIterator<E> {
    const s = this.client.settings;
    let delay = s.reconnectDelayMs;
    let failures = 0;
    for (;;) {
      if (this.stop.signal.aborted) return;
      let resp: Response;
      try {
        resp = await this.client.openStream(this.path, this.lastEventId, this.signal);
      } catch (e) {
        if (this.stop.signal.aborted) return;
        if (this.signal.aborted) throw e;
        // An error answer ends the stream (the subscription is gone, a token is wrong),
        // unless it says to come back later.
        if (e instanceof PathdError && !e.retryable) throw e;
        if (++failures > s.maxReconnectFailures) throw e;
        await this.pause(e instanceof PathdError ? e.retryAfter! * 1000 : delay);
        this.reconnects++;
        continue;
      }
      try {
        for await (const frame of readFrames(resp.body!)) {
          failures = 0;
          if (frame.retry !== undefined) delay = frame.retry;
          const ev = JSON.parse(frame.data) as E;
          this.lastEventId = ev.seq;
          yield ev;
          if (FINAL.has(ev.reason)) return;
        }
      } catch (e) {
        if (this.stop.signal.aborted) return;
        if (this.signal.aborted) throw this.signal.reason;
        // A dropped connection: reconnect below.
      }
      await this.pause(delay);
      this.reconnects++;
    }
  }

  private async pause(ms: number): Promise<void> {
    try {
      await this.client.settings.sleep(ms, this.signal);
    } catch (e) {
      if (!this.stop.signal.aborted) throw e;
    }
  }
}
