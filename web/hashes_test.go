package web_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
	"github.com/gatehouse-dev/gatehouse/internal/redact"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/web"
)

// newPinEnv is a server that redacts pins, with a doors route that may
// remember approvals, an agent's token and an operator's read_all token.
func newPinEnv(t *testing.T) *env {
	t.Helper()
	rd, err := redact.New([]string{"pin"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, []gate.Route{{Name: "doors", Tool: "unlock", Channels: []string{gate.WebChannel}, Timeout: time.Hour, Remember: time.Hour}},
		func(o *web.Options) {
			o.Present = &present.Presenter{Redact: rd, Looks: o.Service.RouteLooks}
			o.Tokens = []config.APIToken{{Name: "agent-a", Token: scopeTokens["agent-a"]},
				{Name: "reader", Token: scopeTokens["reader"], Scopes: []string{config.ScopeReadAll}}}
		})
}

const pinCall = `{"tool_name":"unlock","requires_confirmation":true,"tool_args":{"door":"vault","pin":"4821"},"metadata":{"cwd":"/srv"}}`

// TestGrantHashesHideRedactedArguments: a grant's args_hash is SHA-256 of
// the canonical arguments (and the working directory), unsalted, so a
// read_all token shown the pin as [redacted] could hash the 10,000 pins
// and find the one whose hash the grant lists. A reader shown the
// arguments redacted gets args_hash as [redacted]; the grant's own token
// keeps the hash. Found by a reader.
func TestGrantHashesHideRedactedArguments(t *testing.T) {
	e := newPinEnv(t)
	r := e.submitAs("agent-a", pinCall)
	if _, err := e.svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Remember: true, Actor: "web:alice", Via: gate.WebChannel}); err != nil {
		t.Fatal(err)
	}
	hashOf := func(pin string) string {
		sum := sha256.Sum256([]byte(`{"door":"vault","pin":"` + pin + `"}` + "\x00cwd\x00" + `"/srv"`))
		return hex.EncodeToString(sum[:])
	}
	own := grants(t, e.srv.URL, "agent-a", "")
	if len(own) != 1 || own[0].ArgsHash != hashOf("4821") {
		t.Fatalf("the grant's own token: %+v, want args_hash %s", own, hashOf("4821"))
	}
	for _, query := range []string{"", "?all=1"} {
		gs := grants(t, e.srv.URL, "reader", query)
		if len(gs) != 1 {
			t.Fatalf("%d grants", len(gs))
		}
		for i := range 10000 {
			if pin := fmt.Sprintf("%04d", i); hashOf(pin) == gs[0].ArgsHash {
				t.Fatalf("args_hash gives the pin away: %s", pin)
			}
		}
		if gs[0].ArgsHash != redact.Mark {
			t.Errorf("read_all reads args_hash %q, want %s (a grant for these arguments, not any)", gs[0].ArgsHash, redact.Mark)
		}
	}
	_, page := e.login("audrey").get("/grants")
	if strings.Contains(page, hashOf("4821")) || !strings.Contains(page, "as approved on") {
		t.Errorf("the grants page:\n%s", page)
	}
}

