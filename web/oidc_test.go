package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/web"
	"github.com/gatehouse-dev/gatehouse/web/oidctest"
)

// ssoEnv is a server with single sign-on through a local provider, and a
// password user beside it.
type ssoEnv struct {
	*env
	idp *oidctest.Server
}

func newSSOEnv(t *testing.T) *ssoEnv {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "gh.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := gate.NewService(gate.Options{Store: db, Routes: []gate.Route{
		{Name: "deploys", Tool: "deploy", Channels: []string{gate.WebChannel}, Approvers: []string{"web:*@example.com"}, Timeout: time.Hour, Remember: time.Hour},
	}})
	svc.Register(web.Channel{})
	bg, cancel := context.WithCancel(ctx)
	svc.Start(bg)
	t.Cleanup(func() { svc.Stop(); cancel() })

	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String()
	idp := oidctest.New(t, "gatehouse", "client-s3cret", base+"/auth/oidc/callback")
	hash, _ := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	s, err := web.New(web.Options{Service: svc, Sessions: db, PublicURL: base,
		Users: []config.User{{Name: "alice", Role: config.RoleApprover, PasswordBcrypt: string(hash)}},
		OIDC: &config.OIDC{Issuer: idp.URL, ClientID: "gatehouse", ClientSecret: "client-s3cret", Roles: config.OIDCRoles{
			Admin:    []string{"platform-admins"},
			Approver: []string{"*@example.com"},
			Auditor:  []string{"auditors@*", "compliance"},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = s.Handler()
	hs.Start()
	t.Cleanup(hs.Close)
	return &ssoEnv{env: &env{t: t, srv: hs, svc: svc, db: db, web: s}, idp: idp}
}

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

// flow is one browser's sign-in, step by step, so attacks can cut in.
type flow struct {
	e   *ssoEnv
	b   *browser
	cb  *url.URL // the provider's redirect back to the callback
	res *http.Response
	// page is the body of the callback's answer.
	page string
}

// start begins a sign-in in browser b: Gatehouse sends it to the provider,
// the provider signs the set identity in and sends it back with a code.
func (e *ssoEnv) start(b *browser, next string) *flow {
	e.t.Helper()
	res, _ := b.get("/auth/oidc/login?next=" + url.QueryEscape(next))
	if res.StatusCode != http.StatusFound || !strings.HasPrefix(res.Header.Get("Location"), e.idp.URL+"/authorize?") {
		e.t.Fatalf("sign-in start: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	res, err := b.c.Get(res.Header.Get("Location"))
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	cb, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || err != nil || cb.Query().Get("code") == "" {
		e.t.Fatalf("the provider's answer: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	return &flow{e: e, b: b, cb: cb}
}

// finish delivers the callback URL (as the provider sent it, or as a test
// changed it) to the browser's Gatehouse.
func (f *flow) finish() *flow {
	f.e.t.Helper()
	f.res, f.page = f.b.get(f.cb.RequestURI())
	return f
}

func (f *flow) signedIn() bool {
	res, page := f.b.get("/")
	return res.StatusCode == http.StatusOK && strings.Contains(page, "Log out")
}

func (e *ssoEnv) signIn(u oidctest.Identity, next string) *flow {
	e.t.Helper()
	e.idp.SignIn(u)
	return e.start(e.browser(), next).finish()
}

func TestSingleSignOn(t *testing.T) {
	e := newSSOEnv(t)
	alice := oidctest.Identity{Subject: "u1", Email: "Alice@Example.com", EmailVerified: yes()}

	t.Run("an approver signs in and decides as web:<email>", func(t *testing.T) {
		f := e.signIn(alice, "/history")
		if f.res.StatusCode != http.StatusSeeOther || f.res.Header.Get("Location") != "/history" {
			t.Fatalf("callback: %d %q %s", f.res.StatusCode, f.res.Header.Get("Location"), f.page)
		}
		_, page := f.b.get("/")
		if !strings.Contains(page, "alice@example.com · approver") {
			t.Fatalf("the queue page does not name the user:\n%s", page)
		}
		r := e.submit(`{"tool_name":"deploy"}`)
		m := csrfField.FindStringSubmatch(page)
		f.b.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {m[1]}, "verdict": {"approve"}})
		got, _ := e.svc.Get(context.Background(), r.ID)
		if got.Status != gate.StatusApproved || got.DecidedBy != "web:alice@example.com" {
			t.Fatalf("after the SSO approver's tap: %s by %q", got.Status, got.DecidedBy)
		}
	})
	t.Run("a single sign-on approver's grant holds", func(t *testing.T) {
		f := e.signIn(alice, "/")
		_, page := f.b.get("/")
		r := e.submit(`{"tool_name":"deploy","tool_args":{"env":"staging"}}`)
		m := csrfField.FindStringSubmatch(page)
		f.b.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {m[1]}, "verdict": {"approve_for"}})
		if next := e.submit(`{"tool_name":"deploy","tool_args":{"env":"staging"}}`); next.DecidedVia != gate.ViaGrant || next.DecidedBy != "web:alice@example.com" {
			t.Fatalf("the next call: %s by %q via %s, want alice's grant to approve it", next.Status, next.DecidedBy, next.DecidedVia)
		}
	})
	t.Run("roles from groups and email globs", func(t *testing.T) {
		for _, tc := range []struct {
			u    oidctest.Identity
			role string
		}{
			{oidctest.Identity{Subject: "u2", Email: "root@elsewhere.org", Groups: []string{"staff", "platform-admins"}}, "admin"},
			{oidctest.Identity{Subject: "u3", Email: "auditors@corp.example.org"}, "auditor"},
			{oidctest.Identity{Subject: "u4", Email: "zed@corp.org", Groups: []string{"compliance"}}, "auditor"},
		} {
			f := e.signIn(tc.u, "/")
			if _, page := f.b.get("/"); !strings.Contains(page, strings.ToLower(tc.u.Email)+" · "+tc.role) {
				t.Errorf("%s: want role %s:\n%s", tc.u.Email, tc.role, page)
			}
		}
	})
	t.Run("password logins still work", func(t *testing.T) {
		e.login("alice")
		if _, page := e.browser().get("/login"); !strings.Contains(page, "Sign in with single sign-on") || !strings.Contains(page, `name="password"`) {
			t.Fatalf("the login page offers both ways in:\n%s", page)
		}
	})

	// Attacks. None may leave a session behind.
	refused := func(t *testing.T, f *flow, want string) {
		t.Helper()
		if f.res.StatusCode != http.StatusForbidden || !strings.Contains(f.page, want) {
			t.Fatalf("callback: %d, want 403 saying %q:\n%s", f.res.StatusCode, want, f.page)
		}
		if f.signedIn() {
			t.Fatal("signed in all the same")
		}
	}
	t.Run("wrong state", func(t *testing.T) {
		e.idp.SignIn(alice)
		f := e.start(e.browser(), "/")
		q := f.cb.Query()
		q.Set("state", "forged-state")
		f.cb.RawQuery = q.Encode()
		before := e.idp.Exchanged()
		refused(t, f.finish(), "wrong state")
		if e.idp.Exchanged() != before {
			t.Fatal("a code was exchanged on a wrong state")
		}
	})
	t.Run("no sign-in started in this browser", func(t *testing.T) {
		e.idp.SignIn(alice)
		f := e.start(e.browser(), "/")
		f.b = e.browser() // the answer arrives in a browser that never started
		refused(t, f.finish(), "not started here")
	})
	t.Run("the callback replayed in the same browser", func(t *testing.T) {
		f := e.signIn(alice, "/")
		if f.res.StatusCode != http.StatusSeeOther {
			t.Fatalf("first use: %d", f.res.StatusCode)
		}
		_, page := f.b.get("/")
		f.b.post("/logout", url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}})
		refused(t, f.finish(), "not started here")
	})
	t.Run("a used code replayed in another sign-in", func(t *testing.T) {
		victim := e.signIn(alice, "/")
		if victim.res.StatusCode != http.StatusSeeOther {
			t.Fatalf("the victim's sign-in: %d", victim.res.StatusCode)
		}
		mallory := e.start(e.browser(), "/") // a sign-in of the attacker's own
		q := mallory.cb.Query()
		q.Set("code", victim.cb.Query().Get("code"))
		mallory.cb.RawQuery = q.Encode()
		refused(t, mallory.finish(), "refused the sign-in code")
		if r := e.idp.Refused(); len(r) == 0 || r[len(r)-1] != "unknown or used code" {
			t.Fatalf("the provider saw %v", r)
		}
	})
	t.Run("a stolen unused code in another sign-in", func(t *testing.T) {
		e.idp.SignIn(alice)
		victim := e.start(e.browser(), "/") // the victim's code, intercepted before use
		mallory := e.start(e.browser(), "/")
		q := mallory.cb.Query()
		q.Set("code", victim.cb.Query().Get("code"))
		mallory.cb.RawQuery = q.Encode()
		refused(t, mallory.finish(), "refused the sign-in code")
		if r := e.idp.Refused(); r[len(r)-1] != "PKCE verifier does not match" {
			t.Fatalf("the provider saw %v", r)
		}
	})
	for _, tc := range []struct {
		name   string
		tamper func(h, c map[string]any) any
	}{
		{"wrong nonce", func(h, c map[string]any) any { c["nonce"] = "an-older-nonce"; return nil }},
		{"no nonce", func(h, c map[string]any) any { delete(c, "nonce"); return nil }},
		{"wrong audience", func(h, c map[string]any) any { c["aud"] = "another-app"; return nil }},
		{"wrong issuer", func(h, c map[string]any) any { c["iss"] = "https://evil.example"; return nil }},
		{"expired", func(h, c map[string]any) any {
			c["iat"], c["exp"] = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()
			return nil
		}},
		{"unsigned (alg none)", func(h, c map[string]any) any { h["alg"] = "none"; delete(h, "kid"); return nil }},
		{"signed by a key the provider does not publish", func(h, c map[string]any) any { return e.idp.OtherKey() }},
		{"HS256 keyed with the client secret", func(h, c map[string]any) any { h["alg"] = "HS256"; return []byte("client-s3cret") }},
		{"another user's claims under a valid signature of another key", func(h, c map[string]any) any {
			c["email"], c["groups"] = "root@example.com", []string{"platform-admins"}
			return e.idp.OtherKey()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.idp.SignIn(alice)
			e.idp.Tamper(tc.tamper)
			f := e.start(e.browser(), "/").finish()
			want := "did not verify"
			if strings.Contains(tc.name, "nonce") {
				want = "wrong nonce"
			}
			refused(t, f, want)
		})
	}
	t.Run("an email no role names", func(t *testing.T) {
		f := e.signIn(oidctest.Identity{Subject: "u9", Email: "eve@elsewhere.org", Groups: []string{"staff"}}, "/")
		refused(t, f, "no role here is given to that email")
	})
	t.Run("an email the provider has not verified", func(t *testing.T) {
		f := e.signIn(oidctest.Identity{Subject: "u10", Email: "mallory@example.com", EmailVerified: no()}, "/")
		refused(t, f, "is not verified")
	})
	// Some providers write the claim as a string: "false" (or anything but
	// true) is not verified.
	for _, v := range []any{"false", "False", "", 0, nil} {
		t.Run(fmt.Sprintf("email_verified %#v", v), func(t *testing.T) {
			e.idp.SignIn(oidctest.Identity{Subject: "u10", Email: "mallory@example.com"})
			e.idp.Tamper(func(_, c map[string]any) any { c["email_verified"] = v; return nil })
			refused(t, e.start(e.browser(), "/").finish(), "is not verified")
		})
	}
	t.Run(`email_verified "true"`, func(t *testing.T) {
		e.idp.SignIn(oidctest.Identity{Subject: "u12", Email: "alice@example.com", Groups: []string{"platform-admins"}})
		e.idp.Tamper(func(_, c map[string]any) any { c["email_verified"] = "true"; return nil })
		if f := e.start(e.browser(), "/").finish(); !f.signedIn() {
			t.Fatal(`email_verified "true" was refused`)
		}
	})
	t.Run("no email", func(t *testing.T) {
		f := e.signIn(oidctest.Identity{Subject: "u11", Groups: []string{"platform-admins"}}, "/")
		refused(t, f, "no usable email")
	})
	t.Run("the provider reports an error", func(t *testing.T) {
		e.idp.SignIn(alice)
		f := e.start(e.browser(), "/")
		q := f.cb.Query()
		q.Del("code")
		q.Set("error", "access_denied")
		f.cb.RawQuery = q.Encode()
		refused(t, f.finish(), "did not sign you in: access_denied")
	})
	t.Run("next stays on this site", func(t *testing.T) {
		f := e.signIn(alice, "https://evil.example/")
		if loc := f.res.Header.Get("Location"); loc != "/" {
			t.Fatalf("redirected to %q", loc)
		}
	})
}

// A provider that cannot be reached signs nobody in and says so.
func TestSingleSignOnProviderDown(t *testing.T) {
	e := newSSOEnv(t)
	e.idp.Close()
	res, page := e.browser().get("/auth/oidc/login")
	if res.StatusCode != http.StatusBadGateway || !strings.Contains(page, "cannot be reached") || res.Header.Get("Location") != "" {
		t.Fatalf("%d %q:\n%s", res.StatusCode, res.Header.Get("Location"), page)
	}
}

// A server without auth.oidc has no sign-in routes, and a single sign-on
// session left from when it had (the config lost auth.oidc) lets nobody in.
func TestNoSingleSignOnWithoutConfig(t *testing.T) {
	e := newEnv(t)
	if res, _ := e.browser().get("/auth/oidc/login"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("/auth/oidc/login: %d", res.StatusCode)
	}
	if _, page := e.browser().get("/login"); strings.Contains(page, "single sign-on") {
		t.Fatalf("the login page offers single sign-on:\n%s", page)
	}
	const tok = "a-session-token-from-before"
	sum := sha256.Sum256([]byte(tok))
	if err := e.db.CreateSession(context.Background(), store.Session{ID: hex.EncodeToString(sum[:]), UserName: "alice@example.com",
		Role: config.RoleAdmin, CSRF: "x", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour), Provider: web.ProviderOIDC}); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	u, _ := url.Parse(e.srv.URL)
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "gatehouse_session", Value: tok}})
	if res, _ := b.get("/history"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("an SSO session without SSO configured reads the history: %d", res.StatusCode)
	}
}

// TestSingleSignOnFoldsNoUnicodeIntoASCII: single sign-on lower-cases the
// email with Unicode case mapping, which folds U+0130 (İ) and U+212A
// (Kelvin K) into ASCII i and k: another account (\u212Aate@…) would sign
// in as web:kate@example.com, and an address at kİtchen.com as one at
// kitchen.com, taking that person's or that domain's place in approvers
// lists, roles and the trail.
func TestSingleSignOnFoldsNoUnicodeIntoASCII(t *testing.T) {
	e := newSSOEnv(t)
	for _, email := range []string{"\u212Aate@example.com", "\u0130van@example.com"} {
		f := e.signIn(oidctest.Identity{Subject: "m-" + email, Email: email, EmailVerified: yes()}, "/")
		if f.signedIn() {
			t.Errorf("%q signed in: lower-cased, it reads as another address", email)
		}
	}
}
