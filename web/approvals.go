package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/text"
	"github.com/gatehouse-dev/gatehouse/internal/wait"
)

// SubmitBody is the JSON body of POST /api/v1/approvals and /api/v1/gate.
type SubmitBody struct {
	ToolName             string          `json:"tool_name"`
	ToolArgs             json.RawMessage `json:"tool_args"`
	RequiresConfirmation *bool           `json:"requires_confirmation"`
	Summary              string          `json:"summary"`
	AgentID              string          `json:"agent_id"`
	UserID               string          `json:"user_id"`
	SessionID            string          `json:"session_id"`
	ToolCallID           string          `json:"tool_call_id"`
	Metadata             json.RawMessage `json:"metadata"`
	Route                string          `json:"route"`
	TimeoutSeconds       float64         `json:"timeout_seconds"`
	IdempotencyKey       string          `json:"idempotency_key"`
}

// Submission turns the body into the domain's submission. caller is the
// authenticated token's name ("" when the server has no tokens): routes
// match it, and the agent id defaults to it.
func (b *SubmitBody) Submission(caller string) gate.Submission {
	id := b.AgentID
	if id == "" {
		id = caller
	}
	return gate.Submission{Caller: caller,
		ToolName: b.ToolName, ToolArgs: b.ToolArgs, RequiresConfirmation: b.RequiresConfirmation, Summary: b.Summary,
		AgentID: id, UserID: b.UserID, SessionID: b.SessionID, ToolCallID: b.ToolCallID, Metadata: b.Metadata,
		Route: b.Route, Timeout: wait.Seconds(b.TimeoutSeconds), IdempotencyKey: b.IdempotencyKey,
	}
}

// decodeJSON reads one JSON object strictly: unknown fields, wrong types and
// trailing data are errors that say which.
func decodeJSON(c echo.Context, v any) error { return decodeBody(c, v, false) }

// decodeBody is decodeJSON where an empty body may be allowed (v is left as is).
func decodeBody(c echo.Context, v any, optional bool) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		if tooLarge(err) {
			return gate.Errorf(ETOOLARGE, "request body larger than 1 MiB")
		}
		return gate.Errorf(gate.EINVALID, "reading the body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return gate.Errorf(gate.EINVALID, "empty body: send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return gate.Errorf(gate.EINVALID, "%s: must be %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		case errors.As(err, &se):
			return gate.Errorf(gate.EINVALID, "malformed JSON at byte %d: %v", se.Offset, se)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return gate.Errorf(gate.EINVALID, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return gate.Errorf(gate.EINVALID, "malformed JSON: %v", err)
	}
	if dec.More() {
		return gate.Errorf(gate.EINVALID, "malformed JSON: data after the object")
	}
	return nil
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "float64", "int", "int64":
		return "a number"
	case "struct", "map":
		return "an object"
	case "slice":
		return "a list"
	}
	return k
}

// parseWait reads ?wait= as wait.Parse does, capped at MaxWait.
func (s *Server) parseWait(c echo.Context, def time.Duration) (time.Duration, error) {
	v := c.QueryParam("wait")
	if v == "" {
		return def, nil
	}
	d, err := wait.Parse(v)
	switch {
	case err != nil:
		return 0, gate.Errorf(gate.EINVALID, "wait: %v", err)
	case d < 0:
		return 0, gate.Errorf(gate.EINVALID, "wait: must not be negative")
	}
	return min(d, s.opts.MaxWait), nil
}

