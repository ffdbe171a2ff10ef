package pathd

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
)

// Directions of a flow field: 0-7 a step, Goal at the goal, Unreachable elsewhere.
const (
	Goal        = 8
	Unreachable = 255
)

// Steps are the moves of directions 0-7: N, E, S, W, NE, SE, SW, NW (y grows downwards).
var Steps = [8]Point{{0, -1}, {1, 0}, {0, 1}, {-1, 0}, {1, -1}, {1, 1}, {-1, 1}, {-1, -1}}

// DecodedFlowField is a flow field with its arrays decoded, kept current by Apply.
type DecodedFlowField struct {
	ID         string
	Region     Region
	Goal       Point
	Seq        uint64
	MapVersion uint64
	// Directions holds one byte per region cell, row-major.
	Directions []byte
	// Costs holds the cost to the goal per region cell (+Inf when unreachable).
	Costs []float64
}

// Decode decodes a field's directions and costs.
func Decode(f *FlowField) (*DecodedFlowField, error) {
	n := f.Region.Width * f.Region.Height
	if len(f.Directions) != n || len(f.Costs) != 8*n {
		return nil, fmt.Errorf("pathd: flow field %s: %d directions and %d cost bytes for %d cells", f.ID, len(f.Directions), len(f.Costs), n)
	}
	d := &DecodedFlowField{ID: f.ID, Region: f.Region, Goal: f.Goal, Seq: f.Seq, MapVersion: f.MapVersion,
		Directions: append([]byte(nil), f.Directions...), Costs: make([]float64, n)}
	for i := range d.Costs {
		d.Costs[i] = math.Float64frombits(binary.LittleEndian.Uint64(f.Costs[8*i:]))
	}
	return d, nil
}

func (d *DecodedFlowField) index(p Point) int {
	r := d.Region
	if p[0] < r.X || p[1] < r.Y || p[0] >= r.X+r.Width || p[1] >= r.Y+r.Height {
		return -1
	}
	return (p[1]-r.Y)*r.Width + (p[0] - r.X)
}

// Direction at a map cell (Unreachable outside the region).
func (d *DecodedFlowField) Direction(p Point) uint8 {
	if i := d.index(p); i >= 0 {
		return d.Directions[i]
	}
	return Unreachable
}

// Cost to the goal from a map cell (+Inf outside the region).
func (d *DecodedFlowField) Cost(p Point) float64 {
	if i := d.index(p); i >= 0 {
		return d.Costs[i]
	}
	return math.Inf(1)
}

// Next is the cell after p towards the goal; false at the goal or when unreachable.
func (d *DecodedFlowField) Next(p Point) (Point, bool) {
	dir := d.Direction(p)
	if dir >= 8 {
		return Point{}, false
	}
	s := Steps[dir]
	return Point{p[0] + s[0], p[1] + s[1]}, true
}

// Apply sets a "changed" event's absolute cell values (harmless if already included).
func (d *DecodedFlowField) Apply(ev FlowFieldEvent) {
	for _, c := range ev.Cells {
		i := d.index(Point{c.X, c.Y})
		if i < 0 {
			continue
		}
		d.Directions[i] = c.Direction
		if c.Cost == nil {
			d.Costs[i] = math.Inf(1)
		} else {
			d.Costs[i] = *c.Cost
		}
	}
	if ev.Seq > d.Seq {
		d.Seq = ev.Seq
	}
	if ev.MapVersion > d.MapVersion {
		d.MapVersion = ev.MapVersion
	}
}

// FlowFieldWatcher keeps a local copy of a flow field current (see WatchFlowField).
type FlowFieldWatcher struct {
	c      *Client
	ctx    context.Context
	id     string
	field  *DecodedFlowField
	stream *Stream[FlowFieldEvent]
}

// WatchFlowField fetches a field and follows its events from the fetched Seq, so nothing
// is lost in between; Next applies "changed" events and refetches on "resync".
func (c *Client) WatchFlowField(ctx context.Context, id string) (*FlowFieldWatcher, error) {
	w := &FlowFieldWatcher{c: c, ctx: ctx, id: id}
	if err := w.fetch(); err != nil {
		return nil, err
	}
	seq := w.field.Seq
	w.stream = c.FlowFieldEvents(ctx, id, &seq)
	return w, nil
}

func (w *FlowFieldWatcher) fetch() error {
	f, err := w.c.GetFlowField(w.ctx, w.id)
	if err != nil {
		return err
	}
	w.field, err = Decode(f)
	return err
}

// Field is the current local copy.
func (w *FlowFieldWatcher) Field() *DecodedFlowField { return w.field }

// Next waits for the next event and applies it; io.EOF after a final event.
func (w *FlowFieldWatcher) Next() (FlowFieldEvent, error) {
	ev, err := w.stream.Next()
	if err != nil {
		return ev, err
	}
	switch ev.Reason {
	case "changed":
		w.field.Apply(ev)
	case "resync":
		if err := w.fetch(); err != nil {
			return ev, err
		}
	}
	return ev, nil
}

// Close stops following.
func (w *FlowFieldWatcher) Close() error { return w.stream.Close() }
