package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/channel"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// Verdict is the body a relay POSTs to /callbacks/webhook/{channel}.
type Verdict struct {
	RequestID string `json:"request_id"`
	Decision  string `json:"decision"` // "approve" or "reject"
	// Actor is who decided, in the relay's terms ("alice@example.com"); it
	// is recorded as webhook:<channel>/<actor>.
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
}

// Answer is what the callback answers to a verdict it took.
type Answer struct {
	RequestID string `json:"request_id"`
	// Status is the request's status after the verdict: approved, rejected,
	// or pending when the route needs more approvals.
	Status    string `json:"status"`
	DecidedBy string `json:"decided_by"`
}

const (
	// maxVerdict bounds what is read before the signature is checked.
	maxVerdict = 64 << 10
	// maxActor bounds the relay's actor name.
	maxActor = 200
	// maxID bounds a request id (they are 26-character ULIDs).
	maxID = 64
	// decideTimeout bounds recording a verdict once it is verified; it runs
	// to its end even when the relay hangs up.
	decideTimeout = 30 * time.Second
)

// ServeHTTP takes a relay's verdict: POST /callbacks/webhook/{channel}.
// Nothing in the body is read before its signature is checked.
func (c *Channel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(w, http.StatusMethodNotAllowed, "method_not_allowed", "POST a signed verdict")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxVerdict))
	if err != nil {
		fail(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("a verdict is at most %d KiB", maxVerdict>>10))
		return
	}
	now := c.now()
	sig, at, err := Verify(c.secret, r.Header, body, now)
	if err != nil {
		// Nothing in an unverified body is trusted, not even a request id
		// to audit against: logged and counted only.
		c.decider.Refuse(r.Context(), "", c.name, "", "unverified webhook verdict from "+r.RemoteAddr+": "+err.Error())
		fail(w, http.StatusUnauthorized, gate.EUNAUTHORIZED, err.Error())
		return
	}
	v, perr := parseVerdict(body)
	if c.replays.Seen(string(sig), at, now) {
		// Signed with the secret, so its request id is worth auditing.
		c.decider.Refuse(r.Context(), v.RequestID, c.name, c.actor(v.Actor), "replayed webhook verdict refused")
		fail(w, http.StatusUnauthorized, gate.EUNAUTHORIZED, "replayed verdict: sign each verdict afresh, with its own timestamp")
		return
	}
	if perr != nil {
		c.decider.Refuse(r.Context(), v.RequestID, c.name, c.actor(v.Actor), "malformed webhook verdict: "+perr.Error())
		fail(w, http.StatusBadRequest, gate.EINVALID, perr.Error())
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), decideTimeout)
	defer cancel()
	d := gate.Decision{RequestID: v.RequestID, Approve: v.Decision == "approve", Actor: c.actor(v.Actor), Via: c.name, Reason: v.Reason}
	req, err := c.decider.Get(ctx, v.RequestID)
	if err == nil && !slices.Contains(req.Channels, c.name) {
		// A relay answers for its own cards only: a request sent elsewhere
		// is not this channel's to decide, approvers list or not.
		c.decider.Refuse(ctx, v.RequestID, c.name, d.Actor, "verdict for a request that was not sent to this channel")
		err = gate.Errorf(gate.EFORBIDDEN, "request %s was not sent to channel %s", v.RequestID, c.name)
	} else if err == nil {
		req, err = c.decider.Decide(ctx, d)
	} else if gate.ErrorCode(err) == gate.ENOTFOUND {
		c.decider.Refuse(ctx, "", c.name, d.Actor, "verdict for an unknown request "+v.RequestID)
	}
	log := c.log.With("request_id", v.RequestID, "actor", d.Actor)
	if err != nil {
		code := gate.ErrorCode(err)
		log.Info("webhook verdict not taken", "err", err)
		fail(w, channel.Status(code), code, gate.ErrorMessage(err))
		return
	}
	log.Info("webhook verdict taken", "approve", d.Approve, "status", req.Status)
	writeJSON(w, http.StatusOK, Answer{RequestID: req.ID, Status: string(req.Status), DecidedBy: req.DecidedBy})
}

// actor is the identity a relay's actor is recorded as.
func (c *Channel) actor(a string) string {
	if a == "" {
		return ""
	}
	return "webhook:" + c.name + "/" + a
}

// parseVerdict reads a verdict strictly: unknown fields, a missing request
// id, a decision other than approve or reject and an actor that is no
// plain name are errors that say which. On an error, what could be read
// sanely is returned too, for the audit trail.
func parseVerdict(body []byte) (Verdict, error) {
	var v Verdict
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(&v)
	if err == nil && dec.More() {
		err = errors.New("data after the object")
	}
	if err != nil {
		_ = json.Unmarshal(body, &v) // best effort, for the audit trail
		return auditable(v), fmt.Errorf("verdict: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	v.RequestID, v.Actor = strings.TrimSpace(v.RequestID), strings.TrimSpace(v.Actor)
	switch {
	case v.RequestID == "":
		return auditable(v), errors.New("request_id: required")
	case !plainText(v.RequestID, maxID):
		return auditable(v), errors.New("request_id: not a request id")
	case v.Decision != "approve" && v.Decision != "reject":
		return auditable(v), fmt.Errorf(`decision: %q is not "approve" or "reject"`, text.Ellipsis(text.Clean(v.Decision), 40))
	case v.Actor == "":
		return auditable(v), errors.New("actor: required (who decided, in your relay's terms)")
	case !plainText(v.Actor, maxActor):
		return auditable(v), fmt.Errorf("actor: must be at most %d bytes of text without control characters", maxActor)
	}
	if strings.Contains(v.Actor, "@") {
		// An email names one person whatever its case, as single sign-on
		// records it (web:<email>, lower case): "Alice@Corp.com" must not be
		// another approver than "alice@corp.com", for a quorum or for
		// self_approval: forbid.
		lower, ok := text.LowerEmail(v.Actor)
		if !ok {
			return auditable(v), errors.New("actor: an email with a character that lower-cases into another one")
		}
		v.Actor = lower
	}
	v.Reason = text.Clean(v.Reason)
	return v, nil
}

// auditable keeps of a refused verdict only the names fit for the trail.
func auditable(v Verdict) Verdict {
	out := Verdict{Decision: v.Decision}
	if id := strings.TrimSpace(v.RequestID); plainText(id, maxID) {
		out.RequestID = id
	}
	if a := strings.TrimSpace(v.Actor); plainText(a, maxActor) {
		out.Actor = a
	}
	return out
}

// plainText reports whether s is valid UTF-8 of at most n bytes without
// control characters.
func plainText(s string, n int) bool {
	return len(s) <= n && utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

func fail(w http.ResponseWriter, status int, code, msg string) {
	var b struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	b.Error.Code, b.Error.Message = code, msg
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