func (s *Server) createApproval(c echo.Context) error {
	var b SubmitBody
	if err := decodeJSON(c, &b); err != nil {
		return s.apiError(c, err)
	}
	r, created, err := s.svc.Submit(c.Request().Context(), b.Submission(s.caller(c)))
	if err != nil {
		return s.apiError(c, err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, r)
}

// getApproval is GET /api/v1/approvals/{id}?wait=: the request, held until
// it leaves pending or the wait passes. A token reads only its own requests.
func (s *Server) getApproval(c echo.Context) error {
	wait, err := s.parseWait(c, 0)
	if err != nil {
		return s.apiError(c, err)
	}
	r, err := s.svc.Owned(c.Request().Context(), s.access(c), c.Param("id"))
	if err != nil {
		return s.apiError(c, err)
	}
	reader := s.access(c).Name
	if wait <= 0 || r.Status.Final() {
		return c.JSON(http.StatusOK, s.forReader(reader, r))
	}
	method, path := c.Request().Method, c.Path()
	return s.longPoll(c, r.ID, wait, func(h http.Header, r *gate.Request, err error) (int, any) {
		if err != nil {
			code := gate.ErrorCode(err)
			if code == gate.EINTERNAL || code == gate.EUNAVAILABLE {
				s.log.Error("request failed", "method", method, "path", path, "err", err)
			}
			return statusOf(code), newErrorBody(code, gate.ErrorMessage(err))
		}
		if r.Status == gate.StatusPending {
			h.Set("Retry-After", "0")
		}
		return http.StatusOK, s.forReader(reader, r)
	})
}

// forReader is r as the API shows it to the token reader: whole to the
// token that made it (the agent sent those arguments, and must run the
// edited ones exactly as the approver wrote them), redacted to any other
// (a read_all or cancel_all token of an operator's tool, which people read).
func (s *Server) forReader(reader string, r *gate.Request) *gate.Request {
	if r == nil || r.Caller == reader {
		return r
	}
	return s.opts.Present.Redactor().Request(r)
}

// list is svc.List for a reader, who is shown each request as shown
// gives it (forReader for an API token, the redactor for the pages). The
// store's search (q) runs over what it stores, unredacted: a request it
// found only through what the reader is shown as [redacted] is left out,
// or which searches find it would tell the value a character at a time.
// So that nothing of it shows, in the page or in its cursor, a page is the
// first requests after the cursor that the search finds by what the
// reader is shown, as many as the limit, and the cursor goes on only when
// one more is found (the store is read page after page until then).
func (s *Server) list(ctx context.Context, f gate.Filter, shown func(*gate.Request) *gate.Request) ([]*gate.Request, string, error) {
	if f.Query == "" || !s.opts.Present.Redactor().Active() {
		return s.svc.List(ctx, f)
	}
	q, limit := strings.ToLower(f.Query), f.PageSize()
	f.Limit = max(limit+1, 200) // the store's pages: a few reads, not one a row, when most it finds are hidden
	var kept []*gate.Request
	for {
		rs, next, err := s.svc.List(ctx, f)
		if err != nil {
			return nil, "", err
		}
		for _, r := range rs {
			shown := shown(r)
			hidden := shown.Summary != r.Summary || shown.Reason != r.Reason || !bytes.Equal(shown.ToolArgs, r.ToolArgs)
			if hidden && r.ID != f.Query && !searchFinds(shown, q) {
				continue
			}
			if len(kept) == limit {
				return kept, kept[limit-1].ID, nil
			}
			kept = append(kept, r)
		}
		if next == "" {
			return kept, "", nil
		}
		f.Cursor = next
	}
}

// searchFinds says the search q (lower case) finds r by what it shows, in
// the fields the store's search reads.
func searchFinds(r *gate.Request, q string) bool {
	for _, field := range []string{r.ToolName, r.Summary, string(r.ToolArgs), r.AgentID, r.DecidedBy, r.Reason} {
		if strings.Contains(strings.ToLower(field), q) {
			return true
		}
	}
	return false
}

func (s *Server) cancelApproval(c echo.Context) error {
	var b struct {
		Reason string `json:"reason"`
	}
	if err := decodeBody(c, &b, true); err != nil {
		return s.apiError(c, err)
	}
	r, err := s.svc.Cancel(c.Request().Context(), s.access(c), c.Param("id"), "agent:"+agentName(c), b.Reason)
	if err != nil {
		return s.apiError(c, err)
	}
	return c.JSON(http.StatusOK, s.forReader(s.access(c).Name, r))
}

func (s *Server) approvalEvents(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := s.svc.Owned(ctx, s.access(c), c.Param("id"))
	if err != nil {
		return s.apiError(c, err)
	}
	evs, err := s.svc.Events(ctx, c.Param("id"))
	if err != nil {
		return s.apiError(c, err)
	}
	if r.Caller != s.access(c).Name {
		evs = s.shownEvents(evs)
	} else {
		for i := range evs {
			evs[i] = s.opts.Present.Redactor().Unlinked(evs[i]) // its own trail, whole but for the links
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"events": evs})
}

func (s *Server) listApprovals(c echo.Context) error {
	f, err := ParseFilter(c.QueryParams().Get)
	if err != nil {
		return s.apiError(c, err)
	}
	if a := s.access(c); !a.ReadAll {
		f.Caller = &a.Name
	}
	reader := s.access(c).Name
	rs, next, err := s.list(c.Request().Context(), f, func(r *gate.Request) *gate.Request { return s.forReader(reader, r) })
	if err != nil {
		return s.apiError(c, err)
	}
	for i, r := range rs {
		rs[i] = s.forReader(s.access(c).Name, r)
	}
	return c.JSON(http.StatusOK, map[string]any{"approvals": rs, "next_cursor": next})
}

// MaxQuery is the longest search (q) accepted.
const MaxQuery = 256

// ParseFilter reads the history's query parameters (shared by the API, the
// pages and the exports): status (comma-separated), tool, agent,
// decided_by, route, since, until (RFC 3339 or a date), q, limit, cursor,
// policy (include, exclude or only the verdicts routes gave alone).
func ParseFilter(get func(string) string) (gate.Filter, error) {
	f := gate.Filter{Tool: get("tool"), Agent: get("agent"), DecidedBy: get("decided_by"), Route: get("route"),
		Query: strings.TrimSpace(get("q")), Cursor: get("cursor"), Policy: get("policy")}
	if len(f.Query) > MaxQuery {
		// A search is a LIKE '%q%' over each row's arguments (up to 256
		// KiB): its cost is their length times q's.
		return f, gate.Errorf(gate.EINVALID, "q: longer than %d bytes", MaxQuery)
	}
	switch f.Policy {
	case "", "include", "exclude", "only":
	default:
		return f, gate.Errorf(gate.EINVALID, "policy: %q is not one of include, exclude, only", f.Policy)
	}
	for _, st := range strings.Split(get("status"), ",") {
		if st = strings.TrimSpace(st); st == "" {
			continue
		}
		if !gate.Status(st).Valid() {
			return f, gate.Errorf(gate.EINVALID, "status: %q is not one of pending, approved, rejected, expired, cancelled", st)
		}
		f.Status = append(f.Status, gate.Status(st))
	}
	var err error
	if f.Since, err = parseTime(get("since"), "since", false); err != nil {
		return f, err
	}
	if f.Until, err = parseTime(get("until"), "until", true); err != nil {
		return f, err
	}
	if v := get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return f, gate.Errorf(gate.EINVALID, "limit: must be a whole number from 1 to 1000")
		}
		f.Limit = n
	}
	return f, nil
}

