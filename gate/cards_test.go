package gate_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

func TestCardsFollowTheRequest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fake := newFake("fake")
		clk := newClock()
		svc := newService(t, db, svcOpts{clock: clk, chans: []gate.Channel{fake}, tweak: func(o *gate.Options) { o.SweepInterval = time.Hour }})
		ctx := context.Background()
		for _, end := range []string{"approved", "rejected", "cancelled", "expired"} {
			t.Run(end, func(t *testing.T) {
				r := submit(t, svc, gate.Submission{Timeout: time.Hour, Caller: "bot"})
				// Recorded, not just sent: the clock jumps below, past the
				// lease of a post still in flight.
				cardsSettle(t, svc, r.ID, gate.CardPosted)
				var err error
				switch end {
				case "approved", "rejected":
					_, err = svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: end == "approved", Actor: "web:a", Via: "fake"})
				case "cancelled":
					_, err = svc.Cancel(ctx, gate.Caller{Name: "bot"}, r.ID, "agent:bot", "changed my mind")
				case "expired":
					clk.Add(2 * time.Hour)
					_, err = svc.Expire(ctx, r.ID)
				}
				if err != nil {
					t.Fatal(err)
				}
				fake.await(t, "update "+r.ID+" "+end)
				// The row follows the platform call that made it true.
				cards := cardsSettle(t, svc, r.ID, end)
				if len(cards) != 1 || cards[0].Ref != "msg-"+r.ID {
					t.Fatalf("card row: %+v", cards)
				}
				if fake.postCount(r.ID) != 1 {
					t.Fatalf("posted %d times", fake.postCount(r.ID))
				}
			})
		}
	})
}

// landsUnheard is a platform whose first post goes through while its
// answer is lost (a timeout after the platform took it, a 5xx after
// posting): the card is there, with its buttons, and the gate does not know.
type landsUnheard struct {
	*fakeChannel
	lost atomic.Bool
}

func (l *landsUnheard) Post(ctx context.Context, r *gate.Request) (string, error) {
	ref, err := l.fakeChannel.Post(ctx, r)
	if err == nil && l.lost.CompareAndSwap(false, true) {
		return "", errors.New("timeout: the platform posted it, its answer was lost")
	}
	return ref, err
}

// A request that ends after a post whose answer was lost still gets its
// card updated to the final state: the card may be on the platform, with
// buttons, so the later claim posts (where a platform allows, finding the
// earlier card) and the update follows. A card that was never tried is
// still not posted for a request that ended.
func TestCardThatMayHaveLandedIsUpdated(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fake := newFake("fake")
		svc := newService(t, db, svcOpts{chans: []gate.Channel{&landsUnheard{fakeChannel: fake}}})
		r := submit(t, svc, gate.Submission{Timeout: time.Hour})
		fake.await(t, "post "+r.ID) // on the platform; the gate heard a timeout
		if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:a", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		fake.await(t, "update "+r.ID+" approved")
		cardsSettle(t, svc, r.ID, string(gate.StatusApproved))
	})
}

// A verdict that lands while the card is being posted reaches the card as
// soon as the post is recorded. The card worker's tick is an hour, so only
// the finished post's own "still due" can bring the update.
func TestVerdictDuringThePost(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fake := newFake("fake")
		fake.hold = make(chan struct{})
		svc := newService(t, db, svcOpts{chans: []gate.Channel{fake}, tweak: func(o *gate.Options) { o.CardTick = time.Hour }})
		r := submit(t, svc, gate.Submission{Timeout: time.Hour})
		fake.await(t, "posting "+r.ID)
		if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:a", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		close(fake.hold)
		fake.await(t, "update "+r.ID+" approved")
	})
}

