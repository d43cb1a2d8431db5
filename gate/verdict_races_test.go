package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// TestExpiryJudgesThePolicyUnderTheLock: Decide judges an approval by the
// policy in force on the row its transaction holds, so a reload that
// lands while the verdict waits for the row (the SQLite writer, the
// PostgreSQL row lock) still reaches it. Expire judged a silence-allows
// expiry before it asked for the row: the same reload, landing at the
// same point, was not seen, and the call the reloaded policy denies was
// allowed. It now writes only under the rules it judged by, and judges
// again when a reload came between.
func TestExpiryJudgesThePolicyUnderTheLock(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := newClock()
		hs := &reloadingStore{DB: db}
		lenient := []gate.Route{{Name: "lenient", Tool: "pay", Channels: []string{"fake"}, OnTimeout: gate.VerdictAllow, Timeout: time.Minute}}
		frozen := append([]gate.Route{{Name: "frozen", Tool: "pay", Action: policy.Deny}}, lenient...)
		svc := newService(t, hs, svcOpts{clock: clk, chans: []gate.Channel{newFake("fake")}, routes: lenient})
		freeze := func() {
			if err := svc.SetRoutes(frozen, gate.Defaults{Channels: []string{"fake"}}); err != nil {
				t.Error(err)
			}
		}
		unfreeze := func() {
			if err := svc.SetRoutes(lenient, gate.Defaults{Channels: []string{"fake"}}); err != nil {
				t.Fatal(err)
			}
		}

		// The approval, with the freeze landing as it reaches the store.
		a := submit(t, svc, gate.Submission{ToolName: "pay", ToolArgs: json.RawMessage(`{"amount":100}`)})
		hs.mu.Lock()
		hs.onTransition = freeze
		hs.mu.Unlock()
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: a.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake"}); gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("approval with the freeze landing as it reaches the store: %v, want forbidden", err)
		}

		// The expiry, with the same freeze landing at the same point.
		unfreeze()
		b := submit(t, svc, gate.Submission{ToolName: "pay", ToolArgs: json.RawMessage(`{"amount":200}`)})
		clk.Add(2 * time.Minute)
		hs.mu.Lock()
		hs.onTransition = freeze
		hs.mu.Unlock()
		got, err := svc.Expire(ctx, b.ID)
		if got == nil {
			got, _ = svc.Get(ctx, b.ID)
		}
		if got.Allowed() {
			t.Fatalf("expiry with the freeze landing as it reaches the store: %s (on timeout %s), allowed; the policy in force when it was written denies the call",
				got.Status, got.OnTimeout)
		}
		// Judged again under the rules now in force, and written: not left
		// pending with an error for the sweeper's next round.
		if err != nil || got.Status != gate.StatusRejected {
			t.Fatalf("expiry with the freeze landing as it reaches the store: %s, %v; want rejected by the rules in force", got.Status, err)
		}
	})
}

// TestWaiterOnAnExpiryTheRouteNoLongerAllows: after a reload that makes a
// route deny on timeout, an agent that resends its call under its key
// after the expiry is refused (TestKeyAnswersAnExpiryTheRouteStillAllows);
// one that resent it a moment before the expiry attached to the pending
// row and was told "allow" by the same silence: the answer depended on
// who came first, the agent's retry or the sweeper. Silence now allows
// only on a route that still allows on timeout.
func TestWaiterOnAnExpiryTheRouteNoLongerAllows(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := newClock()
		route := func(onTimeout gate.Verdict) []gate.Route {
			return []gate.Route{{Name: "lenient", Tool: "read_*", Channels: []string{"fake"}, Timeout: time.Minute, OnTimeout: onTimeout}}
		}
		svc := newService(t, db, svcOpts{clock: clk, chans: []gate.Channel{newFake("fake")}, routes: route(gate.VerdictAllow)})
		in := gate.Submission{ToolName: "read_file", ToolArgs: json.RawMessage(`{"path":"/etc/motd"}`), IdempotencyKey: "k1", Caller: "bot"}
		first := submit(t, svc, in)
		if err := svc.SetRoutes(route(gate.VerdictDeny), gate.Defaults{Channels: []string{"fake"}}); err != nil {
			t.Fatal(err)
		}
		// The retry comes before the expiry: it attaches and waits.
		r, _, err := svc.Submit(ctx, in)
		if err != nil || r.ID != first.ID || r.Status != gate.StatusPending {
			t.Fatalf("retry before the expiry: %+v, %v", r, err)
		}
		waited := svc.waitAsync(t, r.ID, time.Hour)
		clk.Add(2 * time.Minute)
		if _, err := svc.Expire(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		w := answered(t, waited, 10*time.Second, "no answer to the waiter")
		// The same retry after the expiry.
		_, _, after := svc.Submit(ctx, in)
		if w.Allowed() {
			t.Fatalf("the waiter that attached before the expiry is allowed (%s, on timeout %s); the same retry after it is refused (%v): "+
				"silence allowed a call whose route now denies on timeout", w.Status, w.OnTimeout, after)
		}
	})
}

// raceRound runs fns at once (released together by one barrier) and
// returns their results.
func raceRound(fns ...func() (*gate.Request, error)) ([]*gate.Request, []error) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	rs, errs := make([]*gate.Request, len(fns)), make([]error, len(fns))
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rs[i], errs[i] = fn()
		}()
	}
	close(start)
	wg.Wait()
	return rs, errs
}

