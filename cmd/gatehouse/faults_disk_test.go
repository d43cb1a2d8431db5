//go:build faults

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// TestFaultSQLiteDiskFull: the SQLite database lives on a small tmpfs,
// which is filled while the server runs. Every answer of the gate is then a
// deny or a request that really was stored; a verdict tapped meanwhile is
// either refused or recorded, and the agent waiting on it never reads an
// allow that is not in the database; once space returns the server takes
// new requests and verdicts without a restart; and the file is whole:
// PRAGMA integrity_check is ok, every row committed before and during the
// fault is there as it was, and the audit chain verifies.
func TestFaultSQLiteDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "8m")
	cfg := e2eConfig(t, dir, freePort(t), "")
	srv := startServer(t, cfg)
	traffic := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer traffic.CloseIdleConnections()
	alice := webLogin(t, srv.URL, "alice")

	// What was committed before the fault: 20 requests, 10 decided.
	want := map[string]string{} // request id → status the database must hold
	var ids []string
	for i := range 20 {
		a, err := callGate(traffic, srv.URL, fmt.Sprintf("before-%d", i), 0)
		if err != nil || a.Status != "pending" {
			t.Fatalf("call before the fault: %+v %v", a, err)
		}
		ids = append(ids, a.RequestID)
		want[a.RequestID] = "pending"
	}
	for i, id := range ids[:10] {
		verdict, st := "approve", "approved"
		if i%2 == 1 {
			verdict, st = "reject", "rejected"
		}
		if code := webDecide(t, alice, srv.URL, id, verdict, "before the fault"); code != http.StatusSeeOther {
			t.Fatalf("deciding %s: %d", id, code)
		}
		want[id] = st
	}
	// An agent waits on a request someone will approve while the disk is full.
	tapped := ids[10]
	type heard struct {
		gateAnswer
		at time.Time
	}
	waited := make(chan heard, 1)
	go func() {
		a, err := callGate(traffic, srv.URL, "before-10", time.Minute)
		if err != nil {
			a.Error = err.Error()
		}
		waited <- heard{a, time.Now()}
	}()
	awaitWaiters(t, 1, srv.URL)

	filler := fillDisk(t, dir)
	var took []time.Duration
	denied, stored, allows := 0, 0, 0
	for i := 0; i < 2000 && denied < 50; i++ {
		a, err := callGate(traffic, srv.URL, fmt.Sprintf("full-%d", i), 0)
		if err != nil {
			t.Fatalf("no answer with the disk full: %v\n%s", err, srv.Log())
		}
		took = append(took, a.Took)
		switch {
		case a.Allow:
			allows++
			t.Errorf("an allow with the disk full: %+v", a)
		case a.Status == "pending":
			stored++ // it fitted (in the WAL): it must be there afterwards
			want[a.RequestID] = "pending"
		case a.Code == http.StatusServiceUnavailable && a.Status == "error":
			denied++
		default:
			t.Fatalf("answer with the disk full: %d %+v, want a 503 deny or a stored request", a.Code, a)
		}
	}
	if denied == 0 {
		t.Fatalf("2000 calls with the disk full and none denied: the fault did not bite (%d stored)", stored)
	}
	tapCode, tapErr := tryWebDecide(alice, srv.URL, tapped, "approve", "while the disk is full")
	if tapErr == nil && tapCode == http.StatusSeeOther {
		want[tapped] = "approved" // it fitted: it is recorded, and the agent may get it
	}
	if st := want[tapped]; st == "pending" {
		select {
		case a := <-waited:
			t.Fatalf("the agent was answered %+v after a refused tap", a.gateAnswer)
		default:
		}
	}

	// Space returns: the same server takes calls and verdicts again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	var fresh gateAnswer
	for {
		a, err := callGate(traffic, srv.URL, fmt.Sprintf("after-%d", time.Now().UnixNano()), 0)
		if err == nil && a.Status == "pending" {
			fresh = a
			break
		}
		if time.Since(freed) > 20*time.Second {
			t.Fatalf("no request taken 20 s after space returned: %+v %v\n%s", a, err, srv.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	recovery := time.Since(freed)
	if code := webDecide(t, alice, srv.URL, fresh.RequestID, "reject", "after the fault"); code != http.StatusSeeOther {
		t.Fatalf("a verdict after space returned: %d", code)
	}
	want[fresh.RequestID] = "rejected"
	var retapped time.Time // when the tap was refused: the approval the agent may hear
	if want[tapped] == "pending" {
		retapped = time.Now()
		if code := webDecide(t, alice, srv.URL, tapped, "approve", "again, with room"); code != http.StatusSeeOther {
			t.Fatalf("the tap again after space returned: %d", code)
		}
		want[tapped] = "approved"
	}
	select {
	case a := <-waited:
		if a.RequestID != tapped || a.Status != "approved" || !a.Allow {
			t.Fatalf("the waiting agent got %+v, want the approval of %s", a.gateAnswer, tapped)
		}
		if a.at.Before(retapped) {
			t.Fatalf("the waiting agent heard %+v before the approval that was recorded: the refused tap reached it", a.gateAnswer)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting agent got no verdict")
	}

	// The audit chain's sealer, stalled by the full disk, catches up.
	chain := awaitChainWhole(t, cfg)

	// Crash it, and look at the file.
	srv.Kill()
	rows := readRows(t, "sqlite", filepath.Join(dir, "gatehouse.db"))
	if rows.integrity != "ok" {
		t.Errorf("PRAGMA integrity_check: %s", rows.integrity)
	}
	intact := 0
	for id, st := range want {
		if got := rows.status[id]; got != st {
			t.Errorf("request %s is %q in the database, want %q", id, got, st)
			continue
		}
		if st != "pending" && rows.decided[id] != 1 {
			t.Errorf("request %s has %d decided events, want 1", id, rows.decided[id])
			continue
		}
		intact++
	}
	t.Logf("%s", chain)

	figure(t, "disk_full_calls", len(took))
	figure(t, "disk_full_denied", denied)
	figure(t, "disk_full_stored", stored)
	figure(t, "disk_full_allows", allows)
	figure(t, "disk_full_answer_p99", ms(percentile(took, 99)))
	figure(t, "disk_full_tap", fmt.Sprintf("%d(%v)", tapCode, tapErr))
	figure(t, "disk_recovery", ms(recovery))
	figure(t, "disk_integrity", rows.integrity)
	figure(t, "disk_rows_intact", fmt.Sprintf("%d/%d", intact, len(want)))
}

// mountTmpfs mounts a tmpfs of size (mount's "8m") on a new directory;
// t.Cleanup unmounts it. It skips the test when mounting is not permitted.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gatehouse-faults-disk")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		os.Remove(dir)
		t.Skipf("fault test needs to mount a tmpfs (root, or CAP_SYS_ADMIN): %v %s", err, out)
	}
	t.Cleanup(func() {
		// Registered before the server starts, so it runs after it is killed.
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
			return
		}
		os.Remove(dir)
	})
	return dir
}

