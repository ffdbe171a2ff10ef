// The wire types of pathd's contract (openapi.yaml), written by hand so that they read well;
// `contract/openapi-check.ts` holds them against the types openapi-typescript generates from
// openapi.yaml (`npm run contract`), so the two cannot drift apart unnoticed.

/** `[x, y]`: column, row; `[0, 0]` is the top-left cell. */
export type Point = [number, number];

export type Movement = "octile" | "cardinal";

export type Algorithm =
  | "astar"
  | "dijkstra"
  | "weighted_astar"
  | "jps"
  | "jps_plus"
  | "theta"
  | "hpa"
  | "auto"
  | "subgoal";

/** The stable error codes of `{"error": {"code", "message"}}`. */
export type ErrorCode =
  | "invalid_request"
  | "invalid_map"
  | "out_of_bounds"
  | "start_blocked"
  | "goal_blocked"
  | "not_applicable"
  | "unauthorized"
  | "forbidden"
  | "map_not_found"
  | "not_found"
  | "method_not_allowed"
  | "not_acceptable"
  | "too_many_maps"
  | "payload_too_large"
  | "map_too_large"
  | "too_many_queries"
  | "matrix_too_large"
  | "limit_reached"
  | "unsupported_media_type"
  | "internal"
  | "overloaded"
  | "not_ready"
  | "invalid_patch"
  | "patch_out_of_bounds"
  | "patch_too_large"
  | "version_conflict"
  | "subscription_not_found"
  | "too_many_subscriptions"
  | "map_damaged"
  | "store_unavailable"
  | "body_timeout"
  | "too_many_connections"
  | "abstraction_building"
  | "flowfield_not_found"
  | "too_many_flowfields"
  | "replica_behind"
  | "derivation_failed"
  | "too_many_agents"
  | "profile_not_found"
  | "too_many_goals"
  | "no_usable_cell"
  | "plan_not_found"
  | "too_many_plans";

export interface ErrorBody {
  /** `request_id`: the request's id (its `X-Request-Id`), to find its log lines. */
  error: { code: ErrorCode; message: string; request_id?: string };
}

export interface PathRequest {
  start: Point;
  /** Exactly one of `goal`, `goals` and `flee`. */
  goal?: Point;
  /** The cheapest reachable of these (1 to 1024; more is `too_many_goals`). */
  goals?: Point[];
  /** With `goal`: stop at the cheapest cell within this Euclidean distance of it. */
  goal_radius?: number;
  /** With `goal_radius`: that cell must also see `goal` (Theta*'s line of sight). */
  goal_visible?: boolean;
  /** Instead of a goal: get at least `distance` (path cost) away from `from`. */
  flee?: { from: Point; distance: number };
  /** Move a blocked or unreachable start (and goal) to the nearest usable cell (0..64). */
  snap?: number;
  /** The unit-type profile (default the map's `default_profile`). */
  profile?: string;
  /** How the answer writes `path`: pairs (default), flat `[x0, y0, ...]`, or turns. */
  path_format?: "pairs" | "flat" | "turns";
  algorithm?: Algorithm;
  weight?: number;
  max_expansions?: number;
  timeout_ms?: number;
  partial?: boolean;
  debug?: boolean;
  smooth?: boolean;
  trace?: boolean;
  size?: number;
  /** Read-your-writes across replicas: wait until this map version is applied. */
  min_version?: number;
}

export interface PathResult {
  status: "found" | "partial" | "no_path" | "limit_reached";
  /** Points (`path_format` pairs, the default, and turns), or `[x0, y0, x1, y1, ...]` (flat). */
  path: Point[] | number[];
  cost: number;
  path_cost: number;
  expanded: number;
  generated: number;
  algorithm: Exclude<Algorithm, "auto">;
  map_version: number;
  elapsed_us: number;
  limit?: "expansions" | "timeout" | "cancelled";
  expanded_cells?: Point[];
  waypoints?: Point[];
  waypoints_cost?: number;
  /** The search trace (`trace: true`); see `SearchTrace` in openapi.yaml. */
  trace?: SearchTrace;
  /** With `goals`, `goal_radius`, `flee` or `snap`: the start searched from. */
  start?: Point;
  /** The goal as snapped, or the cell reached (`goals`, `goal_radius`, `flee`). */
  goal?: Point;
  /** With `goals`: the index of the goal reached. */
  goal_index?: number;
  /** With `snap`: whether an end moved. */
  snapped?: boolean;
}

