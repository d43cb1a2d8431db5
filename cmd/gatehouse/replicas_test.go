package main

// Three real server processes on one PostgreSQL schema, as replicas behind
// a load balancer run: a waiter on one, the tap on another, the sweepers of
// all three racing over the same overdue rows. Skipped without
// GATEHOUSE_TEST_POSTGRES.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

const (
	replicaSecret = "replica-signing-secret"
	replicaBot    = "xoxb-replica"
	replicaCh     = "CREPLICA1"
)

// newReplicaSlack is a fake Slack Web API shared by the replicas; every
// call it receives must carry the bot token.
func newReplicaSlack(t *testing.T) *slacktest.Server {
	f := slacktest.NewServer(t, replicaBot, "")
	t.Cleanup(func() {
		for _, c := range f.Calls() {
			if c.Token != replicaBot {
				t.Errorf("fake slack: %s without the bot token", c.Method)
			}
		}
	})
	return f
}

// replicaCounts counts, for request id, the cards posted and the final
// updates made on the fake Slack.
func replicaCounts(f *slacktest.Server, id string) (posts, updates int) {
	cards := map[string]bool{} // ts of id's cards
	for _, c := range f.CallsOf("chat.postMessage") {
		if strings.Contains(c.Form.Get("blocks"), `"approve:`+id+`"`) {
			posts++
			cards[c.TS] = true
		}
	}
	for _, c := range f.CallsOf("chat.update") {
		if cards[c.Form.Get("ts")] {
			updates++
		}
	}
	return posts, updates
}