// TestTrailHashesHideRedactedArguments: the created event seals the call
// (audit.Call: the arguments, summary, metadata … as stored), the decided
// event seals the verdict, and every event's hash covers its detail as
// stored. A read_all token shown the pin as [redacted] could hash the
// shown call with each of the 10,000 pins until one gave the seal. A
// reader shown the trail redacted gets the seals as [redacted] and no
// hash or prev_hash, in the API and on the request page; the request's own
// token keeps them. Found by a reader.
func TestTrailHashesHideRedactedArguments(t *testing.T) {
	e := newPinEnv(t)
	r := e.submitAs("agent-a", pinCall)
	if _, err := e.svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:alice", Via: gate.WebChannel, Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Seal(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	events := func(token string) []gate.Event {
		t.Helper()
		code, body := call(t, e.srv.URL, token, http.MethodGet, "/api/v1/approvals/"+r.ID+"/events", "")
		var out struct {
			Events []gate.Event `json:"events"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil {
			t.Fatalf("events as %s: %d %s", token, code, body)
		}
		return out.Events
	}
	seal := func(evs []gate.Event, typ, mark string) string {
		for _, ev := range evs {
			if _, d, ok := strings.Cut(ev.Detail, mark); ok && ev.Type == typ {
				d, _, _ = strings.Cut(d, ";")
				return d
			}
		}
		t.Fatalf("no %s event with %s: %+v", typ, mark, evs)
		return ""
	}

	// Its own token reads its seals, but no links of the chain, which
	// run through other requests' events (TestOwnTrailHidesTheChainsLinks).
	own := events("agent-a")
	if seal(own, gate.EventCreated, audit.CallMark) != r.Call().Digest() || own[0].Hash != "" || own[0].PrevHash != "" {
		t.Errorf("the request's own token reads its trail without its seals, or with the chain's links: %+v", own)
	}

	code, body := call(t, e.srv.URL, "reader", http.MethodGet, "/api/v1/approvals/"+r.ID, "")
	var shown gate.Request
	if code != http.StatusOK || json.Unmarshal([]byte(body), &shown) != nil {
		t.Fatalf("read as reader: %d %s", code, body)
	}
	evs := events("reader")
	callSeal := seal(evs, gate.EventCreated, audit.CallMark)
	for i := range 10000 {
		pin := fmt.Sprintf("%04d", i)
		guess := shown
		guess.ToolArgs = json.RawMessage(`{"door":"vault","pin":"` + pin + `"}`)
		if guess.Call().Digest() == callSeal {
			t.Fatalf("the call's seal gives the pin away: %s", pin)
		}
	}
	if callSeal != redact.Mark || seal(evs, gate.EventDecided, audit.VerdictMark) != redact.Mark {
		t.Errorf("read_all reads the seals %q, want %s: %+v", callSeal, redact.Mark, evs)
	}
	if evs[0].Seq == 0 {
		t.Errorf("read_all reads the created event without its seq: %+v", evs[0])
	}
	for _, ev := range evs {
		if ev.Hash != "" || ev.PrevHash != "" {
			t.Errorf("read_all reads event %d (%s) with hash %q, prev_hash %q", ev.ID, ev.Type, ev.Hash, ev.PrevHash)
		}
	}

	_, page := e.login("audrey").get("/approvals/" + r.ID)
	for _, ev := range own {
		for _, h := range []string{ev.Hash, seal(own, gate.EventCreated, audit.CallMark), seal(own, gate.EventDecided, audit.VerdictMark)} {
			if h != "" && strings.Contains(page, h) { // an event written after Seal has none yet
				t.Errorf("the request page shows %s", h)
			}
		}
	}
	if !strings.Contains(page, audit.CallMark+redact.Mark) || strings.Contains(page, `title="hash `) {
		t.Errorf("the request page does not say the call is sealed, or shows a hash:\n%s", page)
	}
}

