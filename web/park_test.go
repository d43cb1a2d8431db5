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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/web"
)

// parkEnv is a real server whose web.Server the test keeps, to see how many
// agents are parked off their connection's goroutine.
type parkEnv struct {
	t   *testing.T
	srv *web.Server
	hs  *httptest.Server
	svc *gate.Service
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
	return &parkEnv{t: t, srv: s, hs: hs, svc: svc}
}

func (e *parkEnv) create(timeout string) *gate.Request {
	e.t.Helper()
	body := `{"tool_name":"deploy"` + timeout + `}`
	res, err := http.Post(e.hs.URL+"/api/v1/approvals", "application/json", strings.NewReader(body))
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

// rawGet sends a long poll on a connection of its own and returns it, so
// the test can read everything the server ever writes on it.
func (e *parkEnv) rawGet(path string) net.Conn {
	e.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.hs.URL, "http://"))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		e.t.Fatal(err)
	}
	return conn
}

func (e *parkEnv) rawPost(path, body string) net.Conn {
	e.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.hs.URL, "http://"))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	req := "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: " +
		itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(conn, req); err != nil {
		e.t.Fatal(err)
	}
	return conn
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

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

func (e *parkEnv) waitParked(n int64) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
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

func TestParkedLongPollWokenByVerdict(t *testing.T) {
	e := newParkEnv(t)
	r := e.create("")
	conns := []net.Conn{e.rawGet("/api/v1/approvals/" + r.ID + "?wait=30s"), e.rawGet("/api/v1/approvals/" + r.ID + "?wait=30s")}
	e.waitParked(2)
	e.approve(r.ID)
	for _, conn := range conns {
		res, body := readOne(t, conn)
		var got gate.Request
		if err := json.Unmarshal(body, &got); err != nil || res.StatusCode != 200 || got.Status != gate.StatusApproved ||
			got.DecidedBy != "web:alice" || res.Header.Get("Content-Type") != "application/json" || res.Header.Get("Retry-After") != "" {
			t.Fatalf("%d %v %s %v", res.StatusCode, res.Header, body, err)
		}
	}
	e.waitParked(0)
}

func TestParkedGateWokenByVerdict(t *testing.T) {
	e := newParkEnv(t)
	conn := e.rawPost("/api/v1/gate?wait=30s", `{"tool_name":"deploy","idempotency_key":"k"}`)
	e.waitParked(1)
	rs, _, err := e.svc.List(context.Background(), gate.Filter{})
	if err != nil || len(rs) != 1 {
		t.Fatal(rs, err)
	}
	e.approve(rs[0].ID)
	res, body := readOne(t, conn)
	var hr web.HookResult
	if err := json.Unmarshal(body, &hr); err != nil || res.StatusCode != 200 || !hr.Allow || hr.Status != "approved" || hr.RequestID != rs[0].ID {
		t.Fatalf("%d %s %v", res.StatusCode, body, err)
	}
}

func TestParkedLongPollWaitLimit(t *testing.T) {
	e := newParkEnv(t)
	r := e.create("")
	conn := e.rawGet("/api/v1/approvals/" + r.ID + "?wait=1500ms")
	e.waitParked(1)
	res, body := readOne(t, conn)
	var got gate.Request
	if err := json.Unmarshal(body, &got); err != nil || res.StatusCode != 200 || got.Status != gate.StatusPending || res.Header.Get("Retry-After") != "0" {
		t.Fatalf("%d %v %s %v", res.StatusCode, res.Header, body, err)
	}
	e.waitParked(0)
}

func TestParkedGateExpiry(t *testing.T) {
	e := newParkEnv(t)
	conn := e.rawPost("/api/v1/gate?wait=30s", `{"tool_name":"deploy","timeout_seconds":1}`)
	start := time.Now()
	e.waitParked(1)
	res, body := readOne(t, conn)
	var hr web.HookResult
	if err := json.Unmarshal(body, &hr); err != nil || res.StatusCode != 200 || hr.Allow || hr.Status != "expired" {
		t.Fatalf("%d %s %v", res.StatusCode, body, err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("expiry answered after %s", took)
	}
}

func TestParkedAnsweredAtShutdown(t *testing.T) {
	e := newParkEnv(t)
	r := e.create("")
	conn := e.rawGet("/api/v1/approvals/" + r.ID + "?wait=5m")
	e.waitParked(1)
	e.svc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.srv.Parked(); n != 0 {
		t.Fatalf("%d still parked after Shutdown", n)
	}
	res, body := readOne(t, conn)
	var got gate.Request
	if err := json.Unmarshal(body, &got); err != nil || res.StatusCode != 200 || got.Status != gate.StatusPending {
		t.Fatalf("%d %s %v", res.StatusCode, body, err)
	}
	// A long poll that arrives while stopping is answered at once.
	start := time.Now()
	conn2 := e.rawGet("/api/v1/approvals/" + r.ID + "?wait=5m")
	conn2.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn2), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.Contains(string(body), `"pending"`) || time.Since(start) > 2*time.Second {
		t.Fatalf("%d %s after %s", res.StatusCode, body, time.Since(start))
	}
}

func TestParkedClientGone(t *testing.T) {
	e := newParkEnv(t)
	r := e.create("")
	conn := e.rawGet("/api/v1/approvals/" + r.ID + "?wait=30s")
	e.waitParked(1)
	conn.Close()
	e.approve(r.ID)
	e.waitParked(0)
	// The server goes on serving.
	got, err := e.svc.Get(context.Background(), r.ID)
	if err != nil || got.Status != gate.StatusApproved {
		t.Fatal(got, err)
	}
}

func TestParkedNotFoundAndFinalAnswerAtOnce(t *testing.T) {
	e := newParkEnv(t)
	res, body := readOne(t, e.rawGet("/api/v1/approvals/nope?wait=30s"))
	if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "not_found") {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	r := e.create("")
	e.approve(r.ID)
	res, body = readOne(t, e.rawGet("/api/v1/approvals/"+r.ID+"?wait=30s"))
	if res.StatusCode != 200 || !strings.Contains(string(body), `"approved"`) {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}

// TestParkExactlyOnce races every way a parked waiter can be answered:
// wake-ups with and without the row, the verdict, the wait limit and Stop.
func TestParkExactlyOnce(t *testing.T) {
	e := newParkEnv(t)
	ctx := context.Background()
	const n = 50
	var calls [n]atomic.Int32
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		r := e.create("")
		ids[i] = r.ID
		p, _, err := e.svc.Park(ctx, r.ID, time.Duration(i%5)*20*time.Millisecond+time.Millisecond)
		if err != nil || p == nil {
			t.Fatal(p, err)
		}
		wg.Add(1)
		p.Arm(func(*gate.Request, error) { calls[i].Add(1); wg.Done() })
	}
	for i, id := range ids {
		go e.svc.Wake(id)
		if i%2 == 0 {
			go e.approve(id)
		}
	}
	time.Sleep(30 * time.Millisecond)
	e.svc.Stop()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("not every parked waiter was answered")
	}
	time.Sleep(100 * time.Millisecond)
	for i := range calls {
		if c := calls[i].Load(); c != 1 {
			t.Fatalf("waiter %d answered %d times", i, c)
		}
	}
}
