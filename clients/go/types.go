package pathd

import "encoding/json"

// The wire types of openapi.yaml. Optional request fields are pointers or omitempty, so a
// zero value is never sent by accident; answers decode into plain fields.

// Point is [x, y]: column, row; [0, 0] is the top-left cell.
type Point [2]int

// Movement is the map's movement rule.
type Movement string

const (
	Octile   Movement = "octile"
	Cardinal Movement = "cardinal"
)

// Algorithm names a search algorithm.
type Algorithm string

const (
	AStar         Algorithm = "astar"
	Dijkstra      Algorithm = "dijkstra"
	WeightedAStar Algorithm = "weighted_astar"
	JPS           Algorithm = "jps"
	JPSPlus       Algorithm = "jps_plus"
	Theta         Algorithm = "theta"
	HPA           Algorithm = "hpa"
	Auto          Algorithm = "auto"
	Subgoal       Algorithm = "subgoal"
)

// PathRequest is a path query (findPath, a batch item, createSubscription).
type PathRequest struct {
	Start         Point     `json:"start"`
	Goal          Point     `json:"goal"`
	Algorithm     Algorithm `json:"algorithm,omitempty"`
	Weight        *float64  `json:"weight,omitempty"`
	MaxExpansions *int64    `json:"max_expansions,omitempty"`
	TimeoutMs     *int64    `json:"timeout_ms,omitempty"`
	Partial       bool      `json:"partial,omitempty"`
	Debug         bool      `json:"debug,omitempty"`
	Smooth        bool      `json:"smooth,omitempty"`
	Trace         bool      `json:"trace,omitempty"`
	Size          int       `json:"size,omitempty"`
	// Profile is the unit-type profile (default the map's default profile).
	Profile string `json:"profile,omitempty"`
	// PathFormat is how the answer writes Path: "pairs" (default) or "turns" (the Go
	// client reads paths as points, so not "flat").
	PathFormat string `json:"path_format,omitempty"`
	// MinVersion: wait until this replica has applied this map version.
	MinVersion *uint64 `json:"min_version,omitempty"`
	// Goals: the cheapest reachable of these instead of Goal (1 to 1024; Goal is then
	// not sent).
	Goals []Point `json:"goals,omitempty"`
	// GoalRadius: with Goal, stop at the cheapest cell within this Euclidean distance.
	GoalRadius *float64 `json:"goal_radius,omitempty"`
	// GoalVisible: with GoalRadius, that cell must also see Goal.
	GoalVisible bool `json:"goal_visible,omitempty"`
	// Flee: instead of a goal, get at least Distance (path cost) away from From (Goal is
	// then not sent).
	Flee *Flee `json:"flee,omitempty"`
	// Snap: move a blocked or unreachable start (and goal) to the nearest usable cell at
	// most this many cells away (0..64).
	Snap *int `json:"snap,omitempty"`
}

// Flee is a path query's threat to get away from.
type Flee struct {
	From     Point   `json:"from"`
	Distance float64 `json:"distance"`
}

// MarshalJSON leaves Goal out when Goals or Flee replaces it (the server wants exactly one).
func (q PathRequest) MarshalJSON() ([]byte, error) {
	type plain PathRequest
	if q.Goals == nil && q.Flee == nil {
		return json.Marshal(plain(q))
	}
	// The outer Goal (shallower) hides the embedded one, and is omitted when nil.
	return json.Marshal(struct {
		plain
		Goal *Point `json:"goal,omitempty"`
	}{plain: plain(q)})
}

// NearestCell is the usable cell nearest to a point (GET /v1/maps/{name}/nearest).
type NearestCell struct {
	X          int     `json:"x"`
	Y          int     `json:"y"`
	Distance   float64 `json:"distance"`
	MapVersion uint64  `json:"map_version"`
}

