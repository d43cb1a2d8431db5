package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
)

// requestRow is the requests table.
type requestRow struct {
	ID                   string `gorm:"primaryKey"`
	Status               string
	ToolName             string
	ToolArgs             string
	RequiresConfirmation bool
	Summary              string
	AgentID              string
	UserID               string
	SessionID            string
	ToolCallID           string
	Metadata             string
	Route                string
	Caller               string
	IdempotencyKey       *string
	Channels             string
	Approvers            string
	Quorum               int
	OnTimeout            string
	CreatedAt            time.Time
	ExpiresAt            time.Time
	DecidedAt            *time.Time
	DecidedBy            string
	DecidedVia           string
	Reason               string
	ModifiedArgs         *string
	RememberSeconds      int64
	RememberAny          bool
	Person               string
	Plan                 string // the route's plan as JSON; "" none
	NextStepAt           *time.Time
	MCPServer            bool `gorm:"column:mcp_server"`
	// ConfirmationSent: the agent sent requires_confirmation (the column
	// above then holds its value; else true, as the gate fails closed).
	ConfirmationSent bool
	// ArgsText is ToolArgs as the pages show them, for the search, when
	// that differs (argsText); written once, never read into a request.
	ArgsText string
}

func (requestRow) TableName() string { return "requests" }

type eventRow struct {
	ID        int64 `gorm:"primaryKey"`
	RequestID string
	At        time.Time
	Type      string
	Actor     string
	Channel   string
	Detail    string
	Seq       *int64 // NULL until sealed
	PrevHash  *string
	Hash      *string
}

func (eventRow) TableName() string { return "events" }

func toRow(r *gate.Request) *requestRow {
	row := &requestRow{
		ID: r.ID, Status: string(r.Status), ToolName: r.ToolName, ToolArgs: string(r.ToolArgs),
		RequiresConfirmation: r.Asked(), ConfirmationSent: r.RequiresConfirmation != nil,
		Summary: r.Summary, AgentID: r.AgentID, UserID: r.UserID, SessionID: r.SessionID, ToolCallID: r.ToolCallID, Metadata: string(r.Metadata), Route: r.Route, Caller: r.Caller,
		Channels: jsonList(r.Channels), Approvers: jsonList(r.Approvers), Quorum: r.Quorum, OnTimeout: string(r.OnTimeout),
		CreatedAt: utc(r.CreatedAt), ExpiresAt: utc(r.ExpiresAt), DecidedBy: r.DecidedBy, DecidedVia: r.DecidedVia, Reason: r.Reason,
		RememberSeconds: r.RememberSeconds, RememberAny: r.RememberAnyArgs, Person: r.Person, Plan: planJSON(r.Plan),
		MCPServer: r.MCPServer, ArgsText: argsText(r.ToolArgs),
	}
	if r.NextStepAt != nil {
		t := utc(*r.NextStepAt)
		row.NextStepAt = &t
	}
	if r.IdempotencyKey != "" {
		k := r.IdempotencyKey
		row.IdempotencyKey = &k
	}
	if r.DecidedAt != nil {
		t := utc(*r.DecidedAt)
		row.DecidedAt = &t
	}
	if len(r.ModifiedArgs) > 0 {
		m := string(r.ModifiedArgs)
		row.ModifiedArgs = &m
	}
	return row
}

func (row *requestRow) toRequest() *gate.Request {
	r := &gate.Request{
		ID: row.ID, Status: gate.Status(row.Status), ToolName: row.ToolName, ToolArgs: json.RawMessage(row.ToolArgs),
		Summary: row.Summary, AgentID: row.AgentID, UserID: row.UserID,
		SessionID: row.SessionID, ToolCallID: row.ToolCallID, Metadata: json.RawMessage(row.Metadata), Route: row.Route,
		Caller: row.Caller, Channels: parseList(row.Channels), Approvers: parseApprovers(row.Approvers), Quorum: row.Quorum,
		OnTimeout: gate.Verdict(row.OnTimeout), CreatedAt: row.CreatedAt.UTC(), ExpiresAt: row.ExpiresAt.UTC(),
		DecidedBy: row.DecidedBy, DecidedVia: row.DecidedVia, Reason: row.Reason,
		RememberSeconds: row.RememberSeconds, RememberAnyArgs: row.RememberAny, Person: row.Person, Plan: parsePlan(row.Plan),
		MCPServer: row.MCPServer,
	}
	if row.ConfirmationSent {
		rc := row.RequiresConfirmation
		r.RequiresConfirmation = &rc
	}
	if row.NextStepAt != nil {
		t := row.NextStepAt.UTC()
		r.NextStepAt = &t
	}
	if row.IdempotencyKey != nil {
		r.IdempotencyKey = *row.IdempotencyKey
	}
	if row.DecidedAt != nil {
		t := row.DecidedAt.UTC()
		r.DecidedAt = &t
	}
	if row.ModifiedArgs != nil {
		r.ModifiedArgs = json.RawMessage(*row.ModifiedArgs)
	}
	return r
}

