package pathd

// The client's own behaviour against a scripted server: retries honouring Retry-After,
// typed errors, tokens, timeouts, cancellation, connection errors, the SSE reader.

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

type scripted struct {
	mu       sync.Mutex
	handlers []http.HandlerFunc
}

func (s *scripted) push(h ...http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers = append(s.handlers, h...)
}

func (s *scripted) left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.handlers)
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var h http.HandlerFunc
	if len(s.handlers) > 0 {
		h, s.handlers = s.handlers[0], s.handlers[1:]
	}
	s.mu.Unlock()
	if h == nil {
		http.Error(w, "no handler", 500)
		return
	}
	h(w, r)
}

func newScripted(t *testing.T) (*scripted, *Client, *[]time.Duration) {
	s := &scripted{}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	c := New(ts.URL)
	var slept []time.Duration
	c.Sleep = func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		return ctx.Err()
	}
	return s, c, &slept
}

func answer(status int, retryAfter, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

const overloadedBody = `{"error":{"code":"overloaded","message":"busy"}}`
const foundBody = `{"status":"found","path":[[0,0]],"cost":0}`

var origin = PathRequest{Start: Point{0, 0}, Goal: Point{0, 0}}

func TestRetryAfterIsHonoured(t *testing.T) {
	s, c, slept := newScripted(t)
	s.push(answer(503, "2", overloadedBody), answer(503, "1", overloadedBody), answer(200, "", foundBody))
	r, err := c.FindPath(context.Background(), "m", origin)
	must(t, err)
	eq(t, "status", r.Status, "found")
	eq(t, "slept", *slept, []time.Duration{2 * time.Second, time.Second})
}

func TestRetriesStopAndTheErrorCarriesCodeAndRetryAfter(t *testing.T) {
	s, c, slept := newScripted(t)
	c.Retries = 1
	s.push(answer(503, "3", overloadedBody), answer(503, "3", overloadedBody))
	_, err := c.FindPath(context.Background(), "m", origin)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatal(err)
	}
	eq(t, "error", []any{e.Status, e.Code, e.RetryAfter, e.Retryable()}, []any{503, CodeOverloaded, 3, true})
	eq(t, "slept", *slept, []time.Duration{3 * time.Second})
	if !IsCode(err, CodeOverloaded) {
		t.Fatal("IsCode")
	}
}

func TestRetryWaitIsCappedAndNoRetryWithoutRetryAfter(t *testing.T) {
	s, c, slept := newScripted(t)
	c.MaxRetryDelay = 500 * time.Millisecond
	s.push(answer(503, "60", overloadedBody), answer(200, "", foundBody))
	_, err := c.FindPath(context.Background(), "m", origin)
	must(t, err)
	eq(t, "slept", *slept, []time.Duration{500 * time.Millisecond})
	s.push(answer(503, "", `{"error":{"code":"map_damaged","message":"damaged"}}`))
	_, err = c.GetMap(context.Background(), "m")
	wantCode(t, err, 503, CodeMapDamaged)
	eq(t, "handlers left", s.left(), 0)
}

func TestErrorAnswersAreTyped(t *testing.T) {
	s, c, _ := newScripted(t)
	s.push(answer(404, "", `{"error":{"code":"map_not_found","message":"no map named m"}}`))
	_, err := c.GetMap(context.Background(), "m")
	wantCode(t, err, 404, CodeMapNotFound)
	eq(t, "message", err.Error(), "404 map_not_found: no map named m")
}

func TestTokensAdminOnWritesQueryOnReads(t *testing.T) {
	s, c, _ := newScripted(t)
	c.AdminToken, c.QueryToken = "A", "Q"
	var seen [][3]string
	record := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			seen = append(seen, [3]string{r.Method, r.Header.Get("Authorization"), r.Header.Get("X-Subscription-Secret")})
			answer(status, "", body)(w, r)
		}
	}
	s.push(record(200, `{"version":2,"changed_cells":1,"affected_subscriptions":0}`), record(200, foundBody), record(204, ""), record(204, ""))
	ctx := context.Background()
	_, err := c.PatchMap(ctx, "m", MapPatch{Cells: []CellChange{{X: 0, Y: 0, Cost: 0}}, IfVersion: u64(1)})
	must(t, err)
	_, err = c.FindPath(ctx, "m", origin)
	must(t, err)
	must(t, c.DeleteSubscription(ctx, "s", "SECRET"))
	must(t, c.DeleteSubscription(ctx, "s", ""))
	eq(t, "seen", seen, [][3]string{{"PATCH", "Bearer A", ""}, {"POST", "Bearer Q", ""}, {"DELETE", "Bearer Q", "SECRET"}, {"DELETE", "Bearer A", ""}})
}

func hang(release chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
}

func TestATimeoutIsTyped(t *testing.T) {
	s, c, _ := newScripted(t)
	release := make(chan struct{})
	defer close(release)
	c.Timeout = 100 * time.Millisecond
	s.push(hang(release))
	_, err := c.GetMap(context.Background(), "m")
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a TimeoutError, got %v", err)
	}
}

func TestCancellation(t *testing.T) {
	s, c, _ := newScripted(t)
	release := make(chan struct{})
	defer close(release)
	s.push(hang(release))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := c.FindPath(ctx, "m", origin)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	// A retry wait ends with the context too (the real sleep).
	c.Sleep = sleepCtx
	s.push(answer(503, "600", overloadedBody))
	ctx, cancel = context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err = c.FindPath(ctx, "m", origin)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := ln.Addr().String()
	ln.Close()
	_, err = New("http://" + addr).Health(context.Background())
	var e *Error
	if err == nil || errors.As(err, &e) {
		t.Fatalf("want a connection error, got %v", err)
	}
}

func TestFrameReader(t *testing.T) {
	text := ": keep-alive\r\nid: 1\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nretry: 250\nid: 2\ndata: x\n\n: only a comment\n\n"
	f := &frameReader{r: bufio.NewReader(strings.NewReader(text))}
	a, err := f.next()
	must(t, err)
	eq(t, "first", a, frame{id: "1", data: "{\"a\":\n1}"})
	b, err := f.next()
	must(t, err)
	eq(t, "second", b, frame{id: "2", data: "x", retry: 250 * time.Millisecond})
	if _, err := f.next(); err == nil {
		t.Fatal("want the end")
	}
}
