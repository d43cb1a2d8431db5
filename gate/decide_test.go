package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

func TestDecideWakesWaiter(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")},
			tweak: func(o *gate.Options) { o.SafetyInterval = time.Hour }}) // only the wake-up can answer
		r := submit(t, svc, gate.Submission{})
		done := svc.waitAsync(t, r.ID, time.Minute)
		if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/U1", Via: "fake",
			Reason: "within budget", ModifiedArgs: json.RawMessage(`{"vendor":"ACME","amount":50000}`)}); err != nil {
			t.Fatal(err)
		}
		got := answered(t, done, 5*time.Second, "waiter not woken by the verdict")
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
		r := submit(t, svc, gate.Submission{Timeout: time.Minute, Caller: "bot"})
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
					_, err = svc.Cancel(ctx, gate.Caller{Name: "bot"}, r.ID, "agent:bot", "")
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

// A request whose stored approvers list does not read (a row edited by
// hand, a bad restore) is decided by nobody, listed or not: read as an
// empty list, it would have meant anyone who sees its card.
func TestUnreadableApproversDecideNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{{Name: "payments", Tool: "oa__purchase_*",
			Channels: []string{"fake"}, Approvers: []string{"feishu:ou_abc"}}}})
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{})
		for _, bad := range []string{`not json`, `null`, `{"a":1}`} {
			if err := db.Gorm().Exec("UPDATE requests SET approvers = ? WHERE id = ?", bad, r.ID).Error; err != nil {
				t.Fatal(err)
			}
			for _, actor := range []string{"feishu:ou_abc", "feishu:ou_zzz"} {
				_, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: actor, Via: "fake"})
				if gate.ErrorCode(err) != gate.EFORBIDDEN {
					t.Fatalf("approvers %s, %s approving: %v, want refused", bad, actor, err)
				}
			}
		}
		if got, err := svc.Get(ctx, r.ID); err != nil || got.Status != gate.StatusPending || !slices.Equal(got.Approvers, []string{store.UnreadableApprovers}) {
			t.Fatalf("after the refusals: %+v %v", got, err)
		}
	})
}

// Defect: AddVote inserted, then counted, in a READ COMMITTED transaction:
// two approvers of a quorum-2 request tapping at once each saw "1 of 2",
// neither transitioned, and the request could only expire (19 of 30 on
// PostgreSQL). Vote, count and compare-and-set are one step now.
func TestQuorumSurvivesApproversTappingAtOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{{Name: "payments",
			Channels: []string{"fake"}, Approvers: []string{"web:alice", "web:bob"}, Quorum: 2}}})
		ctx := context.Background()
		const n = 30
		ids := make([]string, n)
		for i := range ids {
			ids[i] = submit(t, svc, gate.Submission{Timeout: time.Hour}).ID
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, id := range ids {
			for _, who := range []string{"web:alice", "web:bob"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					if _, err := svc.Decide(ctx, gate.Decision{RequestID: id, Approve: true, Actor: who, Via: "fake"}); err != nil {
						t.Errorf("%s on %s: %v", who, id, err)
					}
				}()
			}
		}
		close(start)
		wg.Wait()
		stuck := 0
		for _, id := range ids {
			r, _ := svc.Get(ctx, id)
			if r.Status != gate.StatusApproved {
				stuck++
			}
			if evs := events(t, svc, id); countEvents(evs, gate.EventVote) != 2 || countEvents(evs, gate.EventDecided) != 1 {
				t.Fatalf("trail of %s: %+v", id, evs)
			}
		}
		if stuck > 0 {
			t.Fatalf("%d of %d quorum-2 requests were not approved after both approvers tapped", stuck, n)
		}
	})
}

// A request whose votes already meet its quorum but which is still pending
// (left so by the old race) is approved by a re-tap, not left to expire.
func TestReTapCompletesAMetQuorum(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{{Name: "payments",
			Channels: []string{"fake"}, Approvers: []string{"web:alice", "web:bob"}, Quorum: 2}}})
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{Timeout: time.Hour})
		now := time.Now().UTC()
		for _, who := range []string{"web:alice", "web:bob"} {
			if err := db.Gorm().Exec("INSERT INTO votes (request_id, actor, via, at) VALUES (?, ?, 'fake', ?)", r.ID, who, now).Error; err != nil {
				t.Fatal(err)
			}
		}
		got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:bob", Via: "fake"})
		if err != nil || got.Status != gate.StatusApproved {
			t.Fatalf("re-tap on a met quorum: %v, %+v", err, got)
		}
	})
}

