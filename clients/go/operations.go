package pathd

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// Health is GET /healthz.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	return &h, c.getJSON(ctx, "/healthz", nil, authNone, &h)
}

// Ready is GET /readyz (a not_ready error while the startup maps load).
func (c *Client) Ready(ctx context.Context) (*Health, error) {
	var h Health
	return &h, c.getJSON(ctx, "/readyz", nil, authNone, &h)
}

// Metrics is GET /metrics: Prometheus text.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	var s string
	return s, c.send(ctx, request{method: http.MethodGet, path: "/metrics", accept: "text/plain", auth: authNone}, textInto(&s))
}

// OpenAPI is GET /openapi.yaml: the contract.
func (c *Client) OpenAPI(ctx context.Context) (string, error) {
	var s string
	return s, c.send(ctx, request{method: http.MethodGet, path: "/openapi.yaml", accept: "application/yaml", auth: authNone}, textInto(&s))
}

// ListMaps is GET /v1/maps: every map's summary, sorted by name.
func (c *Client) ListMaps(ctx context.Context) (*MapList, error) {
	var l MapList
	return &l, c.getJSON(ctx, "/v1/maps", nil, authQuery, &l)
}

// ReadOption modifies a map read.
type ReadOption func(url.Values)

// MinVersion waits until this replica has applied the version (503 replica_behind else).
func MinVersion(v uint64) ReadOption {
	return func(q url.Values) { q.Set("min_version", strconv.FormatUint(v, 10)) }
}

func readQuery(opts []ReadOption) url.Values {
	q := url.Values{}
	for _, o := range opts {
		o(q)
	}
	return q
}

// GetMap is GET /v1/maps/{name}: the summary.
func (c *Client) GetMap(ctx context.Context, name string, opts ...ReadOption) (*MapSummary, error) {
	var m MapSummary
	return &m, c.getJSON(ctx, "/v1/maps/"+seg(name), readQuery(opts), authQuery, &m)
}

// GetMapText is GET /v1/maps/{name} as a Moving AI file (Accept: text/plain).
func (c *Client) GetMapText(ctx context.Context, name string, opts ...ReadOption) (string, error) {
	var s string
	r := request{method: http.MethodGet, path: "/v1/maps/" + seg(name), query: readQuery(opts), accept: "text/plain", auth: authQuery}
	return s, c.send(ctx, r, textInto(&s))
}

// GetMapCells is GET /v1/maps/{name}/cells.
func (c *Client) GetMapCells(ctx context.Context, name string) (*MapCells, error) {
	var m MapCells
	return &m, c.getJSON(ctx, "/v1/maps/"+seg(name)+"/cells", nil, authQuery, &m)
}

// PutResult answers PutMap: the summary and whether the name was new (201).
type PutResult struct {
	Created bool
	Map     MapSummary
}

func (c *Client) put(ctx context.Context, name string, body []byte, contentType string, q url.Values) (*PutResult, error) {
	var res PutResult
	r := request{method: http.MethodPut, path: "/v1/maps/" + seg(name), query: q, body: body, contentType: contentType, auth: authAdmin}
	err := c.send(ctx, r, func(resp *http.Response) error {
		res.Created = resp.StatusCode == http.StatusCreated
		return json.NewDecoder(resp.Body).Decode(&res.Map)
	})
	return &res, err
}

// PutMapText is PUT /v1/maps/{name} with a Moving AI file; movement "" keeps the file's.
func (c *Client) PutMapText(ctx context.Context, name, text string, movement Movement) (*PutResult, error) {
	q := url.Values{}
	if movement != "" {
		q.Set("movement", string(movement))
	}
	return c.put(ctx, name, []byte(text), "text/plain", q)
}

// PutMap is PUT /v1/maps/{name} with JSON: a MapCosts or a MapRows.
func (c *Client) PutMap(ctx context.Context, name string, m any) (*PutResult, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return c.put(ctx, name, body, "application/json", nil)
}

// DeleteMap is DELETE /v1/maps/{name}.
func (c *Client) DeleteMap(ctx context.Context, name string) error {
	return c.send(ctx, request{method: http.MethodDelete, path: "/v1/maps/" + seg(name), auth: authAdmin}, decodeInto(nil))
}