// planJSON is a plan as stored: "" when it holds nothing (every field of
// gate.Plan is omitempty, so an empty plan is {}). Asking the encoding,
// not a list of the fields, means a field added to Plan is stored: one
// left off such a list (Matched, at first) was silently dropped.
func planJSON(p gate.Plan) string {
	b, _ := json.Marshal(p)
	if string(b) == "{}" {
		return ""
	}
	return string(b)
}

// parsePlan reads a stored plan. One that does not read (it never should)
// keeps what fails closed: self-approval refused.
func parsePlan(s string) gate.Plan {
	var p gate.Plan
	if s != "" && json.Unmarshal([]byte(s), &p) != nil {
		return gate.Plan{ForbidSelf: true}
	}
	return p
}

func jsonList(ss []string) string {
	if len(ss) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ss)
	return string(b)
}

func parseList(s string) []string {
	var out []string
	_ = json.Unmarshal([]byte(s), &out)
	if out == nil {
		out = []string{}
	}
	return out
}

// UnreadableApprovers stands for an approvers list that does not read as
// one (it never should: jsonList writes it). No identity is this string,
// so nobody may decide the request and it expires: read as an empty list,
// it would mean anyone who sees a card may.
const UnreadableApprovers = "(unreadable approvers list)"

// parseApprovers reads a request's approvers; see UnreadableApprovers.
func parseApprovers(s string) []string {
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil || out == nil {
		return []string{UnreadableApprovers}
	}
	return out
}

// List returns requests newest first (ids are ULIDs, so id order is time
// order) with keyset pagination.
func (s *DB) List(ctx context.Context, f gate.Filter) ([]*gate.Request, string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	limit := f.PageSize()
	q := s.rdb.WithContext(ctx).Model(&requestRow{})
	if len(f.Status) == 1 && f.Status[0] == gate.StatusPending {
		// Written out, the condition matches the partial index of pending
		// rows, which keeps the live queue's poll off the whole table.
		q = q.Where("status = 'pending'")
	} else if len(f.Status) > 0 {
		ss := make([]string, len(f.Status))
		for i, st := range f.Status {
			ss[i] = string(st)
		}
		q = q.Where("status IN ?", ss)
	}
	if f.Caller != nil {
		q = q.Where("caller = ?", *f.Caller)
	}
	switch f.Policy {
	case "exclude":
		q = q.Where("decided_via <> ?", gate.ViaPolicy)
	case "only":
		q = q.Where("decided_via = ?", gate.ViaPolicy)
	}
	if f.Tool != "" {
		switch {
		case strings.ContainsAny(f.Tool, "*?") && s.driver == SQLite:
			// SQLite's LIKE folds ASCII case; GLOB keeps it, as a route's
			// tool glob and PostgreSQL's LIKE do ([ is its one other
			// special character, written [[] to stand for itself).
			q = q.Where("tool_name GLOB ?", strings.ReplaceAll(f.Tool, "[", "[[]"))
		case strings.ContainsAny(f.Tool, "*?"):
			q = q.Where("tool_name LIKE ? ESCAPE '\\'", globToLike(f.Tool))
		default:
			q = q.Where("tool_name = ?", f.Tool)
		}
	}
	if f.Agent != "" {
		q = q.Where("agent_id = ?", f.Agent)
	}
	if f.DecidedBy != "" {
		// The second term is the partial index's own condition, which
		// lets the planner use it.
		q = q.Where("decided_by = ? AND decided_by <> ''", f.DecidedBy)
	}
	if f.Route != "" {
		q = q.Where("route = ?", f.Route)
	}
	if f.ToolCallID != "" {
		// The second term is the partial index's own condition.
		q = q.Where("tool_call_id = ? AND tool_call_id <> ''", f.ToolCallID)
	}
	if f.SessionID != "" {
		q = q.Where("session_id = ?", f.SessionID)
	}
	if !f.Since.IsZero() {
		q = q.Where("created_at >= ?", utc(f.Since))
	}
	if !f.Until.IsZero() {
		q = q.Where("created_at < ?", utc(f.Until))
	}
	if f.Query != "" {
		// The fields the pages show, lowered by Go's rules on both sides
		// (searchLower); args_text is the arguments with their escapes
		// decoded, where they had any.
		like := "%" + escapeLike(strings.ToLower(f.Query)) + "%"
		var terms []string
		var vals []any
		lower := s.searchLower(f.Query)
		for _, col := range []string{"tool_name", "summary", "tool_args", "args_text", "agent_id", "decided_by", "reason"} {
			terms = append(terms, lower+"("+col+`) LIKE ? ESCAPE '\'`)
			vals = append(vals, like)
		}
		q = q.Where("("+strings.Join(terms, " OR ")+" OR id = ?)", append(vals, f.Query)...)
	}
	if f.Cursor != "" {
		q = q.Where("id < ?", f.Cursor)
	}
	var rows []requestRow
	if err := q.Order("id DESC").Limit(limit + 1).Find(&rows).Error; err != nil {
		return nil, "", wrap("list requests", err)
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		next = rows[limit-1].ID
	}
	out := make([]*gate.Request, len(rows))
	for i := range rows {
		out[i] = rows[i].toRequest()
	}
	return out, next, nil
}

