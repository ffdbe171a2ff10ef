// Package pathd is a client for pathd, the pathfinding microservice: maps, patches,
// paths, batches, subscriptions and flow fields (with their Server-Sent Events streams).
//
// Every method maps to one operation of openapi.yaml and takes a context (cancellation and
// deadlines). Error answers are *Error with the stable Code; a 503 that carries
// Retry-After (overloaded, abstraction_building, replica_behind, store_unavailable) is
// retried after the time the server asked for; each attempt has Client.Timeout.
package pathd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one pathd server. Its fields may be changed after New, before use.
type Client struct {
	// BaseURL, e.g. "http://localhost:8080".
	BaseURL string
	// AdminToken is sent as a bearer token on map writes (PUT, PATCH, DELETE of maps).
	AdminToken string
	// QueryToken is sent on reads, queries and subscriptions (AdminToken when empty).
	QueryToken string
	// HTTP is the client requests go through (its own Timeout should stay 0: streams
	// are long-lived; Client.Timeout bounds each attempt instead).
	HTTP *http.Client
	// Timeout bounds each attempt: the headers and the body (for streams, the headers).
	Timeout time.Duration
	// Retries of a 503 with Retry-After (0: none).
	Retries int
	// MaxRetryDelay caps the wait before a retry, whatever Retry-After says.
	MaxRetryDelay time.Duration
	// ReconnectDelay is the wait before an event stream reconnects (`retry:` overrides).
	ReconnectDelay time.Duration
	// MaxReconnectFailures is how many reconnects in a row may fail before Next fails.
	MaxReconnectFailures int
	// Sleep waits (tests replace it); it returns early with ctx's error.
	Sleep func(ctx context.Context, d time.Duration) error
}

// New returns a client with the defaults: 30 s per attempt, 3 retries of at most 30 s
// each, event streams reconnecting after 500 ms.
func New(baseURL string) *Client {
	return &Client{
		BaseURL:              strings.TrimRight(baseURL, "/"),
		HTTP:                 &http.Client{},
		Timeout:              30 * time.Second,
		Retries:              3,
		MaxRetryDelay:        30 * time.Second,
		ReconnectDelay:       500 * time.Millisecond,
		MaxReconnectFailures: 10,
		Sleep:                sleepCtx,
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TimeoutError is an attempt that got no (complete) answer within Client.Timeout.
// errors.Is(err, context.DeadlineExceeded) holds for it.
type TimeoutError struct {
	URL     string
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("pathd: no answer from %s within %s", e.URL, e.Timeout)
}

// Unwrap makes errors.Is(err, context.DeadlineExceeded) true.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

type auth int

const (
	authNone auth = iota
	authQuery
	authAdmin
)

type request struct {
	method, path string
	query        url.Values
	body         []byte
	contentType  string
	accept       string
	header       http.Header
	auth         auth
}

// send runs one request with its retries; read handles a 2xx answer within the attempt.
func (c *Client) send(ctx context.Context, r request, read func(*http.Response) error) error {
	u := c.BaseURL + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	for attempt := 0; ; attempt++ {
		retryAfter, err := c.attempt(ctx, u, r, read)
		if retryAfter == 0 || attempt >= c.Retries {
			return err
		}
		wait := time.Duration(retryAfter) * time.Second
		if wait > c.MaxRetryDelay {
			wait = c.MaxRetryDelay
		}
		if err := c.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// attempt sends once; a retryable answer returns its Retry-After (seconds) too.
func (c *Client) attempt(ctx context.Context, u string, r request, read func(*http.Response) error) (int, error) {
	actx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := c.newRequest(actx, u, r)
	if err != nil {
		return 0, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, c.transportError(ctx, actx, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 300 {
		if err := read(resp); err != nil {
			return 0, c.transportError(ctx, actx, u, err)
		}
		return 0, nil
	}
	apiErr, err := readError(resp)
	if err != nil {
		return 0, c.transportError(ctx, actx, u, err)
	}
	if apiErr.Retryable() {
		return apiErr.RetryAfter, apiErr
	}
	return 0, apiErr
}

func (c *Client) newRequest(ctx context.Context, u string, r request) (*http.Request, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	if r.accept == "" {
		r.accept = "application/json"
	}
	req.Header.Set("Accept", r.accept)
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	token := ""
	switch r.auth {
	case authAdmin:
		token = firstOf(c.AdminToken, c.QueryToken)
	case authQuery:
		token = firstOf(c.QueryToken, c.AdminToken)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req, nil
}

// transportError says what a failed exchange means: the caller's context ended (its
// error), the attempt timed out (*TimeoutError), or the connection failed.
func (c *Client) transportError(outer, attempt context.Context, u string, err error) error {
	if outer.Err() != nil {
		return outer.Err()
	}
	if errors.Is(attempt.Err(), context.DeadlineExceeded) {
		return &TimeoutError{URL: u, Timeout: c.Timeout}
	}
	return fmt.Errorf("pathd: %s: %w", u, err)
}

func readError(resp *http.Response) (*Error, error) {
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	e := &Error{Status: resp.StatusCode, Code: CodeInternal, Message: string(raw)}
	var parsed Error
	if json.Unmarshal(raw, &parsed) == nil {
		e.Code, e.Message = parsed.Code, parsed.Message
	}
	if ra := strings.TrimSpace(resp.Header.Get("Retry-After")); ra != "" {
		if n, err := strconv.Atoi(ra); err == nil && n > 0 {
			e.RetryAfter = n
		}
	}
	return e, nil
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func decodeInto(out any) func(*http.Response) error {
	return func(resp *http.Response) error {
		if out == nil {
			_, err := io.Copy(io.Discard, resp.Body)
			return err
		}
		return json.NewDecoder(resp.Body).Decode(out)
	}
}

func textInto(out *string) func(*http.Response) error {
	return func(resp *http.Response) error {
		b, err := io.ReadAll(resp.Body)
		*out = string(b)
		return err
	}
}

func (c *Client) getJSON(ctx context.Context, path string, q url.Values, a auth, out any) error {
	return c.send(ctx, request{method: http.MethodGet, path: path, query: q, auth: a}, decodeInto(out))
}

func (c *Client) sendJSON(ctx context.Context, method, path string, in any, a auth, h http.Header, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.send(ctx, request{method: method, path: path, body: body, contentType: "application/json", auth: a, header: h}, decodeInto(out))
}

func seg(s string) string { return url.PathEscape(s) }
