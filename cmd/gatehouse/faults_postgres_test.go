//go:build faults

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFaultPostgresDown: the server runs on its own PostgreSQL cluster,
// which is crashed (pg_ctl stop -m immediate) while agents create requests
// and long-poll, and started again. While it is down every answer of the
// gate is a deny, and a fast one; no agent ever reads an allow before a
// person gave one; after the restart every request that an agent was told
// exists is still there and decidable, the agents re-attach and each gets
// the verdict recorded, and the server holds no more goroutines than
// before.
func TestFaultPostgresDown(t *testing.T) {
	pg := privatePostgres(t)
	dir := t.TempDir()
	cfg := e2eConfig(t, dir, freePort(t), "")
	withDatabase(t, cfg, "postgres", pg.DSN())
	srv := startServer(t, cfg)
	traffic := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer traffic.CloseIdleConnections()

	var decided atomic.Bool // set once the first verdict is given, after the restart
	var (
		mu         sync.Mutex
		known      = map[string]bool{} // every request id an agent was told of
		deniedDown = map[string]bool{} // the pollers denied while the database was down
		allows     []string            // allows read before anyone decided
		downAns    []gateAnswer        // the creators' answers while the database was down
		upAns      []gateAnswer        // and while it was up
	)
	// The database's phase: up, down (crashed), restarting (pg_ctl start
	// running: it may take calls before it returns), back.
	const (
		up int32 = iota
		down
		restarting
		back
	)
	var phase atomic.Int32

	// The baseline: the server warmed up, with nobody waiting.
	for i := range 10 {
		a, err := callGate(traffic, srv.URL, fmt.Sprintf("warm-%d", i), 0)
		if err != nil || a.Status != "pending" {
			t.Fatalf("warm-up call: %+v %v", a, err)
		}
		known[a.RequestID] = true
	}
	goroutinesBefore := quietGoroutines(t, srv.URL, traffic)

	note := func(a gateAnswer) {
		mu.Lock()
		defer mu.Unlock()
		if a.RequestID != "" {
			known[a.RequestID] = true
		}
		if a.Allow && !decided.Load() {
			allows = append(allows, fmt.Sprintf("%s %d %s", a.RequestID, a.Code, a.Status))
		}
	}

	// Long-polling agents, each re-attaching with its key every second.
	const pollers = 16
	finals := make(chan gateAnswer, pollers)
	attached := make(chan struct{}, pollers)
	for i := range pollers {
		go func() {
			key, first := fmt.Sprintf("poller-%d", i), true
			deadline := time.Now().Add(2 * time.Minute)
			for time.Now().Before(deadline) {
				a, err := callGate(traffic, srv.URL, key, time.Second)
				if err != nil {
					time.Sleep(50 * time.Millisecond) // no answer: back off, as the client does
					continue
				}
				note(a)
				if a.Status == "error" && phase.Load() == down {
					mu.Lock()
					deniedDown[key] = true
					mu.Unlock()
				}
				if a.Status == "pending" && first {
					first = false
					attached <- struct{}{}
				}
				if a.Status != "pending" && a.Status != "error" {
					finals <- a
					return
				}
				if a.Status == "error" {
					time.Sleep(50 * time.Millisecond)
				}
			}
			finals <- gateAnswer{Status: "gave up: " + key}
		}()
	}
	for range pollers {
		<-attached
	}
	// Agents of the command line, holding their 55 s long polls.
	type cliAgent struct {
		cmd    *exec.Cmd
		stdout syncBuffer
		done   chan error
	}
	agents := make([]*cliAgent, 4)
	for i := range agents {
		a := &cliAgent{cmd: cli(srv.URL, "request", "--tool", "deploy", "--args", fmt.Sprintf(`{"cli":%d}`, i), "--retry-for", "2m"),
			done: make(chan error, 1)}
		a.cmd.Stdout = &a.stdout
		if err := a.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer a.cmd.Process.Kill()
		go func() { a.done <- a.cmd.Wait() }()
		agents[i] = a
	}
	awaitWaiters(t, len(agents), srv.URL)

	// A creator: new calls, one after another, answered at once.
	stopCreating := make(chan struct{})
	created := make(chan struct{})
	downCalls := make(chan struct{}, 1)
	go func() {
		defer close(created)
		for i := 0; ; i++ {
			select {
			case <-stopCreating:
				return
			default:
			}
			before := phase.Load()
			a, err := callGate(traffic, srv.URL, fmt.Sprintf("new-%d", i), 0)
			if err != nil {
				t.Errorf("the server gave no answer (database phase %d): %v", before, err)
				return
			}
			note(a)
			mu.Lock()
			if before == down && phase.Load() == down {
				downAns = append(downAns, a)
				if len(downAns) == 300 {
					downCalls <- struct{}{}
				}
			} else if before == up {
				upAns = append(upAns, a)
			}
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()

	alice := webLogin(t, srv.URL, "alice") // sessions live in the database

	// A request whose deadline falls while the database is down: its agent
	// is denied when the expiry cannot be written, and afterwards it is
	// expired, never left to an approver.
	short, err := callGateWith(traffic, srv.URL, "short", 0, map[string]any{"timeout_seconds": 2})
	if err != nil || short.Status != "pending" {
		t.Fatalf("short call: %+v %v", short, err)
	}
	shortDeadline := time.Now().Add(2 * time.Second)
	shortAnswer := make(chan gateAnswer, 1)
	go func() {
		a, err := callGate(traffic, srv.URL, "short", 30*time.Second)
		if err != nil {
			a.Error = err.Error()
		}
		shortAnswer <- a
	}()

	// Crash the database mid-traffic.
	awaitCount(t, &mu, func() int { return len(upAns) }, 30)
	pg.Crash(t)
	phase.Store(down) // calls started from now on find it down
	downAt := time.Now()
	if time.Now().After(shortDeadline) {
		t.Fatal("the short request's deadline passed before the crash: the machine is too slow for this test")
	}
	select {
	case <-downCalls:
	case <-time.After(60 * time.Second):
		t.Fatal("fewer than 300 answers in 60 s while the database was down")
	}
	// Every poller's long poll ended and its re-attach was denied.
	awaitCount(t, &mu, func() int { return len(deniedDown) }, pollers)
	select {
	case a := <-shortAnswer:
		if a.Allow || a.Code != http.StatusServiceUnavailable || a.Status != "error" {
			t.Errorf("the agent of a request expiring while the database was down read %d %+v, want a 503 deny", a.Code, a)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent of a request expiring while the database was down got no answer")
	}
	// A person tapping now is refused, and the request stays pending.
	if code, _ := tryWebDecide(alice, srv.URL, firstKnown(&mu, known), "approve", ""); code == http.StatusSeeOther {
		t.Fatal("a verdict was accepted while the database was down")
	}
	resp, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz answered %d with the database down, want 503", resp.StatusCode)
	}

	// Claude Code's http hook reads any non-2xx as "proceed": it gets a
	// 200 with an explicit deny.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hooks/claude-code?wait=5s", strings.NewReader(hookE2EPayload))
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	hook, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(hook), `"permissionDecision":"deny"`) {
		t.Errorf("the Claude Code hook answered %d %s with the database down, want 200 and a deny", resp.StatusCode, hook)
	}

	phase.Store(restarting)
	pg.Start(t)
	phase.Store(back)
	outage := time.Since(downAt)
	restarted := time.Now()
	for {
		a, err := callGate(traffic, srv.URL, fmt.Sprintf("after-%d", time.Now().UnixNano()), 0)
		if err == nil && a.Status == "pending" {
			note(a)
			break
		}
		if time.Since(restarted) > 30*time.Second {
			t.Fatalf("the gate did not recover within 30 s of the database's restart: %+v %v\n%s", a, err, srv.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	recovery := time.Since(restarted)
	close(stopCreating)
	<-created

	// While down: every answer denied, most with 503, and fast.
	var took []time.Duration
	codes := map[int]int{}
	for _, a := range downAns {
		took = append(took, a.Took)
		codes[a.Code]++
		if a.Allow || (a.Code != http.StatusServiceUnavailable && a.Status != "error") {
			t.Errorf("answer while down: %d %+v, want a 503 deny\n%s", a.Code, a, grepLog(srv.Log(), a.RequestID))
		}
	}
	var upTook []time.Duration
	for _, a := range upAns {
		upTook = append(upTook, a.Took)
	}
	p99 := percentile(took, 99)
	if p99 > time.Second {
		t.Errorf("the gate answered in %v at p99 with the database down, want under 1 s", p99)
	}

	// The short one expired (the agent re-attaching hears it), the rest
	// are pending.
	if a, err := callGate(traffic, srv.URL, "short", 10*time.Second); err != nil || a.Status != "expired" || a.Allow {
		t.Errorf("the short request, re-attached after the restart: %+v %v, want expired and denied", a, err)
	}
	mu.Lock()
	delete(known, short.RequestID)
	mu.Unlock()

	// Nothing lost: every request an agent heard of exists, pending.
	all := listAll(t, srv.URL)
	status := map[string]string{}
	for _, r := range all {
		status[r.ID] = r.Status
	}
	mu.Lock()
	ids := make([]string, 0, len(known))
	for id := range known {
		ids = append(ids, id)
	}
	mu.Unlock()
	sort.Strings(ids)
	lost := 0
	for _, id := range ids {
		if status[id] != "pending" {
			lost++
			t.Errorf("request %s is %q after the restart, want pending", id, status[id])
		}
	}
	// A call cut by the crash may have left a request its agent never
	// heard of (it would re-attach with its key): counted, not an error.
	unheard := len(all) - len(ids) - len(agents) - 1 // and the short one
	if unheard < 0 {
		t.Errorf("%d requests in the database, want at least %d", len(all), len(ids)+len(agents))
	}

	// Decide them all, alternately, and check each agent gets its verdict.
	decided.Store(true)
	want := map[string]string{}
	for i, r := range all {
		if r.ID == short.RequestID {
			continue
		}
		verdict, st := "approve", "approved"
		if i%2 == 1 {
			verdict, st = "reject", "rejected"
		}
		if code := webDecide(t, alice, srv.URL, r.ID, verdict, "after the outage"); code != http.StatusSeeOther {
			t.Fatalf("deciding %s after the restart: %d", r.ID, code)
		}
		want[r.ID] = st
	}
	for range pollers {
		select {
		case a := <-finals:
			if want[a.RequestID] == "" || a.Status != want[a.RequestID] || a.Allow != (a.Status == "approved") {
				t.Errorf("a poller got %+v, want %s", a, want[a.RequestID])
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a poller got no verdict within 30 s of the decisions")
		}
	}
	for i, a := range agents {
		select {
		case err := <-a.done:
			var res struct {
				RequestID string `json:"request_id"`
				Status    string `json:"status"`
				Allow     bool   `json:"allow"`
			}
			if jerr := json.Unmarshal([]byte(a.stdout.String()), &res); jerr != nil || res.Status != want[res.RequestID] ||
				res.Allow != (res.Status == "approved") || (err == nil) != res.Allow {
				t.Errorf("command-line agent %d: exit %v, printed %s, want %s", i, err, a.stdout.String(), want[res.RequestID])
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("command-line agent %d got no verdict within 30 s of the decisions", i)
		}
	}
	mu.Lock()
	if len(allows) > 0 {
		t.Errorf("agents read an allow before anyone decided: %v", allows)
	}
	nAllows := len(allows)
	mu.Unlock()

	goroutinesAfter := awaitGoroutines(t, srv.URL, traffic, goroutinesBefore+5)

	figure(t, "pg_outage", outage.Round(time.Millisecond))
	figure(t, "pg_down_answers", len(downAns))
	figure(t, "pg_down_answer_p50", ms(percentile(took, 50)))
	figure(t, "pg_down_answer_p99", ms(p99))
	figure(t, "pg_down_answer_max", ms(percentile(took, 100)))
	figure(t, "pg_down_503", codes[http.StatusServiceUnavailable])
	figure(t, "pg_up_answer_p99", ms(percentile(upTook, 99)))
	figure(t, "pg_allows_before_decision", nAllows)
	figure(t, "pg_pending_kept", fmt.Sprintf("%d/%d", len(ids)-lost, len(ids)))
	figure(t, "pg_waiters_verdict", fmt.Sprintf("%d/%d", pollers+len(agents), pollers+len(agents)))
	figure(t, "pg_unheard_requests", unheard)
	figure(t, "pg_recovery", ms(recovery))
	figure(t, "pg_goroutines_before", goroutinesBefore)
	figure(t, "pg_goroutines_after", goroutinesAfter)
}

// awaitCount waits until n() (read under mu) reaches want.
func awaitCount(t *testing.T, mu *sync.Mutex, n func() int, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got := n()
		mu.Unlock()
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("count %d after 30 s, want %d", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func firstKnown(mu *sync.Mutex, known map[string]bool) string {
	mu.Lock()
	defer mu.Unlock()
	for id := range known {
		return id
	}
	return ""
}

// quietGoroutines reads the server's go_goroutines with the test's
// idle connections closed (each holds a goroutine on the server).
func quietGoroutines(t *testing.T, base string, c *http.Client) int {
	t.Helper()
	c.CloseIdleConnections()
	http.DefaultClient.CloseIdleConnections()
	return int(metric(t, base, "go_goroutines"))
}

// awaitGoroutines waits until the server runs at most limit goroutines,
// failing after 15 s: the ones an outage started must end.
func awaitGoroutines(t *testing.T, base string, c *http.Client, limit int) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := quietGoroutines(t, base, c)
		if n <= limit {
			return n
		}
		if time.Now().After(deadline) {
			t.Errorf("the server runs %d goroutines, want at most %d: a leak", n, limit)
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func grepLog(log, s string) string {
	out := ""
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			out += l + "\n"
		}
	}
	return out
}