// The LIKE escapes, built once (a Replacer's build allocates its tables).
var (
	likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)
	globToLiker = strings.NewReplacer("*", "%", "?", "_")
)

func escapeLike(s string) string { return likeEscaper.Replace(s) }

func globToLike(g string) string { return globToLiker.Replace(escapeLike(g)) }

// Events returns a request's audit trail in order.
func (s *DB) Events(ctx context.Context, requestID string) ([]gate.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var rows []eventRow
	if err := s.rdb.WithContext(ctx).Where("request_id = ?", requestID).Order("id").Find(&rows).Error; err != nil {
		return nil, wrap("list events", err)
	}
	out := make([]gate.Event, len(rows))
	for i, r := range rows {
		out[i] = gate.Event{ID: r.ID, RequestID: r.RequestID, At: r.At.UTC(), Type: r.Type, Actor: r.Actor, Channel: r.Channel, Detail: r.Detail}
		if r.Seq != nil && r.PrevHash != nil && r.Hash != nil {
			out[i].Seq, out[i].PrevHash, out[i].Hash = *r.Seq, *r.PrevHash, *r.Hash
		}
	}
	return out, nil
}

// Overdue lists pending requests past their deadline, most overdue first.
func (s *DB) Overdue(ctx context.Context, now time.Time, limit int) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var ids []string
	err := s.rdb.WithContext(ctx).Model(&requestRow{}).Where("status = 'pending' AND expires_at <= ?", utc(now)).
		Order("expires_at").Limit(limit).Pluck("id", &ids).Error
	return ids, wrap("list overdue", err)
}

// Settled returns those of ids that have left pending.
func (s *DB) Settled(ctx context.Context, ids []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if len(ids) == 0 {
		return nil, nil
	}
	var out []string
	err := s.rdb.WithContext(ctx).Model(&requestRow{}).Where("id IN ? AND status <> 'pending'", ids).Pluck("id", &out).Error
	return out, wrap("re-read waited requests", err)
}

// wrap prefixes a database error, leaving domain errors as they are.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	var ge *gate.Error
	if errors.As(err, &ge) {
		return err
	}
	return &gate.Error{Code: gate.EUNAVAILABLE, Message: "database error", Err: errors.New("store: " + what + ": " + err.Error())}
}

// searchLower is the SQL function the search for q lowers a column with:
// on SQLite, whose LOWER folds ASCII alone (ÖKO would never meet öko),
// gh_lower, Go's strings.ToLower (store.go registers it on every
// connection), when q holds more than ASCII (for an ASCII q, LOWER does
// as well, some 4 times faster than a call into Go for every column of
// every row); on PostgreSQL, LOWER, which folds by the database's locale.
func (s *DB) searchLower(q string) string {
	for i := range len(q) {
		if q[i] >= utf8.RuneSelf && s.driver == SQLite {
			return "gh_lower"
		}
	}
	return "LOWER"
}

// argsText is a call's arguments as the pages show them (jsonx.Rewrite:
// every \u escape JSON does not need decoded), when that differs from
// what the agent sent; "" when it does not, or they are not JSON.
func argsText(args []byte) string {
	if bytes.IndexByte(args, '\\') < 0 {
		return "" // no escape: shown as sent
	}
	shown, _, err := jsonx.Rewrite(args, nil, nil, "")
	if err != nil || bytes.Equal(shown, args) {
		return ""
	}
	return string(shown)
}
