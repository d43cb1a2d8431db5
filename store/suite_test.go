package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// The suite runs every test on SQLite and on PostgreSQL.

func TestSubmitRoundTrip(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}})
		yes := true
		in := gate.Submission{ToolName: "oa__purchase_pay", ToolArgs: json.RawMessage(`{"vendor": "ACME", "amount": 60000}`),
			RequiresConfirmation: &yes, Summary: "Pay ACME ¥60,000", AgentID: "procurement-bot", UserID: "u_42",
			SessionID: "s_9", ToolCallID: "call_7", Metadata: json.RawMessage(`{"org_id":"o_1"}`), Timeout: 30 * time.Minute, IdempotencyKey: "call_7"}
		r, created, err := svc.Submit(context.Background(), in)
		if err != nil || !created {
			t.Fatalf("submit: %v created=%v", err, created)
		}
		got, err := svc.Get(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != gate.StatusPending || got.ToolName != in.ToolName || string(got.ToolArgs) != `{"vendor":"ACME","amount":60000}` ||
			got.Summary != in.Summary || got.AgentID != "procurement-bot" || got.UserID != "u_42" || got.SessionID != "s_9" ||
			got.ToolCallID != "call_7" || string(got.Metadata) != `{"org_id":"o_1"}` || got.IdempotencyKey != "call_7" ||
			got.Route != "default" || got.OnTimeout != gate.VerdictDeny || got.Quorum != 1 {
			t.Fatalf("read back differs: %+v", got)
		}
		if !got.CreatedAt.Equal(r.CreatedAt) || !got.ExpiresAt.Equal(r.CreatedAt.Add(30*time.Minute)) {
			t.Fatalf("times differ: created %v vs %v, expires %v", got.CreatedAt, r.CreatedAt, got.ExpiresAt)
		}
		if got.DecidedAt != nil || got.ModifiedArgs != nil {
			t.Fatalf("undecided request has decision fields: %+v", got)
		}
	})
}

func TestSubmitValidation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{routes: []gate.Route{{Name: "pay", Tool: "oa__purchase_*", Channels: []string{"fake"}}},
			chans: []gate.Channel{newFake("fake")}})
		for _, tc := range []struct {
			name string
			in   gate.Submission
			want string
		}{
			{"no tool", gate.Submission{}, "tool_name: required"},
			{"bad args", gate.Submission{ToolName: "x", ToolArgs: json.RawMessage(`{"a":`)}, "tool_args: not valid JSON"},
			{"metadata not object", gate.Submission{ToolName: "x", Metadata: json.RawMessage(`[1]`)}, "metadata: must be a JSON object"},
			{"unknown route", gate.Submission{ToolName: "x", Route: "nope"}, `route: tool "x" goes to route "default", not "nope"`},
			{"route not the first match", gate.Submission{ToolName: "deploy", Route: "pay"}, `route: tool "deploy" goes to route "default", not "pay"`},
			{"timeout too long", gate.Submission{ToolName: "x", Timeout: 48 * time.Hour}, "timeout_seconds: must be at most"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, _, err := svc.Submit(context.Background(), tc.in)
				if gate.ErrorCode(err) != gate.EINVALID || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want invalid %q", err, tc.want)
				}
			})
		}
		rs, _, _ := svc.List(context.Background(), gate.Filter{})
		if len(rs) != 0 {
			t.Fatalf("bad input wrote %d rows", len(rs))
		}
	})
}

func TestIdempotentSubmit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}})
		ctx := context.Background()
		var wg sync.WaitGroup
		ids := make([]string, 20)
		created := make([]bool, 20)
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, c, err := svc.Submit(ctx, gate.Submission{ToolName: "deploy", IdempotencyKey: "call-1"})
				if err != nil {
					t.Errorf("submit %d: %v", i, err)
					return
				}
				ids[i], created[i] = r.ID, c
			}()
		}
		wg.Wait()
		n := 0
		for i := range ids {
			if ids[i] != ids[0] {
				t.Fatalf("submission %d got request %s, want %s", i, ids[i], ids[0])
			}
			if created[i] {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d submissions claim to have created the request, want 1", n)
		}
		cards, _ := svc.Cards(ctx, ids[0])
		if len(cards) != 1 {
			t.Fatalf("%d cards for one request", len(cards))
		}
		_, _, err := svc.Submit(ctx, gate.Submission{ToolName: "rm_rf", IdempotencyKey: "call-1"})
		if gate.ErrorCode(err) != gate.EIDEMPOTENCY {
			t.Fatalf("reusing a key for another tool: got %v", err)
		}
	})
}

