// Types of pathd-wasm (pathd.js).

export type Point = [number, number];
export type Algorithm = 'astar' | 'dijkstra' | 'weighted_astar' | 'jps' | 'jps_plus' | 'theta' | 'auto';
export type Heuristic = 'octile' | 'manhattan' | 'euclidean' | 'chebyshev' | 'zero';
export type TieBreak = 'none' | 'high_g' | 'cross_product' | 'epsilon';
export type Status = 'found' | 'partial' | 'no_path' | 'limit_reached';

export interface FindOptions {
  /** Default `astar`. */
  algorithm?: Algorithm;
  /** `weighted_astar`'s w, 1..100 (default 1.5). */
  weight?: number;
  /** A lesson's heuristic (default: the map's, octile or Manhattan). */
  heuristic?: Heuristic;
  /** Default `high_g`. */
  tieBreak?: TieBreak;
  maxExpansions?: number;
  /** String-pull the path into any-angle `waypoints`. */
  smooth?: boolean;
  /** On no path or a limit, the path to the expanded cell closest to the goal. */
  partial?: boolean;
  /** Agent side in cells (1..8), anchored at its top-left cell. */
  size?: number;
  /** Record the search's events. */
  trace?: boolean;
  /** At most this many expansions recorded (default 5,000,000). */
  traceCap?: number;
}

export class Trace {
  count: number;
  expansions: number;
  truncated: boolean;
  weight: number;
  width: number;
  u32: Uint32Array;
  f64: Float64Array;
  node(i: number): number;
  parent(i: number): number;
  /** 0 expand, 1 push, 2 decrease, 3 reopen. */
  kind(i: number): number;
  g(i: number): number;
  h(i: number): number;
  f(i: number): number;
  event(i: number): { type: 'expand' | 'push' | 'decrease' | 'reopen'; node: Point; parent: Point; g: number; h: number; f: number };
}

export interface PathResult {
  status: Status;
  algorithm: Algorithm;
  /** Cost of the answer to follow (the waypoints' for any-angle answers). */
  cost: number;
  /** Cost of the cell path. */
  path_cost: number;
  path: Point[];
  expanded: number;
  generated: number;
  /** False when a lesson option gave up optimality (Manhattan on an octile map, epsilon). */
  optimal: boolean;
  limit?: 'expansions';
  waypoints?: Point[];
  waypoints_cost?: number;
  trace?: Trace;
  elapsed_ms: number;
}

export class Grid {
  constructor(width: number, height: number, costs: ArrayLike<number>, options?: { movement?: 'octile' | 'cardinal' });
  static fromMap(text: string): Grid;
  readonly width: number;
  readonly height: number;
  readonly movement: 'octile' | 'cardinal';
  costs(): Uint8Array;
  patch(cells: Array<[number, number, number] | { x: number; y: number; cost: number }>): number;
  findPath(start: Point, goal: Point, options?: FindOptions): PathResult;
  flowField(goal: Point, size?: number): Uint8Array;
  free(): void;
}

export function init(source?: BufferSource | string | URL | Response): Promise<unknown>;
export function initSync(bytes: BufferSource): unknown;
export const ready: boolean;
export const ALGORITHMS: string[];
export const HEURISTICS: Heuristic[];
export const TIE_BREAKS: TieBreak[];
export const EVENT_KINDS: string[];
export const DIRECTIONS: Point[];
