package main

// The tamper-evident trail through the real binary: the server seals,
// signs checkpoints and cuts old requests; `gatehouse audit verify` says
// whole (exit 0) or names the first broken seq (exit 1).

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeAuditKey writes an Ed25519 key as openssl genpkey would.
func writeAuditKey(t *testing.T, path string) {
	t.Helper()
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// verifyCmd runs gatehouse audit verify and returns its exit code and output.
func verifyCmd(t *testing.T, cfg string, extra ...string) (int, string) {
	t.Helper()
	return runBin(t, exec.Command(binPath, append([]string{"audit", "verify", "--config", cfg}, extra...)...))
}

// runBin runs cmd (the binary, as set up) and returns its exit code and its
// output, stdout and stderr together.
func runBin(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// awaitSealed waits until every event of request id carries its seq.
func awaitSealed(t *testing.T, base, id string) []map[string]any {
	t.Helper()
	return awaitTrail(t, base, id, func([]map[string]any) bool { return true })
}

// awaitTrail waits until every event of request id carries its seq and
// the trail is as done says.
func awaitTrail(t *testing.T, base, id string, done func([]map[string]any) bool) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var out struct {
			Events []map[string]any `json:"events"`
		}
		api(t, "GET", base+"/api/v1/approvals/"+id+"/events", nil, &out)
		// An event has its seq once sealed (and its hash, shown unless the
		// server redacts: security.md#redaction).
		sealed := len(out.Events) > 0
		for _, e := range out.Events {
			if e["seq"].(float64) == 0 {
				sealed = false
			}
		}
		if sealed && done(out.Events) {
			return out.Events
		}
		if time.Now().After(deadline) {
			t.Fatalf("events of %s not sealed, or not as awaited, after 10s: %v", id, out.Events)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAuditChainThroughTheBinary(t *testing.T) {
	dir := t.TempDir()
	cpDir := filepath.Join(dir, "checkpoints")
	os.Mkdir(cpDir, 0o700)
	writeAuditKey(t, filepath.Join(dir, "audit.key"))
	cfg := e2eConfig(t, dir, 0, fmt.Sprintf("audit:\n  signing_key_file: audit.key\n  checkpoint_dir: %s\n", cpDir))
	srv := startServer(t, cfg)

	// A call that needs nobody: one event, no card.
	var r apiRequest
	api(t, "POST", srv.URL+"/api/v1/approvals", map[string]any{"tool_name": "read_file", "requires_confirmation": false}, &r)
	evs := awaitSealed(t, srv.URL, r.ID)
	if len(evs) != 1 || evs[0]["seq"].(float64) != 1 || evs[0]["prev_hash"] != strings.Repeat("0", 64) {
		t.Fatalf("the trail as the API shows it: %v", evs)
	}

	// A signed checkpoint of the head, kept by the auditor.
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/audit/checkpoint", nil)
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var cp map[string]any
	json.NewDecoder(resp.Body).Decode(&cp)
	resp.Body.Close()
	if resp.StatusCode != 200 || cp["seq"].(float64) != 1 || cp["hash"] != evs[0]["hash"] || cp["signature"] == "" {
		t.Fatalf("checkpoint: %d %v", resp.StatusCode, cp)
	}
	if resp, err := http.Get(srv.URL + "/api/v1/audit/checkpoint"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a checkpoint without a token: %v %v", resp.StatusCode, err)
	}
	kept := filepath.Join(dir, "kept-checkpoint.json")
	b, _ := json.Marshal(cp)
	os.WriteFile(kept, b, 0o600)

	if code, out := verifyCmd(t, cfg); code != 0 || !strings.Contains(out, "audit chain whole: 1 links") {
		t.Fatalf("verify on a running server: %d\n%s", code, out)
	}
	if code, out := verifyCmd(t, cfg, "--checkpoint", kept); code != 0 || !strings.Contains(out, "checkpoint of") || !strings.Contains(out, "held") {
		t.Fatalf("verify with the checkpoint: %d\n%s", code, out)
	}

	// More traffic (a request, its card, its cancel), then a graceful stop
	// seals what is left and writes a last checkpoint file.
	api(t, "POST", srv.URL+"/api/v1/approvals", map[string]any{"tool_name": "deploy", "summary": "ship it"}, &r)
	// The card goes out before the cancel: a request that ends before its
	// card is posted gets no card, nor any card event (under load the
	// cancel came first, and the update awaited below never came).
	awaitTrail(t, srv.URL, r.ID, func(evs []map[string]any) bool { return evs[len(evs)-1]["type"] == "card_posted" })
	api(t, "POST", srv.URL+"/api/v1/approvals/"+r.ID+"/cancel", map[string]any{"reason": "not today"}, nil)
	// The card's last update comes after the cancel, and the head must be
	// an event that seals no verdict for the truncation below to be
	// clean: under load the stop could come before the update.
	awaitTrail(t, srv.URL, r.ID, func(evs []map[string]any) bool { return evs[len(evs)-1]["type"] == "card_updated" })
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("server exit: %v\n%s", err, srv.Log())
	}
	files, _ := filepath.Glob(filepath.Join(cpDir, "checkpoint-*.json"))
	if len(files) == 0 {
		t.Fatalf("no checkpoint file of the last head\n%s", srv.Log())
	}
	last := files[len(files)-1] // names sort by seq
	var lastCP struct{ Seq int64 }
	b, _ = os.ReadFile(last)
	if json.Unmarshal(b, &lastCP); lastCP.Seq < 3 {
		t.Fatalf("the last checkpoint %s: %s", last, b)
	}

	db, err := sql.Open("sqlite3", filepath.Join(dir, "gatehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exec1 := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if code, out := verifyCmd(t, cfg, "--checkpoint", last); code != 0 || !strings.Contains(out, "held") {
		t.Fatalf("verify with the last checkpoint: %d\n%s", code, out)
	}
	// Cut short after the checkpoint: invisible without it, caught with it.
	exec1(fmt.Sprintf(`DELETE FROM events WHERE seq = %d`, lastCP.Seq))
	exec1(fmt.Sprintf(`UPDATE audit_head SET seq = %d, hash = (SELECT hash FROM events WHERE seq = %[1]d)`, lastCP.Seq-1))
	if code, out := verifyCmd(t, cfg); code != 0 {
		t.Fatalf("a clean truncation without a checkpoint: %d\n%s", code, out)
	}
	if code, out := verifyCmd(t, cfg, "--checkpoint", last); code != 1 || !strings.Contains(out, fmt.Sprintf("BROKEN at seq %d", lastCP.Seq)) {
		t.Fatalf("a truncation after the checkpoint: %d\n%s", code, out)
	}
	// A request's arguments changed in its row: the event that recorded it
	// sealed its call.
	exec1(`UPDATE requests SET tool_args = '{"path":"/etc/shadow"}' WHERE tool_name = 'read_file'`)
	if code, out := verifyCmd(t, cfg); code != 1 || !strings.Contains(out, "BROKEN at seq 1: request") || !strings.Contains(out, "no longer holds the call") {
		t.Fatalf("a changed call: %d\n%s", code, out)
	}
	exec1(`UPDATE requests SET tool_args = '{}' WHERE tool_name = 'read_file'`)
	if code, out := verifyCmd(t, cfg); code != 0 {
		t.Fatalf("the call put back: %d\n%s", code, out)
	}
	// Its verdict changed in its row: the same event sealed it.
	exec1(`UPDATE requests SET decided_by = 'web:mallory' WHERE tool_name = 'read_file'`)
	if code, out := verifyCmd(t, cfg); code != 1 || !strings.Contains(out, "no longer holds the verdict") {
		t.Fatalf("a changed verdict: %d\n%s", code, out)
	}
	exec1(`UPDATE requests SET decided_by = 'agent' WHERE tool_name = 'read_file'`)
	if code, out := verifyCmd(t, cfg); code != 0 {
		t.Fatalf("the verdict put back: %d\n%s", code, out)
	}
	// A changed row.
	exec1(`UPDATE events SET detail = 'approved by nobody' WHERE seq = 1`)
	if code, out := verifyCmd(t, cfg); code != 1 || !strings.Contains(out, "BROKEN at seq 1: its content does not hash") {
		t.Fatalf("a changed row: %d\n%s", code, out)
	}
	// A checkpoint file that was edited.
	cp["seq"] = 7
	b, _ = json.Marshal(cp)
	os.WriteFile(kept, b, 0o600)
	if code, out := verifyCmd(t, cfg, "--checkpoint", kept); code != 1 || !strings.Contains(out, "signature does not match") {
		t.Fatalf("an edited checkpoint: %d\n%s", code, out)
	}
}

// Retention through the binary: two final requests from 500 days ago,
// written before the server starts, are cut at start under retention.keep:
// 400d, and a young one is kept; the chain records the cut, and verify
// shows it; with the audit key in the config the record is signed, and
// verify checks the signature.
func TestRetentionThroughTheBinary(t *testing.T) {
	dir := t.TempDir()
	writeAuditKey(t, filepath.Join(dir, "audit.key"))
	cfg := e2eConfig(t, dir, 0, "retention:\n  keep: 400d\naudit:\n  signing_key_file: audit.key\n")
	if out, err := exec.Command(binPath, "migrate", "--config", cfg).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	db, err := sql.Open("sqlite3", filepath.Join(dir, "gatehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	old := time.Now().UTC().Add(-500 * 24 * time.Hour)
	for i, status := range []string{"approved", "rejected", "approved"} {
		id := fmt.Sprintf("old%d", i)
		if i == 2 {
			id, old = "young", time.Now().UTC().Add(-time.Hour)
		}
		for _, q := range []string{
			`INSERT INTO requests (id, status, tool_name, tool_args, requires_confirmation, route, on_timeout, created_at, expires_at)
			 VALUES (?, ?, 'deploy', '{"password":"hunter2"}', TRUE, 'default', 'deny', ?, ?)`,
			`INSERT INTO events (request_id, at, type, detail) VALUES (?, ?, 'created', 'long ago')`,
		} {
			args := []any{id, status, old, old.Add(time.Hour)}
			if strings.HasPrefix(q, "INSERT INTO events") {
				args = []any{id, old}
			}
			if _, err := db.Exec(q, args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv := startServer(t, cfg)
	srv.awaitLog(t, "retention cut requests")
	var left int
	db.QueryRow(`SELECT COUNT(*) FROM requests`).Scan(&left)
	if left != 1 {
		t.Fatalf("%d requests left, want the young one", left)
	}
	code, out := verifyCmd(t, cfg)
	if code != 0 || !strings.Contains(out, "retention cut 2 requests created before") || !strings.Contains(out, "(2 events: seq 1-2)") ||
		strings.Contains(out, "not checked") {
		t.Fatalf("verify after retention: %d\n%s", code, out)
	}
	// The server signed the record of the cut (verify, given the key by
	// the config, checked it above; TestSignedRetentionRecords refuses
	// records that are not).
	var detail string
	if err := db.QueryRow(`SELECT detail FROM audit_records WHERE kind = 'retention'`).Scan(&detail); err != nil || !strings.Contains(detail, `"signature":"`) {
		t.Fatalf("the record of the cut: %q %v", detail, err)
	}
}

// TestCommandsRefuseAConfigGivenAsAnArgument: `gatehouse audit verify
// prod.yaml` (the file written where check-config takes it, without
// --config) must not verify the built-in config's database, ./gatehouse.db,
// and say "audit chain whole" of a database that is not the one asked
// about; nor may `migrate prod.yaml` migrate that one and print the
// schema's version, nor `policy test --tool deploy prod.yaml` judge the
// call by the built-in policy. Each refuses the stray argument, exits non-zero, and
// touches no database.
func TestCommandsRefuseAConfigGivenAsAnArgument(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (int, string) {
		cmd := exec.Command(binPath, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GATEHOUSE_CONFIG=")
		return runBin(t, cmd)
	}
	// The built-in config's database, whole, where the operator stands.
	if code, out := run("migrate"); code != 0 {
		t.Fatalf("migrate of the built-in database: %d\n%s", code, out)
	}
	prod := filepath.Join(dir, "prod.yaml")
	if err := os.WriteFile(prod, []byte("database:\n  driver: sqlite\n  dsn: "+filepath.Join(dir, "prod.db")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"audit", "verify", "prod.yaml"}, {"migrate", "prod.yaml"}, {"policy", "test", "--tool", "deploy", "prod.yaml"}} {
		code, out := run(args...)
		if code == 0 || strings.Contains(out, "whole") || strings.Contains(out, "schema at version") || strings.Contains(out, `"action"`) ||
			!strings.Contains(out, "prod.yaml") {
			t.Errorf("gatehouse %s: exit %d, want a refusal naming the argument:\n%s", strings.Join(args, " "), code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "prod.db")); !os.IsNotExist(err) {
		t.Errorf("prod.db was made by a refused command: %v", err)
	}
}