// PatchMap is PATCH /v1/maps/{name}; IfVersion gives a version_conflict when the map moved on.
func (c *Client) PatchMap(ctx context.Context, name string, p MapPatch) (*PatchResult, error) {
	var r PatchResult
	return &r, c.sendJSON(ctx, http.MethodPatch, "/v1/maps/"+seg(name), p, authAdmin, nil, &r)
}

// FindPath is POST /v1/maps/{name}/path.
func (c *Client) FindPath(ctx context.Context, name string, q PathRequest) (*PathResult, error) {
	var r PathResult
	return &r, c.sendJSON(ctx, http.MethodPost, "/v1/maps/"+seg(name)+"/path", q, authQuery, nil, &r)
}

// FindPaths is POST /v1/maps/{name}/paths: answered in order, a bad query an error item.
func (c *Client) FindPaths(ctx context.Context, name string, b BatchRequest) (*BatchResponse, error) {
	var r BatchResponse
	return &r, c.sendJSON(ctx, http.MethodPost, "/v1/maps/"+seg(name)+"/paths", b, authQuery, nil, &r)
}

// Posthoc is POST /v1/maps/{name}/posthoc: the query's search trace as a Posthoc document.
func (c *Client) Posthoc(ctx context.Context, name string, q PathRequest) (map[string]any, error) {
	var r map[string]any
	return r, c.sendJSON(ctx, http.MethodPost, "/v1/maps/"+seg(name)+"/posthoc", q, authQuery, nil, &r)
}

// Matrix is POST /v1/maps/{name}/matrix: path costs from each source to each target.
func (c *Client) Matrix(ctx context.Context, name string, m MatrixRequest) (*MatrixResponse, error) {
	var r MatrixResponse
	return &r, c.sendJSON(ctx, http.MethodPost, "/v1/maps/"+seg(name)+"/matrix", m, authQuery, nil, &r)
}

// Los is POST /v1/maps/{name}/los: line of sight, with the first blocking cell.
func (c *Client) Los(ctx context.Context, name string, l LosRequest) (*LosResponse, error) {
	var r LosResponse
	return &r, c.sendJSON(ctx, http.MethodPost, "/v1/maps/"+seg(name)+"/los", l, authQuery, nil, &r)
}

// Random is GET /v1/maps/{name}/random: a uniformly random cell within path cost Radius.
func (c *Client) Random(ctx context.Context, name string, q RandomRequest) (*RandomResponse, error) {
	v := url.Values{}
	v.Set("x", strconv.Itoa(q.X))
	v.Set("y", strconv.Itoa(q.Y))
	v.Set("radius", strconv.FormatFloat(q.Radius, 'g', -1, 64))
	if q.Seed != nil {
		v.Set("seed", strconv.FormatUint(*q.Seed, 10))
	}
	if q.Size != 0 {
		v.Set("size", strconv.Itoa(q.Size))
	}
	if q.MinVersion != nil {
		v.Set("min_version", strconv.FormatUint(*q.MinVersion, 10))
	}
	if q.TimeoutMs != nil {
		v.Set("timeout_ms", strconv.FormatInt(*q.TimeoutMs, 10))
	}
	var r RandomResponse
	return &r, c.getJSON(ctx, "/v1/maps/"+seg(name)+"/random", v, authQuery, &r)
}

// CreateSubscription is POST /v1/maps/{name}/subscriptions; keep the Secret.
func (c *Client) CreateSubscription(ctx context.Context, name string, q PathRequest) (*SubscriptionCreated, error) {
	var r SubscriptionCreated
	return &r, c.sendJSON(ctx, http.MethodPost, "/v1/maps/"+seg(name)+"/subscriptions", q, authQuery, nil, &r)
}

// GetSubscription is GET /v1/subscriptions/{id}.
func (c *Client) GetSubscription(ctx context.Context, id string) (*Subscription, error) {
	var r Subscription
	return &r, c.getJSON(ctx, "/v1/subscriptions/"+seg(id), nil, authQuery, &r)
}