func TestDecideWakesWaiter(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}})
		r := submit(t, svc, gate.Submission{})
		done := make(chan *gate.Request)
		go func() {
			got, err := svc.Wait(context.Background(), r.ID, time.Minute)
			if err != nil {
				t.Error(err)
			}
			done <- got
		}()
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/U1", Via: "fake",
			Reason: "within budget", ModifiedArgs: json.RawMessage(`{"vendor":"ACME","amount":50000}`)}); err != nil {
			t.Fatal(err)
		}
		var got *gate.Request
		select {
		case got = <-done:
		case <-time.After(time.Second):
			t.Fatal("waiter not woken within 1s of the verdict")
		}
		if time.Since(start) > 500*time.Millisecond {
			t.Errorf("waiter woke after %v: the in-process wake-up did not fire", time.Since(start))
		}
		if got.Status != gate.StatusApproved || got.DecidedBy != "slack:T1/U1" || got.DecidedVia != "fake" || got.Reason != "within budget" ||
			string(got.ModifiedArgs) != `{"vendor":"ACME","amount":50000}` || got.DecidedAt == nil || !got.Allowed() {
			t.Fatalf("verdict not recorded right: %+v", got)
		}
		_, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: false, Actor: "slack:T1/U2", Via: "fake"})
		if gate.ErrorCode(err) != gate.ECONFLICT || !strings.Contains(err.Error(), "already approved by slack:T1/U1") {
			t.Fatalf("second verdict: %v", err)
		}
		evs := events(t, svc, r.ID)
		if countEvents(evs, gate.EventDecided) != 1 || countEvents(evs, gate.EventRefused) != 1 {
			t.Fatalf("trail: %+v", evs)
		}
	})
}

// TestConflictingVerdicts races 50 approvals, rejections, cancellations and
// expiries on one request, with the clock crossing the deadline midway:
// exactly one wins and the trail shows one decision and every refusal.
func TestConflictingVerdicts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clk := newClock()
		svc := newService(t, db, svcOpts{clock: clk, chans: []gate.Channel{newFake("fake")},
			tweak: func(o *gate.Options) { o.SweepInterval = time.Hour }})
		r := submit(t, svc, gate.Submission{Timeout: time.Minute})
		ctx := context.Background()
		var wg sync.WaitGroup
		start := make(chan struct{})
		type outcome struct {
			kind string
			err  error
		}
		results := make([]outcome, 50)
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if i == 25 {
					clk.Add(2 * time.Minute) // the deadline passes while the race runs
				}
				var err error
				kind := []string{"approve", "reject", "cancel", "expire"}[i%4]
				switch kind {
				case "approve", "reject":
					_, err = svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: kind == "approve", Actor: fmt.Sprintf("web:user%d", i), Via: "fake"})
				case "cancel":
					_, err = svc.Cancel(ctx, r.ID, "agent:bot", "")
				case "expire":
					_, err = svc.Expire(ctx, r.ID)
				}
				results[i] = outcome{kind, err}
			}()
		}
		close(start)
		wg.Wait()
		wins, audited := 0, 0
		var winner string
		for _, o := range results {
			if o.err == nil {
				wins++
				winner = o.kind
				continue
			}
			if c := gate.ErrorCode(o.err); c != gate.ECONFLICT && c != gate.EEXPIRED {
				t.Fatalf("%s failed with %v", o.kind, o.err)
			}
			if o.kind != "expire" {
				audited++
			}
		}
		got, _ := svc.Get(ctx, r.ID)
		if wins == 0 && got.Status == gate.StatusExpired {
			// A late verdict noticed the deadline first and expired the
			// request itself (then was refused): the expiry won.
			wins, winner = 1, "expire"
		}
		if wins != 1 {
			t.Fatalf("%d verdicts won, want exactly 1 (status %s)", wins, got.Status)
		}
		want := map[string]gate.Status{"approve": gate.StatusApproved, "reject": gate.StatusRejected, "cancel": gate.StatusCancelled, "expire": gate.StatusExpired}[winner]
		if got.Status != want {
			t.Fatalf("winner was %s but the row says %s", winner, got.Status)
		}
		evs := events(t, svc, r.ID)
		final := countEvents(evs, gate.EventDecided) + countEvents(evs, gate.EventCancelled) + countEvents(evs, gate.EventExpired)
		if final != 1 {
			t.Fatalf("%d final events in the trail, want 1: %+v", final, evs)
		}
		if n := countEvents(evs, gate.EventRefused); n != audited {
			t.Fatalf("%d refusals audited, want %d", n, audited)
		}
	})
}

func TestExpiryDeniesWaiter(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fake := newFake("fake")
		svc := newService(t, db, svcOpts{chans: []gate.Channel{fake}})
		r := submit(t, svc, gate.Submission{Timeout: 2 * time.Second})
		start := time.Now()
		got, err := svc.Wait(context.Background(), r.ID, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if got.Status != gate.StatusExpired || got.Allowed() {
			t.Fatalf("after the deadline: status %s allowed %v", got.Status, got.Allowed())
		}
		if took < 1500*time.Millisecond || took > 3*time.Second {
			t.Fatalf("expired after %v, want about 2s", took)
		}
		_, err = svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:late", Via: "web"})
		if gate.ErrorCode(err) != gate.EEXPIRED {
			t.Fatalf("late approval: got %v, want expired", err)
		}
		eventually(t, "card updated to expired", func() bool { return fake.shown(r.ID) == "expired" })
		evs := events(t, svc, r.ID)
		if countEvents(evs, gate.EventExpired) != 1 || countEvents(evs, gate.EventRefused) != 1 {
			t.Fatalf("trail: %+v", evs)
		}
	})
}

func TestTimeoutVerdictAllow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clk := newClock()
		svc := newService(t, db, svcOpts{clock: clk, chans: []gate.Channel{newFake("fake")},
			routes: []gate.Route{{Name: "lenient", Tool: "read_*", Channels: []string{"fake"}, Timeout: time.Minute, OnTimeout: gate.VerdictAllow}}})
		r := submit(t, svc, gate.Submission{ToolName: "read_file"})
		clk.Add(time.Minute)
		got, err := svc.Expire(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != gate.StatusExpired || !got.Allowed() || got.Route != "lenient" {
			t.Fatalf("expired on an allow route: %+v", got)
		}
	})
}