// TestVerdictRaces: approve, reject, cancel, votes toward a quorum of 2
// (two people, and one person on two identities) and a concurrent waiter,
// released together; the final row is one verdict, every caller told it
// won was the winner, and the waiter is told the final row.
func TestVerdictRaces(t *testing.T) {
	people := gate.NewPeople([]gate.Person{
		{Name: "alice", Identities: []string{"slack:T1/UA", "feishu:ou_a"}},
		{Name: "bob", Identities: []string{"slack:T1/UB"}},
	}, nil)
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		routes := []gate.Route{
			{Name: "one", Tool: "one", Channels: []string{"fake", "fake2"}},
			{Name: "two", Tool: "two", Channels: []string{"fake", "fake2"}, Approvers: []string{"person:alice", "person:bob"}, Quorum: 2},
		}
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake"), newFake("fake2")}, routes: routes,
			tweak: func(o *gate.Options) { o.People = people }})
		dec := func(id string, approve bool, actor, via string, mod string) func() (*gate.Request, error) {
			return func() (*gate.Request, error) {
				d := gate.Decision{RequestID: id, Approve: approve, Actor: actor, Via: via}
				if mod != "" {
					d.ModifiedArgs = json.RawMessage(mod)
				}
				return svc.Decide(ctx, d)
			}
		}
		for round := 0; round < 40; round++ {
			// Quorum 2: alice on two identities, bob rejects.
			r := submit(t, svc, gate.Submission{ToolName: "two", ToolArgs: json.RawMessage(fmt.Sprintf(`{"n":%d}`, round))})
			waited := svc.waitAsync(t, r.ID, time.Hour)
			got, errs := raceRound(dec(r.ID, true, "slack:T1/UA", "fake", ""), dec(r.ID, true, "feishu:ou_a", "fake2", ""),
				dec(r.ID, false, "slack:T1/UB", "fake", ""))
			final, err := svc.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if final.Status == gate.StatusApproved {
				t.Fatalf("round %d: approved by one person on two identities: %v %v", round, got, errs)
			}
			if final.Status != gate.StatusRejected || errs[2] != nil {
				t.Fatalf("round %d: %s; bob's reject: %v", round, final.Status, errs[2])
			}
			if w := answered(t, waited, 10*time.Second, "waiter"); w.Status != final.Status {
				t.Fatalf("round %d: waiter told %s, row %s", round, w.Status, final.Status)
			}
			// Quorum 2: alice and bob approve at once, with a cancel.
			r = submit(t, svc, gate.Submission{ToolName: "two", ToolArgs: json.RawMessage(fmt.Sprintf(`{"m":%d}`, round))})
			waited = svc.waitAsync(t, r.ID, time.Hour)
			_, errs = raceRound(dec(r.ID, true, "slack:T1/UA", "fake", ""), dec(r.ID, true, "slack:T1/UB", "fake", ""),
				func() (*gate.Request, error) { return svc.Cancel(ctx, gate.Caller{}, r.ID, "agent", "") })
			final, _ = svc.Get(ctx, r.ID)
			w := answered(t, waited, 10*time.Second, "waiter")
			if w.Status != final.Status || !final.Status.Final() {
				t.Fatalf("round %d: waiter %s, row %s", round, w.Status, final.Status)
			}
			if (final.Status == gate.StatusCancelled) != (errs[2] == nil) {
				t.Fatalf("round %d: row %s, cancel said %v", round, final.Status, errs[2])
			}
			votes, _ := svc.Votes(ctx, r.ID)
			if final.Status == gate.StatusApproved && len(votes.Voters) != 2 {
				t.Fatalf("round %d: approved with votes %v", round, votes.Voters)
			}
			// Quorum 1: an edited approval, a plain approval, a reject, a cancel.
			r = submit(t, svc, gate.Submission{ToolName: "one", ToolArgs: json.RawMessage(fmt.Sprintf(`{"k":%d}`, round))})
			waited = svc.waitAsync(t, r.ID, time.Hour)
			got, errs = raceRound(dec(r.ID, true, "slack:T1/UA", "fake", `{"k":-1}`), dec(r.ID, false, "slack:T1/UB", "fake2", ""),
				dec(r.ID, true, "slack:T1/UC", "fake", ""),
				func() (*gate.Request, error) { return svc.Cancel(ctx, gate.Caller{}, r.ID, "agent", "") })
			final, _ = svc.Get(ctx, r.ID)
			w = answered(t, waited, 10*time.Second, "waiter")
			winners := 0
			for i, err := range errs {
				if err == nil {
					winners++
					if got[i].Status != final.Status || string(got[i].ModifiedArgs) != string(final.ModifiedArgs) {
						t.Fatalf("round %d: caller %d told %s %s, row %s %s", round, i, got[i].Status, got[i].ModifiedArgs, final.Status, final.ModifiedArgs)
					}
				}
			}
			if winners != 1 || w.Status != final.Status || string(w.ModifiedArgs) != string(final.ModifiedArgs) {
				t.Fatalf("round %d: %d winners %v; waiter %s %s, row %s %s", round, winners, errs, w.Status, w.ModifiedArgs, final.Status, final.ModifiedArgs)
			}
		}
	})
}
