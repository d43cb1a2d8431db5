// Package client is a small Go client for Gatehouse's gate: an agent loop
// asks before a sensitive tool call and blocks until a human decides. It
// re-attaches (same idempotency key) across dropped connections and server
// restarts, and every failure comes back as a deny.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// Request is what the agent asks. Only ToolName is required.
type Request struct {
	ToolName             string          `json:"tool_name"`
	ToolArgs             json.RawMessage `json:"tool_args,omitempty"`
	RequiresConfirmation *bool           `json:"requires_confirmation,omitempty"`
	Summary              string          `json:"summary,omitempty"`
	AgentID              string          `json:"agent_id,omitempty"`
	UserID               string          `json:"user_id,omitempty"`
	SessionID            string          `json:"session_id,omitempty"`
	ToolCallID           string          `json:"tool_call_id,omitempty"`
	Metadata             json.RawMessage `json:"metadata,omitempty"`
	Route                string          `json:"route,omitempty"`
	TimeoutSeconds       float64         `json:"timeout_seconds,omitempty"`
	// IdempotencyKey ties retries to one request. Gate fills a random one
	// when empty, so a re-attach never creates a second request.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// RequestID, when set, is the request the server already named for
	// this call (Start's answer): Gate takes an answer about another
	// request as no verdict, from its first answer on. Never sent.
	RequestID string `json:"-"`
}