// PathResult is the outcome of a query; "no path" is a status, not an error.
type PathResult struct {
	Status        string         `json:"status"`
	Path          []Point        `json:"path"`
	Cost          float64        `json:"cost"`
	PathCost      float64        `json:"path_cost"`
	Expanded      uint64         `json:"expanded"`
	Generated     uint64         `json:"generated"`
	Algorithm     Algorithm      `json:"algorithm"`
	MapVersion    uint64         `json:"map_version"`
	ElapsedUs     uint64         `json:"elapsed_us"`
	Limit         string         `json:"limit,omitempty"`
	ExpandedCells []Point        `json:"expanded_cells,omitempty"`
	Waypoints     []Point        `json:"waypoints,omitempty"`
	WaypointsCost *float64       `json:"waypoints_cost,omitempty"`
	Trace         map[string]any `json:"trace,omitempty"`
	// Start: with Goals, GoalRadius, Flee or Snap, the start searched from.
	Start *Point `json:"start,omitempty"`
	// Goal: the goal as snapped, or the cell reached (Goals, GoalRadius, Flee).
	Goal *Point `json:"goal,omitempty"`
	// GoalIndex: with Goals, the index of the goal reached.
	GoalIndex *int `json:"goal_index,omitempty"`
	// Snapped: with Snap, whether an end moved.
	Snapped *bool `json:"snapped,omitempty"`
}

// BatchRequest is many queries on one snapshot.
type BatchRequest struct {
	Queries    []PathRequest `json:"queries"`
	MinVersion *uint64       `json:"min_version,omitempty"`
}

// BatchItem is one answer of a batch: a result, or (Err non-nil) that query's error.
type BatchItem struct {
	*PathResult
	Err *Error
}

// BatchResponse answers a batch, in order.
type BatchResponse struct {
	MapVersion uint64      `json:"map_version"`
	Results    []BatchItem `json:"results"`
}

// MapCosts is a map as JSON costs (row-major; 0 blocked, 1..255 cost).
type MapCosts struct {
	Width    int      `json:"width"`
	Height   int      `json:"height"`
	Costs    []int    `json:"costs"`
	Movement Movement `json:"movement,omitempty"`
}

// MapRows is a map as rows of Moving AI terrain characters.
type MapRows struct {
	Width    int      `json:"width"`
	Height   int      `json:"height"`
	Rows     []string `json:"rows"`
	Movement Movement `json:"movement,omitempty"`
	// Profiles beside the Moving AI "ground" (each character its own class).
	Profiles       map[string]ProfileCosts `json:"profiles,omitempty"`
	DefaultProfile string                  `json:"default_profile,omitempty"`
}

// ProfileCosts is a profile's cost per terrain class, keyed by class number ("87") or
// one ASCII character ("W").
type ProfileCosts map[string]int

// MapTerrain is unit types on one map: a terrain class per cell, read through profiles.
type MapTerrain struct {
	Width          int                     `json:"width"`
	Height         int                     `json:"height"`
	Terrain        []int                   `json:"terrain"`
	Profiles       map[string]ProfileCosts `json:"profiles"`
	DefaultProfile string                  `json:"default_profile,omitempty"`
	Movement       Movement                `json:"movement,omitempty"`
}

// ProfileSummary is one profile of a map summary.
type ProfileSummary struct {
	Name          string  `json:"name"`
	Default       bool    `json:"default"`
	Costs         []int   `json:"costs"`
	PassableCells *uint64 `json:"passable_cells,omitempty"`
}