/** `GET /v1/maps/{name}/nearest`: the usable cell nearest to a point. */
export interface NearestCell {
  x: number;
  y: number;
  distance: number;
  map_version: number;
}

export interface SearchTraceEvent {
  type: "push" | "decrease" | "reopen" | "expand";
  node: Point;
  parent: Point;
  g: number;
  h: number;
  f: number;
  phase?: "window" | "insert" | "abstract" | "refine" | "corridor";
}

export interface SearchTrace {
  events: SearchTraceEvent[];
  expansions: number;
  truncated: boolean;
  cap: number;
  weight: number;
  runs: number;
  hpa?: Record<string, unknown>;
}

export interface BatchRequest {
  queries: PathRequest[];
  min_version?: number;
}

/** The error of one query of a batch (the others still ran): `status` is `error`. */
export interface BatchError extends ErrorBody {
  status: "error";
}

/** One item of a batch: a result, or the error of that query alone; `status` tells them
 * apart (the contract's discriminator). */
export type BatchItem = PathResult | BatchError;

export interface BatchResponse {
  map_version: number;
  results: BatchItem[];
}

/** Whether a batch item is an error. */
export function isBatchError(item: BatchItem): item is BatchError {
  return item.status === "error";
}

/** A profile's cost per terrain class: an array (entry i is class i), or an object from a
 * class (its number, or one ASCII character such as "W") to its cost. */
export type ProfileCosts = number[] | Record<string, number>;

export interface MapCosts {
  width: number;
  height: number;
  /** Row-major, `width * height` entries; 0 blocked, 1..255 cost. */
  costs: number[];
  /** With profiles, the costs are terrain classes. */
  profiles?: Record<string, ProfileCosts>;
  default_profile?: string;
  movement?: Movement;
}

export interface MapRows {
  width: number;
  height: number;
  /** `height` strings of `width` Moving AI terrain characters. */
  rows: string[];
  /** Profiles beside the Moving AI `ground`. */
  profiles?: Record<string, ProfileCosts>;
  default_profile?: string;
  movement?: Movement;
}

/** Unit types on one map: a terrain class per cell, read through named profiles. */
export interface MapTerrain {
  width: number;
  height: number;
  terrain: number[];
  profiles: Record<string, ProfileCosts>;
  default_profile?: string;
  movement?: Movement;
}

export interface ProfileSummary {
  name: string;
  default: boolean;
  /** The cost of each class 0..255. */
  costs: number[];
  passable_cells?: number;
  /** A non-default profile's own derived structures, once its view was made. */
  hpa?: HpaInfo;
  jps_plus?: JumpInfo;
  subgoal?: SubgoalInfo;
}

/** Where a derived structure is (`failed`: its build panicked, `error` says why; `evicted`:
 * dropped to stay within the server's derived-memory budget, rebuilt on demand). */
export type DerivedStatus = "building" | "ready" | "failed" | "evicted";

export interface HpaInfo {
  status: DerivedStatus;
  error?: string;
  cluster_size: number;
  nodes: number;
  edges: number;
  memory_bytes: number;
  build_ms: number;
}

export interface JumpInfo {
  status: DerivedStatus;
  error?: string;
  made_by: "build" | "update";
  memory_bytes: number;
  took_us: number;
  landmarks?: {
    status: DerivedStatus;
    error?: string;
    made_by: "build" | "carried" | "update";
    count: number;
    memory_bytes: number;
    took_us: number;
  };
}

export interface MapSummary {
  name: string;
  version: number;
  width: number;
  height: number;
  movement: Movement;
  passable_cells: number;
  blocked_cells: number;
  components: number;
  uniform: boolean;
  min_cost: number;
  max_cost: number;
  source: "bundled" | "uploaded";
  hpa?: HpaInfo;
  jps_plus?: JumpInfo;
  subgoal?: SubgoalInfo;
  sized?: { size: number; memory_bytes: number; hpa?: HpaInfo }[];
  subscriptions?: { count: number; memory_bytes: number };
  default_profile?: string;
  profiles?: ProfileSummary[];
  /** Only when recovery at start found the map's patch log cut. */
  recovery?: { lost_versions: [number, number] | number[]; served_as: number };
}

