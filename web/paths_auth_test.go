package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/web"
)

// TestNoStateChangeByOtherPaths: an auditor, and a visitor with no session,
// try every state-changing action (approve, reject, approve for a while,
// edited arguments, revoke, cancel) through other paths than the form's:
// other methods, a method-override header or field, HEAD, a trailing
// slash, the path's case, a percent-encoded id, a JSON body, the API with a
// session cookie instead of a token. Nothing changes.
func TestNoStateChangeByOtherPaths(t *testing.T) {
	e := newEnvWith(t, []gate.Route{{Name: "deploys", Tool: "deploy", Channels: []string{gate.WebChannel}, Remember: time.Hour, Timeout: time.Hour}},
		func(o *web.Options) { o.Tokens = []config.APIToken{{Name: "agent-a", Token: scopeTokens["agent-a"]}} })
	ctx := context.Background()
	submit := func(env string) *gate.Request {
		code, body := call(t, e.srv.URL, "agent-a", "POST", "/api/v1/approvals", `{"tool_name":"deploy","tool_args":{"env":"`+env+`"}}`)
		if code != http.StatusCreated {
			t.Fatalf("submit: %d %s", code, body)
		}
		rs, _, err := e.svc.List(ctx, gate.Filter{Limit: 1})
		if err != nil || len(rs) == 0 {
			t.Fatal(err)
		}
		return rs[0]
	}
	// A grant to revoke, given by alice.
	g0 := submit("prod")
	alice := e.login("alice")
	if res, body := alice.post("/approvals/"+g0.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve_for"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve_for: %d %s", res.StatusCode, body)
	}
	gs, err := e.svc.Grants(ctx, nil, true)
	if err != nil || len(gs) != 1 {
		t.Fatalf("grants: %v %v", gs, err)
	}
	grant := gs[0].ID
	r := submit("stage")

	audrey := e.login("audrey")
	anon := e.browser()
	encoded := "" // every character of the id percent-encoded
	for _, ch := range []byte(r.ID) {
		encoded += fmt.Sprintf("%%%02X", ch)
	}
	paths := []string{
		"/approvals/" + r.ID + "/decide",
		"/approvals/" + r.ID + "/decide/",
		"/Approvals/" + r.ID + "/decide",
		"/approvals/" + r.ID + "/DECIDE",
		"/approvals/" + encoded + "/decide",
		"//approvals/" + r.ID + "/decide",
		"/approvals/" + r.ID + "/./decide",
		"/approvals/" + r.ID + "/decide?verdict=approve",
	}
	revokes := []string{"/grants/" + grant + "/revoke", "/grants/" + grant + "/revoke/", "/Grants/" + grant + "/revoke"}
	methods := []string{"POST", "GET", "HEAD", "PUT", "PATCH", "DELETE"}
	for who, b := range map[string]*browser{"auditor": audrey, "signed out": anon} {
		csrf := b.csrf
		if csrf == "" {
			csrf = audrey.csrf // a token from someone else's page
		}
		for _, verdict := range []string{"approve", "reject", "approve_for"} {
			form := url.Values{"csrf": {csrf}, "verdict": {verdict}, "confirmed": {"1"}, "modified_args": {`{"env":"dev"}`}, "_method": {"POST"}}
			for _, p := range append(paths, revokes...) {
				for _, m := range methods {
					for _, ct := range []string{"form", "json"} {
						var body string
						var typ string
						if ct == "form" {
							body, typ = form.Encode(), "application/x-www-form-urlencoded"
						} else {
							body, typ = `{"csrf":"`+csrf+`","verdict":"`+verdict+`"}`, "application/json"
						}
						req, _ := http.NewRequest(m, e.srv.URL+p, strings.NewReader(body))
						req.Header.Set("Content-Type", typ)
						req.Header.Set("X-HTTP-Method-Override", "POST")
						req.Header.Set("X-Method-Override", "POST")
						res, err := b.c.Do(req)
						if err != nil {
							t.Fatal(err)
						}
						res.Body.Close()
						if res.StatusCode == http.StatusSeeOther && m == "POST" && !strings.HasPrefix(res.Header.Get("Location"), "/login") {
							t.Errorf("%s: %s %s (%s) answered %d to %s", who, m, p, ct, res.StatusCode, res.Header.Get("Location"))
						}
					}
				}
			}
		}
		// The agent API with the session's cookie and no token.
		for _, p := range []string{"/api/v1/approvals/" + r.ID + "/cancel", "/api/v1/approvals/" + encoded + "/cancel"} {
			req, _ := http.NewRequest("POST", e.srv.URL+p, strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			res, err := b.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s: POST %s with a session and no token: %d", who, p, res.StatusCode)
			}
		}
	}
	got, err := e.svc.Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != gate.StatusPending {
		t.Fatalf("the request is %s by %s via %s", got.Status, got.DecidedBy, got.DecidedVia)
	}
	if gs, _ := e.svc.Grants(ctx, nil, true); len(gs) != 1 {
		t.Fatalf("the grant was revoked: %d active", len(gs))
	}
	// The control: the same form, on the form's own path, from an approver,
	// is taken (so the refusals above are the role's and the session's).
	if res, body := alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"reject"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("alice's reject: %d %.300s", res.StatusCode, body)
	}
}