// MapSummary describes a map version.
type MapSummary struct {
	Name          string         `json:"name"`
	Version       uint64         `json:"version"`
	Width         int            `json:"width"`
	Height        int            `json:"height"`
	Movement      Movement       `json:"movement"`
	PassableCells uint64         `json:"passable_cells"`
	BlockedCells  uint64         `json:"blocked_cells"`
	Components    uint64         `json:"components"`
	Uniform       bool           `json:"uniform"`
	MinCost       int            `json:"min_cost"`
	MaxCost       int            `json:"max_cost"`
	Source        string         `json:"source"`
	HPA           map[string]any `json:"hpa,omitempty"`
	JPSPlus       map[string]any `json:"jps_plus,omitempty"`
	Sized         []any          `json:"sized,omitempty"`
	// DefaultProfile and Profiles: the unit-type profiles (a plain map: "default").
	DefaultProfile string           `json:"default_profile,omitempty"`
	Profiles       []ProfileSummary `json:"profiles,omitempty"`
	Subscriptions  map[string]any   `json:"subscriptions,omitempty"`
}

// DamagedMap is a map whose durable data is damaged.
type DamagedMap struct {
	Name            string   `json:"name"`
	Reason          string   `json:"reason"`
	LastGoodVersion *uint64  `json:"last_good_version"`
	DroppedVersions []uint64 `json:"dropped_versions"`
}

// MapList is every map's summary, sorted by name.
type MapList struct {
	Maps    []MapSummary `json:"maps"`
	Damaged []DamagedMap `json:"damaged"`
}

// MapCells is a map's costs; Costs is width*height row-major bytes (base64 on the wire).
type MapCells struct {
	Name     string   `json:"name"`
	Version  uint64   `json:"version"`
	Width    int      `json:"width"`
	Height   int      `json:"height"`
	Movement Movement `json:"movement"`
	Costs    []byte   `json:"costs"`
}

// CellChange sets one cell's cost (0 blocks it).
type CellChange struct {
	X    uint32 `json:"x"`
	Y    uint32 `json:"y"`
	Cost uint32 `json:"cost"`
}

// RectChange sets a rectangle's cost.
type RectChange struct {
	X      uint32 `json:"x"`
	Y      uint32 `json:"y"`
	Width  uint32 `json:"width"`
	Height uint32 `json:"height"`
	Cost   uint32 `json:"cost"`
}

// MapPatch changes cells atomically; IfVersion makes it conditional (409 version_conflict).
type MapPatch struct {
	Cells     []CellChange `json:"cells,omitempty"`
	Rects     []RectChange `json:"rects,omitempty"`
	IfVersion *uint64      `json:"if_version,omitempty"`
	// Profiles added or replaced; a nil value removes one.
	Profiles       map[string]*ProfileCosts `json:"profiles,omitempty"`
	DefaultProfile string                   `json:"default_profile,omitempty"`
}

// PatchResult answers a patch.
type PatchResult struct {
	Version               uint64 `json:"version"`
	ChangedCells          uint64 `json:"changed_cells"`
	AffectedSubscriptions uint64 `json:"affected_subscriptions"`
}

// Subscription is a subscription's state.
type Subscription struct {
	ID         string  `json:"id"`
	Map        string  `json:"map"`
	Profile    string  `json:"profile,omitempty"`
	Status     string  `json:"status"`
	Path       []Point `json:"path"`
	Cost       float64 `json:"cost"`
	MapVersion uint64  `json:"map_version"`
	Seq        uint64  `json:"seq"`
	Position   Point   `json:"position"`
	Goal       Point   `json:"goal"`
}

// SubscriptionCreated is the create answer: the state and the secret (shown only here).
type SubscriptionCreated struct {
	Subscription
	Secret string `json:"secret"`
}

// SubscriptionEvent is one event of a subscription's stream. Reason "resync" carries the
// full state (events before it were not sent); final reasons end the stream.
type SubscriptionEvent struct {
	ID               string  `json:"id"`
	Seq              uint64  `json:"seq"`
	MapVersion       uint64  `json:"map_version"`
	Status           string  `json:"status"`
	Path             []Point `json:"path"`
	Cost             float64 `json:"cost"`
	Reason           string  `json:"reason"`
	Touched          []Point `json:"touched,omitempty"`
	TouchedCount     *uint64 `json:"touched_count,omitempty"`
	TouchedTruncated *bool   `json:"touched_truncated,omitempty"`
}

