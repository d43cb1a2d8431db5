package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const benchToken = "bench-token-0123456789abcdef"

// server is one running gatehouse process.
type server struct {
	URL    string
	driver string // sqlite or postgres
	cmd    *exec.Cmd
	logf   *os.File
	exited chan struct{} // closed when the process has ended
}

// listenLine is the server's "listening" log line; the address must be
// followed by more of the line, so a line still being written is not read.
var listenLine = regexp.MustCompile(`gatehouse listening.* addr=(http://[0-9.:]+)\s`)

// serverConfig is a config for one replica: one Slack channel pointing at
// the fake, a bench token, no web users (the bootstrap admin is enough).
func serverConfig(driver, dsn, slackURL string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
public_url: http://127.0.0.1
database:
  driver: %s
  dsn: %q
defaults:
  timeout: 10m
  channels: [bench-slack]
auth:
  api_tokens:
    - name: bench-agent
      token: %s
log:
  level: info
channels:
  - name: bench-slack
    type: slack
    bot_token: %s
    signing_secret: %s
    channel_id: %s
    api_url: %s
`, driver, dsn, benchToken, benchBotToken, benchSecret, benchSlackCh, slackURL)
}

// startServers starts n replicas on one database at once (so they race
// their migrations, as replicas that boot together do) and waits until
// each listens. extra is appended to the config (routes).
func startServers(bin, dir string, n int, driver, dsn, slackURL, extra string) ([]*server, error) {
	cfg := filepath.Join(dir, "gatehouse.yaml")
	if err := os.WriteFile(cfg, []byte(serverConfig(driver, dsn, slackURL)+extra), 0o600); err != nil {
		return nil, err
	}
	out := make([]*server, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			s, err := startServer(bin, cfg, filepath.Join(dir, fmt.Sprintf("replica-%d.log", i)))
			if s != nil {
				s.driver = driver
			}
			out[i] = s
			errs <- err
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		for _, s := range out {
			if s != nil {
				s.stop()
			}
		}
		return nil, first
	}
	return out, nil
}

// startServer starts one replica and waits until it listens. The server
// writes its log straight into logPath: were it piped through this process,
// every line it logs (one or two per verdict) would wake the load generator
// just as the verdict's answer arrives, and the latency figures would count
// that.
func startServer(bin, cfg, logPath string) (*server, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	s := &server{cmd: exec.Command(bin, "serve", "--config", cfg), logf: logf}
	s.cmd.Dir = filepath.Dir(cfg)
	s.cmd.Env = append(os.Environ(), "GATEHOUSE_PPROF="+os.Getenv("BENCH_PPROF"))
	s.cmd.Stderr = logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	s.exited = exited
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(logPath)
		if m := listenLine.FindSubmatch(b); m != nil {
			s.URL = string(m[1])
			return s, nil
		}
		select {
		case <-exited:
			logf.Close()
			return nil, fmt.Errorf("server exited at start; see %s", logPath)
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.stop()
	return nil, fmt.Errorf("server did not start; see %s", logPath)
}

// stop ends the server with SIGTERM (graceful), then SIGKILL after 10s.
func (s *server) stop() {
	defer s.logf.Close()
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// memory reads the process's resident set now and at its peak, in bytes.
func (s *server) memory() (rss, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak
}

// cpu is the CPU time (user and system) the server has used so far.
func (s *server) cpu() time.Duration {
	return procCPU(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
}

// postgresCPU is the CPU used so far by this machine's PostgreSQL processes
// (the postmaster, its backends and workers; a backend that ended during a
// run takes its share with it). Zero when PostgreSQL runs elsewhere.
func postgresCPU() time.Duration {
	var total time.Duration
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		comm, err := os.ReadFile("/proc/" + d.Name() + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		total += procCPU("/proc/" + d.Name() + "/stat")
	}
	return total
}

// procCPU reads utime and stime from a /proc/<pid>/stat file. Both are in
// clock ticks, which Linux fixes at 100 a second for user space.
func procCPU(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(b), ") ") // after the command name, which may hold spaces
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// buildServer compiles cmd/gatehouse into dir.
func buildServer(dir string) (string, error) {
	bin := filepath.Join(dir, "gatehouse")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/gatehouse-dev/gatehouse/cmd/gatehouse")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building gatehouse: %w", err)
	}
	return bin, nil
}

// pgSchema creates a fresh schema on the PostgreSQL server and returns a
// DSN pointing at it, and a function that drops it.
func pgSchema(base string) (string, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: %w", err)
	}
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	schema := "gh_bench_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		return "", nil, fmt.Errorf("postgres: %w", err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(ctx)
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	if !strings.Contains(base, "://") {
		return base + " search_path=" + schema, drop, nil
	}
	return base + sep + "search_path=" + schema, drop, nil
}
