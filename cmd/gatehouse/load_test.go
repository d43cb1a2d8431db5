//go:build load

package main

// The load test (scripts/load): 1,000 agents and 100 approvers on the real
// binary for a minute, with Slack and Feishu failing in windows and, on
// PostgreSQL, a replica killed with SIGKILL and restarted. It fails on any
// wrong verdict, lost verdict or duplicate card, and prints its figures as
// FIGURE lines.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
	"github.com/gatehouse-dev/gatehouse/client"
	"github.com/gatehouse-dev/gatehouse/internal/fakefault"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

var (
	loadDuration  = flag.Duration("load.duration", time.Minute, "how long the agents keep asking (env GATEHOUSE_LOAD_DURATION)")
	loadAgents    = flag.Int("load.agents", 1000, "concurrent agents")
	loadApprovers = flag.Int("load.approvers", 100, "approvers: 60% on Slack, 30% on Feishu, 10% on the web page")
)

func init() { channelFaultWindow = time.Minute }

// loadExpireShare of the requests are left to expire; their timeout is
// loadExpireAfter, their route's on_timeout deny.
const (
	loadExpireShare = 0.1
	loadExpireAfter = 2 // seconds
	expireMark      = "expire-me"
)

func TestLoad(t *testing.T) {
	duration := *loadDuration
	if s := os.Getenv("GATEHOUSE_LOAD_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("GATEHOUSE_LOAD_DURATION: %v", err)
		}
		duration = d
	}
	dsn, replicas := "", 1
	if os.Getenv("GATEHOUSE_LOAD_POSTGRES") != "" {
		dsn, replicas = storetest.PostgresDSN(t), 2
	}
	nSlack, nFeishu := *loadApprovers*6/10, *loadApprovers*3/10
	nWeb := *loadApprovers - nSlack - nFeishu
	rg := newRig(t, t.TempDir(), dsn, replicas, nWeb)
	base := func() string { return rg.servers[rand.IntN(len(rg.servers))].URL }

	// Faults: the platforms fail in windows through the run (and hang a few
	// calls at the start); with replicas, one is killed and restarted.
	start := time.Now()
	at := func(f float64) time.Time { return start.Add(time.Duration(f * float64(duration))) }
	feishuSend := "POST " + feishutest.MessagesPath
	slackCalls := []string{slackPost, slackUpdate}
	rg.slack.Inject(fakefault.Fault{Hang: true, Methods: []string{slackPost}, Calls: 3})
	rg.feishu.Inject(fakefault.Fault{Hang: true, Landed: true, Methods: []string{feishuSend}, Calls: 3})
	rg.slack.Inject(fakefault.Fault{Status: 429, RetryAfter: time.Second, Methods: slackCalls, From: at(0.10), Until: at(0.18)})
	rg.slack.Inject(fakefault.Fault{Status: 503, Methods: slackCalls, From: at(0.45), Until: at(0.52)})
	rg.slack.Inject(fakefault.Fault{Status: 500, Methods: slackCalls, From: at(0.75), Until: at(0.80)})
	rg.feishu.Inject(fakefault.Fault{Status: 503, From: at(0.25), Until: at(0.32)})
	rg.feishu.Inject(fakefault.Fault{Status: 429, RetryAfter: time.Second, From: at(0.55), Until: at(0.62)})
	rg.feishu.Inject(fakefault.Fault{Status: 502, From: at(0.80), Until: at(0.85)})

	end := start.Add(duration)
	drainBy := end.Add(2 * time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), drainBy)
	defer cancel()

	// Agents: each asks, blocks for the verdict, asks again, until the end.
	var (
		outMu sync.Mutex
		outs  []outcome
		agWG  sync.WaitGroup
	)
	for a := range *loadAgents {
		agWG.Add(1)
		go func() {
			defer agWG.Done()
			c := rg.agent(a)
			for i := 0; time.Now().Before(end); i++ {
				o := outcome{Key: fmt.Sprintf("agent%d-%d", a, i), Expire: rand.Float64() < loadExpireShare, Start: time.Now()}
				req := client.Request{ToolName: rigTool, IdempotencyKey: o.Key, TimeoutSeconds: 120,
					Summary: fmt.Sprintf("deploy by agent %d, call %d", a, i)}
				if o.Expire {
					req.TimeoutSeconds, req.Summary = loadExpireAfter, req.Summary+" "+expireMark
				}
				req.ToolArgs, _ = json.Marshal(map[string]any{"agent": a, "call": i})
				o.Res, o.Err = c.Gate(ctx, req)
				o.End = time.Now()
				outMu.Lock()
				outs = append(outs, o)
				outMu.Unlock()
			}
		}()
	}

	// Approvers read the cards from the fakes' records: a dispatcher hands
	// each new request to one approver (a tenth get a second, racing tap
	// with the other verdict), on the platform whose card came first, or
	// on the web page.
	type task struct {
		c       card
		approve bool
	}
	queues := map[string]chan task{rigSlack: make(chan task, 1<<16), rigFeishu: make(chan task, 1<<16), rigWeb: make(chan task, 1<<16)}
	var (
		tapMu sync.Mutex
		taps  []tap
		apWG  sync.WaitGroup
	)
	record := func(tp tap) {
		tapMu.Lock()
		taps = append(taps, tp)
		tapMu.Unlock()
	}
	for i := range nSlack {
		apWG.Add(1)
		go func() {
			defer apWG.Done()
			for tk := range queues[rigSlack] {
				record(rg.tapSlack(base(), tk.c, fmt.Sprintf("U0AP%03d", i), tk.approve))
			}
		}()
	}
	for i := range nFeishu {
		apWG.Add(1)
		go func() {
			defer apWG.Done()
			for tk := range queues[rigFeishu] {
				record(rg.tapFeishu(base(), tk.c, fmt.Sprintf("ou_ap%03d", i), tk.approve))
			}
		}()
	}
	for i := range nWeb {
		w := rg.loginWeb(t, rg.servers[i%len(rg.servers)].URL, fmt.Sprintf("ap%d", i))
		apWG.Add(1)
		go func() {
			defer apWG.Done()
			for tk := range queues[rigWeb] {
				// Sessions live in the shared database: any replica will do.
				record(w.tapWeb(base(), tk.c.RequestID, tk.approve))
			}
		}()
	}
	stopDispatch := make(chan struct{})
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		seen := map[string]bool{}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopDispatch:
				return
			case <-tick.C:
			}
			for _, c := range rg.cards() {
				if seen[c.RequestID] {
					continue
				}
				seen[c.RequestID] = true
				if strings.Contains(c.Text, expireMark) {
					continue
				}
				approve := rand.IntN(2) == 0
				via := c.Channel
				if rand.IntN(10) == 0 {
					via = rigWeb
				}
				queues[via] <- task{c: c, approve: approve}
				if rand.IntN(10) == 0 { // a second approver races with the other verdict
					other := rigWeb
					if via == rigWeb {
						other = c.Channel
					}
					queues[other] <- task{c: c, approve: !approve}
				}
			}
		}
	}()

	// With replicas: SIGKILL one a third of the way in, restart it.
	kills := 0
	if replicas > 1 {
		select {
		case <-time.After(time.Until(at(0.33))):
		case <-ctx.Done():
		}
		rg.servers[1].Kill()
		kills++
		<-time.After(3 * time.Second) // the replica stays down a while
		rg.servers[1] = startServer(t, rg.cfgs[1])
	}

	var live atomic.Int32
	agentsDone := make(chan struct{})
	go func() { agWG.Wait(); close(agentsDone) }()
	select {
	case <-agentsDone:
	case <-ctx.Done():
		live.Store(1)
	}
	rg.slack.Heal()
	rg.feishu.Heal()
	close(stopDispatch)
	<-dispatched
	for _, q := range queues {
		close(q)
	}
	apWG.Wait()
	<-agentsDone // ctx has ended: every Gate has returned
	inRun := 0   // verdicts the agents got while the run lasted
	for _, o := range outs {
		if o.End.Before(end) && o.Err == nil {
			inRun++
		}
	}

	rows := rg.readRows(t, outs)
	v := judge(outs, rows, taps)
	dups := 0
	for id, n := range cardCounts(rg.cards()) {
		for ch, c := range n {
			if c > 1 {
				dups += c - 1
				t.Errorf("request %s has %d cards on %s", id, c, ch)
			}
		}
	}
	// Latency: from the tap that decided to the agent's verdict, and from
	// the agent's ask to its verdict.
	winner := map[string]time.Time{}
	for _, tp := range taps {
		if rw, ok := rows[tp.RequestID]; ok && rw.DecidedBy == tp.Identity {
			winner[tp.RequestID] = tp.At
		}
	}
	var tapLat, askLat []time.Duration
	for _, o := range outs {
		if w, ok := winner[o.Res.RequestID]; ok && o.Err == nil {
			tapLat = append(tapLat, o.End.Sub(w))
			askLat = append(askLat, o.End.Sub(o.Start))
		}
	}
	refused, tapErrs := 0, 0
	for _, tp := range taps {
		switch {
		case tp.Err != nil:
			tapErrs++
		case !tp.Won && tp.Via != rigSlack:
			refused++
		}
	}
	slackFailed, feishuFailed := rg.failedCalls()

	db := "sqlite"
	if dsn != "" {
		db = "postgres"
	}
	figure(t, "load_database", db)
	figure(t, "load_replicas", replicas)
	figure(t, "load_agents", *loadAgents)
	figure(t, "load_approvers", *loadApprovers)
	figure(t, "load_duration_s", fmt.Sprintf("%.0f", duration.Seconds()))
	figure(t, "load_requests", v.Total)
	figure(t, "load_approved", v.Approved)
	figure(t, "load_rejected", v.Rejected)
	figure(t, "load_expired", v.Expired)
	figure(t, "load_verdicts_per_s", fmt.Sprintf("%.1f", float64(inRun)/duration.Seconds()))
	figure(t, "load_tap_to_verdict_p50_ms", percentile(tapLat, 50).Milliseconds())
	figure(t, "load_tap_to_verdict_p99_ms", percentile(tapLat, 99).Milliseconds())
	figure(t, "load_ask_to_verdict_p50_ms", percentile(askLat, 50).Milliseconds())
	figure(t, "load_ask_to_verdict_p99_ms", percentile(askLat, 99).Milliseconds())
	figure(t, "load_taps", len(taps))
	figure(t, "load_taps_refused", refused)
	figure(t, "load_taps_unanswered", tapErrs)
	figure(t, "load_failed_calls_slack", slackFailed)
	figure(t, "load_failed_calls_feishu", feishuFailed)
	figure(t, "load_replica_kills", kills)
	figure(t, "load_wrong_verdicts", v.Wrong)
	figure(t, "load_lost_verdicts", v.Lost)
	figure(t, "load_duplicate_cards", dups)
	for _, p := range v.Problems {
		t.Error(p)
	}
	if live.Load() != 0 {
		t.Errorf("agents were still waiting %v after the end", drainBy.Sub(end))
	}
	if v.Wrong+v.Lost+dups != 0 {
		t.Fatalf("wrong verdicts %d, lost verdicts %d, duplicate cards %d", v.Wrong, v.Lost, dups)
	}
	if v.Approved == 0 || v.Rejected == 0 || v.Expired == 0 {
		t.Fatalf("approved %d, rejected %d, expired %d: the run did not exercise every verdict", v.Approved, v.Rejected, v.Expired)
	}
}