// replicaConfig writes the config of one replica on the shared database.
func replicaConfig(t *testing.T, dir, dsn, slackURL string, port int) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(e2ePassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:%d
database:
  driver: postgres
  dsn: %q
defaults:
  channels: [ops-slack, web]   # web decisions count only where the request went
auth:
  api_tokens:
    - name: build-agent
      token: %s
  users:
    - name: alice
      password_bcrypt: %q
      role: approver
log:
  level: debug
channels:
  - name: ops-slack
    type: slack
    bot_token: %s
    signing_secret: %s
    channel_id: %s
    api_url: %s/api/
`, port, dsn, e2eToken, hash, replicaBot, replicaSecret, replicaCh, slackURL)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gatehouse.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// replicaTap sends a signed Slack button tap for request id to base.
func replicaTap(t *testing.T, base, id, choice, user string) {
	t.Helper()
	body := slacktest.Form(slacktest.BlockActions(slacktest.Tap{Team: "T0REPL", User: user, Channel: replicaCh,
		ActionID: "gatehouse_" + choice, Value: choice + ":" + id, TriggerID: "trig." + id,
		ActionTS: strconv.FormatInt(time.Now().UnixNano(), 10)}))
	req, _ := http.NewRequest("POST", base+"/callbacks/slack", strings.NewReader(body))
	req.Header = slacktest.Sign(replicaSecret, time.Now(), body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("tap %s on %s: %v", id, base, err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("tap %s on %s: %d", id, base, resp.StatusCode)
	}
}

// replicaFinalEvents counts the events that end a request; slackUpdated
// says whether its trail records the final update of the Slack card.
func replicaFinalEvents(t *testing.T, base, id string) (n int, types []string, slackUpdated bool) {
	t.Helper()
	var out struct {
		Events []struct {
			Type    string `json:"type"`
			Channel string `json:"channel"`
		} `json:"events"`
	}
	api(t, "GET", base+"/api/v1/approvals/"+id+"/events", nil, &out)
	for _, e := range out.Events {
		types = append(types, e.Type)
		if e.Type == "card_updated" && e.Channel == "ops-slack" {
			slackUpdated = true
		}
		switch e.Type {
		case "decided", "expired", "cancelled", "auto_allowed":
			n++
		}
	}
	return n, types, slackUpdated
}

func TestReplicasOnOnePostgres(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	slack := newReplicaSlack(t)
	dir := t.TempDir()
	// Boot together, so the migrations race as they do in a rollout.
	srvs := make([]*server, 3)
	var wg sync.WaitGroup
	for i := range srvs {
		cfg := replicaConfig(t, filepath.Join(dir, fmt.Sprintf("r%d", i)), dsn, slack.URL, freePort(t))
		wg.Add(1)
		// startServer fails the test from this goroutine if a replica does
		// not start; Goexit still runs wg.Done, and the check below stops.
		go func() { defer wg.Done(); srvs[i] = startServer(t, cfg) }()
	}
	wg.Wait()
	for i, s := range srvs {
		if s == nil || s.URL == "" {
			t.Fatalf("replica %d did not start", i)
		}
	}
	var ids []string
	var idsMu sync.Mutex
	keep := func(id string) { idsMu.Lock(); ids = append(ids, id); idsMu.Unlock() }

	t.Run("waiter on one replica, verdict on another", func(t *testing.T) {
		const n = 12
		type result struct {
			status string
			took   time.Duration
		}
		results := make([]chan result, n)
		reqIDs := make([]string, n)
		for i := range n {
			var r apiRequest
			if code := api(t, "POST", srvs[(i+2)%3].URL+"/api/v1/approvals",
				map[string]any{"tool_name": "deploy", "idempotency_key": fmt.Sprintf("wait-%d", i)}, &r); code != http.StatusCreated {
				t.Fatalf("create: %d", code)
			}
			reqIDs[i] = r.ID
			keep(r.ID)
		}
		// The card is posted once, by whichever replica claims it.
		for _, id := range reqIDs {
			eventually(t, func() bool { p, _ := replicaCounts(slack, id); return p >= 1 }, "card of %s posted", id)
		}
		web := webLogin(t, srvs[1].URL, "alice")
		tapped := make([]time.Time, n)
		for i := range n {
			results[i] = make(chan result, 1)
			go func() {
				var r apiRequest
				code := api(t, "GET", srvs[i%3].URL+"/api/v1/approvals/"+reqIDs[i]+"?wait=20s", nil, &r)
				at := time.Now()
				if code != http.StatusOK {
					r.Status = fmt.Sprintf("HTTP %d", code)
				}
				results[i] <- result{r.Status, at.Sub(tapped[i])}
			}()
		}
		awaitWaiters(t, n, srvs[0].URL, srvs[1].URL, srvs[2].URL)
		for i := range n {
			tapped[i] = time.Now()
			switch {
			case i%4 == 3: // a web decision on replica 1, waiter on 0, 1 or 2
				if code := webDecide(t, web, srvs[1].URL, reqIDs[i], "reject", "not today"); code != http.StatusSeeOther {
					t.Errorf("web decision: %d", code)
				}
			default: // a Slack tap on the next replica; a conflicting tap on the third
				replicaTap(t, srvs[(i+1)%3].URL, reqIDs[i], "approve", "U0ALICE")
				replicaTap(t, srvs[(i+2)%3].URL, reqIDs[i], "reject", "U0BOB")
			}
		}
		for i := range n {
			select {
			case r := <-results[i]:
				if r.status != "approved" && r.status != "rejected" {
					t.Errorf("waiter %d on replica %d got %q", i, i%3, r.status)
				}
				// The safety re-read runs every 2s; a waiter woken well
				// before that was woken by NOTIFY.
				if r.took > time.Second {
					t.Errorf("waiter %d on replica %d woke %s after the verdict", i, i%3, r.took)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("waiter %d on replica %d never got its verdict", i, i%3)
			}
		}
	})

	t.Run("sweepers race over expiring requests", func(t *testing.T) {
		const n = 30
		var reqIDs []string
		for i := range n {
			var r apiRequest
			if code := api(t, "POST", srvs[i%3].URL+"/api/v1/approvals",
				map[string]any{"tool_name": "deploy", "timeout_seconds": 1, "idempotency_key": fmt.Sprintf("exp-%d", i)}, &r); code != http.StatusCreated {
				t.Fatalf("create: %d", code)
			}
			reqIDs = append(reqIDs, r.ID)
			keep(r.ID)
		}
		// Some agents wait too, so their own expiry timers join the race.
		var waits sync.WaitGroup
		for i := 0; i < n; i += 3 {
			waits.Add(1)
			go func() {
				defer waits.Done()
				var r apiRequest
				api(t, "GET", srvs[(i+1)%3].URL+"/api/v1/approvals/"+reqIDs[i]+"?wait=10s", nil, &r)
				if r.Status != "expired" {
					t.Errorf("waiter on %s got %q, want expired", reqIDs[i], r.Status)
				}
			}()
		}
		waits.Wait()
		for _, id := range reqIDs {
			eventually(t, func() bool {
				var r apiRequest
				api(t, "GET", srvs[0].URL+"/api/v1/approvals/"+id, nil, &r)
				return r.Status == "expired"
			}, "%s expired", id)
		}
	})

	// Every card posted once and updated once; every request ended once.
	// A card_updated event is written with its card row's final state, in
	// one transaction: once a request's trail has the Slack card's, no
	// work on that card is left anywhere, and its counts are final. Each
	// request has a web card too (channels: [ops-slack, web]), whose
	// update is instant: its card_updated says nothing of the Slack card.
	for _, id := range ids {
		eventually(t, func() bool {
			_, _, done := replicaFinalEvents(t, srvs[2].URL, id)
			return done
		}, "final Slack card update of %s recorded", id)
	}
	for _, id := range ids {
		posts, updates := replicaCounts(slack, id)
		if posts != 1 || updates != 1 {
			t.Errorf("request %s: %d card posts and %d final updates, want 1 and 1", id, posts, updates)
		}
		if n, types, _ := replicaFinalEvents(t, srvs[2].URL, id); n != 1 {
			t.Errorf("request %s: %d final transitions in its trail %v, want exactly 1", id, n, types)
		}
	}
}
