//go:build faults

package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// TestFaultKillDuringVerdicts: approvers decide a burst of pending
// requests on the web while their agents long-poll; the server is killed
// with SIGKILL mid-burst and restarted on the same database. Every verdict
// an approver was answered for is in the database, no request has two,
// every verdict an agent read before the crash is the one recorded, the
// audit chain verifies, and agents re-attaching with their keys read
// exactly the recorded verdict.
func TestFaultKillDuringVerdicts(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		killDuringVerdicts(t, dir, "sqlite", filepath.Join(dir, "gatehouse.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv("GATEHOUSE_TEST_POSTGRES") == "" {
			t.Skip("GATEHOUSE_TEST_POSTGRES is not set")
		}
		killDuringVerdicts(t, t.TempDir(), "postgres", storetest.PostgresDSN(t))
	})
}

func killDuringVerdicts(t *testing.T, dir, driver, dsn string) {
	const (
		n         = 150 // pending requests
		approvers = 4   // people deciding at once
	)
	cfg := e2eConfig(t, dir, freePort(t), "")
	serverDSN, app := dsn, ""
	if driver == "postgres" {
		// Named, so that the test can tell when PostgreSQL is done with
		// the killed server's connections.
		app = fmt.Sprintf("gh_kill_%d", time.Now().UnixNano())
		serverDSN = withApplicationName(t, dsn, app)
	}
	withDatabase(t, cfg, driver, serverDSN)
	srv := startServer(t, cfg)
	traffic := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n + approvers}}
	defer traffic.CloseIdleConnections()

	ids, keys := make([]string, n), map[string]string{}
	for i := range n {
		key := fmt.Sprintf("burst-%d", i)
		a, err := callGate(traffic, srv.URL, key, 0)
		if err != nil || a.Status != "pending" {
			t.Fatalf("call %d: %+v %v", i, a, err)
		}
		ids[i], keys[a.RequestID] = a.RequestID, key
	}
	sessions := make([]*http.Client, approvers)
	for i := range sessions {
		sessions[i] = webLogin(t, srv.URL, "alice")
	}

	var (
		mu       sync.Mutex
		acked    = map[string]string{} // id → verdict the approver was answered for
		sent     = map[string]string{} // id → verdict sent, answered or not
		agentSaw = map[string]gateAnswer{}
	)
	// The agents, each long-polling its request.
	var agents sync.WaitGroup
	for _, id := range ids {
		agents.Add(1)
		go func() {
			defer agents.Done()
			a, err := callGate(traffic, srv.URL, keys[id], time.Minute)
			if err == nil {
				mu.Lock()
				agentSaw[id] = a
				mu.Unlock()
			}
		}()
	}
	awaitWaiters(t, n, srv.URL)

	// The burst: approvers take requests in turn until the server dies.
	work := make(chan int, n)
	for i := range n {
		work <- i
	}
	close(work)
	var killed atomic.Bool
	var burst sync.WaitGroup
	for _, c := range sessions {
		burst.Add(1)
		go func() {
			defer burst.Done()
			for i := range work {
				if killed.Load() {
					return
				}
				id, verdict, st := ids[i], "approve", "approved"
				if i%2 == 1 {
					verdict, st = "reject", "rejected"
				}
				mu.Lock()
				sent[id] = st
				mu.Unlock()
				code, err := tryWebDecide(c, srv.URL, id, verdict, "burst")
				if err != nil {
					return // the server is gone
				}
				if code != http.StatusSeeOther {
					t.Errorf("deciding %s: %d", id, code)
					return
				}
				mu.Lock()
				acked[id] = st
				mu.Unlock()
			}
		}()
	}
	awaitCount(t, &mu, func() int { return len(acked) }, n/3)
	killed.Store(true)
	srv.Kill()
	burst.Wait()
	agents.Wait()
	if app != "" {
		// A COMMIT PostgreSQL had received when the server died still
		// commits: read the database once it has, not while it may.
		awaitNoConnections(t, dsn, app)
	}

	// The database as the crash left it.
	rows := readRows(t, driver, dsn)
	if rows.integrity != "ok" {
		t.Errorf("integrity check after the crash: %s", rows.integrity)
	}
	mu.Lock()
	defer mu.Unlock()
	lost, doubled, wrongAgent, inFlightRecorded := 0, 0, 0, 0
	for _, id := range ids {
		got := rows.status[id]
		if rows.decided[id] > 1 || (got == "pending") != (rows.decided[id] == 0) {
			doubled++
			t.Errorf("request %s is %q with %d decided events", id, got, rows.decided[id])
		}
		if want, ok := acked[id]; ok && got != want {
			lost++
			t.Errorf("request %s: the approver was answered for %s, the database holds %q", id, want, got)
		}
		if want, ok := sent[id]; ok && acked[id] == "" {
			if got != "pending" && got != want {
				t.Errorf("request %s: %s was sent, the database holds %q", id, want, got)
			}
			if got == want {
				inFlightRecorded++
			}
		}
		if sent[id] == "" && got != "pending" {
			t.Errorf("request %s was never decided, the database holds %q", id, got)
		}
		if a, ok := agentSaw[id]; ok && a.Status != "pending" && (a.Status != got || a.Allow != (got == "approved")) {
			wrongAgent++
			t.Errorf("request %s: its agent read %s (allow %v) before the crash, the database holds %q", id, a.Status, a.Allow, got)
		}
	}
	agentsAnswered := 0
	for _, a := range agentSaw {
		if a.Status != "pending" {
			agentsAnswered++
		}
	}

	// Restarted on the same database: agents re-attach and read the record.
	srv = startServer(t, cfg)
	reattached := 0
	for _, id := range ids {
		a, err := callGate(traffic, srv.URL, keys[id], 0)
		if err != nil {
			t.Fatal(err)
		}
		if a.RequestID != id || a.Status != rows.status[id] || a.Allow != (a.Status == "approved") {
			wrongAgent++
			t.Errorf("request %s: re-attached agent read %+v, the database holds %q", id, a, rows.status[id])
			continue
		}
		reattached++
	}
	// The ones left pending are decided now, and their agents hear it.
	alice := webLogin(t, srv.URL, "alice")
	finished := 0
	for _, id := range ids {
		if rows.status[id] != "pending" {
			continue
		}
		got := make(chan gateAnswer, 1)
		go func() {
			a, err := callGate(traffic, srv.URL, keys[id], 30*time.Second)
			if err != nil {
				a.Error = err.Error()
			}
			got <- a
		}()
		awaitWaiters(t, 1, srv.URL)
		if code := webDecide(t, alice, srv.URL, id, "reject", "after the restart"); code != http.StatusSeeOther {
			t.Fatalf("deciding %s after the restart: %d", id, code)
		}
		if a := <-got; a.Status != "rejected" || a.Allow {
			t.Errorf("request %s: its agent read %+v after the restart's verdict", id, a)
		} else {
			finished++
		}
	}
	chain := awaitChainWhole(t, cfg)

	figure(t, "kill_"+driver+"_requests", n)
	figure(t, "kill_"+driver+"_acked_before_kill", len(acked))
	figure(t, "kill_"+driver+"_in_flight_recorded", fmt.Sprintf("%d/%d", inFlightRecorded, len(sent)-len(acked)))
	figure(t, "kill_"+driver+"_lost", lost)
	figure(t, "kill_"+driver+"_doubled", doubled)
	figure(t, "kill_"+driver+"_agents_answered_before_kill", agentsAnswered)
	figure(t, "kill_"+driver+"_agent_mismatch", wrongAgent)
	figure(t, "kill_"+driver+"_reattached_exact", fmt.Sprintf("%d/%d", reattached, n))
	figure(t, "kill_"+driver+"_decided_after_restart", finished)
	t.Logf("%s", chain)
}

// withApplicationName is dsn (a URL or key=value pairs) with PostgreSQL's
// application_name set.
func withApplicationName(t *testing.T, dsn, name string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return dsn + " application_name=" + name
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// awaitNoConnections waits until PostgreSQL holds no connection named app:
// the killed server's backends have seen their sockets close, after
// finishing what they had received.
func awaitNoConnections(t *testing.T, dsn, app string) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("PostgreSQL still holds %d connections of the killed server after 30s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
