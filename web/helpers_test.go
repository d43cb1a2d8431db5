package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/web"
)

const testPassword = "correct horse battery"

// env is a real server over a SQLite file in t.TempDir().
type env struct {
	t   *testing.T
	srv *httptest.Server
	svc *gate.Service
	db  *store.DB
	web *web.Server
}

func newEnv(t *testing.T) *env { t.Helper(); return newEnvAt(t, "") }

// newEnvAt is newEnv with a public_url.
func newEnvAt(t *testing.T, publicURL string) *env {
	t.Helper()
	return newEnvWith(t, nil, func(o *web.Options) { o.PublicURL = publicURL })
}

// newEnvWith is newEnv with other routes (nil: the payments route) and
// options changed by mod.
func newEnvWith(t *testing.T, routes []gate.Route, mod func(*web.Options)) *env {
	t.Helper()
	if routes == nil {
		routes = []gate.Route{{Name: "payments", Tool: "oa__purchase_*", Channels: []string{gate.WebChannel}, Timeout: time.Hour}}
	}
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "gh.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	hash, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users := []config.User{
		{Name: "alice", Role: config.RoleApprover, PasswordBcrypt: string(hash)},
		{Name: "audrey", Role: config.RoleAuditor, PasswordBcrypt: string(hash)},
	}
	return newEnvOver(t, db, db, routes, users, mod)
}

// newEnvOver is a gate over st (db, or a wrapper of it) with the web page
// in front, its sessions in db, for users; mod changes the options.
func newEnvOver(t *testing.T, st gate.Store, db *store.DB, routes []gate.Route, users []config.User, mod func(*web.Options)) *env {
	t.Helper()
	svc := gate.NewService(gate.Options{Store: st, Routes: routes})
	svc.Register(web.Channel{})
	bg, cancel := context.WithCancel(context.Background())
	svc.Start(bg)
	t.Cleanup(func() { svc.Stop(); cancel() })
	o := web.Options{Service: svc, Sessions: db, Users: users}
	if mod != nil {
		mod(&o)
	}
	s, err := web.New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &env{t: t, srv: hs, svc: svc, db: db, web: s}
}

// submit creates a request through the agent API.
func (e *env) submit(body string) *gate.Request {
	e.t.Helper()
	res, err := http.Post(e.srv.URL+"/api/v1/approvals", "application/json", strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var r gate.Request
	if res.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(res.Body)
		e.t.Fatalf("submit: %d %s", res.StatusCode, b)
	}
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		e.t.Fatal(err)
	}
	return &r
}

// browser is a cookie-keeping client that does not follow redirects, so
// tests see them.
type browser struct {
	e    *env
	c    *http.Client
	csrf string
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login logs in through the form, as a person would.
func (e *env) login(name string) *browser {
	e.t.Helper()
	b := e.browser()
	_, page := b.get("/login")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		e.t.Fatalf("no csrf field on the login page:\n%s", page)
	}
	res, _ := b.post("/login", url.Values{"csrf": {m[1]}, "username": {name}, "password": {testPassword}})
	if res.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("login as %s: status %d", name, res.StatusCode)
	}
	_, page = b.get("/")
	m = csrfField.FindStringSubmatch(page)
	if m == nil {
		e.t.Fatalf("no csrf field after login:\n%s", page)
	}
	b.csrf = m[1]
	return b
}

func (b *browser) get(path string) (*http.Response, string) {
	b.e.t.Helper()
	res, err := b.c.Get(b.e.srv.URL + path)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	b.e.t.Helper()
	res, err := b.c.PostForm(b.e.srv.URL+path, form)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}