// Region is a rectangle of cells.
type Region struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// FlowFieldRequest creates a flow field towards Goal.
type FlowFieldRequest struct {
	Goal    Point    `json:"goal"`
	Region  *Region  `json:"region,omitempty"`
	MaxCost *float64 `json:"max_cost,omitempty"`
	Size    int      `json:"size,omitempty"`
	Profile string   `json:"profile,omitempty"`
}

// FlowField is a field as sent: Directions one byte per region cell, Costs one
// little-endian f64 per cell (base64 on the wire; see Decode).
type FlowField struct {
	ID         string   `json:"id"`
	Secret     string   `json:"secret,omitempty"`
	Map        string   `json:"map"`
	Profile    string   `json:"profile,omitempty"`
	MapVersion uint64   `json:"map_version"`
	Seq        uint64   `json:"seq"`
	Goal       Point    `json:"goal"`
	Region     Region   `json:"region"`
	Size       int      `json:"size"`
	MaxCost    *float64 `json:"max_cost"`
	Reachable  uint64   `json:"reachable"`
	Directions []byte   `json:"directions"`
	Costs      []byte   `json:"costs"`
}

// FlowFieldCell is one changed cell: [x, y, direction, cost] (cost nil when unreachable).
type FlowFieldCell struct {
	X, Y      int
	Direction uint8
	Cost      *float64
}

// FlowFieldEvent is one event of a flow field's stream.
type FlowFieldEvent struct {
	ID         string          `json:"id"`
	Seq        uint64          `json:"seq"`
	MapVersion uint64          `json:"map_version"`
	Reason     string          `json:"reason"`
	Cells      []FlowFieldCell `json:"cells"`
}

// Health is the answer of /healthz and /readyz.
type Health struct {
	Status      string         `json:"status"`
	Maps        int            `json:"maps"`
	DamagedMaps []string       `json:"damaged_maps"`
	Store       map[string]any `json:"store,omitempty"`
	// Cluster is set with replicas (--store nats://...).
	Cluster *ClusterHealth `json:"cluster,omitempty"`
}

// MatrixRequest is POST /v1/maps/{name}/matrix: at most 256 sources and 256 targets.
type MatrixRequest struct {
	Sources []Point `json:"sources"`
	Targets []Point `json:"targets"`
	// Size is the agent side in cells (1..8; 0 sends none: 1).
	Size      int    `json:"size,omitempty"`
	TimeoutMs *int64 `json:"timeout_ms,omitempty"`
	// MinVersion: wait until this replica has applied this map version.
	MinVersion *uint64 `json:"min_version,omitempty"`
}

// MatrixResponse holds a row per source, an entry per target: the optimal cost, nil when
// unreachable or an end is blocked.
type MatrixResponse struct {
	Costs      [][]*float64 `json:"costs"`
	MapVersion uint64       `json:"map_version"`
}

// LosRequest is POST /v1/maps/{name}/los.
type LosRequest struct {
	From       Point   `json:"from"`
	To         Point   `json:"to"`
	MinVersion *uint64 `json:"min_version,omitempty"`
}

// LosResponse says whether To's centre is visible from From's, and the first blocked cell
// along the segment (nil when visible).
type LosResponse struct {
	Visible    bool   `json:"visible"`
	BlockedAt  *Point `json:"blocked_at"`
	MapVersion uint64 `json:"map_version"`
}

// RandomRequest is the query of GET /v1/maps/{name}/random.
type RandomRequest struct {
	X, Y int
	// Radius is the largest path cost from (X, Y).
	Radius float64
	// Seed: the same seed, map version and query draw the same cell; nil draws a random one.
	Seed       *uint64
	Size       int
	MinVersion *uint64
	TimeoutMs  *int64
}

// RandomResponse is a cell drawn uniformly among the Candidates within the radius.
type RandomResponse struct {
	X          int     `json:"x"`
	Y          int     `json:"y"`
	Distance   float64 `json:"distance"`
	Candidates int     `json:"candidates"`
	Seed       uint64  `json:"seed"`
	MapVersion uint64  `json:"map_version"`
}