func TestNoConfirmationNeeded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fake := newFake("fake")
		svc := newService(t, db, svcOpts{chans: []gate.Channel{fake},
			routes: []gate.Route{{Name: "shell", Tool: "Bash", Confirm: true, Channels: []string{"fake"}}}})
		no := false
		r, _, err := svc.Submit(context.Background(), gate.Submission{ToolName: "Read", RequiresConfirmation: &no})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != gate.StatusApproved || r.DecidedVia != gate.ViaPolicy || !r.Allowed() {
			t.Fatalf("a call no route gates should be allowed by policy: %+v", r)
		}
		gated, _, err := svc.Submit(context.Background(), gate.Submission{ToolName: "Bash", RequiresConfirmation: &no})
		if err != nil {
			t.Fatal(err)
		}
		if gated.Status != gate.StatusPending || gated.Route != "shell" {
			t.Fatalf("a route that demands confirmation must gate the call: %+v", gated)
		}
		eventually(t, "card posted for the gated call", func() bool { return fake.postCount(gated.ID) == 1 })
		if fake.postCount(r.ID) != 0 {
			t.Fatal("a card was posted for a call that needed no human")
		}
	})
}

func TestApproversAndQuorum(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{{Name: "payments", Tool: "oa__purchase_*",
			Channels: []string{"fake"}, Approvers: []string{"feishu:ou_abc", "feishu:ou_def", "feishu:union:on_x"}, Quorum: 2}}})
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{})
		_, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "feishu:ou_zzz", Via: "fake"})
		if gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("outsider: %v", err)
		}
		got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "feishu:ou_abc", Via: "fake"})
		if err != nil || got.Status != gate.StatusPending {
			t.Fatalf("first of two approvals: %v %+v", err, got)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "feishu:ou_abc", Via: "fake"}); gate.ErrorCode(err) != gate.ECONFLICT {
			t.Fatalf("same approver twice: %v", err)
		}
		// A second identity of a listed person counts (union id across apps).
		got, err = svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "feishu:ou_other_app", Identities: []string{"feishu:union:on_x"}, Via: "fake"})
		if err != nil || got.Status != gate.StatusApproved || got.DecidedBy != "feishu:ou_other_app" {
			t.Fatalf("quorum reached: %v %+v", err, got)
		}
		evs := events(t, svc, r.ID)
		if countEvents(evs, gate.EventVote) != 2 || countEvents(evs, gate.EventRefused) != 2 || countEvents(evs, gate.EventDecided) != 1 {
			t.Fatalf("trail: %+v", evs)
		}
	})
}

func TestCardsFollowTheRequest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fake := newFake("fake")
		clk := newClock()
		svc := newService(t, db, svcOpts{clock: clk, chans: []gate.Channel{fake}, tweak: func(o *gate.Options) { o.SweepInterval = time.Hour }})
		ctx := context.Background()
		for _, end := range []string{"approve", "reject", "cancel", "expire"} {
			t.Run(end, func(t *testing.T) {
				r := submit(t, svc, gate.Submission{Timeout: time.Hour})
				eventually(t, "card posted", func() bool { return fake.postCount(r.ID) == 1 })
				var err error
				want := ""
				switch end {
				case "approve", "reject":
					var got *gate.Request
					got, err = svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: end == "approve", Actor: "web:a", Via: "fake"})
					if got != nil {
						want = string(got.Status)
					}
				case "cancel":
					_, err = svc.Cancel(ctx, r.ID, "agent:bot", "changed my mind")
					want = "cancelled"
				case "expire":
					clk.Add(2 * time.Hour)
					_, err = svc.Expire(ctx, r.ID)
					want = "expired"
				}
				if err != nil {
					t.Fatal(err)
				}
				eventually(t, "card shows "+want, func() bool { return fake.shown(r.ID) == want })
				// The row follows the platform call that made it true.
				var cards []gate.Card
				eventually(t, "card row says "+want, func() bool {
					cards, _ = svc.Cards(ctx, r.ID)
					return len(cards) == 1 && cards[0].Have == want
				})
				if len(cards) != 1 || cards[0].Have != want || cards[0].Ref != "msg-"+r.ID {
					t.Fatalf("card row: %+v", cards)
				}
				if fake.postCount(r.ID) != 1 {
					t.Fatalf("posted %d times", fake.postCount(r.ID))
				}
			})
		}
	})
}

// A verdict that lands while the card is being posted reaches the card as
// soon as the post is recorded, not at the card worker's next tick.
func TestVerdictDuringThePost(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fake := newFake("fake")
		fake.posting, fake.release = make(chan struct{}, 1), make(chan struct{})
		svc := newService(t, db, svcOpts{chans: []gate.Channel{fake}})
		r := submit(t, svc, gate.Submission{Timeout: time.Hour})
		<-fake.posting
		if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:a", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // the tick that comes while the card is leased finds nothing
		released := time.Now()
		close(fake.release)
		deadline := released.Add(5 * time.Second)
		for fake.shown(r.ID) != "approved" && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		if fake.shown(r.ID) != "approved" {
			t.Fatal("the card was never updated")
		}
		if took := time.Since(released); took > 300*time.Millisecond {
			t.Errorf("the card was updated %s after its post was recorded: it waited for a tick", took)
		}
	})
}