// Defect: votes were keyed by the Feishu open_id, which differs per app, so
// one person met a quorum alone by tapping through two apps. A vote counts
// for Decision.Voter (the union_id, where Feishu sends one).
func TestOneVoterCountsOnceAcrossIdentities(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("app-a"), newFake("app-b")}, routes: []gate.Route{{Name: "payments",
			Channels: []string{"app-a", "app-b"}, Approvers: []string{"feishu:*"}, Quorum: 2}}})
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{Timeout: time.Hour})
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "feishu:ou_app_a", Voter: "feishu:union:on_carol", Via: "app-a"}); err != nil {
			t.Fatal(err)
		}
		got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "feishu:ou_app_b", Voter: "feishu:union:on_carol", Via: "app-b"})
		if gate.ErrorCode(err) != gate.ECONFLICT || got.Status != gate.StatusPending {
			t.Fatalf("one person through two apps: %v, status %s; want already approved, still pending", err, got.Status)
		}
		got, err = svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "feishu:ou_dave", Voter: "feishu:union:on_dave", Via: "app-b"})
		if err != nil || got.Status != gate.StatusApproved {
			t.Fatalf("a second person: %v, %+v", err, got)
		}
	})
}

// Defect: the reason was cut at 4,096 bytes inside a UTF-8 character, so a
// 3,000-character Chinese reason made PostgreSQL refuse the write and the
// rejection was lost.
func TestLongCJKReasonIsKept(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")},
			routes: []gate.Route{{Name: "lenient", Channels: []string{"fake"}, OnTimeout: gate.VerdictAllow}}})
		r := submit(t, svc, gate.Submission{})
		reason := strings.Repeat("金额超出预算", 500) // 3,000 characters, 9,000 bytes
		got, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: false, Actor: "slack:T1/U1", Via: "fake", Reason: reason})
		if err != nil {
			t.Fatalf("the rejection was not recorded: %v", err)
		}
		if got.Status != gate.StatusRejected || got.Allowed() {
			t.Fatalf("status %s", got.Status)
		}
		if !utf8.ValidString(got.Reason) || len(got.Reason) > 4096 || len(got.Reason) < 4090 || !strings.HasPrefix(reason, got.Reason) {
			t.Fatalf("reason stored as %d bytes, valid %v", len(got.Reason), utf8.ValidString(got.Reason))
		}
	})
}

// Defect: with the request past its deadline and its expiry not written,
// a verdict was refused as "already pending".
func TestVerdictAfterAnUnrecordedExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clk := newClock()
		svc := newService(t, expiryFailingStore{db}, svcOpts{clock: clk, chans: []gate.Channel{newFake("fake")},
			tweak: func(o *gate.Options) { o.SweepInterval = time.Hour }})
		r := submit(t, svc, gate.Submission{Timeout: time.Minute})
		clk.Add(2 * time.Minute)
		got, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:a", Via: "fake"})
		if gate.ErrorCode(err) != gate.EEXPIRED || !strings.Contains(err.Error(), "expired at") || got.Allowed() {
			t.Fatalf("a verdict after the deadline: %v (%+v)", err, got)
		}
	})
}

// A verdict whose write fails is an error to the approver, and the waiting
// agent is not allowed: it keeps waiting, and learns the truth from the row.
func TestFailedVerdictWriteAllowsNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fs := &faultStore{DB: db}
		svc := newService(t, fs, svcOpts{chans: []gate.Channel{newFake("fake")}})
		r := submit(t, svc, gate.Submission{})
		done := svc.waitAsync(t, r.ID, 300*time.Millisecond)
		fs.fail.Store("transition")
		if got, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:a", Via: "fake"}); err == nil || (got != nil && got.Allowed()) {
			t.Fatalf("a verdict that could not be written: %+v, %v", got, err)
		}
		if w := answered(t, done, 5*time.Second, "waiter never returned"); w.Allowed() || w.Status != gate.StatusPending {
			t.Fatalf("the waiting agent got %s", w.Status)
		}
		fs.fail.Store("")
		if got, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: false, Actor: "web:a", Via: "fake"}); err != nil || got.Status != gate.StatusRejected {
			t.Fatalf("the retried tap: %+v, %v", got, err)
		}
	})
}

// Defect: any token could cancel (and read) any request.
func TestOnlyTheOwningTokenCancels(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}})
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{Caller: "build-agent"})
		if _, err := svc.Cancel(ctx, gate.Caller{Name: "intruder"}, r.ID, "agent:intruder", "mine now"); gate.ErrorCode(err) != gate.ENOTFOUND {
			t.Fatalf("another token's cancel: %v, want not found", err)
		}
		if _, err := svc.Owned(ctx, gate.Caller{Name: "intruder"}, r.ID); gate.ErrorCode(err) != gate.ENOTFOUND {
			t.Fatalf("another token's read: %v, want not found", err)
		}
		if got, _ := svc.Get(ctx, r.ID); got.Status != gate.StatusPending {
			t.Fatalf("after a refused cancel the request is %s", got.Status)
		}
		got, err := svc.Cancel(ctx, gate.Caller{Name: "build-agent"}, r.ID, "agent:build-agent", "not needed")
		if err != nil || got.Status != gate.StatusCancelled {
			t.Fatalf("the owner's cancel: %v %+v", err, got)
		}
		mine := ""
		rs, _, _ := svc.List(ctx, gate.Filter{Caller: &mine})
		if len(rs) != 0 {
			t.Fatalf("a token with no requests listed %d", len(rs))
		}
	})
}

