package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/policy/policybench"
)

// pollEvery is how often the design Gatehouse replaces polls for a verdict.
const pollEvery = 1500 * time.Millisecond

// latencyResult holds verdict → unblocked latencies.
type latencyResult struct {
	longPoll, polling []time.Duration
	errors            int
	ids               []string
}

// pick chooses a replica for sample i.
type pick func(i int) *server

// measureLatency creates 2n requests, parks n long-polling agents and n
// agents polling every 1.5 s, then taps each pair's cards one after the
// other, spaced, and measures from the tap leaving "Slack" to the agent
// seeing the verdict. create, wait and tapOn choose the replica of each step.
func measureLatency(ctx context.Context, fake *fakeSlack, n int, spacing time.Duration, create, wait, tapOn pick) latencyResult {
	var res latencyResult
	var errs atomic.Int64
	run := fmt.Sprintf("%x", rand.Uint64())
	lp, pl := make([]string, n), make([]string, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range 2 * n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			id, err := createOn(ctx, create(i/2).URL, fmt.Sprintf("lat-%s-%d", run, i))
			if err != nil {
				errs.Add(1)
				return
			}
			if i%2 == 0 {
				lp[i/2] = id
			} else {
				pl[i/2] = id
			}
		}()
	}
	wg.Wait()
	res.ids = append(append(res.ids, lp...), pl...)
	// Cards first: an approver taps a card they have seen.
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range res.ids {
		for id != "" && !fake.posted(id) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	tapped := make([]time.Time, 2*n)
	var tmu sync.Mutex
	tapAt := func(k int) time.Time {
		tmu.Lock()
		defer tmu.Unlock()
		return tapped[k]
	}
	lpDone, plDone := make([]time.Duration, n), make([]time.Duration, n)
	wctx, cancel := context.WithTimeout(ctx, time.Duration(n)*spacing+60*time.Second)
	defer cancel()
	var agents sync.WaitGroup
	for i := range n {
		if lp[i] == "" || pl[i] == "" {
			continue
		}
		agents.Add(2)
		go func() {
			defer agents.Done()
			st, err := longPoll(wctx, wait(i).URL, lp[i], 2*time.Minute)
			at := time.Now()
			if err != nil || st != "approved" {
				errs.Add(1)
				return
			}
			lpDone[i] = at.Sub(tapAt(2 * i))
		}()
		go func() {
			defer agents.Done()
			t := time.NewTimer(rand.N(pollEvery))
			defer t.Stop()
			for {
				select {
				case <-wctx.Done():
					errs.Add(1)
					return
				case <-t.C:
				}
				st, err := get(wctx, wait(i).URL, pl[i])
				at := time.Now()
				if err != nil {
					errs.Add(1)
					return
				}
				if st != "pending" {
					plDone[i] = at.Sub(tapAt(2*i + 1))
					return
				}
				t.Reset(pollEvery)
			}
		}()
	}
	time.Sleep(pollEvery + 100*time.Millisecond) // long polls parked, pollers spread over their period
	for i := range n {
		if lp[i] == "" || pl[i] == "" {
			continue
		}
		// The clock starts as each tap, built and signed, goes onto the socket.
		base := tapOn(i).URL
		for k, id := range []string{lp[i], pl[i]} {
			req, err := newTap(ctx, base, id)
			if err != nil {
				errs.Add(1)
				continue
			}
			if err := sendTap(req, id, func() {
				tmu.Lock()
				tapped[2*i+k] = time.Now()
				tmu.Unlock()
			}); err != nil {
				errs.Add(1)
			}
		}
		time.Sleep(spacing)
	}
	agents.Wait()
	for i := range n {
		if lpDone[i] > 0 {
			res.longPoll = append(res.longPoll, lpDone[i])
		}
		if plDone[i] > 0 {
			res.polling = append(res.polling, plDone[i])
		}
	}
	res.errors = int(errs.Load())
	return res
}

func createOn(ctx context.Context, base, key string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return create(ctx, base, key)
}

// cycleResult is the outcome of a throughput run.
type cycleResult struct {
	done    int
	errors  int
	elapsed time.Duration
	lat     []time.Duration
	ids     []string
	// CPU used during the run by the servers, by this load generator
	// (agents, fake Slack, taps) and by PostgreSQL on this machine (zero on
	// SQLite runs), which share the machine.
	serverCPU, benchCPU, dbCPU time.Duration
}

// cpuMeter reads the CPU used by the servers, this process and
// PostgreSQL between its start and stop.
type cpuMeter struct {
	servers        []*server
	srv, self, db0 time.Duration
}

func startCPU(servers []*server) cpuMeter {
	m := cpuMeter{servers: servers}
	m.srv, m.self, m.db0 = m.serverCPU(), procCPU("/proc/self/stat"), postgresCPU()
	return m
}

func (m cpuMeter) serverCPU() (d time.Duration) {
	for _, s := range m.servers {
		d += s.cpu()
	}
	return d
}

// stop writes the CPU used since the start into res.
func (m cpuMeter) stop(res *cycleResult) {
	res.serverCPU, res.benchCPU = m.serverCPU()-m.srv, procCPU("/proc/self/stat")-m.self
	if m.servers[0].driver == "postgres" {
		res.dbCPU = postgresCPU() - m.db0
	}
}

