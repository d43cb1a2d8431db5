package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A path of the agent API asked with a method it does not take answers 405
// method_not_allowed, as every other path does, not 404 "Not Found": the
// path exists, and a client (or its author) told "not found" looks for a
// wrong URL rather than a wrong method.
func TestAPIWrongMethodIs405(t *testing.T) {
	e := newEnv(t)
	r := e.submit(`{"tool_name":"oa__purchase_pay"}`)
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/gate"},
		{http.MethodPut, "/api/v1/approvals"},
		{http.MethodDelete, "/api/v1/approvals/" + r.ID},
		{http.MethodGet, "/api/v1/approvals/" + r.ID + "/cancel"},
		{http.MethodPost, "/api/v1/grants"},
		{http.MethodGet, "/hooks/claude-code"}, // already 405: the reference
	} {
		if code, body := call(t, e.srv.URL, "", c.method, c.path, `{}`); code != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d %s, want 405", c.method, c.path, code, body)
		}
	}
	// An unknown path is still a 404.
	if code, _ := call(t, e.srv.URL, "", http.MethodGet, "/api/v1/nothing", ""); code != http.StatusNotFound {
		t.Errorf("GET /api/v1/nothing: %d, want 404", code)
	}
}

// TestEveryAPIRouteWantsAToken: the token check is each /api/v1 route's
// own (not the group's, for the 405 above), so a route mounted without it
// would be open: every one but the spec refuses a call with no token.
func TestEveryAPIRouteWantsAToken(t *testing.T) {
	s := allRoutes(t)
	n := 0
	for _, r := range s.Echo().Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") || r.Path == "/api/v1/openapi.json" || strings.HasPrefix(r.Method, "echo_") {
			continue
		}
		n++
		req := httptest.NewRequest(r.Method, strings.ReplaceAll(r.Path, ":id", "01J00000000000000000000000"), strings.NewReader(`{"tool_name":"deploy"}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.Echo().ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%s %s with no token: %d, want 401", r.Method, r.Path, rec.Code)
		}
	}
	if n < 8 {
		t.Fatalf("only %d /api/v1 routes found", n)
	}
}