// Scopes widen one power each: read_all reads but does not cancel,
// cancel_all cancels but does not read, and neither is implied by the other.
func TestScopesWidenOnePowerEach(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}})
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{Caller: "build-agent"})
		reader := gate.Caller{Name: "auditor-tool", ReadAll: true}
		canceller := gate.Caller{Name: "janitor", CancelAll: true}
		if got, err := svc.Owned(ctx, reader, r.ID); err != nil || got.ID != r.ID {
			t.Fatalf("read_all read: %+v, %v", got, err)
		}
		if _, err := svc.Cancel(ctx, reader, r.ID, "agent:auditor-tool", ""); gate.ErrorCode(err) != gate.ENOTFOUND {
			t.Fatalf("read_all cancelled: %v, want not found", err)
		}
		if _, err := svc.Owned(ctx, canceller, r.ID); gate.ErrorCode(err) != gate.ENOTFOUND {
			t.Fatalf("cancel_all read: %v, want not found", err)
		}
		if got, _ := svc.Get(ctx, r.ID); got.Status != gate.StatusPending {
			t.Fatalf("after refused cancels the request is %s", got.Status)
		}
		got, err := svc.Cancel(ctx, canceller, r.ID, "agent:janitor", "stale")
		if err != nil || got.Status != gate.StatusCancelled || got.DecidedBy != "agent:janitor" {
			t.Fatalf("cancel_all cancel: %+v, %v", got, err)
		}
	})
}

// TestNoApprovalWithoutAHuman covers the ways an agent might get an allow
// nobody gave: an approval reused for other arguments or by another token,
// a looser route named by the caller, a shortened allow-on-timeout wait, a
// route picked by a claimed agent id, edited arguments slipped into a
// quorum, and a verdict from outside the request's audience.
func TestNoApprovalWithoutAHuman(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake"), newFake("ops-slack")}, routes: []gate.Route{
			{Name: "ci", Agent: "ci-*", Channels: []string{"fake"}, Timeout: time.Hour, OnTimeout: gate.VerdictAllow},
			{Name: "payments", Tool: "oa__purchase_*", Channels: []string{"fake"}, Approvers: []string{"web:alice", "web:bob"}, Quorum: 2},
			{Name: "slack-only", Tool: "deploy", Channels: []string{"ops-slack"}},
			{Name: "reads", Tool: "*", Action: policy.Agent, Channels: []string{"fake"}},
		}})
		ctx := context.Background()
		no := false

		// An approval answers only the call it was given for, and only its token.
		r := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"staging"}`), IdempotencyKey: "call_7", Caller: "bot"})
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/U1", Via: "ops-slack"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Submit(ctx, gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"prod"}`), IdempotencyKey: "call_7", Caller: "bot"}); gate.ErrorCode(err) != gate.EIDEMPOTENCY {
			t.Errorf("other arguments under a used key: %v, want idempotency_conflict", err)
		}
		other, _, err := svc.Submit(ctx, gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"staging"}`), IdempotencyKey: "call_7", Caller: "other-bot"})
		if err != nil || other.ID == r.ID || other.Allowed() {
			t.Errorf("another token under a used key: %+v, %v", other, err)
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
		// One approver tapping twice is one vote.
		if got, err := svc.Decide(ctx, gate.Decision{RequestID: pay.ID, Approve: true, Actor: "web:alice", Via: "fake"}); gate.ErrorCode(err) != gate.ECONFLICT || got.Status != gate.StatusPending {
			t.Errorf("a second tap by the same approver: %v, status %s", err, got.Status)
		}

		// With no approvers list, only the request's own channels decide.
		dep := submit(t, svc, gate.Submission{ToolName: "deploy", Caller: "bot"})
		got, err = svc.Decide(ctx, gate.Decision{RequestID: dep.ID, Approve: true, Actor: "web:mallory", Via: gate.WebChannel})
		if gate.ErrorCode(err) != gate.EFORBIDDEN || got.Status != gate.StatusPending {
			t.Errorf("a web verdict on a Slack-only request: %v, status %s", err, got.Status)
		}
	})
}

// TestEditedArgumentsWithAKeyTwice: an approver's edit with a key twice
// in one object is refused, as a submission's is, and the request stays
// pending: the page would show the last value, a tool may run with the
// first. Found by a tenth reader.
func TestEditedArgumentsWithAKeyTwice(t *testing.T) {
	db := storetest.SQLite(t)
	svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}})
	r := submit(t, svc, gate.Submission{ToolArgs: json.RawMessage(`{"to":"alice@corp.example","amount":1}`)})
	for _, edit := range []string{`{"to":"alice@corp.example","amount":1,"to":"mallory@evil.example"}`, `{"":1,"":2}`} {
		_, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:alice", Via: "fake", ModifiedArgs: json.RawMessage(edit)})
		if gate.ErrorCode(err) != gate.EINVALID || !strings.Contains(err.Error(), "twice in one object") {
			t.Errorf("edit %s: %v, want invalid", edit, err)
		}
	}
	if got, err := svc.Get(context.Background(), r.ID); err != nil || got.Status != gate.StatusPending {
		t.Fatalf("after the refused edits: %+v, %v", got, err)
	}
}
