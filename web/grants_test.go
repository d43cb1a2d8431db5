package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/web"
)

// TestGrantsAPISeesItsOwn: GET /api/v1/grants lists a token's own grants;
// read_all lists every token's; ?all=1 adds the ended ones; a wrong token
// reads nothing.
func TestGrantsAPISeesItsOwn(t *testing.T) {
	base, svc := newTokenServer(t, gate.Route{Name: "deploys", Tool: "deploy", Channels: []string{gate.WebChannel}, Remember: time.Hour})
	ctx := context.Background()
	a, b := approvedForAWhile(t, base, svc, "agent-a"), approvedForAWhile(t, base, svc, "agent-b")
	if a.Caller != "agent-a" || b.Caller != "agent-b" {
		t.Fatalf("grants name the wrong tokens: %+v %+v", a, b)
	}
	ids := func(gs []gate.Grant) string {
		var s []string
		for _, g := range gs {
			s = append(s, g.ID)
		}
		return strings.Join(s, ",")
	}
	if got := ids(grants(t, base, "agent-a", "")); got != a.ID {
		t.Errorf("agent-a lists %s, want only its own %s", got, a.ID)
	}
	if got := ids(grants(t, base, "agent-b", "")); got != b.ID {
		t.Errorf("agent-b lists %s, want only its own %s", got, b.ID)
	}
	if got := grants(t, base, "reader", ""); len(got) != 2 {
		t.Errorf("read_all lists %d grants, want 2", len(got))
	}
	if _, err := svc.RevokeGrant(ctx, a.ID, "web:alice"); err != nil {
		t.Fatal(err)
	}
	if got := grants(t, base, "agent-a", ""); len(got) != 0 {
		t.Errorf("a revoked grant is listed as active: %+v", got)
	}
	if got := grants(t, base, "agent-a", "?all=1"); len(got) != 1 || got[0].RevokedAt == nil || got[0].RevokedBy != "web:alice" {
		t.Errorf("?all=1 after the revoke: %+v", got)
	}
	for _, tok := range []string{"forged", ""} {
		if code, body := call(t, base, tok, "GET", "/api/v1/grants", ""); code != http.StatusUnauthorized || strings.Contains(body, a.ID) {
			t.Errorf("token %q: %d %s", tok, code, body)
		}
	}
}