func TestCardRetriesThenAbandons(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		flaky, dead := newFake("flaky"), newFake("dead")
		flaky.failPost.Store(1)
		dead.failAll = true
		svc := newService(t, db, svcOpts{chans: []gate.Channel{flaky, dead},
			routes: []gate.Route{{Name: "both", Channels: []string{"flaky", "dead"}}},
			tweak:  func(o *gate.Options) { o.CardAttempts = 2 }})
		r := submit(t, svc, gate.Submission{})
		eventually(t, "flaky card posted on retry", func() bool { return flaky.postCount(r.ID) == 1 })
		eventually(t, "dead card abandoned", func() bool {
			return countEvents(events(t, svc, r.ID), gate.EventPostAbandoned) == 1
		})
		evs := events(t, svc, r.ID)
		if n := countEvents(evs, gate.EventPostFailed); n != 2 { // flaky once, dead once before giving up
			t.Fatalf("%d post failures audited, want 2: %+v", n, evs)
		}
		cards, _ := svc.Cards(context.Background(), r.ID)
		for _, c := range cards {
			if c.Channel == "dead" && (!c.Abandoned || c.LastError == "") {
				t.Fatalf("dead card not marked abandoned with its error: %+v", c)
			}
		}
	})
}

// SubmitAndPark parks the new request's waiter before the row exists; a
// repeat of the submission parks on the same request, and a call that
// needs no human comes back final, unparked.
func TestSubmitAndPark(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fake := newFake("fake")
		yes := false
		rc := &readCounter{DB: db}
		// No safety re-read: only the wake-up itself can answer in time.
		svc := newService(t, db, svcOpts{chans: []gate.Channel{fake}, tweak: func(o *gate.Options) {
			o.SafetyInterval, o.Store = time.Hour, rc
		}})
		ctx := context.Background()
		in := gate.Submission{ToolName: "deploy", IdempotencyKey: "k-1", Timeout: time.Hour}
		answers := make(chan *gate.Request, 2)
		arm := func(p *gate.Parked, r *gate.Request, err error) string {
			t.Helper()
			if err != nil || p == nil || r.Status != gate.StatusPending {
				t.Fatalf("parked %v, row %+v, err %v; want a parked pending request", p != nil, r, err)
			}
			p.Arm(func(r *gate.Request, err error) { answers <- r })
			return r.ID
		}
		id := arm(svc.SubmitAndPark(ctx, in, 10*time.Second))
		if n := rc.gets.Load(); n != 0 {
			t.Fatalf("a new request was read back %d times to park on it", n)
		}
		if again := arm(svc.SubmitAndPark(ctx, in, 10*time.Second)); again != id {
			t.Fatalf("the repeat parked on %s, want %s", again, id)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: id, Approve: true, Actor: "web:a", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if r := answered(t, answers, 2*time.Second, "a waiter was not woken by the verdict"); r == nil || r.Status != gate.StatusApproved {
				t.Fatalf("waiter got %+v", r)
			}
		}
		p, r, err := svc.SubmitAndPark(ctx, gate.Submission{ToolName: "read", RequiresConfirmation: &yes}, 10*time.Second)
		if err != nil || p != nil || r.Status != gate.StatusApproved {
			t.Fatalf("no-human call: parked %v, row %+v, err %v", p != nil, r, err)
		}
		if _, _, err := svc.SubmitAndPark(ctx, gate.Submission{}, 10*time.Second); gate.ErrorCode(err) != gate.EINVALID {
			t.Fatalf("invalid submission: %v", err)
		}
	})
}

// Create leases the cards it makes when asked (ClaimCards finds none of
// those), and a card a worker holds is not claimed by anyone else.
func TestWritesClaimTheirCards(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		mk := func(id string) *gate.Request {
			return &gate.Request{ID: id, Status: gate.StatusPending, ToolName: "deploy", ToolArgs: []byte(`{}`), Metadata: []byte(`{}`),
				Route: "default", OnTimeout: gate.VerdictDeny, Quorum: 1, Channels: []string{"a", "b"}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		}
		claim := gate.Claim{Owner: "me", Until: now.Add(time.Minute), Max: 1}
		_, created, cards, err := db.Create(ctx, mk("r1"), []string{"a", "b"}, nil, claim)
		if err != nil || !created || len(cards) != 1 || cards[0].Channel != "a" || cards[0].ID == 0 || cards[0].Want != gate.CardPosted {
			t.Fatalf("create with a claim of 1: created %v, cards %+v, err %v", created, cards, err)
		}
		due, err := db.ClaimCards(ctx, now, time.Minute, "other", 10)
		if err != nil || len(due) != 1 || due[0].Channel != "b" {
			t.Fatalf("ClaimCards after the create: %+v, %v; want only card b", due, err)
		}
		// Card a is still held (its post in flight); b is released posted.
		if _, err := db.FinishCard(ctx, gate.CardResult{ID: due[0].ID, Owner: "other", Have: gate.CardPosted, Ref: "m-b", At: now}); err != nil {
			t.Fatal(err)
		}
		_, changed, err := db.Transition(ctx, gate.Transition{ID: "r1", To: gate.StatusApproved, Kind: gate.BeforeDeadline,
			At: now, By: "web:a", Via: "web", Event: gate.Event{RequestID: "r1", At: now, Type: gate.EventDecided}})
		if err != nil || !changed {
			t.Fatalf("transition: %v, %v", changed, err)
		}
		// The verdict's update is due for b; a stays with the worker that
		// holds it, whose finish will report it due.
		left, err := db.ClaimCards(ctx, now, time.Minute, "other", 10)
		if err != nil || len(left) != 1 || left[0].Channel != "b" || left[0].Want != string(gate.StatusApproved) {
			t.Fatalf("after the verdict ClaimCards gave %+v, %v; want card b's update only", left, err)
		}
	})
}

