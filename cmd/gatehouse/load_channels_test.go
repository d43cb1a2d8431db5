package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
	"github.com/gatehouse-dev/gatehouse/client"
	"github.com/gatehouse-dev/gatehouse/internal/fakefault"
)

// channelFaultWindow is how long Slack and Feishu fail in
// TestChannelsFailingThenRecovering: a few seconds in the default suite, a
// minute under the load build tag (scripts/load), or -channel-faults.
var channelFaultWindow = 2500 * time.Millisecond

var channelFaultsFlag = flag.Duration("channel-faults", 0, "how long Slack and Feishu fail in TestChannelsFailingThenRecovering (0: 2.5s, or 60s with -tags load)")

// TestChannelsFailingThenRecovering: while Slack and Feishu answer 429 with
// Retry-After, 5xx, or hang past the client's timeout, requests keep
// coming; once the platforms recover, every request has exactly one card on
// each (counted from the fakes' records: the messages people see), the
// approvers' taps work, every agent gets the verdict that was tapped and
// every Slack card shows it.
//
// Hung posts land on both platforms (the platform did the work, the answer
// was lost). Gatehouse's Feishu retry repeats the post's uuid, and Feishu
// shows nothing new. Slack has no idempotency key: its retry finds the
// landed card by its message metadata in the channel's history and adopts
// it, so people still see one card, which is updated with the verdict.
func TestChannelsFailingThenRecovering(t *testing.T) {
	window := channelFaultWindow
	if *channelFaultsFlag > 0 {
		window = *channelFaultsFlag
	}
	n := 24 // requests in all, spread over the window
	if window >= 30*time.Second {
		n = 240
	}
	rg := newRig(t, t.TempDir(), "", 1, 1)
	base := rg.servers[0].URL

	feishuSend := "POST " + feishutest.MessagesPath
	start := time.Now()
	third := window / 3
	at := func(d time.Duration) time.Time { return start.Add(d) }
	slackCalls := []string{slackPost, slackUpdate}
	rg.slack.Inject(fakefault.Fault{Hang: true, Landed: true, Methods: []string{slackPost}, Calls: 2})
	rg.slack.Inject(fakefault.Fault{Status: 429, RetryAfter: time.Second, Methods: slackCalls, Until: at(third)})
	rg.slack.Inject(fakefault.Fault{Status: 503, Methods: slackCalls, From: at(third), Until: at(2 * third)})
	rg.slack.Inject(fakefault.Fault{Status: 500, Methods: slackCalls, From: at(2 * third), Until: at(window)})
	rg.feishu.Inject(fakefault.Fault{Hang: true, Landed: true, Methods: []string{feishuSend}, Calls: 2})
	rg.feishu.Inject(fakefault.Fault{Status: 502, From: start, Until: at(third)})
	rg.feishu.Inject(fakefault.Fault{Status: 429, RetryAfter: time.Second, From: at(third), Until: at(2 * third)})
	rg.feishu.Inject(fakefault.Fault{Status: 503, From: at(2 * third), Until: at(window)})

	// The agents: one request every window/n, each blocking for its verdict.
	outs := make([]outcome, n)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), window+4*time.Minute)
	defer cancel()
	tick := time.NewTicker(window / time.Duration(n))
	for i := range n {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &outs[i]
			o.Key, o.Start = fmt.Sprintf("faults-%d", i), time.Now()
			args, _ := json.Marshal(map[string]int{"n": i})
			o.Res, o.Err = rg.agent(0).Gate(ctx, client.Request{ToolName: rigTool, ToolArgs: args, IdempotencyKey: o.Key,
				Summary: fmt.Sprintf("deploy %d while the platforms fail", i)})
			o.End = time.Now()
		}()
	}
	tick.Stop()
	if time.Now().Before(at(window)) {
		// Requests made at the end of the window met the faults too.
		t.Logf("all %d requests made %v into the %v window", n, time.Since(start).Round(time.Millisecond), window)
	}

	// Every request gets its cards once the platforms are back; backoff
	// after a minute of failures can reach a minute.
	var ids []string
	deadline := at(window).Add(3 * time.Minute)
	for {
		counts := cardCounts(rg.cards())
		ids = ids[:0]
		for id, c := range counts {
			if c[rigSlack] >= 1 && c[rigFeishu] >= 1 {
				ids = append(ids, id)
			}
		}
		if len(ids) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests have both cards %v after the faults ended", len(ids), n, time.Since(at(window)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	recovered := time.Since(at(window))
	if time.Now().Before(at(window)) {
		recovered = 0
	}
	sf, ff := rg.failedCalls()
	if sf == 0 || ff == 0 {
		t.Fatalf("the faults never bit: %d Slack and %d Feishu calls failed", sf, ff)
	}

	// Taps: Slack approves a third of the requests, Feishu rejects a
	// third, the web page approves the rest.
	web := rg.loginWeb(t, base, "ap0")
	byID := map[string]map[string]card{}
	for _, c := range rg.cards() {
		if byID[c.RequestID] == nil {
			byID[c.RequestID] = map[string]card{}
		}
		byID[c.RequestID][c.Channel] = c
	}
	slices.Sort(ids)
	var taps []tap
	for i, id := range ids {
		var tp tap
		switch i % 3 {
		case 0:
			tp = rg.tapSlack(base, byID[id][rigSlack], slackE2EAlice, true)
		case 1:
			tp = rg.tapFeishu(base, byID[id][rigFeishu], feishuE2EAlice, false)
		default:
			tp = web.tapWeb(base, id, true)
		}
		if tp.Err != nil {
			t.Fatalf("tap %s on %s: %v", id, tp.Via, tp.Err)
		}
		taps = append(taps, tp)
	}
	wg.Wait()

	rows := rg.readRows(t, outs)
	v := judge(outs, rows, taps)
	counts := cardCounts(rg.cards())
	dups, missing := 0, 0
	for _, o := range outs {
		for _, ch := range []string{rigSlack, rigFeishu} {
			switch c := counts[o.Res.RequestID][ch]; {
			case c == 0:
				missing++
			case c > 1:
				dups += c - 1
				t.Errorf("request %s has %d cards on %s", o.Res.RequestID, c, ch)
			}
		}
	}
	// Every Slack card shows the verdict (a Feishu tap's answer carries
	// its card; the gate updates the Slack one).
	unupdated := 0
	deadline = time.Now().Add(time.Minute)
	for {
		updated := rg.slackUpdated()
		unupdated = 0
		for _, c := range rg.cards() {
			if c.Channel == rigSlack && !updated[c.Ref] {
				unupdated++
			}
		}
		if unupdated == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	figure(t, "channels_fault_window_s", window.Seconds())
	figure(t, "channels_requests", n)
	figure(t, "channels_failed_calls_slack", sf)
	figure(t, "channels_failed_calls_feishu", ff)
	figure(t, "channels_all_cards_out_after_s", fmt.Sprintf("%.1f", recovered.Seconds()))
	figure(t, "channels_duplicate_cards", dups)
	figure(t, "channels_missing_cards", missing)
	figure(t, "channels_wrong_verdicts", v.Wrong)
	figure(t, "channels_lost_verdicts", v.Lost)
	figure(t, "channels_cards_not_updated", unupdated)
	for _, p := range v.Problems {
		t.Error(p)
	}
	if dups+missing+v.Wrong+v.Lost+unupdated != 0 {
		t.Fatalf("duplicate cards %d, missing %d, wrong verdicts %d, lost %d, Slack cards not updated %d",
			dups, missing, v.Wrong, v.Lost, unupdated)
	}
	if v.Approved == 0 || v.Rejected == 0 {
		t.Fatalf("approved %d, rejected %d: the taps did not both happen", v.Approved, v.Rejected)
	}
}
