package pathd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// finalReasons end a stream: nothing follows them.
var finalReasons = map[string]bool{"deleted": true, "map_deleted": true, "map_replaced": true, "profile_removed": true, "expired": true}

// Stream is an event stream that survives dropped connections: Next reconnects with
// Last-Event-ID (the last Seq it returned), so no event is missed; the server either
// replays the missed ones or sends one "resync" event with the full state. Next returns
// io.EOF after a final event or Close.
type Stream[E any] struct {
	c      *Client
	path   string
	ctx    context.Context
	cancel context.CancelFunc
	body   io.ReadCloser
	frames *frameReader
	delay  time.Duration
	done   bool
	// LastEventID is the Seq of the last event returned (nil before the first).
	LastEventID *uint64
	// Reconnects counts the reconnections so far.
	Reconnects int
}

func newStream[E any](ctx context.Context, c *Client, path string, lastEventID *uint64) *Stream[E] {
	ctx, cancel := context.WithCancel(ctx)
	return &Stream[E]{c: c, path: path, ctx: ctx, cancel: cancel, delay: c.ReconnectDelay, LastEventID: lastEventID}
}

// SubscriptionEvents follows GET /v1/subscriptions/{id}/events (from lastEventID when not
// nil). The stream lives until ctx ends, Close, or a final event.
func (c *Client) SubscriptionEvents(ctx context.Context, id string, lastEventID *uint64) *Stream[SubscriptionEvent] {
	return newStream[SubscriptionEvent](ctx, c, "/v1/subscriptions/"+seg(id)+"/events", lastEventID)
}

// FlowFieldEvents follows GET /v1/flowfields/{id}/events; on "resync", fetch the field
// again (WatchFlowField does).
func (c *Client) FlowFieldEvents(ctx context.Context, id string, lastEventID *uint64) *Stream[FlowFieldEvent] {
	return newStream[FlowFieldEvent](ctx, c, "/v1/flowfields/"+seg(id)+"/events", lastEventID)
}

// PlanEvents is GET /v1/plans/{id}/events: every new plan of a live plan, resumed with
// Last-Event-ID.
func (c *Client) PlanEvents(ctx context.Context, id string, lastEventID *uint64) *Stream[LivePlanEvent] {
	return newStream[LivePlanEvent](ctx, c, "/v1/plans/"+seg(id)+"/events", lastEventID)
}

// Close ends the stream; a Next in progress returns io.EOF.
func (s *Stream[E]) Close() error {
	s.done = true
	s.cancel()
	if s.body != nil {
		s.body.Close()
	}
	return nil
}

// Next returns the next event, reconnecting as needed.
func (s *Stream[E]) Next() (E, error) {
	var zero E
	for {
		if s.done {
			return zero, io.EOF
		}
		if s.body == nil {
			if err := s.connect(); err != nil {
				if s.done {
					return zero, io.EOF
				}
				return zero, err
			}
		}
		frame, err := s.frames.next()
		if err != nil {
			s.body.Close()
			s.body = nil
			if s.done {
				return zero, io.EOF
			}
			if s.ctx.Err() != nil {
				return zero, s.ctx.Err()
			}
			// Dropped: reconnect after the delay, with Last-Event-ID.
			if err := s.c.Sleep(s.ctx, s.delay); err != nil {
				return zero, err
			}
			s.Reconnects++
			continue
		}
		if frame.retry > 0 {
			s.delay = frame.retry
		}
		var probe struct {
			Seq    uint64 `json:"seq"`
			Reason string `json:"reason"`
		}
		var ev E
		if err := json.Unmarshal([]byte(frame.data), &probe); err != nil {
			return zero, err
		}
		if err := json.Unmarshal([]byte(frame.data), &ev); err != nil {
			return zero, err
		}
		seq := probe.Seq
		s.LastEventID = &seq
		if finalReasons[probe.Reason] {
			s.done = true
			s.body.Close()
			s.body = nil
		}
		return ev, nil
	}
}

// connect opens the stream, retrying dropped connections (not error answers, but a 503
// with Retry-After) up to MaxReconnectFailures times in a row.
func (s *Stream[E]) connect() error {
	for failures := 0; ; failures++ {
		body, err := s.open()
		if err == nil {
			s.body = body
			s.frames = &frameReader{r: bufio.NewReader(body)}
			return nil
		}
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		wait := s.delay
		var apiErr *Error
		if errors.As(err, &apiErr) {
			if !apiErr.Retryable() {
				return err
			}
			wait = time.Duration(apiErr.RetryAfter) * time.Second
		}
		if failures >= s.c.MaxReconnectFailures {
			return err
		}
		if err := s.c.Sleep(s.ctx, wait); err != nil {
			return err
		}
		s.Reconnects++
	}
}

// open sends the GET; the timeout covers the headers only.
func (s *Stream[E]) open() (io.ReadCloser, error) {
	ctx, cancel := context.WithCancel(s.ctx)
	timer := time.AfterFunc(s.c.Timeout, cancel)
	h := http.Header{}
	if s.LastEventID != nil {
		h.Set("Last-Event-ID", strconv.FormatUint(*s.LastEventID, 10))
	}
	u := s.c.BaseURL + s.path
	req, err := s.c.newRequest(ctx, u, request{method: http.MethodGet, path: s.path, accept: "text/event-stream", header: h, auth: authQuery})
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := s.c.HTTP.Do(req)
	if !timer.Stop() {
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		return nil, &TimeoutError{URL: u, Timeout: s.c.Timeout}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		defer cancel()
		apiErr, rerr := readError(resp)
		if rerr != nil {
			return nil, rerr
		}
		return nil, apiErr
	}
	return &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	c.cancel()
	return c.ReadCloser.Close()
}

// frame is one SSE event with data.
type frame struct {
	id    string
	event string
	data  string
	retry time.Duration
}

// frameReader reads the event-stream format: fields, comments, blank line ends an event
// (LF and CRLF line ends).
type frameReader struct {
	r *bufio.Reader
}

func (f *frameReader) next() (frame, error) {
	var fr frame
	var data []string
	for {
		line, err := f.r.ReadString('\n')
		if err != nil {
			return frame{}, err // a partial event at the end is dropped, as the spec says
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if data != nil {
				fr.data = strings.Join(data, "\n")
				return fr, nil
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			data = append(data, value)
		case "id":
			fr.id = value
		case "event":
			fr.event = value
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil {
				fr.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}
