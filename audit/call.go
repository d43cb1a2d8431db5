package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// Call is what a request asked for, as its row holds it: the tool, its
// arguments and everything said about who asked. The event that records a
// request's creation carries a digest of it in its detail, so the chain,
// which links events, also holds the call: a row whose arguments were
// changed after the fact no longer matches its sealed digest.
type Call struct {
	Tool, Args, Summary, Metadata                   string
	Agent, User, Session, ToolCallID, Caller, Route string
	CreatedAt                                       time.Time
}

// CallMark introduces a call's digest in an event's detail.
const CallMark = "call sha256:"

// Digest is hex(SHA-256) of the call's canonical JSON: the object {agent,
// args, caller, created_at, metadata, route, session, summary, tool,
// tool_call_id, user} with keys sorted, every value a string (args and
// metadata as the row holds their JSON text), no whitespace, no HTML
// escaping, created_at as in Canonical.
func (c Call) Digest() string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Agent      string `json:"agent"`
		Args       string `json:"args"`
		Caller     string `json:"caller"`
		CreatedAt  string `json:"created_at"`
		Metadata   string `json:"metadata"`
		Route      string `json:"route"`
		Session    string `json:"session"`
		Summary    string `json:"summary"`
		Tool       string `json:"tool"`
		ToolCallID string `json:"tool_call_id"`
		User       string `json:"user"`
	}{c.Agent, c.Args, c.Caller, c.CreatedAt.UTC().Format(TimeFormat), c.Metadata, c.Route, c.Session, c.Summary, c.Tool,
		c.ToolCallID, c.User})
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:])
}

// Mark is the call's digest as an event's detail carries it.
func (c Call) Mark() string { return CallMark + c.Digest() }

// MarkedCall finds the call digest an event's detail carries (its last
// CallMark followed by 64 hex digits).
func MarkedCall(detail string) (string, bool) {
	i := strings.LastIndex(detail, CallMark)
	if i < 0 {
		return "", false
	}
	d := detail[i+len(CallMark):]
	if len(d) < 64 {
		return "", false
	}
	d = d[:64]
	if _, err := hex.DecodeString(d); err != nil || strings.ToLower(d) != d {
		return "", false
	}
	return d, true
}

// Calls is a Source that also reads requests' calls, so that Verify can
// check each against the digest its trail sealed. *store.DB implements it.
type Calls interface {
	// Calls returns the calls of the requests that exist among ids.
	Calls(ctx context.Context, ids []string) (map[string]Call, error)
}