// parseTime reads RFC 3339 or a plain date; a plain "until" date includes
// that whole day.
func parseTime(v, name string, endOfDay bool) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	t, err := time.Parse("2006-01-02", v)
	if err != nil {
		return time.Time{}, gate.Errorf(gate.EINVALID, "%s: %q is neither RFC 3339 nor a date (2006-01-02)", name, v)
	}
	if endOfDay {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// HookResult is the seed design's hook contract, answered by /api/v1/gate.
// allow is false on every path but an explicit approval (or a route whose
// timeout verdict is allow).
type HookResult struct {
	RequestID    string          `json:"request_id"`
	Status       string          `json:"status"`
	Allow        bool            `json:"allow"`
	Error        string          `json:"error"`
	ModifiedArgs json.RawMessage `json:"modified_args"`
	SideEffects  []string        `json:"side_effects"`
	// Beyond the seed's shape, what a hook needs to tell one call from an
	// identical later one, without reading the request back.
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
	DecidedBy  string     `json:"decided_by,omitempty"`
	DecidedVia string     `json:"decided_via,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// URL is the request's page on the web UI, when the server knows its
	// public_url: where a person waiting with the agent can follow it.
	URL string `json:"url,omitempty"`
}

// result is the hook result of a request on /api/v1/gate, with its page.
func (s *Server) result(r *gate.Request) HookResult {
	res := ResultOf(r, s.now())
	if s.opts.PublicURL != "" && r.ID != "" {
		res.URL = strings.TrimRight(s.opts.PublicURL, "/") + "/approvals/" + r.ID
	}
	return res
}

// ResultOf builds the hook result of a request.
func ResultOf(r *gate.Request, now time.Time) HookResult {
	res := HookResult{RequestID: r.ID, Status: string(r.Status), Allow: r.Allowed(), SideEffects: []string{},
		DecidedAt: r.DecidedAt, DecidedBy: r.DecidedBy, DecidedVia: r.DecidedVia, ToolCallID: r.ToolCallID}
	if len(r.ModifiedArgs) > 0 {
		res.ModifiedArgs = r.ModifiedArgs
	}
	line := r.Explain(now)
	switch {
	case r.Status == gate.StatusPending && r.IdempotencyKey == "":
		res.Error = "still pending: wait on GET /api/v1/approvals/" + r.ID + "?wait=55s (send an idempotency_key to re-attach by calling again)"
	case r.Status == gate.StatusPending:
		res.Error = "still pending: call again with the same idempotency_key to keep waiting"
	case !res.Allow:
		res.Error = text.UpperFirst(line)
	}
	if r.Status != gate.StatusPending {
		res.SideEffects = append(res.SideEffects, "gatehouse: "+line)
	}
	return res
}

// denied is the hook result of a failure: an explicit deny that names it.
func denied(id string, err error) HookResult {
	return HookResult{RequestID: id, Status: "error", Allow: false,
		Error: fmt.Sprintf("gatehouse: %s (denied: the gate fails closed)", gate.ErrorMessage(err)), SideEffects: []string{}}
}

// gate is POST /api/v1/gate: create-or-attach by idempotency key, then hold
// until the verdict or ?wait= (55s by default). Every failure answers
// allow: false, with the fitting status.
func (s *Server) gate(c echo.Context) error {
	var b SubmitBody
	if err := decodeJSON(c, &b); err != nil {
		return c.JSON(statusOf(gate.ErrorCode(err)), denied("", err))
	}
	// No idempotency key, no re-attaching: tool_call_id does not stand in
	// for one. Some frameworks number calls afresh in every session
	// (call_0, call_1, ...), and an identical call under a reused id would
	// get an approval given days before.
	wait, err := s.parseWait(c, 55*time.Second)
	if err != nil {
		return c.JSON(statusOf(gate.ErrorCode(err)), denied("", err))
	}
	r, _, err := s.svc.Submit(c.Request().Context(), b.Submission(s.caller(c)))
	if err != nil {
		return s.apiError(c, err)
	}
	if r.Status.Final() || wait <= 0 {
		return c.JSON(http.StatusOK, s.result(r))
	}
	method, path, id := c.Request().Method, c.Path(), r.ID
	return s.longPoll(c, id, wait, func(_ http.Header, r *gate.Request, err error) (int, any) {
		if err != nil {
			code := gate.ErrorCode(err)
			if code == gate.EINTERNAL || code == gate.EUNAVAILABLE {
				s.log.Error("request failed", "method", method, "path", path, "err", err)
			}
			return statusOf(code), denied(id, err)
		}
		return http.StatusOK, s.result(r)
	})
}
