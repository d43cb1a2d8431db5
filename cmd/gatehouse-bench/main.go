// Command gatehouse-bench measures Gatehouse end to end: it starts the real
// server binary (one process on SQLite, several on one PostgreSQL) with a
// local fake Slack API, drives simulated agents and signed card taps over
// loopback, and prints a report against the project's targets.
//
//	go run ./cmd/gatehouse-bench            # everything, a few minutes
//	go run ./cmd/gatehouse-bench --quick    # smaller samples, about a minute
//	go run ./cmd/gatehouse-bench --parts latency,cycles
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

type options struct {
	bin      string
	parts    map[string]bool
	quick    bool
	pg       string
	samples  int
	spacing  time.Duration
	cycleFor time.Duration
	conc     int
	waiters  int
	replicas int
	keep     bool
	workDir  string

	policyConc int // agents calling at once in the policy part
	hookRuns   int // hook processes of each kind
	evalCalls  int // in-process policy decisions per case
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gatehouse-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	parts := fs.String("parts", "latency,cycles,waiters,replicas,policy", "parts to run, comma-separated: latency, cycles, waiters, replicas, policy")
	fs.StringVar(&o.bin, "bin", "", "gatehouse binary to benchmark (default: build ./cmd/gatehouse)")
	fs.BoolVar(&o.quick, "quick", false, "smaller samples and shorter runs")
	fs.StringVar(&o.pg, "postgres", orEnv("GATEHOUSE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"),
		"PostgreSQL DSN for the PostgreSQL parts (a fresh schema is created and dropped); empty skips them")
	fs.IntVar(&o.samples, "samples", 300, "latency samples per kind of agent")
	fs.DurationVar(&o.spacing, "spacing", 10*time.Millisecond, "pause between taps in the latency parts")
	fs.DurationVar(&o.cycleFor, "cycle-for", 10*time.Second, "how long each throughput run lasts")
	fs.IntVar(&o.conc, "concurrency", 64, "agents running life cycles at once")
	fs.IntVar(&o.waiters, "waiters", 10000, "agents waiting at once in the waiters part")
	fs.IntVar(&o.replicas, "replicas", 3, "replicas in the replicas part")
	fs.IntVar(&o.policyConc, "policy-concurrency", 8, "agents calling at once in the policy part")
	fs.IntVar(&o.hookRuns, "hook-runs", 200, "hook processes of each kind in the policy part")
	fs.IntVar(&o.evalCalls, "eval-calls", 20000, "in-process policy decisions per case in the policy part")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (databases, server logs)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.quick {
		o.samples = min(o.samples, 100)
		o.cycleFor = min(o.cycleFor, 4*time.Second)
		o.hookRuns = min(o.hookRuns, 50)
	}
	o.parts = map[string]bool{}
	for _, p := range strings.Split(*parts, ",") {
		if p = strings.TrimSpace(p); p != "" {
			o.parts[p] = true
		}
	}
	raiseFileLimit(stderr)
	dir, err := os.MkdirTemp("", "gatehouse-bench")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	o.workDir = dir
	if o.keep {
		fmt.Fprintln(stderr, "work directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if o.bin == "" {
		fmt.Fprintln(stderr, "building gatehouse …")
		if o.bin, err = buildServer(dir); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep := &report{}
	rep.machine()
	if err := runParts(ctx, o, rep, stderr); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		rep.print(stdout)
		return 1
	}
	rep.print(stdout)
	if rep.missed > 0 {
		return 3
	}
	return 0
}

func orEnv(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

// raiseFileLimit lifts the soft open-files limit to the hard one, for this
// process and the servers it starts (children inherit it).
func raiseFileLimit(stderr io.Writer) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return
	}
	l.Cur = l.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		fmt.Fprintln(stderr, "raising RLIMIT_NOFILE:", err)
	}
}