export interface SubgoalInfo {
  status: DerivedStatus;
  error?: string;
  made_by: "build" | "update";
  subgoals: number;
  edges: number;
  /** True when `auto` runs it rather than JPS+ on this map. */
  auto: boolean;
  memory_bytes: number;
  took_us: number;
}

export interface DamagedMap {
  name: string;
  reason: string;
  last_good_version: number | null;
  dropped_versions: number[];
}

export interface MapList {
  maps: MapSummary[];
  damaged: DamagedMap[];
}

export interface MapCells {
  name: string;
  version: number;
  width: number;
  height: number;
  movement: Movement;
  /** base64 of `width * height` row-major cost bytes. */
  costs: string;
}

export interface CellChange {
  x: number;
  y: number;
  cost: number;
}

export interface RectChange {
  x: number;
  y: number;
  width: number;
  height: number;
  cost: number;
}

export interface MapPatch {
  cells?: CellChange[];
  rects?: RectChange[];
  /** `409 version_conflict` unless the map is at this version. */
  if_version?: number;
  /** Profiles added or replaced, or removed (`null`). */
  profiles?: Record<string, ProfileCosts | null>;
  default_profile?: string;
}

export interface PatchResult {
  version: number;
  changed_cells: number;
  affected_subscriptions: number;
}

export type PathStatus = "found" | "no_path" | "limit_reached";

export interface Subscription {
  id: string;
  map: string;
  profile?: string;
  status: PathStatus;
  path: Point[];
  cost: number;
  map_version: number;
  seq: number;
  position: Point;
  goal: Point;
}

export interface SubscriptionCreated extends Subscription {
  /** Needed to move or delete the subscription; shown only in this answer. */
  secret: string;
}

export type SubscriptionReason =
  | "initial"
  | "blocked"
  | "costlier"
  | "cheaper"
  | "unreachable"
  | "restored"
  | "moved"
  | "interrupted"
  | "resync"
  | "deleted"
  | "map_deleted"
  | "map_replaced"
  | "profile_removed"
  | "expired";

export interface SubscriptionEvent {
  id: string;
  seq: number;
  map_version: number;
  status: PathStatus;
  path: Point[];
  cost: number;
  reason: SubscriptionReason;
  touched?: Point[];
  touched_count?: number;
  touched_truncated?: boolean;
}

