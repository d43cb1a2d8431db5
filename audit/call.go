package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
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
	return digest(struct {
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
}

// Mark is the call's digest as an event's detail carries it.
func (c Call) Mark() string { return CallMark + c.Digest() }

// Seals are the types of the events whose details end with the digests
// the gate seals (gate's event types, which gate's tests hold to these):
// the call in the event that records a request's creation, the verdict in
// the one that records its end. A digest in any other event, or anywhere
// but at the end of the detail, is text someone wrote (an agent's report,
// an approver's reason), not a seal.
var (
	CallSeals    = []string{"created", "policy_verdict", "grant_used"}
	VerdictSeals = []string{"decided", "expired", "cancelled", "policy_verdict", "grant_used"}
)

// Sealed finds the digests an event of type typ seals at the end of its
// detail: "…; call sha256:C", "…; verdict sha256:V" or "…; call sha256:C;
// verdict sha256:V"; "" for one it does not seal.
func Sealed(typ, detail string) (call, verdict string) {
	if slices.Contains(VerdictSeals, typ) {
		if d, rest, ok := cutSeal(detail, VerdictMark); ok {
			verdict, detail = d, rest
		}
	}
	if slices.Contains(CallSeals, typ) {
		if d, _, ok := cutSeal(detail, CallMark); ok {
			call = d
		}
	}
	return call, verdict
}

// MaskSeals is detail with the digests Sealed finds in it written as mark
// ("…; call sha256:[redacted]"): for a reader who may not test guesses
// at what they digest.
func MaskSeals(typ, detail, mark string) string {
	tail := ""
	if slices.Contains(VerdictSeals, typ) {
		if _, rest, ok := cutSeal(detail, VerdictMark); ok {
			detail, tail = rest, "; "+VerdictMark+mark
		}
	}
	if slices.Contains(CallSeals, typ) {
		if _, rest, ok := cutSeal(detail, CallMark); ok {
			detail, tail = rest, "; "+CallMark+mark+tail
		}
	}
	return detail + tail
}

// cutSeal takes "; " + mark + 64 lower-case hex digits off the end of detail.
func cutSeal(detail, mark string) (digest, rest string, ok bool) {
	n := len(detail) - 64 - len(mark) - 2
	if n < 0 || detail[n:n+2+len(mark)] != "; "+mark {
		return "", detail, false
	}
	d := detail[len(detail)-64:]
	if _, err := hex.DecodeString(d); err != nil || strings.ToLower(d) != d {
		return "", detail, false
	}
	return d, detail[:n], true
}

// Verdict is how a request ended, as its row holds it: the fields the
// history and the request page show of a decision.
type Verdict struct {
	Status, By, Via, Reason, ModifiedArgs string
	At                                    time.Time
}

// ExpiryReason is the reason an expiry records, and seals: it ends with
// the on_timeout in force, which decides whether the expiry allows.
func ExpiryReason(waited time.Duration, onTimeout string) string {
	return fmt.Sprintf("no verdict within %s; %s", waited, expiryTail(onTimeout))
}

func expiryTail(onTimeout string) string { return "on timeout: " + onTimeout }

// ExpiryAgrees says a row's verdict and on_timeout agree: an expiry's
// reason names the on_timeout its allow is read from. False for an
// expired row whose on_timeout was changed after its expiry was sealed.
func ExpiryAgrees(v Verdict, onTimeout string) bool {
	return v.Status != "expired" || strings.HasSuffix(v.Reason, expiryTail(onTimeout))
}

// VerdictMark introduces a verdict's digest in an event's detail.
const VerdictMark = "verdict sha256:"

// Digest is hex(SHA-256) of the verdict's canonical JSON: the object {at,
// by, modified_args, reason, status, via}, written as Call's is.
func (v Verdict) Digest() string {
	at := ""
	if !v.At.IsZero() {
		at = v.At.UTC().Format(TimeFormat)
	}
	return digest(struct {
		At           string `json:"at"`
		By           string `json:"by"`
		ModifiedArgs string `json:"modified_args"`
		Reason       string `json:"reason"`
		Status       string `json:"status"`
		Via          string `json:"via"`
	}{at, v.By, v.ModifiedArgs, v.Reason, v.Status, v.Via})
}

// Mark is the verdict's digest as an event's detail carries it.
func (v Verdict) Mark() string { return VerdictMark + v.Digest() }

// digest is hex(SHA-256) of v's JSON without HTML escaping or a newline.
func digest(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:])
}

// Row is what a request's row holds of its call and, once it ended, its
// verdict.
type Row struct {
	Call    Call
	Verdict Verdict
	// OnTimeout is how the row says silence ends (allow or deny): what an
	// expired request's allow is read from. It is not in the digest (rows
	// sealed before would no longer verify); the sealed reason of an
	// expiry names it (ExpiryReason), and Verify checks the two agree.
	OnTimeout string
	// Unsealed says some of its events are not sealed yet; LastSeq is the
	// last seq of those that are.
	Unsealed bool
	LastSeq  int64
}

// Rows is a Source that also reads requests' rows, so that Verify can
// check each against the digests its trail sealed. *store.DB implements it.
type Rows interface {
	// Rows returns the rows of the requests that exist among ids.
	Rows(ctx context.Context, ids []string) (map[string]Row, error)
}