// fillDisk writes a file in dir until the file system has no byte left,
// and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range []int{1 << 20, 4096, 1} {
		buf := make([]byte, n)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	return path
}

// dbRows is what a database holds, read behind the server's back.
type dbRows struct {
	integrity string
	status    map[string]string // request id → status
	decided   map[string]int    // request id → its decided events
}

// readRows opens a stopped server's database and reads every request's
// status and its decided events (and, on SQLite, checks the file).
func readRows(t *testing.T, driver, dsn string) dbRows {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Driver: driver, DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g := db.Gorm().WithContext(ctx)
	out := dbRows{integrity: "ok", status: map[string]string{}, decided: map[string]int{}}
	if driver == "sqlite" {
		var lines []string
		if err := g.Raw("PRAGMA integrity_check").Scan(&lines).Error; err != nil {
			t.Fatal(err)
		}
		out.integrity = strings.Join(lines, "; ")
	}
	var reqs []struct{ ID, Status string }
	if err := g.Raw("SELECT id, status FROM requests").Scan(&reqs).Error; err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		out.status[r.ID] = r.Status
	}
	var evs []struct {
		RequestID string
		N         int
	}
	if err := g.Raw("SELECT request_id, count(*) AS n FROM events WHERE type = 'decided' GROUP BY request_id").Scan(&evs).Error; err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		out.decided[e.RequestID] = e.N
	}
	return out
}

// awaitChainWhole waits, failing after 10 s, until `gatehouse audit
// verify` finds the chain whole with every event sealed (a running server
// seals them within a second), and returns its first line.
func awaitChainWhole(t *testing.T, cfg string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out := verifyCmd(t, cfg)
		if code != 0 || !strings.Contains(out, "audit chain whole") {
			t.Fatalf("gatehouse audit verify: exit %d\n%s", code, out)
		}
		if !strings.Contains(out, "not sealed yet") {
			return strings.Split(out, "\n")[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("events still unsealed after 10 s:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