func grants(t *testing.T, base, token, query string) []gate.Grant {
	t.Helper()
	code, body := call(t, base, token, "GET", "/api/v1/grants"+query, "")
	var out struct {
		Grants []gate.Grant `json:"grants"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("GET /api/v1/grants%s as %s: %d %s", query, token, code, body)
	}
	return out.Grants
}

// TestWebGrantsEndWithTheirGiversRole: on a route with no approvers list a
// web grant stands on its giver's approver role. A reload that demotes
// alice to auditor, or removes her, refuses her taps at once; her grant
// went on approving calls in her name until it expired (a sixth reader).
// With single sign-on on, a removed password user was taken for a single
// sign-on user, whose grants stand on their role at sign-in, and her grant
// held (a reader): only names with @ are single sign-on's.
func TestWebGrantsEndWithTheirGiversRole(t *testing.T) {
	sso := func(o *web.Options) {
		o.PublicURL = "https://gatehouse.example.com"
		o.OIDC = &config.OIDC{Issuer: "https://idp.example.com", ClientID: "gatehouse", ClientSecret: "s",
			Roles: config.OIDCRoles{Approver: []string{"*@example.com"}}}
	}
	for _, tc := range []struct {
		after string
		mod   func(*web.Options)
	}{{"demoted", nil}, {"removed", nil}, {"demoted with single sign-on on", sso}, {"removed with single sign-on on", sso}} {
		after := tc.after
		t.Run(after, func(t *testing.T) {
			e := newEnvWith(t, []gate.Route{{Name: "deploys", Tool: "deploy", Channels: []string{gate.WebChannel}, Remember: time.Hour, Timeout: time.Hour}}, tc.mod)
			first := e.submit(`{"tool_name":"deploy","tool_args":{"env":"prod"},"agent_id":"bot"}`)
			b := e.login("alice")
			if res, body := b.post("/approvals/"+first.ID+"/decide", url.Values{"csrf": {b.csrf}, "verdict": {"approve_for"}}); res.StatusCode != http.StatusSeeOther {
				t.Fatalf("approve for a while: %d %s", res.StatusCode, body)
			}
			if second := e.submit(`{"tool_name":"deploy","tool_args":{"env":"prod"},"agent_id":"bot"}`); second.DecidedVia != gate.ViaGrant {
				t.Fatalf("the grant does not approve the next call: %s via %s", second.Status, second.DecidedVia)
			}
			hash, _ := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
			users := []config.User{{Name: "bob", Role: config.RoleApprover, PasswordBcrypt: string(hash)}}
			if strings.HasPrefix(after, "demoted") {
				users = append(users, config.User{Name: "alice", Role: config.RoleAuditor, PasswordBcrypt: string(hash)})
			}
			e.web.SetAuth(nil, users)
			third := e.submit(`{"tool_name":"deploy","tool_args":{"env":"prod"},"agent_id":"bot"}`)
			if third.Status != gate.StatusPending {
				t.Fatalf("alice %s, a call is %s by %s via %s (%s); want it to ask a person", after, third.Status, third.DecidedBy, third.DecidedVia, third.Reason)
			}
		})
	}
}

// TestGrantsAllTakesABoolean: docs/api.md writes ?all=true, which listed
// only the active grants (the handler knew only all=1). all takes what
// strconv.ParseBool reads, and anything else is a 400 that names it. Found
// by a reader.
func TestGrantsAllTakesABoolean(t *testing.T) {
	base, svc := newTokenServer(t, gate.Route{Name: "deploys", Tool: "deploy", Channels: []string{gate.WebChannel}, Remember: time.Hour, Timeout: time.Hour})
	g := approvedForAWhile(t, base, svc, "agent-a")
	if gs := grants(t, base, "agent-a", ""); len(gs) != 1 {
		t.Fatalf("%d grants", len(gs))
	}
	if _, err := svc.RevokeGrant(context.Background(), g.ID, "web:alice"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query string
		want  int
	}{{"", 0}, {"?all=true", 1}, {"?all=1", 1}, {"?all=TRUE", 1}, {"?all=t", 1}, {"?all=false", 0}, {"?all=0", 0}} {
		if got := grants(t, base, "agent-a", tc.query); len(got) != tc.want {
			t.Errorf("%s lists %d grants, want %d", tc.query, len(got), tc.want)
		}
	}
	for _, v := range []string{"yes", "2", "on"} {
		code, body := call(t, base, "agent-a", "GET", "/api/v1/grants?all="+v, "")
		if code != http.StatusBadRequest || !strings.Contains(body, `all: \"`+v+`\" is not true or false`) {
			t.Errorf("?all=%s: %d %s", v, code, body)
		}
	}
}

// approvedForAWhile makes token's deploy call and approves it for a while
// as web:alice, and returns the grant that gives.
func approvedForAWhile(t *testing.T, base string, svc *gate.Service, token string) gate.Grant {
	t.Helper()
	code, body := call(t, base, token, "POST", "/api/v1/approvals", `{"tool_name":"deploy","tool_args":{"env":"prod"}}`)
	var r gate.Request
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &r) != nil {
		t.Fatalf("create: %d %s", code, body)
	}
	d := gate.Decision{RequestID: r.ID, Approve: true, Remember: true, Actor: "web:alice", Via: gate.WebChannel}
	if _, err := svc.Decide(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	for _, g := range grants(t, base, token, "?all=1") {
		if g.RequestID == r.ID {
			return g
		}
	}
	t.Fatalf("no grant for %s", r.ID)
	return gate.Grant{}
}
