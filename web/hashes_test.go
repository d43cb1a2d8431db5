package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
	"github.com/gatehouse-dev/gatehouse/internal/redact"
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