export interface Region {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface FlowFieldRequest {
  goal: Point;
  region?: Region;
  max_cost?: number;
  size?: number;
  profile?: string;
}

export interface FlowField {
  id: string;
  /** Only in the create answer. */
  secret?: string;
  map: string;
  profile?: string;
  map_version: number;
  seq: number;
  goal: Point;
  region: Region;
  size: number;
  max_cost: number | null;
  reachable: number;
  /** base64, one byte per region cell: 0-7 a step (N, E, S, W, NE, SE, SW, NW), 8 the goal, 255 unreachable. */
  directions: string;
  /** base64, one little-endian f64 per region cell (`+inf` when unreachable). */
  costs: string;
}

export type FlowFieldReason =
  | "current"
  | "changed"
  | "resync"
  | "deleted"
  | "map_deleted"
  | "map_replaced"
  | "profile_removed"
  | "expired";

export interface FlowFieldEvent {
  id: string;
  seq: number;
  map_version: number;
  reason: FlowFieldReason;
  /** `[x, y, direction, cost]`, cost `null` when unreachable. */
  cells: [number, number, number, number | null][];
}

export interface Health {
  status: "ok" | "ready";
  maps: number;
  damaged_maps: string[];
  /** Maps served after recovery found their patch log cut (see `MapSummary.recovery`). */
  cut_logs: string[];
  store?: Record<string, unknown>;
  /** With replicas (`--store nats://...`): this replica, its URL and the live members. */
  cluster?: ClusterHealth;
}

/** `POST /v1/maps/{name}/matrix`: at most 256 sources and 256 targets. */
export interface MatrixRequest {
  sources: Point[];
  targets: Point[];
  /** The unit-type profile (default the map's default). */
  profile?: string;
  /** Agent side in cells (1..8, default 1). */
  size?: number;
  /** Each row's search time budget (capped by the server's maximum). */
  timeout_ms?: number;
  min_version?: number;
}

export interface MatrixResponse {
  /** A row per source, an entry per target: the optimal cost, `null` when unreachable or blocked. */
  costs: (number | null)[][];
  map_version: number;
}

/** `POST /v1/maps/{name}/los`. */
export interface LosRequest {
  from: Point;
  to: Point;
  profile?: string;
  min_version?: number;
}

export interface LosResponse {
  visible: boolean;
  /** The first blocked cell along the segment; `null` when visible. */
  blocked_at: Point | null;
  map_version: number;
}

/** The query of `GET /v1/maps/{name}/random`. */
export interface RandomRequest {
  x: number;
  y: number;
  /** Largest path cost from `(x, y)`. */
  radius: number;
  /** Same seed, map version and query: same cell; random when absent. */
  seed?: number;
  size?: number;
  min_version?: number;
  timeout_ms?: number;
}

export interface RandomResponse {
  x: number;
  y: number;
  distance: number;
  /** Cells within `radius`, each as likely. */
  candidates: number;
  seed: number;
  map_version: number;
}

/** `Health.cluster`: the replicas sharing subscriptions. */
export interface ClusterHealth {
  replica: string;
  advertise_url: string;
  members: { id: string; url: string }[];
  owned_subscriptions: number;
}

/**
 * With replicas, subscription answers name the replica that served them (`X-Pathd-Replica`)
 * and, when forwarded to the owner, the one that forwarded (`X-Pathd-Forwarded-By`). A
 * `resync` event also follows a takeover after the owner died (`seq` continues).
 */
export const REPLICA_HEADER = "x-pathd-replica";

/** One agent of a multi-agent plan. */
export interface PlanAgent {
  start: Point;
  goal: Point;
}

/** `POST /v1/maps/{name}/plans`: many agents at once, without collisions (MAPF). */
export interface PlanRequest {
  agents: PlanAgent[];
  min_version?: number;
  /** 1..30000 (default 1000). */
  time_limit_ms?: number;
  objective?: "sum_of_costs" | "makespan";
  first_solution?: boolean;
  seed?: number;
  /** Only 1. */
  size?: number;
  /** Keep the plan live (see {@link LivePlanCreated}); {@link PathdClient.createLivePlan} sets it. */
  subscribe?: boolean;
}

export type PlanStatus = "solved" | "partial" | "failed";

/** A multi-agent plan. */
export interface PlanResult {
  status: PlanStatus;
  /** Per agent, its cell at every time step; all one length. */
  paths: Point[][];
  sum_of_costs: number;
  makespan: number;
  lower_bound: number;
  objective: "sum_of_costs" | "makespan";
  optimal: boolean;
  map_version: number;
  elapsed_ms: number;
  first_solution_ms: number | null;
  nodes: number;
}

/** The create answer of a live plan: keep `secret` to report progress and to delete. */
export interface LivePlanCreated extends PlanResult {
  id: string;
  secret: string;
  seq: number;
  start_step: number;
  time_step: number;
}

export type LivePlanReason =
  | "initial"
  | "blocked"
  | "delayed"
  | "restored"
  | "resync"
  | "deleted"
  | "map_deleted"
  | "map_replaced"
  | "expired";

/** One event of a live plan: the whole plan after it. */
export interface LivePlanEvent {
  id: string;
  seq: number;
  map_version: number;
  reason: LivePlanReason;
  status: PlanStatus;
  /** `paths[i][k]` is agent `i`'s cell at time step `start_step + k`. */
  start_step: number;
  paths: Point[][];
  sum_of_costs: number;
  makespan: number;
  lower_bound: number;
  /** Agents whose paths this event changed. */
  replanned: number[];
  /** Only `replanned` were re-planned; everybody else kept their path. */
  repaired: boolean;
  elapsed_ms: number;
}

/** A live plan as it stands, with the progress reported. */
export interface LivePlan extends LivePlanEvent {
  map: string;
  time_step: number;
  positions: Point[];
}

/** `PATCH /v1/plans/{id}`: where the agents are (at least one of the two). */
export interface PlanProgress {
  time_step?: number;
  positions?: Point[];
}
