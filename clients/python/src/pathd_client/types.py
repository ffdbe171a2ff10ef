"""The wire types of pathd's contract (openapi.yaml) as TypedDicts: answers are plain dicts
with these keys, requests may be built as plain dicts too."""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Literal, Optional, Tuple, TypedDict, Union

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover
    from typing_extensions import NotRequired

Point = Tuple[int, int]
"""``[x, y]``: column, row; ``[0, 0]`` is the top-left cell (lists on the wire)."""

Movement = Literal["octile", "cardinal"]
Algorithm = Literal[
    "astar", "dijkstra", "weighted_astar", "jps", "jps_plus", "theta", "hpa", "auto", "subgoal"
]

ErrorCode = Literal[
    "invalid_request", "invalid_map", "out_of_bounds", "start_blocked", "goal_blocked",
    "not_applicable", "unauthorized", "forbidden", "map_not_found", "not_found",
    "method_not_allowed", "not_acceptable", "too_many_maps", "payload_too_large",
    "map_too_large", "too_many_queries", "matrix_too_large", "limit_reached",
    "unsupported_media_type", "internal", "overloaded",
    "not_ready", "invalid_patch", "patch_out_of_bounds", "patch_too_large",
    "version_conflict", "subscription_not_found", "too_many_subscriptions", "map_damaged",
    "store_unavailable", "body_timeout", "too_many_connections", "abstraction_building",
    "flowfield_not_found", "too_many_flowfields", "replica_behind", "derivation_failed",
    "too_many_agents", "profile_not_found", "too_many_goals", "no_usable_cell",
    "plan_not_found", "too_many_plans",
]


# `from` is a Python keyword, hence the functional form.
Flee = TypedDict("Flee", {"from": Point, "distance": float})


class PathRequest(TypedDict):
    start: Point
    goal: NotRequired[Point]  # exactly one of goal, goals and flee
    goals: NotRequired[List[Point]]
    goal_radius: NotRequired[float]
    goal_visible: NotRequired[bool]
    flee: NotRequired[Flee]
    snap: NotRequired[int]
    profile: NotRequired[str]
    path_format: NotRequired[Literal["pairs", "flat", "turns"]]
    algorithm: NotRequired[Algorithm]
    weight: NotRequired[float]
    max_expansions: NotRequired[int]
    timeout_ms: NotRequired[int]
    partial: NotRequired[bool]
    debug: NotRequired[bool]
    smooth: NotRequired[bool]
    trace: NotRequired[bool]
    size: NotRequired[int]
    min_version: NotRequired[int]


class PathResult(TypedDict):
    status: Literal["found", "partial", "no_path", "limit_reached"]
    path: List[List[int]]
    cost: float
    path_cost: float
    expanded: int
    generated: int
    algorithm: str
    map_version: int
    elapsed_us: int
    limit: NotRequired[Literal["expansions", "timeout", "cancelled"]]
    expanded_cells: NotRequired[List[List[int]]]
    waypoints: NotRequired[List[List[int]]]
    waypoints_cost: NotRequired[float]
    trace: NotRequired[Dict[str, Any]]
    start: NotRequired[List[int]]
    goal: NotRequired[List[int]]
    goal_index: NotRequired[int]
    snapped: NotRequired[bool]


class NearestCell(TypedDict):
    x: int
    y: int
    distance: float
    map_version: int


class ErrorDetail(TypedDict):
    code: ErrorCode
    message: str
    request_id: NotRequired[str]


class ErrorBody(TypedDict):
    error: ErrorDetail


class BatchError(TypedDict):
    """The error of one query of a batch (the others still ran)."""

    status: Literal["error"]
    error: ErrorDetail


BatchItem = Union[PathResult, BatchError]


class BatchResponse(TypedDict):
    map_version: int
    results: List[BatchItem]


class MapSummary(TypedDict):
    name: str
    version: int
    width: int
    height: int
    movement: Movement
    passable_cells: int
    blocked_cells: int
    components: int
    uniform: bool
    min_cost: int
    max_cost: int
    source: Literal["bundled", "uploaded"]
    hpa: NotRequired[Dict[str, Any]]
    jps_plus: NotRequired[Dict[str, Any]]
    sized: NotRequired[List[Dict[str, Any]]]
    subscriptions: NotRequired[Dict[str, Any]]
    default_profile: NotRequired[str]
    profiles: NotRequired[List[Dict[str, Any]]]


class MapList(TypedDict):
    maps: List[MapSummary]
    damaged: List[Dict[str, Any]]


class MapCells(TypedDict):
    name: str
    version: int
    width: int
    height: int
    movement: Movement
    costs: str  # base64


class CellChange(TypedDict):
    x: int
    y: int
    cost: int


class RectChange(TypedDict):
    x: int
    y: int
    width: int
    height: int
    cost: int


class MapPatch(TypedDict, total=False):
    cells: List[CellChange]
    rects: List[RectChange]
    if_version: int
    profiles: Dict[str, Optional[Any]]
    default_profile: str


