import type { PathdClient, StreamOptions } from "./client.js";
import type { FlowField, FlowFieldEvent, Point, Region } from "./types.js";

/** The steps of directions 0-7: N, E, S, W, NE, SE, SW, NW (`y` grows downwards). */
export const STEPS: readonly Point[] = [
  [0, -1],
  [1, 0],
  [0, 1],
  [-1, 0],
  [1, -1],
  [1, 1],
  [-1, 1],
  [-1, -1],
];
/** The direction of the goal cell. */
export const GOAL = 8;
/** The direction of an unreachable cell. */
export const UNREACHABLE = 255;

/** A flow field with its base64 arrays decoded, kept current by {@link watchFlowField}. */
export class DecodedFlowField {
  readonly id: string;
  readonly region: Region;
  readonly goal: Point;
  seq: number;
  mapVersion: number;
  /** One byte per region cell, row-major. */
  readonly directions: Uint8Array;
  /** One cost per region cell, row-major (`Infinity` when unreachable). */
  readonly costs: Float64Array;

  constructor(field: FlowField) {
    this.id = field.id;
    this.region = field.region;
    this.goal = field.goal;
    this.seq = field.seq;
    this.mapVersion = field.map_version;
    this.directions = new Uint8Array(Buffer.from(field.directions, "base64"));
    const raw = Buffer.from(field.costs, "base64");
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    this.costs = new Float64Array(raw.byteLength / 8);
    for (let i = 0; i < this.costs.length; i++) this.costs[i] = view.getFloat64(i * 8, true);
  }

  private index([x, y]: Point): number {
    const r = this.region;
    if (x < r.x || y < r.y || x >= r.x + r.width || y >= r.y + r.height) return -1;
    return (y - r.y) * r.width + (x - r.x);
  }

  /** The direction at a map cell (`UNREACHABLE` outside the region). */
  direction(p: Point): number {
    const i = this.index(p);
    return i < 0 ? UNREACHABLE : this.directions[i]!;
  }

  /** The cost to the goal from a map cell (`Infinity` outside the region). */
  cost(p: Point): number {
    const i = this.index(p);
    return i < 0 ? Infinity : this.costs[i]!;
  }

  /** The next cell from `p` towards the goal, or undefined at the goal or when unreachable. */
  next(p: Point): Point | undefined {
    const d = this.direction(p);
    const step = STEPS[d];
    return step ? [p[0] + step[0], p[1] + step[1]] : undefined;
  }

  /** Applies a `changed` event's absolute cell values (harmless if already included). */
  apply(ev: FlowFieldEvent): void {
    for (const [x, y, d, c] of ev.cells) {
      const i = this.index([x, y]);
      if (i < 0) continue;
      this.directions[i] = d;
      this.costs[i] = c === null ? Infinity : c;
    }
    this.seq = Math.max(this.seq, ev.seq);
    this.mapVersion = Math.max(this.mapVersion, ev.map_version);
  }
}

/** One step of {@link watchFlowField}: the event and the field after it. */
export interface FlowFieldUpdate {
  event: FlowFieldEvent;
  field: DecodedFlowField;
}

/**
 * Follows a flow field: fetches it (yielded first, as a `current` event), streams from its
 * `seq` (so nothing is lost between the two), applies every `changed` event, and on
 * `resync` fetches the field again. Ends after a final event.
 */
export async function* watchFlowField(
  client: PathdClient,
  id: string,
  options: Omit<StreamOptions, "lastEventId"> = {},
): AsyncGenerator<FlowFieldUpdate> {
  const call = options.signal ? { signal: options.signal } : {};
  let field = new DecodedFlowField(await client.getFlowField(id, call));
  // First the state as fetched, as a `current` event (the server's own first event of a
  // stream opened without Last-Event-ID).
  yield {
    event: { id, seq: field.seq, map_version: field.mapVersion, reason: "current", cells: [] },
    field,
  };
  const stream = client.flowFieldEvents(id, { ...options, lastEventId: field.seq });
  try {
    for await (const event of stream) {
      if (event.reason === "changed") field.apply(event);
      if (event.reason === "resync") field = new DecodedFlowField(await client.getFlowField(id, call));
      yield { event, field };
    }
  } finally {
    stream.close();
  }
}
