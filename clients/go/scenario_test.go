package pathd

// The shared client scenario (clients/SCENARIO.md) against a real pathd: the README's curl
// session, a subscription that survives forced reconnects (replay, then resync), flow
// fields, min_version, if_version, tokens and secrets.

import (
	"context"
	"errors"
	"io"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

const tinyMap = "type octile\nheight 3\nwidth 4\nmap\n....\n.@@.\n....\n"

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, status int, code Code) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want a %d %s error, got %v", status, code, err)
	}
	if e.Status != status || e.Code != code {
		t.Fatalf("want %d %s, got %d %s (%s)", status, code, e.Status, e.Code, e.Message)
	}
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func u64(v uint64) *uint64 { return &v }

func TestScenario(t *testing.T) {
	srv := startPathd(t)
	px := startProxy(t, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := New(srv.url)
	admin.AdminToken = adminToken
	anon := New(srv.url)
	viaProxy := New(px.url) // the event stream goes through the proxy, which the test cuts
	viaProxy.ReconnectDelay = 50 * time.Millisecond

	// Health and the token: an anonymous write is refused with a typed error.
	h, err := admin.Ready(ctx)
	must(t, err)
	eq(t, "ready", h.Status, "ready")
	_, err = anon.PutMapText(ctx, "tiny", tinyMap, "")
	wantCode(t, err, 401, CodeUnauthorized)

	// Upload (201 created), a JSON map with costs.
	tiny, err := admin.PutMapText(ctx, "tiny", tinyMap, "")
	must(t, err)
	eq(t, "created", tiny.Created, true)
	eq(t, "tiny", []any{tiny.Map.Name, tiny.Map.Version, tiny.Map.Width, tiny.Map.Height}, []any{"tiny", uint64(1), 4, 3})
	hills, err := admin.PutMap(ctx, "hills", MapCosts{Width: 3, Height: 2, Costs: []int{1, 5, 1, 1, 0, 1}, Movement: Octile})
	must(t, err)
	eq(t, "hills created", hills.Created, true)

	// Paths, as in the README.
	p, err := admin.FindPath(ctx, "tiny", PathRequest{Start: Point{0, 1}, Goal: Point{3, 1}})
	must(t, err)
	eq(t, "status", p.Status, "found")
	eq(t, "path", p.Path, []Point{{0, 1}, {0, 0}, {1, 0}, {2, 0}, {3, 0}, {3, 1}})
	eq(t, "cost", []any{p.Cost, p.Algorithm, p.MapVersion}, []any{5.0, AStar, uint64(1)})
	d, err := admin.FindPath(ctx, "den520d", PathRequest{Start: Point{70, 50}, Goal: Point{200, 200}, Algorithm: JPS, Smooth: true})
	must(t, err)
	eq(t, "den520d costs", []float64{d.Cost, d.PathCost}, []float64{215.89051812430688, 225.52186130069825})
	eq(t, "waypoints", d.Waypoints, []Point{{70, 50}, {71, 73}, {140, 109}, {149, 114}, {200, 174}, {200, 200}})

	// A batch, answered in order; a bad query is an error item of its own.
	b, err := admin.FindPaths(ctx, "arena2", BatchRequest{Queries: []PathRequest{
		{Start: Point{5, 100}, Goal: Point{100, 100}},
		{Start: Point{250, 190}, Goal: Point{250, 190}},
		{Start: Point{9999, 0}, Goal: Point{1, 1}},
	}})
	must(t, err)
	eq(t, "batch", []any{b.MapVersion, len(b.Results)}, []any{uint64(1), 3})
	r0, r1, r2 := b.Results[0], b.Results[1], b.Results[2]
	if r0.Err != nil || r1.Err != nil || r2.Err == nil {
		t.Fatalf("batch items: %+v %+v %+v", r0, r1, r2)
	}
	eq(t, "r0 cost", r0.Cost, 99.14213562373095)
	eq(t, "r0 path", r0.Path[:4], []Point{{5, 100}, {6, 100}, {7, 100}, {8, 101}})
	eq(t, "r1", []any{r1.Path, r1.Cost}, []any{[]Point{{250, 190}}, 0.0})
	eq(t, "r2", r2.Err.Code, CodeOutOfBounds)

	// min_version: a version the map has is answered at once; one never written is 409.
	q := PathRequest{Start: Point{0, 0}, Goal: Point{2, 0}, MinVersion: u64(1)}
	r, err := admin.FindPath(ctx, "hills", q)
	must(t, err)
	eq(t, "min_version 1", r.Status, "found")
	q.MinVersion = u64(99)
	_, err = admin.FindPath(ctx, "hills", q)
	wantCode(t, err, 409, CodeVersionConflict)
	m, err := admin.GetMap(ctx, "hills", MinVersion(1))
	must(t, err)
	eq(t, "hills version", m.Version, uint64(1))

	// A subscription, followed through the proxy.
	sub, err := admin.CreateSubscription(ctx, "tiny", PathRequest{Start: Point{0, 1}, Goal: Point{3, 1}})
	must(t, err)
	eq(t, "sub cost", sub.Cost, 5.0)
	if len(sub.ID) != 32 || sub.Secret == "" {
		t.Fatalf("subscription id %q secret %q", sub.ID, sub.Secret)
	}
	stream := viaProxy.SubscriptionEvents(ctx, sub.ID, nil)
	defer stream.Close()
	e1, err := stream.Next()
	must(t, err)
	eq(t, "e1", []any{e1.Reason, e1.Seq, e1.Cost}, []any{"initial", uint64(1), 5.0})

	// Forced reconnect 1: the connection drops, a patch lands meanwhile; the stream comes
	// back with Last-Event-ID 1 and the server replays the missed event.
	eq(t, "open connections", px.cut(), 2)
	pr, err := admin.PatchMap(ctx, "tiny", MapPatch{Cells: []CellChange{{X: 1, Y: 0, Cost: 0}}, IfVersion: u64(1)})
	must(t, err)
	eq(t, "patch", []uint64{pr.Version, pr.ChangedCells}, []uint64{2, 1})
	waitSeq(t, ctx, anon, sub.ID, 2)
	e2, err := stream.Next()
	must(t, err)
	eq(t, "e2", []any{e2.Reason, e2.Seq, e2.MapVersion}, []any{"blocked", uint64(2), uint64(2)})
	if stream.Reconnects < 1 {
		t.Fatalf("reconnects %d", stream.Reconnects)
	}

	// A stale if_version is a typed conflict.
	_, err = admin.PatchMap(ctx, "tiny", MapPatch{Cells: []CellChange{{X: 0, Y: 0, Cost: 1}}, IfVersion: u64(1)})
	wantCode(t, err, 409, CodeVersionConflict)

	// The agent moves along its path, with the secret.
	mv, err := anon.MoveSubscription(ctx, sub.ID, sub.Secret, Point{0, 2})
	must(t, err)
	eq(t, "moved path", mv.Path, []Point{{0, 2}, {1, 2}, {2, 2}, {3, 2}, {3, 1}})
	eq(t, "moved", []any{mv.Cost, mv.MapVersion, mv.Position}, []any{4.0, uint64(2), Point{0, 2}})

	// Forced reconnect 2: two events while away, more than the server keeps (one): the
	// stream comes back with one resync holding the full state.
	before := stream.Reconnects
	px.cut()
	_, err = admin.PatchMap(ctx, "tiny", MapPatch{Cells: []CellChange{{X: 2, Y: 2, Cost: 0}}})
	must(t, err)
	_, err = admin.PatchMap(ctx, "tiny", MapPatch{Cells: []CellChange{{X: 2, Y: 2, Cost: 1}}})
	must(t, err)
	waitSeq(t, ctx, anon, sub.ID, 4)
	e3, err := stream.Next()
	must(t, err)
	eq(t, "e3", []any{e3.Reason, e3.Seq, e3.MapVersion, e3.Cost}, []any{"resync", uint64(4), uint64(4), 4.0})
	eq(t, "e3 path", e3.Path, mv.Path)
	if stream.Reconnects <= before {
		t.Fatalf("no reconnect: %d", stream.Reconnects)
	}

	// Deleting needs the secret: 403 without, then the stream's final event.
	wantCode(t, anon.DeleteSubscription(ctx, sub.ID, "not-the-secret"), 403, CodeForbidden)
	must(t, anon.DeleteSubscription(ctx, sub.ID, sub.Secret))
	e4, err := stream.Next()
	must(t, err)
	eq(t, "e4", e4.Reason, "deleted")
	if _, err := stream.Next(); err != io.EOF {
		t.Fatalf("after the final event: %v", err)
	}
	_, err = anon.GetSubscription(ctx, sub.ID)
	wantCode(t, err, 404, CodeSubscriptionNotFound)

	// A flow field, kept current: a patch's changed cells are applied to the local copy
	// and equal a fresh read.
	ff, err := admin.CreateFlowField(ctx, "hills", FlowFieldRequest{Goal: Point{0, 0}})
	must(t, err)
	if ff.Secret == "" {
		t.Fatal("no secret")
	}
	w, err := admin.WatchFlowField(ctx, ff.ID)
	must(t, err)
	defer w.Close()
	eq(t, "costs before", []float64{w.Field().Cost(Point{0, 0}), w.Field().Cost(Point{1, 0})}, []float64{0, 3})
	_, err = admin.PatchMap(ctx, "hills", MapPatch{Cells: []CellChange{{X: 1, Y: 0, Cost: 1}}})
	must(t, err)
	fe, err := w.Next()
	must(t, err)
	eq(t, "flow event", fe.Reason, "changed")
	eq(t, "cost after", w.Field().Cost(Point{1, 0}), 1.0)
	fresh, err := admin.GetFlowField(ctx, ff.ID)
	must(t, err)
	dec, err := Decode(fresh)
	must(t, err)
	eq(t, "costs", w.Field().Costs, dec.Costs)
	eq(t, "directions", w.Field().Directions, dec.Directions)
	next, ok := w.Field().Next(Point{2, 0})
	eq(t, "next", []any{next, ok}, []any{Point{1, 0}, true})
	wantCode(t, anon.DeleteFlowField(ctx, ff.ID, "wrong"), 403, CodeForbidden)
	must(t, anon.DeleteFlowField(ctx, ff.ID, ff.Secret))
	fe, err = w.Next()
	must(t, err)
	eq(t, "flow final", fe.Reason, "deleted")
	if _, err := w.Next(); err != io.EOF {
		t.Fatalf("after the final event: %v", err)
	}

	// The other operations: liveness, the contract, a search trace.
	live, err := anon.Health(ctx)
	must(t, err)
	eq(t, "health", live.Status, "ok")
	doc, err := anon.OpenAPI(ctx)
	must(t, err)
	if !strings.HasPrefix(doc, "openapi: 3.2") {
		t.Fatalf("openapi: %.40q", doc)
	}
	trace, err := anon.Posthoc(ctx, "tiny", PathRequest{Start: Point{0, 2}, Goal: Point{3, 1}})
	must(t, err)
	evs, _ := trace["events"].([]any)
	if len(evs) < 2 || evs[0].(map[string]any)["type"] != "source" || evs[len(evs)-1].(map[string]any)["type"] != "end" {
		t.Fatalf("posthoc events %v", evs)
	}

	// The rest of the README's session.
	list, err := admin.ListMaps(ctx)
	must(t, err)
	var names []string
	for _, m := range list.Maps {
		names = append(names, m.Name)
	}
	if !sort.StringsAreSorted(names) || !contains(names, "tiny") || !contains(names, "Berlin_0_256") {
		t.Fatalf("maps %v", names)
	}
	text, err := admin.GetMapText(ctx, "tiny")
	must(t, err)
	eq(t, "text", text, "type octile\nheight 3\nwidth 4\nmap\n.@..\n.@@.\n....\n")
	cells, err := admin.GetMapCells(ctx, "tiny")
	must(t, err)
	eq(t, "cells", len(cells.Costs), 12)
	must(t, admin.DeleteMap(ctx, "tiny"))
	_, err = admin.GetMap(ctx, "tiny")
	wantCode(t, err, 404, CodeMapNotFound)
	metrics, err := admin.Metrics(ctx)
	must(t, err)
	if !strings.Contains(metrics, "pathd_") {
		t.Fatal("no pathd_ metrics")
	}
}

// A 503 abstraction_building (a fresh map's JPS+ table is being built) is retried after
// Retry-After until the table is ready.
func TestAbstractionBuildingIsRetried(t *testing.T) {
	srv := startPathd(t)
	ctx := context.Background()
	c := New(srv.url)
	c.AdminToken = adminToken
	rows := make([]string, 512)
	for i := range rows {
		rows[i] = strings.Repeat(".", 512)
	}
	_, err := c.PutMap(ctx, "open512", MapRows{Width: 512, Height: 512, Rows: rows})
	must(t, err)
	r, err := c.FindPath(ctx, "open512", PathRequest{Start: Point{0, 0}, Goal: Point{511, 511}, Algorithm: JPSPlus})
	must(t, err)
	eq(t, "jps_plus", []any{r.Status, r.Algorithm}, []any{"found", JPSPlus})
}

func waitSeq(t *testing.T, ctx context.Context, c *Client, id string, seq uint64) {
	t.Helper()
	until(t, "the event published", func() bool {
		s, err := c.GetSubscription(ctx, id)
		return err == nil && s.Seq == seq
	})
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func f64(v float64) *float64 { return &v }

func TestMatrixLosRandom(t *testing.T) {
	srv := startPathd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := New(srv.url)
	admin.AdminToken = adminToken
	_, err := admin.PutMapText(ctx, "games", tinyMap, "")
	must(t, err)

	m, err := admin.Matrix(ctx, "games", MatrixRequest{
		Sources: []Point{{0, 1}, {3, 0}},
		Targets: []Point{{3, 1}, {1, 1}, {0, 1}},
	})
	must(t, err)
	eq(t, "costs", m.Costs, [][]*float64{{f64(5), nil, f64(0)}, {f64(1), nil, f64(4)}})
	wide := make([]Point, 257)
	_, err = admin.Matrix(ctx, "games", MatrixRequest{Sources: wide, Targets: []Point{}})
	wantCode(t, err, 400, CodeMatrixTooLarge)

	l, err := admin.Los(ctx, "games", LosRequest{From: Point{0, 0}, To: Point{3, 2}})
	must(t, err)
	eq(t, "los", []any{l.Visible, *l.BlockedAt}, []any{false, Point{1, 1}})
	l, err = admin.Los(ctx, "games", LosRequest{From: Point{0, 0}, To: Point{3, 0}})
	must(t, err)
	eq(t, "visible", []any{l.Visible, l.BlockedAt == nil}, []any{true, true})

	q := RandomRequest{X: 0, Y: 1, Radius: 2, Seed: u64(7)}
	r, err := admin.Random(ctx, "games", q)
	must(t, err)
	if r.Distance > 2 || r.Candidates != 5 || r.Seed != 7 {
		t.Fatalf("random: %+v", r)
	}
	again, err := admin.Random(ctx, "games", q)
	must(t, err)
	eq(t, "same seed", *again, *r)
	_, err = admin.Random(ctx, "games", RandomRequest{X: 1, Y: 1, Radius: 2})
	wantCode(t, err, 400, CodeStartBlocked)
}