class PatchResult(TypedDict):
    version: int
    changed_cells: int
    affected_subscriptions: int


class Subscription(TypedDict):
    id: str
    map: str
    profile: NotRequired[str]
    status: Literal["found", "no_path", "limit_reached"]
    path: List[List[int]]
    cost: float
    map_version: int
    seq: int
    position: List[int]
    goal: List[int]


class SubscriptionCreated(Subscription):
    secret: str


class SubscriptionEvent(TypedDict):
    id: str
    seq: int
    map_version: int
    status: Literal["found", "no_path", "limit_reached"]
    path: List[List[int]]
    cost: float
    reason: str
    touched: NotRequired[List[List[int]]]
    touched_count: NotRequired[int]
    touched_truncated: NotRequired[bool]


class Region(TypedDict):
    x: int
    y: int
    width: int
    height: int


class FlowFieldRequest(TypedDict):
    goal: Point
    region: NotRequired[Region]
    max_cost: NotRequired[float]
    size: NotRequired[int]
    profile: NotRequired[str]


class FlowField(TypedDict):
    id: str
    secret: NotRequired[str]
    map: str
    profile: NotRequired[str]
    map_version: int
    seq: int
    goal: List[int]
    region: Region
    size: int
    max_cost: Optional[float]
    reachable: int
    directions: str  # base64, one byte per region cell
    costs: str  # base64, one little-endian f64 per region cell


class FlowFieldEvent(TypedDict):
    id: str
    seq: int
    map_version: int
    reason: str
    cells: List[List[Any]]  # [x, y, direction, cost or None]


class Health(TypedDict):
    status: Literal["ok", "ready"]
    maps: int
    damaged_maps: List[str]
    store: NotRequired[Dict[str, Any]]
    cluster: NotRequired["ClusterHealth"]


class ClusterMember(TypedDict):
    id: str
    url: str


class ClusterHealth(TypedDict):
    """`Health.cluster` with replicas: subscription answers name the replica that served them
    (`X-Pathd-Replica`); a `resync` event also follows a takeover (`seq` continues)."""

    replica: str
    advertise_url: str
    members: List[ClusterMember]
    owned_subscriptions: int


REPLICA_HEADER = "X-Pathd-Replica"


class MatrixRequest(TypedDict):
    """``POST /v1/maps/{name}/matrix``: at most 256 sources and 256 targets."""
    sources: List[Point]
    targets: List[Point]
    size: NotRequired[int]
    timeout_ms: NotRequired[int]
    min_version: NotRequired[int]


class MatrixResponse(TypedDict):
    """A row per source, an entry per target: the optimal cost, ``None`` when unreachable
    or an end is blocked."""
    costs: List[List[Optional[float]]]
    map_version: int


class LosResponse(TypedDict):
    visible: bool
    blocked_at: Optional[List[int]]
    map_version: int


class RandomResponse(TypedDict):
    x: int
    y: int
    distance: float
    candidates: int
    seed: int
    map_version: int


class PlanAgent(TypedDict):
    start: Point
    goal: Point


class PlanRequest(TypedDict):
    """``POST /v1/maps/{name}/plans``: many agents at once, without collisions (MAPF)."""

    agents: List[PlanAgent]
    min_version: NotRequired[int]
    time_limit_ms: NotRequired[int]
    objective: NotRequired[Literal["sum_of_costs", "makespan"]]
    first_solution: NotRequired[bool]
    seed: NotRequired[int]
    size: NotRequired[int]
    subscribe: NotRequired[bool]


class PlanResult(TypedDict):
    status: Literal["solved", "partial", "failed"]
    paths: List[List[Point]]
    sum_of_costs: int
    makespan: int
    lower_bound: int
    objective: Literal["sum_of_costs", "makespan"]
    optimal: bool
    map_version: int
    elapsed_ms: float
    first_solution_ms: Optional[float]
    nodes: int


class LivePlanCreated(PlanResult):
    """The create answer of a live plan: keep ``secret`` to report progress and delete."""

    id: str
    secret: str
    seq: int
    start_step: int
    time_step: int


class LivePlanEvent(TypedDict):
    """One event of a live plan: the whole plan after it (``paths[i][k]`` is agent ``i``'s
    cell at time step ``start_step + k``)."""

    id: str
    seq: int
    map_version: int
    reason: str  # initial, blocked, delayed, restored, resync, deleted, map_deleted, ...
    status: Literal["solved", "partial", "failed"]
    start_step: int
    paths: List[List[Point]]
    sum_of_costs: int
    makespan: int
    lower_bound: int
    replanned: List[int]
    repaired: bool
    elapsed_ms: float


class LivePlan(LivePlanEvent):
    """A live plan as it stands, with the progress reported."""

    map: str
    time_step: int
    positions: List[Point]


class PlanProgress(TypedDict, total=False):
    """``PATCH /v1/plans/{id}``: where the agents are (at least one of the two)."""

    time_step: int
    positions: List[Point]