// ClusterHealth is Health.Cluster: this replica, its URL and the live members. With
// replicas, subscription answers name the replica that served them (ReplicaHeader), and a
// "resync" event also follows a takeover after the owner died (seq continues).
type ClusterHealth struct {
	Replica            string          `json:"replica"`
	AdvertiseURL       string          `json:"advertise_url"`
	Members            []ClusterMember `json:"members"`
	OwnedSubscriptions int             `json:"owned_subscriptions"`
}

// ClusterMember is one live replica.
type ClusterMember struct {
	ID  string `json:"id"`
	URL string `json:"url"`
}

// ReplicaHeader names the replica that served a subscription request.
const ReplicaHeader = "X-Pathd-Replica"

// PlanAgent is one agent of a multi-agent plan.
type PlanAgent struct {
	Start Point `json:"start"`
	Goal  Point `json:"goal"`
}

// PlanRequest is the body of POST /v1/maps/{name}/plans (MAPF).
type PlanRequest struct {
	Agents        []PlanAgent `json:"agents"`
	MinVersion    *uint64     `json:"min_version,omitempty"`
	TimeLimitMs   *uint64     `json:"time_limit_ms,omitempty"`
	Objective     string      `json:"objective,omitempty"`
	FirstSolution bool        `json:"first_solution,omitempty"`
	Seed          *uint64     `json:"seed,omitempty"`
	Subscribe     bool        `json:"subscribe,omitempty"`
}

// PlanResult is a multi-agent plan.
type PlanResult struct {
	Status          string    `json:"status"`
	Paths           [][]Point `json:"paths"`
	SumOfCosts      uint64    `json:"sum_of_costs"`
	Makespan        uint64    `json:"makespan"`
	LowerBound      uint64    `json:"lower_bound"`
	Objective       string    `json:"objective"`
	Optimal         bool      `json:"optimal"`
	MapVersion      uint64    `json:"map_version"`
	ElapsedMs       float64   `json:"elapsed_ms"`
	FirstSolutionMs *float64  `json:"first_solution_ms"`
	Nodes           uint64    `json:"nodes"`
}

// LivePlanCreated is the create answer of a live plan; keep Secret.
type LivePlanCreated struct {
	PlanResult
	ID        string `json:"id"`
	Secret    string `json:"secret"`
	Seq       uint64 `json:"seq"`
	StartStep uint64 `json:"start_step"`
	TimeStep  uint64 `json:"time_step"`
}

// LivePlanEvent is one event of a live plan: the whole plan after it (Paths[i][k] is agent
// i's cell at time step StartStep + k).
type LivePlanEvent struct {
	ID         string    `json:"id"`
	Seq        uint64    `json:"seq"`
	MapVersion uint64    `json:"map_version"`
	Reason     string    `json:"reason"`
	Status     string    `json:"status"`
	StartStep  uint64    `json:"start_step"`
	Paths      [][]Point `json:"paths"`
	SumOfCosts uint64    `json:"sum_of_costs"`
	Makespan   uint64    `json:"makespan"`
	LowerBound uint64    `json:"lower_bound"`
	Replanned  []int     `json:"replanned"`
	Repaired   bool      `json:"repaired"`
	ElapsedMs  float64   `json:"elapsed_ms"`
}

// LivePlan is a live plan as it stands, with the progress reported.
type LivePlan struct {
	LivePlanEvent
	Map       string  `json:"map"`
	TimeStep  uint64  `json:"time_step"`
	Positions []Point `json:"positions"`
}

// PlanProgress is the body of PATCH /v1/plans/{id}: at least one of the two.
type PlanProgress struct {
	TimeStep  *uint64 `json:"time_step,omitempty"`
	Positions []Point `json:"positions,omitempty"`
}
