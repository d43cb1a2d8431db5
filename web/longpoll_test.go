package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/web"
)

// parkEnv is a real server whose web.Server the test keeps, to see how many
// agents are parked off net/http.
type parkEnv struct {
	t   *testing.T
	srv *web.Server
	hs  *httptest.Server
	svc *gate.Service
	db  *store.DB
}

func newParkEnv(t *testing.T) *parkEnv {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "gh.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := gate.NewService(gate.Options{Store: db})
	svc.Register(web.Channel{})
	bg, cancel := context.WithCancel(ctx)
	svc.Start(bg)
	t.Cleanup(func() { svc.Stop(); cancel() })
	s, err := web.New(web.Options{Service: svc, Sessions: db})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &parkEnv{t: t, srv: s, hs: hs, svc: svc, db: db}
}

func (e *parkEnv) create(extra string) *gate.Request {
	e.t.Helper()
	res, err := http.Post(e.hs.URL+"/api/v1/approvals", "application/json", strings.NewReader(`{"tool_name":"deploy"`+extra+`}`))
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var r gate.Request
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil || res.StatusCode != http.StatusCreated {
		e.t.Fatalf("create: %d %v", res.StatusCode, err)
	}
	return &r
}

// raw sends one request on a connection of its own and returns it, so the
// test can read everything the server ever writes on it.
func (e *parkEnv) raw(method, path, body string) net.Conn {
	e.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.hs.URL, "http://"))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	req := method + " " + path + " HTTP/1.1\r\nHost: localhost\r\n"
	if body != "" {
		req += "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"+body); err != nil {
		e.t.Fatal(err)
	}
	return conn
}

// readOne reads the one response on conn and checks that nothing follows
// it: the server answers exactly once, then closes.
func readOne(t *testing.T, conn net.Conn) (*http.Response, []byte) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Fatalf("more than one answer; after the first came %q", rest)
	}
	return res, body
}

// awaitParked waits until n agents are parked.
func (e *parkEnv) awaitParked(n int64) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.srv.Parked() != n {
		if time.Now().After(deadline) {
			e.t.Fatalf("parked: %d, want %d", e.srv.Parked(), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (e *parkEnv) approve(id string) {
	e.t.Helper()
	if _, err := e.svc.Decide(context.Background(), gate.Decision{RequestID: id, Approve: true, Actor: "web:alice", Via: gate.WebChannel}); err != nil {
		e.t.Fatal(err)
	}
}

func TestParkedLongPollsAnswerOnce(t *testing.T) {
	e := newParkEnv(t)
	r1, r2 := e.create(""), e.create("")
	get := e.raw("GET", "/api/v1/approvals/"+r1.ID+"?wait=60s", "")
	gatePost := e.raw("POST", "/api/v1/gate?wait=60s", `{"tool_name":"deploy","idempotency_key":"k1"}`)
	e.awaitParked(2)
	e.approve(r1.ID)
	res, body := readOne(t, get)
	var got gate.Request
	if err := json.Unmarshal(body, &got); err != nil || res.StatusCode != 200 || got.Status != gate.StatusApproved ||
		!res.Close || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("parked GET answered %d %v %s: %s", res.StatusCode, res.Header, err, body)
	}
	var pending []*gate.Request
	eventuallyT(t, "the gate call's request", func() bool {
		pending, _, _ = e.svc.List(context.Background(), gate.Filter{Status: []gate.Status{gate.StatusPending}})
		return len(pending) == 2 // r2 and the gate call's
	})
	for _, p := range pending {
		if p.ID != r2.ID {
			e.approve(p.ID)
		}
	}
	res, body = readOne(t, gatePost)
	var hr web.HookResult
	if err := json.Unmarshal(body, &hr); err != nil || res.StatusCode != 200 || !hr.Allow || hr.Status != "approved" {
		t.Fatalf("parked gate call answered %d: %s", res.StatusCode, body)
	}
}

func TestParkedLongPollWaitLimit(t *testing.T) {
	e := newParkEnv(t)
	r := e.create("")
	conn := e.raw("GET", "/api/v1/approvals/"+r.ID+"?wait=1s", "")
	res, body := readOne(t, conn)
	if res.StatusCode != 200 || res.Header.Get("Retry-After") != "0" || !strings.Contains(string(body), `"status":"pending"`) {
		t.Fatalf("at the wait limit: %d %v %s", res.StatusCode, res.Header, body)
	}
}

// Shutdown answers every parked agent ("still pending, come back") before
// it returns.
func TestParkedAnsweredAtShutdown(t *testing.T) {
	e := newParkEnv(t)
	r := e.create("")
	conns := []net.Conn{e.raw("GET", "/api/v1/approvals/"+r.ID+"?wait=60s", ""),
		e.raw("POST", "/api/v1/gate?wait=60s", `{"tool_name":"deploy","idempotency_key":"k2"}`)}
	e.awaitParked(2)
	e.svc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if e.srv.Parked() != 0 {
		t.Fatalf("%d agents still parked after Shutdown", e.srv.Parked())
	}
	for _, c := range conns {
		res, body := readOne(t, c)
		if res.StatusCode != 200 || !strings.Contains(string(body), `"status":"pending"`) || strings.Contains(string(body), `"allow":true`) {
			t.Fatalf("at shutdown: %d %s", res.StatusCode, body)
		}
	}
}

// A parked /api/v1/gate call whose wait fails (the database is gone when
// its deadline comes) is answered with a deny, as every failure there.
func TestParkedGateFailureDenies(t *testing.T) {
	e := newParkEnv(t)
	conn := e.raw("POST", "/api/v1/gate?wait=60s", `{"tool_name":"deploy","timeout_seconds":1}`)
	e.awaitParked(1)
	e.db.Close()
	res, body := readOne(t, conn)
	var hr web.HookResult
	if err := json.Unmarshal(body, &hr); err != nil || hr.Allow || res.StatusCode < 500 || !strings.Contains(hr.Error, "denied") {
		t.Fatalf("a parked gate call whose wait failed: %d %s", res.StatusCode, body)
	}
}

// What parking is for: a waiting agent holds no goroutine at all, neither
// net/http's two (the connection's and its background reader, with their
// buffers) nor one of its own (about 4 KB of stack each, which also raises
// the garbage collector's heap goal). With a goroutine per parked agent
// this fails; without parking it fails twice over.
func TestParkedAgentsHoldNoGoroutine(t *testing.T) {
	e := newParkEnv(t)
	const n = 60
	before := runtime.NumGoroutine()
	for i := range n {
		e.raw("POST", "/api/v1/gate?wait=60s", `{"tool_name":"deploy","idempotency_key":"g`+strconv.Itoa(i)+`"}`)
	}
	e.awaitParked(n)
	deadline := time.Now().Add(10 * time.Second)
	for extra := runtime.NumGoroutine() - before; extra > n/5; extra = runtime.NumGoroutine() - before {
		if time.Now().After(deadline) {
			t.Fatalf("%d parked agents hold %d goroutines, want none", n, extra)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func eventuallyT(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