// claimCounter counts the card worker's claims.
type claimCounter struct {
	*store.DB
	n atomic.Int64
}

func (c *claimCounter) ClaimCards(ctx context.Context, now time.Time, lease time.Duration, owner string, limit int) ([]gate.Card, error) {
	c.n.Add(1)
	return c.DB.ClaimCards(ctx, now, lease, owner, limit)
}

// An idle card worker claims once a tick, not in a loop; a request's life
// cycle adds at most a few claims.
func TestCardWorkerDoesNotSpin(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cc := &claimCounter{DB: db}
		fake := newFake("fake")
		svc := newService(t, db, svcOpts{chans: []gate.Channel{fake}, tweak: func(o *gate.Options) { o.Store = cc }})
		ctx := context.Background()
		for range 5 {
			r := submit(t, svc, gate.Submission{Timeout: time.Hour})
			eventually(t, "card posted", func() bool { return fake.postCount(r.ID) == 1 })
			if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:a", Via: "fake"}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "card updated", func() bool { return fake.shown(r.ID) == "approved" })
		}
		before := cc.n.Load()
		time.Sleep(1500 * time.Millisecond)
		if n := cc.n.Load() - before; n > 4 {
			t.Fatalf("%d claims in 1.5 s of idling: the card worker spins", n)
		}
		if before > 5*4 {
			t.Fatalf("%d claims for 5 life cycles", before)
		}
	})
}

// A replica that created a request keeps its row; a verdict taken on
// another replica since must still win over a later one on the first, and
// the first replica's card must show the real outcome.
func TestVerdictElsewhereBeatsTheCreatorsRow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fa, fb := newFake("fake"), newFake("fake")
		fb.calls = fa.calls
		a := newService(t, db, svcOpts{chans: []gate.Channel{fa}})
		b := newService(t, db, svcOpts{chans: []gate.Channel{fb}})
		ctx := context.Background()
		r := submit(t, a, gate.Submission{Timeout: time.Hour})
		eventually(t, "card posted", func() bool { return fa.postCount(r.ID)+fb.postCount(r.ID) == 1 })
		if _, err := b.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:bob", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		got, err := a.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: false, Actor: "web:alice", Via: "fake"})
		if gate.ErrorCode(err) != gate.ECONFLICT || got == nil || got.Status != gate.StatusApproved || got.DecidedBy != "web:bob" {
			t.Fatalf("a later reject on the creating replica: %+v, %v; want ECONFLICT with the approved row", got, err)
		}
		if now, _ := a.Get(ctx, r.ID); now.Status != gate.StatusApproved {
			t.Fatalf("row is %s, want approved", now.Status)
		}
		eventually(t, "card shows approved", func() bool { return fa.shown(r.ID) == "approved" || fb.shown(r.ID) == "approved" })
	})
}

// TestTwoServicesPostEachCardOnce runs two services (as two replicas would)
// over one database: the leases let exactly one post each card.
func TestTwoServicesPostEachCardOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		a, b := newFake("fake"), newFake("fake")
		b.calls = a.calls
		svcA := newService(t, db, svcOpts{chans: []gate.Channel{a}})
		newService(t, db, svcOpts{chans: []gate.Channel{b}})
		var ids []string
		for range 20 {
			ids = append(ids, submit(t, svcA, gate.Submission{}).ID)
		}
		eventually(t, "all cards posted", func() bool {
			for _, id := range ids {
				if a.postCount(id)+b.postCount(id) == 0 {
					return false
				}
			}
			return true
		})
		time.Sleep(300 * time.Millisecond)
		for _, id := range ids {
			if n := a.postCount(id) + b.postCount(id); n != 1 {
				t.Fatalf("request %s posted %d times", id, n)
			}
		}
		if a.calls.Load() != 20 {
			t.Fatalf("%d post calls for 20 cards", a.calls.Load())
		}
	})
}

