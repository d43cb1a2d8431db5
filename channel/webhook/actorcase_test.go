package webhook_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/webhook/webhooktest"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// TestRelayActorCaseIsOnePerson: a relay's actor is an email or a login in
// the relay's terms; "Alice@Corp.com" and "alice@corp.com" are one person.
// With self_approval: forbid, the person who asked must not approve by
// writing her name with a capital, and a quorum of 2 must not be met by
// her alone.
func TestRelayActorCaseIsOnePerson(t *testing.T) {
	rt := gate.Route{Name: "deploys", Tool: "deploy", Channels: []string{"relay"}, Approvers: []string{"webhook:relay/*"},
		Plan: gate.Plan{ForbidSelf: true}}
	e := newEnv(t, rt)
	people := gate.NewPeople([]gate.Person{{Name: "alice", Identities: []string{"webhook:relay/alice@corp.com"}, Users: []string{"u_alice"}}}, nil)
	if err := e.svc.Reconfigure([]gate.Route{rt}, gate.Defaults{Timeout: time.Hour, Channels: []string{"relay"}}, people); err != nil {
		t.Fatal(err)
	}
	r, _, err := e.svc.Submit(context.Background(), gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"prod"}`),
		AgentID: "build-agent", UserID: "u_alice"})
	if err != nil {
		t.Fatal(err)
	}
	post := func(actor string) (int, string) {
		body := verdict(r.ID, "approve", actor, "")
		return webhooktest.Post(t, e.urlA, body, webhooktest.Signed(secret, time.Now(), body))
	}
	if code, answer := post("alice@corp.com"); code == 200 {
		t.Fatalf("alice approved her own request: %d %s", code, answer)
	}
	code, answer := post("Alice@Corp.com")
	if code == 200 && strings.Contains(answer, `"approved"`) {
		t.Fatalf("alice approved her own request as Alice@Corp.com: %d %s; decided_by %s", code, answer, e.get(t, r.ID).DecidedBy)
	}
	// U+212A, the Kelvin sign, lower-cases to k: refused, not folded into
	// another address.
	if code, answer := post("\u212Aate@corp.com"); code != 400 || !strings.Contains(answer, "lower-cases") {
		t.Fatalf("an email with a character that lower-cases into ASCII: %d %s, want 400 naming it", code, answer)
	}
}