// Result is the gate's verdict. Allow is true only for an approval (or a
// route whose timeout verdict is allow).
type Result struct {
	RequestID string `json:"request_id"`
	Status    string `json:"status"`
	Allow     bool   `json:"allow"`
	Error     string `json:"error"`
	// ModifiedArgs are the approver's edited arguments, to run the call
	// with instead of its own; nil when there are none.
	ModifiedArgs json.RawMessage `json:"modified_args"`
	SideEffects  []string        `json:"side_effects"`
	// When and how the request was decided, and its tool call id: what a
	// hook needs to tell a call from an identical later one.
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
	DecidedBy  string     `json:"decided_by,omitempty"`
	DecidedVia string     `json:"decided_via,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// URL is the request's page on the web UI, when the server has a
	// public_url.
	URL string `json:"url,omitempty"`
}

// APIError is an answer the server gave with an error status: bad input, a
// wrong token. Retrying will not help.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("gatehouse: %s (%d %s)", e.Message, e.Status, e.Code)
}

// plain strips the framing the server puts around a hook result's error
// ("gatehouse: … (denied: …)"), so that the client frames it once.
func plain(msg string) string {
	msg = strings.TrimPrefix(msg, "gatehouse: ")
	return strings.TrimSuffix(msg, denyNote)
}

// Client talks to one Gatehouse server.
type Client struct {
	URL   string // http://127.0.0.1:8080
	Token string
	HTTP  *http.Client
	// Wait is how long one long poll is held. 55s when zero (under common
	// proxy idle timeouts).
	Wait time.Duration
	// OnRetry, when set, hears about every failed attempt that will be retried.
	OnRetry func(attempt int, err error)
	// OnPending, when set, hears every answer that is still pending (one
	// each Wait), before Gate polls again: a caller that shows progress
	// (an MCP server keeping its client's call alive) does it here.
	OnPending func(Result)
	// MaxOutage, when set, gives up once the server has been unreachable (or
	// answering 5xx) for this long without a break. Zero retries until ctx ends.
	MaxOutage time.Duration
	// FailFast gives up at once when the first attempt cannot reach the
	// server (no connection) or the server answers it with a 5xx: no
	// request was made, and a hook denies at once rather than hold the
	// agent. A first attempt whose connection drops after the call was
	// sent is retried, as every later failure is: the request may exist.
	FailFast bool
}

// FromEnv builds a client from GATEHOUSE_URL (default http://127.0.0.1:8080)
// and GATEHOUSE_TOKEN.
func FromEnv() *Client {
	u := os.Getenv("GATEHOUSE_URL")
	if u == "" {
		u = "http://127.0.0.1:8080"
	}
	return &Client{URL: u, Token: os.Getenv("GATEHOUSE_TOKEN")}
}

// httpClient is c.HTTP, or http.DefaultClient's settings, made to follow
// no redirect. The gate answers itself; an allow from wherever a redirect
// points (a proxy's rule, a hostile network) is no verdict of its, and
// following one would send the call, and with a 307 the token, there.
func (c *Client) httpClient() *http.Client {
	h := http.Client{}
	if c.HTTP != nil {
		h = *c.HTTP
	}
	h.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &h
}

// NewKey returns a random idempotency key.
func NewKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "gh-" + hex.EncodeToString(b)
}

// Gate asks for approval and blocks until a verdict or ctx ends. It keeps
// re-attaching with the same idempotency key through timeouts, dropped
// connections, 5xx answers and server restarts. On error the Result still
// says deny (Allow false, Status "error").
func (c *Client) Gate(ctx context.Context, req Request) (Result, error) {
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = NewKey()
	}
	body, err := jsonx.Marshal(req)
	if err != nil {
		return deny("", err), err
	}
	wait := c.wait()
	target := strings.TrimRight(c.URL, "/") + "/api/v1/gate?wait=" + url.QueryEscape(wait.String())
	var res Result
	last := Result{RequestID: req.RequestID}
	err = c.exchange(ctx, func() (bool, error) {
		var err error
		res, err = c.post(ctx, target, body, wait+15*time.Second)
		if err == nil && last.RequestID != "" && res.RequestID != last.RequestID {
			// The key holds one request: an answer about another (a
			// cache in the way, another caller's) is no verdict on it.
			return false, aboutAnother("request", res.RequestID, last.RequestID)
		}
		if err == nil && req.ToolCallID != "" && res.ToolCallID != "" && res.ToolCallID != req.ToolCallID {
			// The answer names another tool call: no verdict on this one,
			// even as the first answer, before a request id is known.
			return false, aboutAnother("call", res.ToolCallID, req.ToolCallID)
		}
		if err != nil || res.Status != "pending" {
			return false, err
		}
		// Still pending: the server held the poll for wait; go again at once.
		last = res
		if c.OnPending != nil {
			c.OnPending(res)
		}
		return true, nil
	})
	if err != nil {
		return deny(last.RequestID, err), err
	}
	return res, nil
}

func (c *Client) wait() time.Duration {
	if c.Wait <= 0 {
		return 55 * time.Second
	}
	return c.Wait
}

// aboutAnother is an answer about another request or call (what) than the
// one asked about: no verdict on it (a cache in the way, another caller's).
func aboutAnother(what, got, want string) error {
	return &APIError{Status: http.StatusOK, Code: "bad_answer",
		Message: fmt.Sprintf("the answer is about %s %q, not %q", what, text.EllipsisBytes(got, 100), want)}
}

// exchange runs one call to the server until it is done: again (with no
// error) sends it again at once, as a long poll that ended still pending
// does; a failure is retried with backoff (dropped connections, 5xx,
// restarts), except an answer that says retrying will not help (an
// APIError below 500), the end of ctx, a first attempt that found no
// server under FailFast, and an outage longer than MaxOutage.
func (c *Client) exchange(ctx context.Context, once func() (again bool, err error)) error {
	delay := 250 * time.Millisecond
	var failingSince time.Time
	for attempt := 1; ; attempt++ {
		again, err := once()
		var apiErr *APIError
		switch {
		case err == nil && !again:
			return nil
		case err == nil:
			delay, failingSince = 250*time.Millisecond, time.Time{}
			continue
		case errors.As(err, &apiErr) && apiErr.Status < 500:
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if c.FailFast && attempt == 1 && (errors.As(err, &apiErr) || dialFailed(err)) {
			return err
		}
		if failingSince.IsZero() {
			failingSince = time.Now()
		} else if c.MaxOutage > 0 && time.Since(failingSince) > c.MaxOutage {
			return fmt.Errorf("server unreachable at %s for %s: %w", c.URL, c.MaxOutage, err)
		}
		if c.OnRetry != nil {
			c.OnRetry(attempt, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// Start makes the request, or attaches to the one its idempotency key
// made, and answers at once: pending, or the verdict it already has. One
// attempt, no retries; Gate with the same key then waits for the verdict.
func (c *Client) Start(ctx context.Context, req Request) (Result, error) {
	body, err := jsonx.Marshal(req)
	if err != nil {
		return deny("", err), err
	}
	res, err := c.post(ctx, strings.TrimRight(c.URL, "/")+"/api/v1/gate?wait=0s", body, 30*time.Second)
	if err != nil {
		return deny("", err), err
	}
	return res, nil
}

// PageURL is the request's page on the web UI: the URL the server gave,
// else the page under the server's address.
func (c *Client) PageURL(res Result) string {
	if res.URL != "" {
		return res.URL
	}
	return strings.TrimRight(c.URL, "/") + "/approvals/" + url.PathEscape(res.RequestID)
}

// dialFailed says the error is a connection that was never made.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func deny(id string, err error) Result {
	msg := err.Error()
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		msg = apiErr.Message
	}
	return Result{RequestID: id, Status: "error", Allow: false, Error: "gatehouse: " + msg + denyNote, SideEffects: []string{}}
}

// denyNote ends every failure the client turns into a deny.
const denyNote = " (denied: the gate fails closed)"

func (c *Client) post(ctx context.Context, target string, body []byte, timeout time.Duration) (Result, error) {
	_, data, err := c.send(ctx, target, body, timeout)
	if err != nil {
		return Result{}, err
	}
	var res Result
	if err := json.Unmarshal(data, &res); err != nil {
		return Result{}, fmt.Errorf("gatehouse: unreadable answer: %w", err)
	}
	if string(bytes.TrimSpace(res.ModifiedArgs)) == "null" {
		// No edit: the server writes null, which json.RawMessage keeps as
		// the four bytes "null". ModifiedArgs is nil unless the approver
		// edited the arguments, so that code that runs the call with it
		// when it is not nil never runs it with null.
		res.ModifiedArgs = nil
	}
	if res.Allow && res.Status != "approved" && res.Status != "expired" {
		// Only an approval (or an expiry its route lets through) allows:
		// an "allow" beside anything else is not the gate's answer (a wrong
		// GATEHOUSE_URL, a stub on the port).
		return Result{}, &APIError{Status: http.StatusOK, Code: "bad_answer",
			Message: fmt.Sprintf("the answer from %s allows with status %q, which is not the gate's (check GATEHOUSE_URL)", c.URL, res.Status)}
	}
	return res, nil
}

// send posts one JSON body with the token and reads the answer; any
// status but 200 is an APIError.
func (c *Client) send(ctx context.Context, target string, body []byte, timeout time.Duration) (http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.httpClient().Do(hr)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 3 {
		// A redirect, not followed (httpClient): a deny, whatever the
		// other place would say.
		return nil, nil, &APIError{Status: resp.StatusCode, Code: "redirect",
			Message: fmt.Sprintf("answered with a redirect to %q: set the URL to where the gate answers itself", text.EllipsisBytes(resp.Header.Get("Location"), 200))}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, apiError(resp.StatusCode, data)
	}
	return resp.Header, data, nil
}

// apiError reads either error shape the server uses: {"error":{code,message}}
// from the API, or a HookResult whose error is a string.
func apiError(status int, data []byte) error {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	msg, code := strings.TrimSpace(string(data)), http.StatusText(status)
	if json.Unmarshal(data, &e) == nil && len(e.Error) > 0 {
		var obj struct{ Code, Message string }
		var str string
		if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
			msg, code = obj.Message, obj.Code
		} else if json.Unmarshal(e.Error, &str) == nil {
			msg = plain(str)
		}
	}
	return &APIError{Status: status, Code: code, Message: text.EllipsisBytes(msg, 300)}
}

// Report hands the server an agent client's report of a call that already
// ran (Claude Code's PostToolUse or PostToolUseFailure input, as the client
// wrote it), so that the approved request's trail records what ran. One
// try within timeout: the tool has run, and nobody waits on the answer.
func (c *Client) Report(ctx context.Context, hookClient string, input []byte, timeout time.Duration) error {
	target := strings.TrimRight(c.URL, "/") + "/hooks/" + url.PathEscape(hookClient) + "?wait=0s"
	_, _, err := c.send(ctx, target, input, timeout)
	return err
}