func TestRestartRecovery(t *testing.T) {
	dir := t.TempDir()
	dsn := filepath.Join(dir, "gatehouse.db")
	clk := newClock()
	fake := newFake("fake")
	db1 := storetest.Open(t, store.SQLite, dsn)
	svc1 := newService(t, db1, svcOpts{clock: clk, chans: []gate.Channel{fake}})
	keep := submit(t, svc1, gate.Submission{Timeout: time.Hour, IdempotencyKey: "k-keep"})
	overdue := submit(t, svc1, gate.Submission{Timeout: time.Minute})
	eventually(t, "cards posted", func() bool { return fake.postCount(keep.ID) == 1 && fake.postCount(overdue.ID) == 1 })
	svc1.Stop()
	db1.Close()

	clk.Add(2 * time.Minute) // the server was down past one deadline
	db2 := storetest.Open(t, store.SQLite, dsn)
	svc2 := newService(t, db2, svcOpts{clock: clk, chans: []gate.Channel{fake}})
	got, _ := svc2.Get(context.Background(), overdue.ID)
	if got.Status != gate.StatusExpired {
		t.Fatalf("overdue request after restart: %s, want expired at boot", got.Status)
	}
	again, created, err := svc2.Submit(context.Background(), gate.Submission{ToolName: keep.ToolName, ToolArgs: keep.ToolArgs, IdempotencyKey: "k-keep"})
	if err != nil || created || again.ID != keep.ID || again.Status != gate.StatusPending {
		t.Fatalf("re-attach after restart: %v created=%v %+v", err, created, again)
	}
	done := make(chan *gate.Request)
	go func() {
		r, _ := svc2.Wait(context.Background(), keep.ID, 10*time.Second)
		done <- r
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := svc2.Decide(context.Background(), gate.Decision{RequestID: keep.ID, Approve: true, Actor: "web:a", Via: "fake"}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Status != gate.StatusApproved {
		t.Fatalf("re-attached waiter got %s", r.Status)
	}
	time.Sleep(200 * time.Millisecond)
	if fake.postCount(keep.ID) != 1 {
		t.Fatalf("card posted %d times across the restart", fake.postCount(keep.ID))
	}
}

func TestListFilters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}})
		ctx := context.Background()
		var ids []string
		for i := range 7 {
			r := submit(t, svc, gate.Submission{ToolName: []string{"oa__purchase_pay", "deploy"}[i%2], AgentID: fmt.Sprintf("bot%d", i%3),
				Summary: fmt.Sprintf("item %d 100%% sure", i)})
			ids = append(ids, r.ID)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: ids[0], Approve: false, Actor: "slack:T1/U9", Via: "fake", Reason: "Over Budget"}); err != nil {
			t.Fatal(err)
		}
		count := func(f gate.Filter) int {
			rs, _, err := svc.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			return len(rs)
		}
		for _, tc := range []struct {
			name string
			f    gate.Filter
			want int
		}{
			{"all", gate.Filter{}, 7},
			{"status", gate.Filter{Status: []gate.Status{gate.StatusRejected}}, 1},
			{"two statuses", gate.Filter{Status: []gate.Status{gate.StatusRejected, gate.StatusPending}}, 7},
			{"tool", gate.Filter{Tool: "deploy"}, 3},
			{"tool glob", gate.Filter{Tool: "oa__*"}, 4},
			{"agent", gate.Filter{Agent: "bot1"}, 2},
			{"decided_by", gate.Filter{DecidedBy: "slack:T1/U9"}, 1},
			{"free text in reason, any case", gate.Filter{Query: "over budget"}, 1},
			{"free text with a literal %", gate.Filter{Query: "100%"}, 7},
			{"free text by id", gate.Filter{Query: ids[3]}, 1},
			{"until before all", gate.Filter{Until: time.Now().Add(-time.Hour)}, 0},
			{"since before all", gate.Filter{Since: time.Now().Add(-time.Hour)}, 7},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if n := count(tc.f); n != tc.want {
					t.Fatalf("got %d, want %d", n, tc.want)
				}
			})
		}
		// Pages of 3, newest first, cover everything once.
		var seen []string
		cursor := ""
		for {
			rs, next, err := svc.List(ctx, gate.Filter{Limit: 3, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				seen = append(seen, r.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if len(seen) != 7 || seen[0] != ids[6] || seen[6] != ids[0] {
			t.Fatalf("pagination: %v (created %v)", seen, ids)
		}
	})
}

func TestMigrationsConcurrentAndVersioned(t *testing.T) {
	for _, driver := range []string{store.SQLite, store.Postgres} {
		t.Run(driver, func(t *testing.T) {
			dsn := filepath.Join(t.TempDir(), "m.db")
			if driver == store.Postgres {
				dsn = storetest.PostgresDSN(t)
			}
			ctx := context.Background()
			if _, err := store.Open(ctx, store.Options{Driver: driver, DSN: dsn}); err == nil || !strings.Contains(err.Error(), "run gatehouse migrate") {
				t.Fatalf("opening an unmigrated database without migrating: %v", err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 3)
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					db, err := store.Open(ctx, store.Options{Driver: driver, DSN: dsn, Migrate: true})
					if err == nil {
						db.Close()
					}
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("replica migrating at the same time: %v", err)
				}
			}
			db := storetest.Open(t, driver, dsn)
			var n int64
			db.Gorm().Raw("SELECT COUNT(*) FROM schema_migrations").Scan(&n)
			if n != int64(store.SchemaVersion()) {
				t.Fatalf("%d migration rows, want %d", n, store.SchemaVersion())
			}
		})
	}
}

func TestOpenErrorsAreClear(t *testing.T) {
	ctx := context.Background()
	_, err := store.Open(ctx, store.Options{Driver: store.Postgres, DSN: "postgres://nobody:s3cret@127.0.0.1:1/none?connect_timeout=2"})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the postgres database") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("unreachable postgres: %v", err)
	}
	_, err = store.Open(ctx, store.Options{Driver: store.SQLite, DSN: "/nonexistent/dir/x.db", Migrate: true})
	if err == nil {
		t.Fatal("sqlite in a missing directory opened")
	}
	_, err = store.Open(ctx, store.Options{Driver: "mysql", DSN: "x"})
	if err == nil || !strings.Contains(err.Error(), `unknown driver "mysql"`) {
		t.Fatalf("unknown driver: %v", err)
	}
}