func (c cycleResult) rate() float64 {
	if c.elapsed <= 0 {
		return 0
	}
	return float64(c.done) / c.elapsed.Seconds()
}

// measureCycles runs full life cycles for d with conc agents at once: the
// agent calls POST /api/v1/gate and holds; the card reaches the fake Slack,
// which taps Approve (signed) on some replica; the agent is unblocked.
func measureCycles(ctx context.Context, fake *fakeSlack, servers []*server, conc int, d time.Duration) cycleResult {
	fake.setOnPost(func(id string) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_ = tap(ctx, servers[rand.N(len(servers))].URL, id)
	})
	defer fake.setOnPost(nil)
	run := fmt.Sprintf("%x", rand.Uint64())
	return runAgents(servers, conc, d, func(a, n int, base string) (string, bool) {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		h, err := gateCall(cctx, base, fmt.Sprintf("cyc-%s-%d-%d", run, a, n), 55*time.Second)
		return h.RequestID, err == nil && h.Status == "approved" && h.Allow
	})
}

// runAgents runs conc agents for d, agent a on replica a mod n, each
// calling op over and over (n counts its calls), and times every call;
// op says the request it made and whether the call went as it should.
func runAgents(servers []*server, conc int, d time.Duration, op func(a, n int, base string) (id string, ok bool)) cycleResult {
	var mu sync.Mutex
	var res cycleResult
	var errs atomic.Int64
	meter := startCPU(servers)
	start := time.Now()
	stop := start.Add(d)
	var last atomic.Int64
	var wg sync.WaitGroup
	for a := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := servers[a%len(servers)].URL
			lat := make([]time.Duration, 0, 1<<12)
			var ids []string
			for n := 0; time.Now().Before(stop); n++ {
				t0 := time.Now()
				id, ok := op(a, n, base)
				at := time.Now()
				if !ok {
					errs.Add(1)
					continue
				}
				last.Store(int64(at.Sub(start)))
				lat = append(lat, at.Sub(t0))
				if id != "" {
					ids = append(ids, id)
				}
			}
			mu.Lock()
			res.done += len(lat)
			res.lat = append(res.lat, lat...)
			res.ids = append(res.ids, ids...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	meter.stop(&res)
	res.elapsed = time.Duration(last.Load())
	res.errors = int(errs.Load())
	return res
}

// waiterResult is the outcome of the many-waiters run.
type waiterResult struct {
	n, parked, approved, errors int
	rss, peak                   int64
	heap, stack, goroutines     float64
	parkTook                    time.Duration
	firstErr                    string
}

// measureWaiters parks n agents on POST /api/v1/gate at once, reads the
// server's RSS while they all wait, then approves every request and
// checks each agent got its verdict.
func measureWaiters(ctx context.Context, fake *fakeSlack, srv *server, n int) waiterResult {
	res := waiterResult{n: n}
	run := fmt.Sprintf("%x", rand.Uint64())
	var errs, approved atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		errs.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	var agents sync.WaitGroup
	for i := range n {
		if i > 0 && i%100 == 0 {
			time.Sleep(50 * time.Millisecond) // ramp: 2,000 new agents a second
		}
		agents.Add(1)
		go func() {
			defer agents.Done()
			h, err := gateCall(wctx, srv.URL, fmt.Sprintf("wait-%s-%d", run, i), 4*time.Minute)
			if err != nil {
				fail(err)
				return
			}
			if h.Status != "approved" || !h.Allow {
				fail(fmt.Errorf("agent %d: status %q", i, h.Status))
				return
			}
			approved.Add(1)
		}()
	}
	// Everyone parked: the server's gauge says n waiters.
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) && errs.Load() == 0 {
		w, err := waiters(ctx, srv.URL)
		res.parked = w
		if err == nil && w >= n {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	res.parkTook = time.Since(start)
	// Every card out, so every request can be tapped.
	for time.Now().Before(deadline) && fake.postedCount() < n {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	res.rss, _ = srv.memory()
	if m, err := scrape(ctx, srv.URL, "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_goroutines"); err == nil {
		res.heap, res.stack, res.goroutines = m["go_memstats_heap_inuse_bytes"], m["go_memstats_stack_inuse_bytes"], m["go_goroutines"]
	}
	// Approve them all through signed taps; the ids come from the cards.
	var all []string
	fake.mu.Lock()
	for id := range fake.posts {
		all = append(all, id)
	}
	fake.mu.Unlock()
	sem := make(chan struct{}, 32)
	var taps sync.WaitGroup
	for _, id := range all {
		taps.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; taps.Done() }()
			if err := tap(wctx, srv.URL, id); err != nil {
				fail(err)
			}
		}()
	}
	taps.Wait()
	agents.Wait()
	_, res.peak = srv.memory()
	res.approved = int(approved.Load())
	res.errors = int(errs.Load())
	if v, ok := firstErr.Load().(string); ok {
		res.firstErr = v
	}
	return res
}

// percentile is the nearest-rank q-quantile of ds (in any order).
func percentile(ds []time.Duration, q float64) time.Duration {
	return policybench.Quantile(slices.Sorted(slices.Values(ds)), q)
}
