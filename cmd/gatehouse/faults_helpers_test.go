//go:build faults

package main

// Helpers of the fault-injection tests (faults_*_test.go): a private
// PostgreSQL cluster that can be killed, raw calls to the gate that report
// how long they took, and the FIGURE lines scripts/faults tabulates.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ms renders d in milliseconds with one decimal, for figures.
func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + "ms" }

// gateAnswer is one answer of POST /api/v1/gate, as an agent reads it.
type gateAnswer struct {
	Code      int
	RequestID string `json:"request_id"`
	Status    string `json:"status"`
	Allow     bool   `json:"allow"`
	Error     string `json:"error"`
	Took      time.Duration
}

// callGate posts one call to the gate with idempotency key key, holding
// for wait. An error means no answer came (the server went away).
func callGate(c *http.Client, base, key string, wait time.Duration) (gateAnswer, error) {
	return callGateWith(c, base, key, wait, nil)
}

// callGateWith is callGate with more fields in the call (timeout_seconds).
func callGateWith(c *http.Client, base, key string, wait time.Duration, extra map[string]any) (gateAnswer, error) {
	call := map[string]any{"tool_name": "deploy", "tool_args": map[string]string{"key": key}, "idempotency_key": key}
	for k, v := range extra {
		call[k] = v
	}
	body, _ := json.Marshal(call)
	req, _ := http.NewRequest("POST", base+"/api/v1/gate?wait="+wait.String(), bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return gateAnswer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	a := gateAnswer{Code: resp.StatusCode, Took: time.Since(start)}
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return a, fmt.Errorf("gate answered %d %q: %w", resp.StatusCode, data, err)
	}
	return a, nil
}

// withDatabase points the config at path to another database.
func withDatabase(t *testing.T, path, driver, dsn string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok := strings.Cut(string(b), "database:\n")
	_, rest, ok2 := strings.Cut(rest, "auth:\n")
	if !ok || !ok2 {
		t.Fatalf("no database section in %s", path)
	}
	cfg := fmt.Sprintf("%sdatabase:\n  driver: %s\n  dsn: %q\nauth:\n%s", head, driver, dsn, rest)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// pgCluster is a private PostgreSQL cluster a test may stop at will (the
// shared one on 5432 must never be stopped).
type pgCluster struct {
	bin, dir string
	port     int
	cred     *syscall.Credential
}

// privatePostgres creates a cluster (initdb as user postgres, trust auth)
// and starts it on a free port; t.Cleanup stops it and removes it. It skips
// the test when PostgreSQL's server binaries or the postgres user are
// missing.
func privatePostgres(t *testing.T) *pgCluster {
	t.Helper()
	initdbs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(initdbs) == 0 {
		t.Skip("fault test needs PostgreSQL's server binaries (/usr/lib/postgresql/*/bin/initdb): apt-get install postgresql")
	}
	slices.Sort(initdbs)
	u, err := osuser.Lookup("postgres")
	if err != nil {
		t.Skipf("fault test needs a postgres user to run initdb as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("", "gatehouse-faults-pg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Skipf("fault test cannot hand a directory to user postgres: %v", err)
	}
	pg := &pgCluster{bin: filepath.Dir(initdbs[len(initdbs)-1]), dir: dir, port: freePort(t),
		cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	pg.run(t, "initdb", "-D", pg.data(), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
	pg.Start(t)
	t.Cleanup(func() {
		// Stop whatever the test left running; an error means it is down.
		_ = pg.cmd("pg_ctl", "-D", pg.data(), "stop", "-m", "immediate").Run()
	})
	return pg
}

func (pg *pgCluster) data() string { return filepath.Join(pg.dir, "data") }

// DSN is the cluster's database, over TCP.
func (pg *pgCluster) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", pg.port)
}

func (pg *pgCluster) cmd(name string, args ...string) *exec.Cmd {
	c := exec.Command(filepath.Join(pg.bin, name), args...)
	c.Dir = pg.dir
	c.SysProcAttr = &syscall.SysProcAttr{Credential: pg.cred}
	return c
}

func (pg *pgCluster) run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := pg.cmd(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// Start starts the cluster and waits until it takes connections.
func (pg *pgCluster) Start(t *testing.T) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100", pg.port, pg.dir)
	pg.run(t, "pg_ctl", "-D", pg.data(), "-o", opts, "-l", filepath.Join(pg.dir, "log"), "-w", "-t", "60", "start")
}

// Crash stops the cluster as a crash would: immediate mode, no checkpoint,
// every connection cut; it recovers from its WAL on the next start.
func (pg *pgCluster) Crash(t *testing.T) {
	t.Helper()
	pg.run(t, "pg_ctl", "-D", pg.data(), "-w", "stop", "-m", "immediate")
}
