package pathd

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Code is one of pathd's stable error codes.
type Code string

// The stable error codes (openapi.yaml, the Error schema).
const (
	CodeInvalidRequest       Code = "invalid_request"
	CodeInvalidMap           Code = "invalid_map"
	CodeOutOfBounds          Code = "out_of_bounds"
	CodeStartBlocked         Code = "start_blocked"
	CodeGoalBlocked          Code = "goal_blocked"
	CodeNotApplicable        Code = "not_applicable"
	CodeUnauthorized         Code = "unauthorized"
	CodeForbidden            Code = "forbidden"
	CodeMapNotFound          Code = "map_not_found"
	CodeNotFound             Code = "not_found"
	CodeMethodNotAllowed     Code = "method_not_allowed"
	CodeNotAcceptable        Code = "not_acceptable"
	CodeTooManyMaps          Code = "too_many_maps"
	CodePayloadTooLarge      Code = "payload_too_large"
	CodeMapTooLarge          Code = "map_too_large"
	CodeTooManyQueries       Code = "too_many_queries"
	CodeMatrixTooLarge       Code = "matrix_too_large"
	CodeLimitReached         Code = "limit_reached"
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	CodeInternal             Code = "internal"
	CodeOverloaded           Code = "overloaded"
	CodeNotReady             Code = "not_ready"
	CodeInvalidPatch         Code = "invalid_patch"
	CodePatchOutOfBounds     Code = "patch_out_of_bounds"
	CodePatchTooLarge        Code = "patch_too_large"
	CodeVersionConflict      Code = "version_conflict"
	CodeSubscriptionNotFound Code = "subscription_not_found"
	CodeTooManySubscriptions Code = "too_many_subscriptions"
	CodeMapDamaged           Code = "map_damaged"
	CodeStoreUnavailable     Code = "store_unavailable"
	CodeBodyTimeout          Code = "body_timeout"
	CodeTooManyConnections   Code = "too_many_connections"
	CodeAbstractionBuilding  Code = "abstraction_building"
	CodeFlowFieldNotFound    Code = "flowfield_not_found"
	CodeTooManyFlowFields    Code = "too_many_flowfields"
	CodeReplicaBehind        Code = "replica_behind"
	CodeDerivationFailed     Code = "derivation_failed"
	CodeTooManyAgents        Code = "too_many_agents"
	CodeProfileNotFound      Code = "profile_not_found"
	CodeTooManyGoals         Code = "too_many_goals"
	CodeNoUsableCell         Code = "no_usable_cell"
	CodePlanNotFound         Code = "plan_not_found"
	CodeTooManyPlans         Code = "too_many_plans"
)

// Error is an error answer of pathd (or a batch item's error): the HTTP status, the stable
// code and the message. Match it with errors.As, or with IsCode.
type Error struct {
	// Status is the HTTP status (0 for a batch item's error).
	Status int
	Code   Code
	// Message is the server's human-readable text.
	Message string
	// RetryAfter is the Retry-After header in seconds, or 0 when none was sent.
	RetryAfter int
	// RequestID is the request's id (its X-Request-Id), to find its log lines.
	RequestID string
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// Retryable reports whether the server asked to come back later (503 with Retry-After).
func (e *Error) Retryable() bool {
	return e.Status == 503 && e.RetryAfter > 0
}

// UnmarshalJSON reads {"error": {"code", "message"}}.
func (e *Error) UnmarshalJSON(b []byte) error {
	var body struct {
		Error *struct {
			Code      Code   `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return err
	}
	if body.Error == nil {
		return errors.New("pathd: not an error body")
	}
	e.Code, e.Message, e.RequestID = body.Error.Code, body.Error.Message, body.Error.RequestID
	return nil
}

// IsCode reports whether err is (or wraps) a pathd Error with this code.
func IsCode(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// UnmarshalJSON reads a batch item: a PathResult, or (status "error") an error body.
func (b *BatchItem) UnmarshalJSON(data []byte) error {
	var probe struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return err
	}
	if probe.Status == "error" {
		b.Err = &Error{}
		return json.Unmarshal(data, b.Err)
	}
	b.PathResult = &PathResult{}
	return json.Unmarshal(data, b.PathResult)
}

// UnmarshalJSON reads [x, y, direction, cost].
func (c *FlowFieldCell) UnmarshalJSON(data []byte) error {
	var raw [4]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw[0], &c.X); err != nil {
		return err
	}
	if err := json.Unmarshal(raw[1], &c.Y); err != nil {
		return err
	}
	if err := json.Unmarshal(raw[2], &c.Direction); err != nil {
		return err
	}
	return json.Unmarshal(raw[3], &c.Cost)
}