// TestOwnTrailHidesTheChainsLinks: the chain runs through every request's
// events, so a read_all token that made one request just before another
// token's and one just after held, in its own trail, the hash on both
// sides of the other's events, knew every other field of them (shown
// redacted), and could test the 10,000 pins offline. With redaction on, a
// token's own trail carries no links either, and the checkpoint (the
// chain's head) is not served over the API. Found by a reader.
func TestOwnTrailHidesTheChainsLinks(t *testing.T) {
	e := newPinEnv(t)
	ctx := context.Background()
	seal := func() {
		t.Helper()
		if _, err := e.db.Seal(ctx, 100); err != nil {
			t.Fatal(err)
		}
	}
	before := e.submitAs("reader", `{"tool_name":"unlock","requires_confirmation":true,"tool_args":{"door":"side","pin":"0000"}}`)
	seal()
	victim := e.submitAs("agent-a", pinCall) // pin 4821, shown [redacted] to reader
	seal()
	after := e.submitAs("reader", `{"tool_name":"unlock","requires_confirmation":true,"tool_args":{"door":"back","pin":"0000"}}`)
	seal()

	events := func(id string) []gate.Event {
		t.Helper()
		code, body := call(t, e.srv.URL, "reader", http.MethodGet, "/api/v1/approvals/"+id+"/events", "")
		var out struct {
			Events []gate.Event `json:"events"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil {
			t.Fatalf("events: %d %s", code, body)
		}
		return out.Events
	}
	type link struct {
		ev  gate.Event
		own bool
	}
	bySeq := map[int64]link{}
	for _, id := range []string{before.ID, after.ID} {
		for _, ev := range events(id) {
			bySeq[ev.Seq] = link{ev, true}
		}
	}
	for _, ev := range events(victim.ID) {
		bySeq[ev.Seq] = link{ev, false}
	}
	var seqs []int64
	for s := range bySeq {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	// The reader's last own event before the victim's, and the first after.
	start, end := -1, -1
	for i, s := range seqs {
		if !bySeq[s].own {
			if end == -1 && start == -1 {
				start = i - 1
			}
			continue
		}
		if start != -1 && end == -1 {
			end = i
		}
	}
	if start < 0 || end < 0 || seqs[end]-seqs[start] != int64(end-start) {
		t.Fatalf("setup: no contiguous own/victim/own run in seqs %v", seqs)
	}

	code, body := call(t, e.srv.URL, "reader", http.MethodGet, "/api/v1/approvals/"+victim.ID, "")
	var shown gate.Request
	if code != http.StatusOK || json.Unmarshal([]byte(body), &shown) != nil {
		t.Fatalf("read as reader: %d %s", code, body)
	}
	if !strings.Contains(string(shown.ToolArgs), redact.Mark) {
		t.Fatalf("setup: the pin is not shown redacted: %s", shown.ToolArgs)
	}

	var found []string
	for i := range 10000 {
		pin := fmt.Sprintf("%04d", i)
		guess := shown
		guess.ToolArgs = json.RawMessage(`{"door":"vault","pin":"` + pin + `"}`)
		h := bySeq[seqs[start]].ev.Hash // the reader's own: shown
		for _, s := range seqs[start+1 : end] {
			ev := bySeq[s].ev
			detail := strings.ReplaceAll(ev.Detail, audit.CallMark+redact.Mark, guess.Call().Mark())
			rec := audit.Record{Seq: ev.Seq, Kind: audit.KindEvent, ID: ev.ID, RequestID: ev.RequestID, At: ev.At,
				Type: ev.Type, Actor: ev.Actor, Channel: ev.Channel, Detail: detail}
			h = audit.Hash(h, rec.Canonical())
		}
		if h == bySeq[seqs[end]].ev.PrevHash { // the reader's own: shown
			found = append(found, pin)
		}
	}
	if len(found) > 0 {
		t.Errorf("the hidden pin is recovered from the prev_hash/hash of the reader's own neighbouring events: %v", found)
	}
}

// TestNoCheckpointOverTheAPIWhenRedacting: two heads of the chain a few
// events apart are the links either side of those events, so with
// redaction on the API serves no checkpoint (the server still writes them
// to audit.checkpoint_dir). Found by a reader.
func TestNoCheckpointOverTheAPIWhenRedacting(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := redact.New([]string{"pin"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, redacting := range []bool{false, true} {
		e := newEnvWith(t, nil, func(o *web.Options) {
			o.Checkpoints = audit.NewKeeper(audit.Options{Store: o.Sessions.(*store.DB), Key: key})
			if redacting {
				o.Present = &present.Presenter{Redact: rd, Looks: o.Service.RouteLooks}
			}
			o.Tokens = []config.APIToken{{Name: "reader", Token: scopeTokens["reader"], Scopes: []string{config.ScopeReadAll}}}
		})
		code, body := call(t, e.srv.URL, "reader", http.MethodGet, "/api/v1/audit/checkpoint", "")
		switch {
		case redacting && (code != http.StatusForbidden || !strings.Contains(body, "checkpoint_dir")):
			t.Errorf("checkpoint with redaction on: %d %s; want 403 naming audit.checkpoint_dir", code, body)
		case !redacting && (code != http.StatusOK || !strings.Contains(body, `"signature"`)):
			t.Errorf("checkpoint with no redaction: %d %s; want it signed", code, body)
		}
	}
}