// TestNoApprovalWithoutAHuman covers the ways an agent might get an allow
// nobody gave: an approval reused for other arguments or by another agent,
// a looser route named by the caller, a shortened allow-on-timeout wait, a
// route picked by a claimed agent id, edited arguments slipped into a
// quorum, and a verdict from outside the request's audience.
func TestNoApprovalWithoutAHuman(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake"), newFake("ops-slack")}, routes: []gate.Route{
			{Name: "ci", Agent: "ci-*", Channels: []string{"fake"}, Timeout: time.Hour, OnTimeout: gate.VerdictAllow},
			{Name: "payments", Tool: "oa__purchase_*", Channels: []string{"fake"}, Approvers: []string{"web:alice", "web:bob"}, Quorum: 2},
			{Name: "slack-only", Tool: "deploy", Channels: []string{"ops-slack"}},
			{Name: "reads", Tool: "*", Confirm: false, Channels: []string{"fake"}},
		}})
		ctx := context.Background()
		no := false

		// An approval answers only the call it was given for.
		r := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"staging"}`), IdempotencyKey: "call_7", Caller: "bot"})
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/U1", Via: "ops-slack"}); err != nil {
			t.Fatal(err)
		}
		for name, in := range map[string]gate.Submission{
			"other arguments": {ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"prod"}`), IdempotencyKey: "call_7", Caller: "bot"},
			"another agent":   {ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"staging"}`), IdempotencyKey: "call_7", Caller: "other-bot"},
		} {
			if _, _, err := svc.Submit(ctx, in); gate.ErrorCode(err) != gate.EIDEMPOTENCY {
				t.Errorf("%s under a used key: %v, want idempotency_conflict", name, err)
			}
		}

		// Naming a looser route is refused; the first match rules.
		if _, _, err := svc.Submit(ctx, gate.Submission{ToolName: "oa__purchase_pay", Route: "reads", RequiresConfirmation: &no}); gate.ErrorCode(err) != gate.EINVALID {
			t.Errorf("naming a looser route: %v", err)
		}
		// A caller cannot shorten a route's allow-on-timeout wait.
		if _, _, err := svc.Submit(ctx, gate.Submission{ToolName: "x", Caller: "ci-runner", Timeout: time.Second}); gate.ErrorCode(err) != gate.EINVALID {
			t.Errorf("shortening an allow-on-timeout wait: %v", err)
		}
		// Routes match the authenticated caller, not the agent id it claims.
		claimed := submit(t, svc, gate.Submission{ToolName: "x", AgentID: "ci-evil", Caller: "build-agent"})
		if claimed.Route == "ci" || claimed.AgentID != "ci-evil" {
			t.Errorf("a claimed agent id picked route %q", claimed.Route)
		}

		// With a quorum, edited arguments are refused: earlier voters approved others.
		pay := submit(t, svc, gate.Submission{ToolName: "oa__purchase_pay"})
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: pay.ID, Approve: true, Actor: "web:alice", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		got, err := svc.Decide(ctx, gate.Decision{RequestID: pay.ID, Approve: true, Actor: "web:bob", Via: "fake", ModifiedArgs: json.RawMessage(`{"vendor":"BOBCO"}`)})
		if gate.ErrorCode(err) != gate.EINVALID || got.Status != gate.StatusPending {
			t.Errorf("edits in a quorum: %v, status %s", err, got.Status)
		}

		// With no approvers list, only the request's own channels decide.
		dep := submit(t, svc, gate.Submission{ToolName: "deploy", Caller: "bot"})
		got, err = svc.Decide(ctx, gate.Decision{RequestID: dep.ID, Approve: true, Actor: "web:mallory", Via: gate.WebChannel})
		if gate.ErrorCode(err) != gate.EFORBIDDEN || got.Status != gate.StatusPending {
			t.Errorf("a web verdict on a Slack-only request: %v, status %s", err, got.Status)
		}
	})
}

// A transition given the pending row it starts from answers with exactly
// the row the database then holds, as one that reads it back does.
func TestTransitionFromAKnownRow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		run := fmt.Sprintf("known-%d", time.Now().UnixNano())
		create := func(n int) *gate.Request {
			now := time.Now().UTC()
			r := &gate.Request{ID: fmt.Sprintf("%s-%d", run, n), Status: gate.StatusPending, ToolName: "oa__purchase_pay",
				ToolArgs: json.RawMessage(`{"amount":60000}`), Summary: "Pay ACME", AgentID: "bot", Metadata: json.RawMessage(`{"org":"o1"}`),
				Route: "pay", Channels: []string{"fake"}, Approvers: []string{"web:alice"}, Quorum: 1, OnTimeout: gate.VerdictDeny,
				CreatedAt: now, ExpiresAt: now.Add(time.Hour), IdempotencyKey: fmt.Sprintf("%s-%d", run, n)}
			got, created, _, err := db.Create(ctx, r, []string{"fake"}, nil, gate.Claim{})
			if err != nil || !created {
				t.Fatal(created, err)
			}
			return got
		}
		for n, known := range []bool{true, false} {
			r := create(n)
			tr := gate.Transition{ID: r.ID, To: gate.StatusApproved, Kind: gate.BeforeDeadline, At: time.Now(), By: "web:alice",
				Via: "web", Reason: "fine", ModifiedArgs: json.RawMessage(`{"amount":50000}`),
				Event: gate.Event{RequestID: r.ID, At: time.Now(), Type: gate.EventDecided, Actor: "web:alice"}}
			if known {
				tr.Pending = r
			}
			got, changed, err := db.Transition(ctx, tr)
			if err != nil || !changed {
				t.Fatalf("known=%v: changed %v, %v", known, changed, err)
			}
			stored, err := db.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, stored) {
				t.Errorf("known=%v: the transition answered\n%+v\nthe database holds\n%+v", known, got, stored)
			}
			// Given the same (now stale) row again, it does not take, and
			// answers with the row as it stands.
			tr.Pending, tr.To = r, gate.StatusRejected
			again, changed, err := db.Transition(ctx, tr)
			if err != nil || changed || again.Status != gate.StatusApproved {
				t.Errorf("known=%v: a second transition took (%v) or misreported the row: %+v, %v", known, changed, again, err)
			}
		}
	})
}

// raceStore hears its own transitions' NOTIFY before they return, as a
// PostgreSQL replica often does, and counts the reads of a request.
type raceStore struct {
	*readCounter
	svc *gate.Service
}

func (s *raceStore) Transition(ctx context.Context, t gate.Transition) (*gate.Request, bool, error) {
	r, changed, err := s.DB.Transition(ctx, t)
	if err == nil && changed {
		s.svc.Wake(t.ID) // the listener, first
	}
	return r, changed, err
}

// A replica's own verdict wakes its waiters with the row in hand, even
// when the verdict's NOTIFY reaches its listener first: no waiter reads
// the row again.
func TestOwnNotifyStartsNoReread(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		rs := &raceStore{readCounter: &readCounter{DB: db}}
		fake := newFake("fake")
		svc := newService(t, db, svcOpts{chans: []gate.Channel{fake}, tweak: func(o *gate.Options) { o.Store = rs }})
		rs.svc = svc
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{Timeout: time.Hour})
		eventually(t, "card posted", func() bool { return fake.postCount(r.ID) == 1 })
		p, _, err := svc.Park(ctx, r.ID, time.Minute)
		if err != nil || p == nil {
			t.Fatalf("park: %v", err)
		}
		answer := make(chan *gate.Request, 1)
		p.Arm(func(r *gate.Request, err error) { answer <- r })
		before := rs.gets.Load()
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:a", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		if got := answered(t, answer, 5*time.Second, "the waiter was not answered"); got == nil || got.Status != gate.StatusApproved {
			t.Fatalf("the waiter got %+v", got)
		}
		eventually(t, "card updated", func() bool { return fake.shown(r.ID) == "approved" })
		if n := rs.gets.Load() - before; n != 0 {
			t.Errorf("%d reads of the request after its verdict; want none", n)
		}
	})
}

// elsewhereStore has another replica approve a request, and its NOTIFY
// arrive, while this replica's expiry of it is under way and losing.
type elsewhereStore struct {
	*store.DB
	svc *gate.Service
}

func (s *elsewhereStore) Transition(ctx context.Context, t gate.Transition) (*gate.Request, bool, error) {
	r, changed, err := s.DB.Transition(ctx, t)
	if err == nil && !changed && t.Kind == gate.AfterDeadline {
		now := time.Now().UTC()
		if _, ok, err := s.DB.Transition(ctx, gate.Transition{ID: t.ID, To: gate.StatusApproved, Kind: gate.BeforeDeadline, At: now,
			By: "web:elsewhere", Via: "fake", Event: gate.Event{RequestID: t.ID, At: now, Type: gate.EventDecided}}); err != nil || !ok {
			return nil, false, fmt.Errorf("the other replica's verdict: %v %v", ok, err)
		}
		s.svc.Wake(t.ID)
	}
	return r, changed, err
}

// A wake-up that arrives while this replica is changing the request is
// put off, not lost: here this replica's change does not take (an expiry
// not yet due), another's does, and the waiters must hear of it at once,
// not at the next safety re-read.
func TestWakeDuringALosingChangeIsKept(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		es := &elsewhereStore{DB: db}
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, tweak: func(o *gate.Options) {
			o.Store, o.SafetyInterval = es, time.Hour
		}})
		es.svc = svc
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{Timeout: time.Hour})
		got := make(chan *gate.Request, 1)
		go func() {
			w, _ := svc.Wait(ctx, r.ID, 10*time.Second)
			got <- w
		}()
		time.Sleep(50 * time.Millisecond) // the waiter is in place
		if _, err := svc.Expire(ctx, r.ID); gate.ErrorCode(err) != gate.ECONFLICT {
			t.Fatalf("an expiry before the deadline: %v, want ECONFLICT", err)
		}
		if w := answered(t, got, 3*time.Second, "the waiter did not hear of the approval made elsewhere"); w == nil || w.Status != gate.StatusApproved {
			t.Fatalf("the waiter got %+v, want the approval made elsewhere", w)
		}
	})
}