func secretHeader(name, secret string) (http.Header, auth) {
	if secret == "" {
		return nil, authAdmin // the admin token stands in for the secret
	}
	return http.Header{name: {secret}}, authQuery
}

// MoveSubscription is PATCH /v1/subscriptions/{id}: the agent moved. An empty secret
// relies on the admin token.
func (c *Client) MoveSubscription(ctx context.Context, id, secret string, position Point) (*Subscription, error) {
	var r Subscription
	h, a := secretHeader("X-Subscription-Secret", secret)
	body := struct {
		Position Point `json:"position"`
	}{position}
	return &r, c.sendJSON(ctx, http.MethodPatch, "/v1/subscriptions/"+seg(id), body, a, h, &r)
}

// DeleteSubscription is DELETE /v1/subscriptions/{id} (the secret, or the admin token).
func (c *Client) DeleteSubscription(ctx context.Context, id, secret string) error {
	h, a := secretHeader("X-Subscription-Secret", secret)
	return c.send(ctx, request{method: http.MethodDelete, path: "/v1/subscriptions/" + seg(id), header: h, auth: a}, decodeInto(nil))
}

// CreateFlowField is POST /v1/maps/{name}/flowfields; keep the Secret.
func (c *Client) CreateFlowField(ctx context.Context, name string, req FlowFieldRequest) (*FlowField, error) {
	var r FlowField
	return &r, c.sendJSON(ctx, http.MethodPost, "/v1/maps/"+seg(name)+"/flowfields", req, authQuery, nil, &r)
}

// GetFlowField is GET /v1/flowfields/{id}.
func (c *Client) GetFlowField(ctx context.Context, id string) (*FlowField, error) {
	var r FlowField
	return &r, c.getJSON(ctx, "/v1/flowfields/"+seg(id), nil, authQuery, &r)
}

// DeleteFlowField is DELETE /v1/flowfields/{id} (the secret, or the admin token).
func (c *Client) DeleteFlowField(ctx context.Context, id, secret string) error {
	h, a := secretHeader("X-Flowfield-Secret", secret)
	return c.send(ctx, request{method: http.MethodDelete, path: "/v1/flowfields/" + seg(id), header: h, auth: a}, decodeInto(nil))
}

// PlanAgents is POST /v1/maps/{name}/plans: one collision-free plan for many agents.
func (c *Client) PlanAgents(ctx context.Context, name string, req PlanRequest) (*PlanResult, error) {
	req.Subscribe = false
	var r PlanResult
	return &r, c.sendJSON(ctx, http.MethodPost, "/v1/maps/"+seg(name)+"/plans", req, authQuery, nil, &r)
}

// CreateLivePlan is POST /v1/maps/{name}/plans with subscribe: a live plan; keep Secret.
func (c *Client) CreateLivePlan(ctx context.Context, name string, req PlanRequest) (*LivePlanCreated, error) {
	req.Subscribe = true
	var r LivePlanCreated
	return &r, c.sendJSON(ctx, http.MethodPost, "/v1/maps/"+seg(name)+"/plans", req, authQuery, nil, &r)
}

// GetPlan is GET /v1/plans/{id}.
func (c *Client) GetPlan(ctx context.Context, id string) (*LivePlan, error) {
	var r LivePlan
	return &r, c.getJSON(ctx, "/v1/plans/"+seg(id), nil, authQuery, &r)
}

// ReportPlanProgress is PATCH /v1/plans/{id} (the secret, or the admin token when empty):
// delayed agents are re-planned before the answer.
func (c *Client) ReportPlanProgress(ctx context.Context, id, secret string, p PlanProgress) (*LivePlan, error) {
	h, a := secretHeader("X-Plan-Secret", secret)
	var r LivePlan
	return &r, c.sendJSON(ctx, http.MethodPatch, "/v1/plans/"+seg(id), p, a, h, &r)
}

// DeletePlan is DELETE /v1/plans/{id} (the secret, or the admin token).
func (c *Client) DeletePlan(ctx context.Context, id, secret string) error {
	h, a := secretHeader("X-Plan-Secret", secret)
	return c.send(ctx, request{method: http.MethodDelete, path: "/v1/plans/" + seg(id), header: h, auth: a}, decodeInto(nil))
}