func logf(w io.Writer, format string, a ...any) {
	fmt.Fprintf(w, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
}

func runParts(ctx context.Context, o options, rep *report, log io.Writer) error {
	if o.parts["policy"] {
		// First, in this process's fresh heap, as the Go benchmark runs
		// it: after the other parts the heap is larger and collects less
		// often, which once made the Bash p99 look 5x better than it is.
		logf(log, "policy evaluation in-process, 200 routes")
		rep.evaluation(o.evalCalls, measureEvaluation(o.evalCalls))
	}
	if o.parts["latency"] || o.parts["cycles"] {
		logf(log, "SQLite, one node: latency and life cycles")
		fake := newFakeSlack()
		srvs, err := startServers(o.bin, mkdir(o.workDir, "sqlite"), 1, "sqlite", filepath.Join(o.workDir, "sqlite", "gatehouse.db"), fake.url(), "")
		if err != nil {
			return err
		}
		s := srvs[0]
		only := func(int) *server { return s }
		if o.parts["latency"] {
			lat := measureLatency(ctx, fake, o.samples, o.spacing, only, only, only)
			rep.latency("SQLite, 1 node", lat)
			checkCards(rep, fake, "latency", lat.ids, 5*time.Second)
		}
		if o.parts["cycles"] {
			c := measureCycles(ctx, fake, srvs, o.conc, o.cycleFor)
			rep.cycles("SQLite, 1 node", c, 300)
			checkCards(rep, fake, "life cycles on SQLite", c.ids, 10*time.Second)
		}
		s.stop()
		fake.close()
	}
	if o.parts["cycles"] && o.pg != "" {
		logf(log, "PostgreSQL, one node: life cycles")
		if err := onPostgres(o, 1, "", func(fake *fakeSlack, srvs []*server) {
			c := measureCycles(ctx, fake, srvs, o.conc, o.cycleFor)
			rep.cycles("PostgreSQL, 1 node", c, 200)
			checkCards(rep, fake, "life cycles on PostgreSQL", c.ids, 10*time.Second)
		}); err != nil {
			return err
		}
	}
	if o.parts["waiters"] {
		logf(log, "SQLite, one node: %d agents waiting at once", o.waiters)
		fake := newFakeSlack()
		srvs, err := startServers(o.bin, mkdir(o.workDir, "waiters"), 1, "sqlite", filepath.Join(o.workDir, "waiters", "gatehouse.db"), fake.url(), "")
		if err != nil {
			return err
		}
		w := measureWaiters(ctx, fake, srvs[0], o.waiters)
		rep.waiters(w)
		srvs[0].stop()
		fake.close()
	}
	if o.parts["replicas"] && o.pg != "" {
		logf(log, "PostgreSQL, %d replicas: cross-replica latency and cards", o.replicas)
		if err := onPostgres(o, o.replicas, "", func(fake *fakeSlack, srvs []*server) {
			n := len(srvs)
			lat := measureLatency(ctx, fake, o.samples, o.spacing,
				func(i int) *server { return srvs[(i+2)%n] }, // created on C
				func(i int) *server { return srvs[i%n] },     // waits on A
				func(i int) *server { return srvs[(i+1)%n] }) // tapped on B
			rep.crossReplica(n, lat)
			c := measureCycles(ctx, fake, srvs, o.conc, o.cycleFor)
			rep.cycles(fmt.Sprintf("PostgreSQL, %d replicas", n), c, 150)
			checkCards(rep, fake, fmt.Sprintf("%d replicas", n), append(lat.ids, c.ids...), 10*time.Second)
		}); err != nil {
			return err
		}
	}
	if o.parts["policy"] {
		if err := policyPart(ctx, o, rep, log); err != nil {
			return err
		}
	}
	return nil
}

// policyPart measures what the policy decides with no person: gate calls
// on SQLite (recorded, and record: false) and on PostgreSQL, and the hook
// process against a minimal Go program. (runParts measures the policy's
// evaluation in-process first.)
func policyPart(ctx context.Context, o options, rep *report, log io.Writer) error {
	logf(log, "SQLite, one node: gate calls the policy decides, and the hook process")
	fake := newFakeSlack()
	defer fake.close()
	srvs, err := startServers(o.bin, mkdir(o.workDir, "policy"), 1, "sqlite", filepath.Join(o.workDir, "policy", "gatehouse.db"), fake.url(), policyRoutes)
	if err != nil {
		return err
	}
	rep.policyCalls("SQLite, 1 node, recorded (allow, deny, allow)", measurePolicyCalls(ctx, srvs, recordedCalls, o.policyConc, o.cycleFor), 5000, 2*time.Millisecond)
	rep.policyCalls("SQLite, 1 node, record: false", measurePolicyCalls(ctx, srvs, unrecordedCalls, o.policyConc, o.cycleFor), 0, 0)
	hs, err := measureHooks(ctx, o, srvs[0], o.hookRuns)
	rep.hooks(o.hookRuns, hs, err)
	srvs[0].stop()
	if o.pg == "" {
		return nil
	}
	logf(log, "PostgreSQL, one node: gate calls the policy decides")
	return onPostgres(o, 1, policyRoutes, func(_ *fakeSlack, srvs []*server) {
		rep.policyCalls("PostgreSQL, 1 node, recorded (allow, deny, allow)", measurePolicyCalls(ctx, srvs, recordedCalls, o.policyConc, o.cycleFor), 2000, 0)
	})
}

// onPostgres runs fn against n replicas on a fresh schema, their config
// ending with extra.
func onPostgres(o options, n int, extra string, fn func(*fakeSlack, []*server)) error {
	dsn, drop, err := pgSchema(o.pg)
	if err != nil {
		return err
	}
	defer drop()
	fake := newFakeSlack()
	defer fake.close()
	srvs, err := startServers(o.bin, mkdir(o.workDir, fmt.Sprintf("pg-%d-%d", n, time.Now().UnixNano())), n, "postgres", dsn, fake.url(), extra)
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range srvs {
			s.stop()
		}
	}()
	fn(fake, srvs)
	return nil
}

// checkCards waits for the final card updates to land, then checks that
// each request got exactly one card post and one final update.
func checkCards(rep *report, fake *fakeSlack, what string, ids []string, settle time.Duration) {
	var posts, updates map[string]int
	deadline := time.Now().Add(settle)
	for {
		posts, updates = fake.counts(ids)
		done := true
		for _, id := range ids {
			if id != "" && updates[id] < 1 {
				done = false
				break
			}
		}
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	c := cardCheck{what: what}
	for _, id := range ids {
		if id == "" {
			continue
		}
		c.requests++
		switch p := posts[id]; {
		case p == 0:
			c.unposted++
		case p > 1:
			c.duplicated++
		}
		switch u := updates[id]; {
		case u == 0:
			c.unupdated++
		case u > 1:
			c.doubleUpdated++
		}
	}
	rep.cards(c)
}

func mkdir(parent, name string) string {
	d := filepath.Join(parent, name)
	_ = os.MkdirAll(d, 0o755)
	return d
}

func goVersion() string { return runtime.Version() }
