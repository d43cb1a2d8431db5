package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
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

// signedOut says whether b's session has ended: a page sends it to log in.
func (b *browser) signedOut() bool {
	b.e.t.Helper()
	res, _ := b.get("/history")
	return res.StatusCode == http.StatusSeeOther && strings.HasPrefix(res.Header.Get("Location"), "/login")
}

// newPassword is a password_bcrypt for a password of the test's own.
func newPassword(t *testing.T, password string) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(hash)
}

// TestPasswordChangeEndsSessions: a reload that gives alice a new
// password_bcrypt ends the sessions made with her old one (a thief's among
// them, which kept approving until session_ttl: found by a reviewer), and
// she signs in with the new one. audrey, whose entry the reload keeps as
// it was, stays signed in: a reload does not sign everyone out.
func TestPasswordChangeEndsSessions(t *testing.T) {
	var users []config.User
	e := newEnvWith(t, nil, func(o *web.Options) { users = o.Users })
	r := e.submit(`{"tool_name":"oa__purchase_pay","tool_args":{"amount":60000}}`)
	thief := e.login("alice")
	audrey := e.login("audrey")
	alice := users[0]
	alice.PasswordBcrypt = newPassword(t, "a brand new password")
	e.web.SetAuth(nil, []config.User{alice, users[1]})

	res, _ := thief.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {thief.csrf}, "verdict": {"approve"}})
	if got, _ := e.svc.Get(context.Background(), r.ID); got.Status == gate.StatusApproved {
		t.Errorf("a session made with alice's old password approved after the password was changed (status %d, approved by %s)", res.StatusCode, got.DecidedBy)
	}
	if res.StatusCode != http.StatusUnauthorized || !thief.signedOut() {
		t.Errorf("alice's session from her old password is not signed out (deciding: %d)", res.StatusCode)
	}
	if audrey.signedOut() {
		t.Error("audrey, whose password the reload kept, was signed out")
	}
	if _, page := audrey.get("/"); !strings.Contains(page, "audrey · auditor") {
		t.Errorf("audrey's session after the reload:\n%s", page)
	}

	b := e.browser()
	_, page := b.get("/login")
	m := csrfField.FindStringSubmatch(page)
	if res, _ := b.post("/login", url.Values{"csrf": {m[1]}, "username": {"alice"}, "password": {"a brand new password"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("alice logging in with her new password: %d", res.StatusCode)
	}
	_, page = b.get("/")
	m = csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf field after alice's new login:\n%s", page)
	}
	b.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {m[1]}, "verdict": {"approve"}})
	if got, _ := e.svc.Get(context.Background(), r.ID); got.Status != gate.StatusApproved || got.DecidedBy != "web:alice" {
		t.Errorf("alice's session from her new password: %s by %q, want approved by web:alice", got.Status, got.DecidedBy)
	}
	// Another reload with the same entries keeps the new session.
	e.web.SetAuth(nil, []config.User{alice, users[1]})
	if b.signedOut() || audrey.signedOut() {
		t.Error("a reload that changed no password signed someone out")
	}
}

// TestBootstrapSessionEndsWithItsPassword: the bootstrap admin's one-time
// password is new at each start, and a session made with an earlier
// start's ends at the next (found by a reviewer: it kept admin rights).
// A server with the same bootstrap password keeps it: what ends it is the
// password, not the restart.
func TestBootstrapSessionEndsWithItsPassword(t *testing.T) {
	e := newEnvWith(t, nil, func(o *web.Options) { o.Users = nil; o.BootstrapPassword = "first-start-password" })
	r := e.submit(`{"tool_name":"oa__purchase_pay","tool_args":{"amount":60000}}`)
	b := e.browser()
	_, page := b.get("/login")
	m := csrfField.FindStringSubmatch(page)
	if res, _ := b.post("/login", url.Values{"csrf": {m[1]}, "username": {"admin"}, "password": {"first-start-password"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", res.StatusCode)
	}
	restart := func(password string) {
		t.Helper()
		s, err := web.New(web.Options{Service: e.svc, Sessions: e.db, BootstrapPassword: password})
		if err != nil {
			t.Fatal(err)
		}
		e.srv.Config.Handler = s.Handler()
	}

	restart("first-start-password")
	if _, page := b.get("/"); !strings.Contains(page, "admin · admin") {
		t.Fatalf("the session after a start with the same bootstrap password:\n%s", page)
	}

	restart("second-start-password")
	_, page = b.get("/")
	if m = csrfField.FindStringSubmatch(page); m != nil {
		b.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {m[1]}, "verdict": {"approve"}})
	}
	if got, _ := e.svc.Get(context.Background(), r.ID); got.Status == gate.StatusApproved {
		t.Errorf("a session made with the previous start's bootstrap password approved after the restart (by %s)", got.DecidedBy)
	}
	if !b.signedOut() {
		t.Error("the session made with the previous start's bootstrap password is not signed out")
	}
}

// TestSessionsWithoutACredential: a password session made before sessions
// kept their credential (schema version 11) has none, and ends, since
// which password made it cannot be told. A single sign-on session has
// none either, and is not a password's: it holds, across a reload that
// changes passwords too.
func TestSessionsWithoutACredential(t *testing.T) {
	e := newSSOEnv(t)
	session := func(tok string, se store.Session) *browser {
		t.Helper()
		sum := sha256.Sum256([]byte(tok))
		se.ID, se.CSRF, se.CreatedAt, se.ExpiresAt = hex.EncodeToString(sum[:]), "x", time.Now(), time.Now().Add(time.Hour)
		if err := e.db.CreateSession(context.Background(), se); err != nil {
			t.Fatal(err)
		}
		b := e.browser()
		u, _ := url.Parse(e.srv.URL)
		b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "gatehouse_session", Value: tok}})
		return b
	}
	if b := session("a-password-session-from-before", store.Session{UserName: "alice", Role: config.RoleApprover}); !b.signedOut() {
		t.Error("a password session with no credential (made before version 11) is not signed out")
	}
	if b := session("an-sso-session-from-before", store.Session{UserName: "bob@example.com", Role: config.RoleApprover, Provider: web.ProviderOIDC}); b.signedOut() {
		t.Error("a single sign-on session with no credential was signed out")
	}

	f := e.signIn(oidctest.Identity{Subject: "u1", Email: "carol@example.com", EmailVerified: yes()}, "/")
	password := e.login("alice")
	e.web.SetAuth(nil, []config.User{{Name: "alice", Role: config.RoleApprover, PasswordBcrypt: newPassword(t, "a brand new password")}})
	if !password.signedOut() {
		t.Error("alice's password session outlived her password beside single sign-on")
	}
	if !f.signedIn() {
		t.Error("a single sign-on session ended at a reload that changed a password")
	}
}
