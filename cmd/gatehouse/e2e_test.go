package main

// End-to-end tests: the real binary, on a real port, over a real SQLite file.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// binPath is the gatehouse binary built once for the whole package.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gatehouse-e2e")
	if err != nil {
		panic(err)
	}
	binPath = filepath.Join(dir, "gatehouse")
	out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building gatehouse: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	e2eToken    = "e2e-token-0123456789abcdef"
	e2ePassword = "correct horse battery"
)

// e2eConfig is a config for a server on port with approver alice and
// auditor bob; extra is appended verbatim (routes, channels).
func e2eConfig(t *testing.T, dir string, port int, extra string) string {
	t.Helper()
	return e2eConfigOf(t, dir, port, "", extra)
}

// e2eConfigOf is e2eConfig with the agent's token belonging to a person
// (config people), when person is not "".
func e2eConfigOf(t *testing.T, dir string, port int, person, extra string) string {
	t.Helper()
	if person != "" {
		person = "\n      person: " + person
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(e2ePassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:%d
database:
  driver: sqlite
  dsn: %s
auth:
  api_tokens:
    - name: build-agent
      token: %s%s
  users:
    - name: alice
      password_bcrypt: %q
      role: approver
    - name: bob
      password_bcrypt: %q
      role: auditor
log:
  level: debug
%s`, port, filepath.Join(dir, "gatehouse.db"), e2eToken, person, hash, hash, extra)
	path := filepath.Join(dir, "gatehouse.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// freePort finds a port to reuse across restarts of one server.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// server is one running gatehouse process.
type server struct {
	URL string
	cmd *exec.Cmd
	mu  sync.Mutex
	log bytes.Buffer
}

func (s *server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

var listenLine = regexp.MustCompile(`gatehouse listening.* addr=(http://[0-9.:]+)`)

// startServer runs `gatehouse serve --config cfg` and waits for it to listen.
func startServer(t *testing.T, cfg string) *server {
	t.Helper()
	s := &server{cmd: exec.Command(binPath, "serve", "--config", cfg)}
	s.cmd.Dir = filepath.Dir(cfg)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { s.Kill() })
	select {
	case s.URL = <-found:
	case <-time.After(20 * time.Second):
		t.Fatalf("server did not start:\n%s", s.Log())
	}
	return s
}

// Kill ends the process at once, as a crash or an OOM kill would.
// waiters reads the server's gatehouse_waiters gauge: the agents waiting
// for a verdict on it now.
func waiters(t *testing.T, base string) int {
	t.Helper()
	return int(metric(t, base, "gatehouse_waiters"))
}

// metric reads one unlabelled series from the server's /metrics (0 when
// it is absent).
func metric(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n
		}
	}
	return 0
}

// awaitWaiters waits until the servers have n agents waiting in all.
func awaitWaiters(t *testing.T, n int, bases ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := 0
		for _, b := range bases {
			got += waiters(t, b)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d agents waiting after 10s, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// eventually waits up to 15 s for cond (over a fake's records, the
// servers' answers), failing with "timed out waiting for" the message.
func eventually(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for "+format, args...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer that a process writes while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// awaitText waits until buf holds want, failing after 10 s.
func awaitText(t *testing.T, buf *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("never saw %q in:\n%s", want, buf.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitLog waits until the server's log holds want, failing after 10 s.
func (s *server) awaitLog(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.Log(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the server never logged %q:\n%s", want, s.Log())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *server) Kill() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		_ = s.cmd.Wait()
	}
}

// api calls the agent API with the test token and decodes the JSON answer.
func api(t *testing.T, method, url string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	if out != nil {
		data, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, data)
		}
	}
	return resp.StatusCode
}

type apiRequest struct {
	ID             string `json:"id"`
	Status         string `json:"status"`
	ToolName       string `json:"tool_name"`
	DecidedBy      string `json:"decided_by"`
	DecidedVia     string `json:"decided_via"`
	IdempotencyKey string `json:"idempotency_key"`
}

func listAll(t *testing.T, base string) []apiRequest {
	t.Helper()
	var out struct {
		Approvals []apiRequest `json:"approvals"`
	}
	api(t, "GET", base+"/api/v1/approvals?limit=1000", nil, &out)
	return out.Approvals
}

// waitPending polls until a pending request exists and returns it.
func waitPending(t *testing.T, base string) apiRequest {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range listAll(t, base) {
			if r.Status == "pending" {
				return r
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no pending request appeared")
	return apiRequest{}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// webLogin logs a user in through the login form and returns a client
// holding the session cookie.
func webLogin(t *testing.T, base, user string) *http.Client {
	t.Helper()
	return webLoginVia(t, base, user, nil)
}

// webLoginVia is webLogin over a given transport (nil: the default).
func webLoginVia(t *testing.T, base, user string, transport http.RoundTripper) *http.Client {
	t.Helper()
	c, err := tryLogin(base, user, transport)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tryLogin logs in through the form and says whether the server took it.
func tryLogin(base, user string, transport http.RoundTripper) (*http.Client, error) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(base + "/login")
	if err != nil {
		return nil, err
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(page)
	if m == nil {
		return nil, fmt.Errorf("no csrf field on the login page:\n%s", page)
	}
	resp, err = c.PostForm(base+"/login", url.Values{"csrf": {string(m[1])}, "username": {user}, "password": {e2ePassword}, "next": {"/"}})
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("login as %s: %d", user, resp.StatusCode)
	}
	return c, nil
}

func get(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// webDecide approves or rejects on the request's page, as a person would.
func webDecide(t *testing.T, c *http.Client, base, id, verdict, reason string) int {
	t.Helper()
	code, err := tryWebDecide(c, base, id, verdict, reason)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// webDecideEdited approves request id on the web page with edited
// arguments.
func webDecideEdited(t *testing.T, c *http.Client, base, id, args string) {
	t.Helper()
	resp, err := c.Get(base + "/approvals/" + id)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf field on the detail page (%d)", resp.StatusCode)
	}
	resp, err = c.PostForm(base+"/approvals/"+id+"/decide", url.Values{"csrf": {string(m[1])}, "verdict": {"approve"},
		"reason": {"staging only"}, "modified_args": {args}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approving with edits: %d", resp.StatusCode)
	}
}

// tryWebDecide is webDecide for a server that may go away mid-call (fault
// tests): an error when no answer came.
func tryWebDecide(c *http.Client, base, id, verdict, reason string) (int, error) {
	resp, err := c.Get(base + "/approvals/" + id)
	if err != nil {
		return 0, err
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	m := csrfField.FindSubmatch(page)
	if m == nil {
		return 0, fmt.Errorf("no csrf field on the detail page (%d):\n%s", resp.StatusCode, page)
	}
	resp, err = c.PostForm(base+"/approvals/"+id+"/decide", url.Values{"csrf": {string(m[1])}, "verdict": {verdict}, "reason": {reason}})
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// cli runs the binary as an agent's script would.
func cli(base string, args ...string) *exec.Cmd {
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), "GATEHOUSE_URL="+base, "GATEHOUSE_TOKEN="+e2eToken)
	return cmd
}

// TestKillRestartReattach: an agent long-polls; the server is killed with
// SIGKILL; it restarts; the approval is decided; the re-attached agent gets
// the verdict; no duplicate request or card exists.
func TestKillRestartReattach(t *testing.T) {
	dir := t.TempDir()
	cfg := e2eConfig(t, dir, freePort(t), "")
	srv := startServer(t, cfg)

	agent := cli(srv.URL, "request", "--tool", "deploy", "--args", `{"env":"prod"}`, "--summary", "Deploy prod", "--retry-for", "1m")
	var stdout, stderr syncBuffer
	agent.Stdout, agent.Stderr = &stdout, &stderr
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer agent.Process.Kill()
	pending := waitPending(t, srv.URL)

	srv.Kill()
	awaitText(t, &stderr, "server unreachable, re-attaching") // the agent fails to reach it and keeps retrying
	srv = startServer(t, cfg)

	alice := webLogin(t, srv.URL, "alice")
	if code := webDecide(t, alice, srv.URL, pending.ID, "approve", "ship it"); code != http.StatusSeeOther {
		t.Fatalf("web approval: %d", code)
	}
	done := make(chan error, 1)
	go func() { done <- agent.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("agent exited with %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("agent still waiting after the approval\nstderr: %s\nserver log:\n%s", stderr.String(), srv.Log())
	}
	var res struct {
		RequestID string `json:"request_id"`
		Status    string `json:"status"`
		Allow     bool   `json:"allow"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil || res.Status != "approved" || !res.Allow || res.RequestID != pending.ID {
		t.Fatalf("agent printed %q (%v)", stdout.String(), err)
	}
	all := listAll(t, srv.URL)
	if len(all) != 1 {
		t.Fatalf("%d requests after the restart, want 1: %+v", len(all), all)
	}
	var evs struct {
		Events []struct{ Type, Channel string } `json:"events"`
	}
	api(t, "GET", srv.URL+"/api/v1/approvals/"+pending.ID+"/events", nil, &evs)
	posted, created := 0, 0
	for _, e := range evs.Events {
		switch e.Type {
		case "card_posted":
			posted++
		case "created":
			created++
		}
	}
	if posted != 1 || created != 1 {
		t.Fatalf("trail has %d created and %d card_posted events, want 1 each: %+v", created, posted, evs.Events)
	}
}

// TestRequestExitCodes: `gatehouse request ... && echo ran` runs the command
// only on approval; exit codes 0/1/2/3 as documented.
func TestRequestExitCodes(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, e2eConfig(t, dir, 0, ""))
	alice := webLogin(t, srv.URL, "alice")

	run := func(t *testing.T, decide func(id string), args ...string) (int, string) {
		t.Helper()
		script := binPath + " request " + strings.Join(args, " ") + " && echo ran"
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "GATEHOUSE_URL="+srv.URL, "GATEHOUSE_TOKEN="+e2eToken)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if decide != nil {
			decide(waitPending(t, srv.URL).ID)
		}
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, out.String()
	}
	cases := []struct {
		name   string
		decide func(id string)
		args   []string
		code   int
	}{
		{"approved", func(id string) { webDecide(t, alice, srv.URL, id, "approve", "") }, []string{"--tool", "deploy"}, 0},
		{"rejected", func(id string) { webDecide(t, alice, srv.URL, id, "reject", "not today") }, []string{"--tool", "deploy"}, 1},
		{"expired", nil, []string{"--tool", "deploy", "--timeout", "1s"}, 2},
		{"cancelled", func(id string) { api(t, "POST", srv.URL+"/api/v1/approvals/"+id+"/cancel", nil, nil) }, []string{"--tool", "deploy"}, 2},
		// The approver let staging go, not prod: the script guarded by the
		// call as asked must not run (it would deploy prod).
		{"approved with edited arguments", func(id string) { webDecideEdited(t, alice, srv.URL, id, `{"env":"staging"}`) },
			[]string{"--tool", "deploy", "--args", `'{"env":"prod"}'`}, 4},
		{"approved with the same arguments given as edits", func(id string) { webDecideEdited(t, alice, srv.URL, id, `{ "env": "prod" }`) },
			[]string{"--tool", "deploy", "--args", `'{"env":"prod"}'`}, 0},
		{"bad args", nil, []string{"--tool", "deploy", "--args", "'{nope'"}, 3},
		{"no tool", nil, []string{"--args", "'{}'"}, 3},
		// Flags stop at "prod": the request would ask about {} and
		// expire (exit 2), or be approved as something else.
		{"a stray argument", nil, []string{"--tool", "deploy", "--timeout", "1s", "--summary", "Deploy", "prod", "--args", `'{"env":"prod"}'`}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out := run(t, tc.decide, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; output:\n%s", code, tc.code, out)
			}
			if ran := strings.Contains(out, "ran"); ran != (tc.code == 0) {
				t.Fatalf("the guarded command ran=%v on exit %d:\n%s", ran, code, out)
			}
		})
	}
	// The server named request 01A for the call; an answer about 01B
	// (a cache in the way, another caller's) is no verdict on it.
	t.Run("an answer about another request", func(t *testing.T) {
		var n atomic.Int32
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if n.Add(1) == 1 {
				io.WriteString(w, `{"request_id":"01A","status":"pending","allow":false,"error":"","modified_args":null,"side_effects":[]}`)
				return
			}
			io.WriteString(w, `{"request_id":"01B","status":"approved","allow":true,"error":"","modified_args":null,"side_effects":[]}`)
		}))
		defer other.Close()
		cmd := exec.Command("sh", "-c", binPath+" request --tool deploy --retry-for 1s && echo ran")
		cmd.Env = append(os.Environ(), "GATEHOUSE_URL="+other.URL)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || strings.Contains(string(out), "\nran") {
			t.Fatalf("exit %v, want 3 and the command not run:\n%s", err, out)
		}
	})
	t.Run("server down", func(t *testing.T) {
		cmd := exec.Command(binPath, "request", "--tool", "deploy", "--retry-for", "1s")
		cmd.Env = append(os.Environ(), fmt.Sprintf("GATEHOUSE_URL=http://127.0.0.1:%d", freePort(t)))
		out, err := cmd.Output()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 3 {
			t.Fatalf("server down: %v, want exit 3", err)
		}
		var res struct{ Allow bool }
		if json.Unmarshal(out, &res) != nil || res.Allow {
			t.Fatalf("server down must print a deny: %s", out)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		cmd := exec.Command(binPath, "request", "--tool", "deploy")
		cmd.Env = append(os.Environ(), "GATEHOUSE_URL="+srv.URL, "GATEHOUSE_TOKEN=wrong-token-wrong-token")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(stderr.String(), "invalid bearer token") {
			t.Fatalf("wrong token: %v %s", err, stderr.String())
		}
	})
}

// TestBadInput: each bad input gets a clear error with a fitting status and
// changes no row.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, e2eConfig(t, dir, 0, ""))
	var r apiRequest
	if code := api(t, "POST", srv.URL+"/api/v1/approvals", map[string]any{"tool_name": "deploy"}, &r); code != 201 {
		t.Fatalf("create: %d", code)
	}
	post := func(body []byte, token string) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/approvals", bytes.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name  string
		body  []byte
		token string
		code  int
		msg   string
	}{
		{"malformed JSON", []byte(`{"tool_name": "x",`), e2eToken, 400, "malformed JSON"},
		{"missing tool_name", []byte(`{"tool_args": {}}`), e2eToken, 400, "tool_name: required"},
		{"wrong type", []byte(`{"tool_name": ["x"]}`), e2eToken, 400, "tool_name: must be a string"},
		{"unknown field", []byte(`{"tool_name": "x", "amount": 5}`), e2eToken, 400, `unknown field \"amount\"`},
		{"10 MB body", bytes.Repeat([]byte("a"), 10<<20), e2eToken, 413, "larger than 1 MiB"},
		{"wrong token", []byte(`{"tool_name": "x"}`), "not-the-token-at-all", 401, "invalid bearer token"},
		{"no token", []byte(`{"tool_name": "x"}`), "", 401, "missing bearer token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(tc.body, tc.token)
			if code != tc.code || !strings.Contains(body, tc.msg) || !strings.Contains(body, `"error":{"code":`) {
				t.Fatalf("got %d %s, want %d with %q", code, body, tc.code, tc.msg)
			}
		})
	}
	if all := listAll(t, srv.URL); len(all) != 1 || all[0].ID != r.ID || all[0].Status != "pending" {
		t.Fatalf("bad input changed rows: %+v", all)
	}
	// A cancel on a decided request is refused and changes nothing.
	var cancelled apiRequest
	api(t, "POST", srv.URL+"/api/v1/approvals/"+r.ID+"/cancel", nil, &cancelled)
	var again struct {
		Error struct{ Code, Message string }
	}
	if code := api(t, "POST", srv.URL+"/api/v1/approvals/"+r.ID+"/cancel", nil, &again); code != 409 || again.Error.Code != "already_decided" {
		t.Fatalf("second cancel: %d %+v", code, again)
	}
	if code := api(t, "GET", srv.URL+"/api/v1/approvals/01NOSUCHREQUEST", nil, &again); code != 404 {
		t.Fatalf("unknown id: %d", code)
	}
	if code := api(t, "GET", srv.URL+"/api/v1/approvals/"+r.ID+"?wait=soon", nil, &again); code != 400 || !strings.Contains(again.Error.Message, "wait") {
		t.Fatalf("bad wait: %d %+v", code, again)
	}
}

func TestConfigErrorsThroughTheBinary(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`listen: 127.0.0.1:8080
databse:
  driver: sqlite
defaults:
  timeout: 10 minutes
channels:
  - name: ops
    type: slack
    bot_token: xoxb-1
    sigining_secret: s
    channel_id: C1
routes:
  - name: r
    channels: [nope]
`), 0o600)
	out, err := exec.Command(binPath, "check-config", "--config", bad).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("check-config on a bad file: %v\n%s", err, out)
	}
	// Every problem in one pass: the misspelt keys, with the key meant,
	// and what validating the rest finds.
	for _, want := range []string{"databse: unknown key (did you mean database?)", `defaults.timeout: "10 minutes" is not a duration`,
		"channels[0].sigining_secret: unknown key (did you mean signing_secret?)", `routes[0].channels[0]: no channel named "nope"`,
		"5 problem(s)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check-config output lacks %q:\n%s", want, out)
		}
	}
	// Once the keys are right, Validate names the rest.
	os.WriteFile(bad, []byte(`channels:
  - name: ops
    type: slack
    bot_token: xoxb-1
routes:
  - name: r
    channels: [nope]
`), 0o600)
	out, _ = exec.Command(binPath, "check-config", "--config", bad).CombinedOutput()
	for _, want := range []string{"channels[0].signing_secret: required", "channels[0].channel_id: required", `routes[0].channels[0]: no channel named "nope"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check-config output lacks %q:\n%s", want, out)
		}
	}

	// A valid config where the agent's requires_confirmation decides for
	// unrouted calls passes, with a warning that says so; a catch-all
	// route silences it.
	for cfg, warn := range map[string]bool{
		"routes:\n  - name: pay\n    match: {tool: \"oa__*\"}\n":                                           true,
		"routes:\n  - name: pay\n    match: {tool: \"oa__*\"}\n  - name: rest\n    match: {tool: \"*\"}\n": false,
	} {
		f := filepath.Join(dir, "warn.yaml")
		os.WriteFile(f, []byte(cfg), 0o600)
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(binPath, "check-config", "--config", f)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "ok") {
			t.Fatalf("check-config on a valid file: %v\n%s%s", err, stdout.String(), stderr.String())
		}
		if got := strings.Contains(stderr.String(), `warning: no route matches every call`); got != warn {
			t.Errorf("check-config warned %v, want %v:\n%s", got, warn, stderr.String())
		}
	}

	dsn := filepath.Join(dir, "pg.yaml")
	os.WriteFile(dsn, []byte("database:\n  driver: postgres\n  dsn: postgres://nobody@127.0.0.1:1/x?connect_timeout=2\n"), 0o600)
	cmd := exec.Command(binPath, "serve", "--config", dsn)
	cmd.Dir = dir
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cannot reach the postgres database") {
		t.Fatalf("serve with an unreachable database: %v\n%s", err, out)
	}
}

// TestGracefulShutdownReleasesPollers: on SIGTERM a long-polling agent is
// answered at once with the request still pending, rather than cut off.
func TestGracefulShutdownReleasesPollers(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, e2eConfig(t, dir, 0, ""))
	var r apiRequest
	api(t, "POST", srv.URL+"/api/v1/approvals", map[string]any{"tool_name": "deploy"}, &r)
	type answer struct {
		code int
		r    apiRequest
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/approvals/"+r.ID+"?wait=60s", nil)
		req.Header.Set("Authorization", "Bearer "+e2eToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var a answer
		a.code = resp.StatusCode
		a.err = json.NewDecoder(resp.Body).Decode(&a.r)
		got <- a
	}()
	awaitWaiters(t, 1, srv.URL)
	start := time.Now()
	srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case a := <-got:
		if a.err != nil || a.code != 200 || a.r.Status != "pending" {
			t.Fatalf("poller got %d %+v %v", a.code, a.r, a.err)
		}
		if time.Since(start) > 3*time.Second {
			t.Fatalf("poller released after %v", time.Since(start))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("poller not released on shutdown")
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("server exit after SIGTERM: %v\n%s", err, srv.Log())
	}
}