func TestCardRetriesThenAbandons(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		flaky, dead := newFake("flaky"), newFake("dead")
		flaky.failPosts = 1
		dead.failAll = true
		svc := newService(t, db, svcOpts{chans: []gate.Channel{flaky, dead},
			routes: []gate.Route{{Name: "both", Channels: []string{"flaky", "dead"}}},
			tweak:  func(o *gate.Options) { o.CardAttempts = 2 }})
		r := submit(t, svc, gate.Submission{})
		flaky.await(t, "post "+r.ID) // after one failure and its 1 s backoff
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

// A channel whose SDK panics fails its card, not the server: the post is
// retried and abandoned like any failed one, the request is still decided
// and its waiter answered, and the other channels' cards go out. Without the
// guard the panic ends the test binary.
func TestAChannelThatPanicsFailsItsCardNotTheServer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		good, bad := newFake("good"), newFake("bad")
		bad.panics = true
		svc := newService(t, db, svcOpts{chans: []gate.Channel{good, bad},
			routes: []gate.Route{{Name: "both", Channels: []string{"good", "bad"}}},
			tweak:  func(o *gate.Options) { o.CardAttempts = 2 }})
		r := submit(t, svc, gate.Submission{Timeout: time.Hour})
		good.await(t, "post "+r.ID)
		eventually(t, "the panicking channel's card abandoned", func() bool {
			return countEvents(events(t, svc, r.ID), gate.EventPostAbandoned) == 1
		})
		for _, e := range events(t, svc, r.ID) {
			if e.Type == gate.EventPostAbandoned && !strings.Contains(e.Detail, "panic: sdk: index out of range") {
				t.Fatalf("the abandonment does not say what happened: %q", e.Detail)
			}
		}
		got := svc.waitAsync(t, r.ID, time.Minute)
		if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: false, Actor: "good:a", Via: "good"}); err != nil {
			t.Fatal(err)
		}
		if a := answered(t, got, 10*time.Second, "the waiter"); a.Status != gate.StatusRejected {
			t.Fatalf("answered %s, want rejected", a.Status)
		}
		good.await(t, "update "+r.ID+" rejected")

		// An update that panics fails the same way.
		bad.mu.Lock()
		bad.panics = false
		bad.mu.Unlock()
		r2 := submit(t, svc, gate.Submission{Timeout: time.Hour})
		bad.await(t, "post "+r2.ID)
		good.await(t, "post "+r2.ID)
		cardsSettle(t, svc, r2.ID, gate.CardPosted)
		bad.mu.Lock()
		bad.panics = true
		bad.mu.Unlock()
		if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: r2.ID, Approve: true, Actor: "good:a", Via: "good"}); err != nil {
			t.Fatal(err)
		}
		good.await(t, "update "+r2.ID+" approved")
		eventually(t, "the panicking update abandoned", func() bool {
			return countEvents(events(t, svc, r2.ID), gate.EventUpdateAbandoned) == 1
		})
	})
}

// A channel learns which claim of a card it posts under: a retry after a
// failed post is attempt 2, so a platform without an idempotency key knows
// the first may have landed unseen.
func TestPostKnowsItsAttempt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		flaky := newFake("flaky")
		flaky.failPosts = 1
		svc := newService(t, db, svcOpts{chans: []gate.Channel{flaky}, routes: []gate.Route{{Name: "flaky", Channels: []string{"flaky"}}}})
		r := submit(t, svc, gate.Submission{})
		flaky.await(t, "post "+r.ID) // after one failure and its 1 s backoff
		flaky.mu.Lock()
		got := slices.Clone(flaky.attempts)
		flaky.mu.Unlock()
		if !slices.Equal(got, []int{1, 2}) {
			t.Fatalf("the posts saw attempts %v, want [1 2]", got)
		}
	})
}

// TestTwoServicesPostEachCardOnce runs two services (as two replicas would)
// over one database: the leases let exactly one post each card.
func TestTwoServicesPostEachCardOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		a, b := newFake("fake"), newFake("fake")
		svcA := newService(t, db, svcOpts{chans: []gate.Channel{a}})
		newService(t, db, svcOpts{chans: []gate.Channel{b}})
		var ids []string
		for range 20 {
			ids = append(ids, submit(t, svcA, gate.Submission{}).ID)
		}
		for _, id := range ids {
			// Posted and recorded: no lease is left to run out and repeat it.
			cardsSettle(t, svcA, id, gate.CardPosted)
		}
		for _, id := range ids {
			if n := a.postCount(id) + b.postCount(id); n != 1 {
				t.Fatalf("request %s posted %d times", id, n)
			}
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

// With its tick an hour, every claim the card worker makes is one it was
// kicked to make: a life cycle costs a few, never a loop of empty ones.
func TestCardWorkerDoesNotSpin(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cc := &claimCounter{DB: db}
		fake := newFake("fake")
		svc := newService(t, cc, svcOpts{chans: []gate.Channel{fake}, tweak: func(o *gate.Options) { o.CardTick = time.Hour }})
		ctx := context.Background()
		for range 5 {
			r := submit(t, svc, gate.Submission{Timeout: time.Hour})
			fake.await(t, "post "+r.ID)
			if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:a", Via: "fake"}); err != nil {
				t.Fatal(err)
			}
			fake.await(t, "update "+r.ID+" approved")
			cardsSettle(t, svc, r.ID, "approved")
		}
		if n := cc.n.Load(); n > 5*3+1 {
			t.Fatalf("%d claims for 5 life cycles: the card worker claims in a loop", n)
		}
	})
}

// Shutdown lets the posts in flight finish and records them, so a restart
// does not post them again; cancelling them first (the old order) made the
// post fail after the platform had shown it.
func TestDrainRecordsThePostsInFlight(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fake := newFake("fake")
		fake.hold = make(chan struct{})
		svc := newService(t, db, svcOpts{chans: []gate.Channel{fake}})
		r := submit(t, svc, gate.Submission{Timeout: time.Hour})
		fake.await(t, "posting "+r.ID)
		svc.Stop()
		drained := make(chan struct{})
		go func() { svc.Drain(context.Background()); close(drained) }()
		select {
		case <-drained:
			t.Fatal("Drain returned with a post in flight")
		default:
		}
		close(fake.hold)
		<-drained
		cards, _ := svc.Cards(context.Background(), r.ID)
		if len(cards) != 1 || cards[0].Have != gate.CardPosted || cards[0].Ref != "msg-"+r.ID {
			t.Fatalf("the post in flight at shutdown was not recorded: %+v", cards)
		}
	})
}
