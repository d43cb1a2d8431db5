package gate_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// threadFake is a channel with threads and direct messages, as Slack and
// Feishu have: it reaches slack:… identities directly, and records every
// direct card and every reply in a card's thread on calls, as
// "dm <id> <identity>", "remind <id> <card ref> <mentions>" and
// "update <id> <status> <ref>".
type threadFake struct {
	*fakeChannel
	reminds atomic.Int64
	directs atomic.Int64
}

func newThreadFake(name string) *threadFake { return &threadFake{fakeChannel: newFake(name)} }

func (f *threadFake) Reaches(id string) bool { return strings.HasPrefix(id, "slack:") }

func (f *threadFake) PostDirect(_ context.Context, r *gate.Request, id string) (string, error) {
	f.directs.Add(1)
	f.calls <- "dm " + r.ID + " " + id
	return "dm:" + id + ":" + r.ID, nil
}

func (f *threadFake) Remind(_ context.Context, r *gate.Request, ref string, _ int, mention []string) (string, error) {
	n := f.reminds.Add(1)
	f.calls <- "remind " + r.ID + " " + ref + " " + strings.Join(mention, ",")
	return fmt.Sprintf("reply-%d", n), nil
}

func (f *threadFake) Update(_ context.Context, r *gate.Request, ref string) error {
	f.calls <- "update " + r.ID + " " + string(r.Status) + " " + ref
	return nil
}

// stepService is a started service with people, a clock tests move and a
// step loop that looks every few milliseconds.
func stepService(t *testing.T, db gate.Store, clk *clock, chans []gate.Channel, routes ...gate.Route) harness {
	return newService(t, db, svcOpts{clock: clk, chans: chans, routes: routes, tweak: func(o *gate.Options) {
		o.People, o.StepTick, o.SweepInterval = testPeople(), 5*time.Millisecond, time.Hour
	}})
}

// cardsOf waits until the request's cards of kind all show want, and
// returns them.
func cardsOf(t *testing.T, svc harness, id, kind, want string, n int) []gate.Card {
	t.Helper()
	var out []gate.Card
	eventually(t, fmt.Sprintf("%d %s cards of %s show %s", n, kind, id, want), func() bool {
		cards, _ := svc.Cards(context.Background(), id)
		out = out[:0]
		for _, c := range cards {
			if c.Kind == kind {
				if c.Have != want {
					return false
				}
				out = append(out, c)
			}
		}
		return len(out) == n
	})
	return out
}

// Reminders reply in the thread of each posted card, naming the
// approvers, every `remind` until a verdict; each is on the trail.
func TestRemindersInTheCardsThread(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clk, ch := newClock(), newThreadFake("chat")
		svc := stepService(t, db, clk, []gate.Channel{ch}, gate.Route{Name: "pay", Channels: []string{"chat"},
			Approvers: []string{"person:bob", "slack:T1/UX", "slack:T1/*"}, Timeout: time.Hour, Plan: gate.Plan{Remind: 10 * time.Minute}})
		r := submit(t, svc, gate.Submission{})
		card := cardsOf(t, svc, r.ID, gate.CardChannel, gate.CardPosted, 1)[0]
		clk.Add(10 * time.Minute)
		ch.await(t, "remind "+r.ID+" "+card.Ref+" slack:T1/UBOB,slack:T1/UX")
		// Recorded, not just sent, before the clock jumps past its lease.
		cardsOf(t, svc, r.ID, gate.CardReminder, gate.CardPosted, 1)
		clk.Add(5 * time.Minute) // not yet due: the next is 10 minutes after the first
		clk.Add(5 * time.Minute)
		ch.await(t, "remind "+r.ID+" "+card.Ref+" slack:T1/UBOB,slack:T1/UX")
		cardsOf(t, svc, r.ID, gate.CardReminder, gate.CardPosted, 2)
		if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UBOB", Via: "chat"}); err != nil {
			t.Fatal(err)
		}
		ch.await(t, "update "+r.ID+" approved "+card.Ref)
		clk.Add(time.Hour)
		if took, err := svc.Advance(context.Background(), r.ID); took || err != nil {
			t.Fatalf("a step after the verdict: %v %v", took, err)
		}
		// The reminders are never "updated": they stay as they were sent.
		cardsOf(t, svc, r.ID, gate.CardReminder, gate.CardPosted, 2)
		evs := events(t, svc, r.ID)
		if n := countEvents(evs, gate.EventReminded); n != 2 || ch.reminds.Load() != 2 {
			t.Fatalf("%d reminded events and %d replies, want 2 and 2: %+v", n, ch.reminds.Load(), evs)
		}
		for _, e := range evs {
			if e.Type == gate.EventReminded && !strings.Contains(e.Detail, "person:bob, slack:T1/UX, slack:T1/* reminded in the thread of 1 card(s)") {
				t.Fatalf("reminded event: %+v", e)
			}
		}
	})
}

// A reminder names only the approvers who have not approved yet: on a
// quorum of three, bob's approval takes him off the next reminder, by his
// person and by the identity he tapped with, and so does a Feishu
// approver's, whose vote counts for her union_id while the list names her
// open_id; the trail says who approved so far.
func TestRemindersSkipWhoApproved(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clk, ch := newClock(), newThreadFake("chat")
		svc := stepService(t, db, clk, []gate.Channel{ch}, gate.Route{Name: "pay", Channels: []string{"chat"}, Quorum: 3,
			Approvers: []string{"person:bob", "slack:T1/UX", "person:alice", "feishu:ou_x"}, Timeout: time.Hour,
			Plan: gate.Plan{Remind: 10 * time.Minute}})
		r := submit(t, svc, gate.Submission{})
		card := cardsOf(t, svc, r.ID, gate.CardChannel, gate.CardPosted, 1)[0]
		clk.Add(10 * time.Minute)
		ch.await(t, "remind "+r.ID+" "+card.Ref+" slack:T1/UBOB,slack:T1/UX,slack:T1/UALICE,feishu:union:on_alice,web:alice,feishu:ou_x")
		cardsOf(t, svc, r.ID, gate.CardReminder, gate.CardPosted, 1)
		for _, d := range []gate.Decision{
			{RequestID: r.ID, Approve: true, Actor: "slack:T1/UBOB", Via: "chat"},
			{RequestID: r.ID, Approve: true, Actor: "feishu:ou_x", Voter: "feishu:union:on_x", Via: "chat"},
		} {
			if out, err := svc.Decide(context.Background(), d); err != nil || out.Status != gate.StatusPending {
				t.Fatalf("%s's approval: %v, %v", d.Actor, out, err)
			}
		}
		clk.Add(10 * time.Minute)
		ch.await(t, "remind "+r.ID+" "+card.Ref+" slack:T1/UX,slack:T1/UALICE,feishu:union:on_alice,web:alice")
		cardsOf(t, svc, r.ID, gate.CardReminder, gate.CardPosted, 2)
		var details []string
		for _, e := range events(t, svc, r.ID) {
			if e.Type == gate.EventReminded {
				details = append(details, e.Detail)
			}
		}
		want := []string{
			"reminder 1: still pending; person:bob, slack:T1/UX, person:alice, feishu:ou_x reminded in the thread of 1 card(s)",
			"reminder 2: still pending; slack:T1/UX, person:alice (2 of 3 approvals so far, by feishu:union:on_x, person:bob) reminded in the thread of 1 card(s)",
		}
		if !slices.Equal(details, want) {
			t.Fatalf("reminded events:\n%q\nwant\n%q", details, want)
		}
	})
}

// An escalation posts the card to more channels and lets more people
// decide, durably; the new card is updated to the final state too.
func TestEscalation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clk, first, cfo := newClock(), newThreadFake("ops"), newThreadFake("cfo")
		svc := stepService(t, db, clk, []gate.Channel{first, cfo}, gate.Route{Name: "pay", Channels: []string{"ops"},
			Approvers: []string{"person:bob"}, Timeout: time.Hour, Plan: gate.Plan{Escalate: []gate.Escalation{
				{After: 20 * time.Minute, Channels: []string{"cfo"}, Approvers: []string{"person:carol"}},
				{After: 40 * time.Minute, Approvers: []string{"slack:T1/UBOSS"}},
			}}})
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{})
		cardsOf(t, svc, r.ID, gate.CardChannel, gate.CardPosted, 1) // recorded before the clock jumps past its lease
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "feishu:ou_carol", Via: "cfo"}); gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("carol before the escalation: %v", err)
		}
		clk.Add(20 * time.Minute)
		cfo.await(t, "post "+r.ID)
		cardsOf(t, svc, r.ID, gate.CardChannel, gate.CardPosted, 2)
		got, err := svc.Get(ctx, r.ID)
		if err != nil || !slices.Equal(got.Channels, []string{"ops", "cfo"}) || !slices.Equal(got.Approvers, []string{"person:bob", "person:carol"}) {
			t.Fatalf("escalated request: %v %+v", err, got)
		}
		clk.Add(20 * time.Minute)
		eventually(t, "the second escalation", func() bool {
			got, _ = svc.Get(ctx, r.ID)
			return slices.Contains(got.Approvers, "slack:T1/UBOSS")
		})
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "feishu:ou_carol", Via: "cfo"}); err != nil {
			t.Fatalf("carol after it: %v", err)
		}
		first.await(t, "update "+r.ID+" approved msg-"+r.ID)
		cfo.await(t, "update "+r.ID+" approved msg-"+r.ID)
		evs := events(t, svc, r.ID)
		var details []string
		for _, e := range evs {
			if e.Type == gate.EventEscalated {
				details = append(details, e.Detail)
			}
		}
		if len(details) != 2 || !strings.Contains(details[0], "escalation 1, 20m0s after the request: cards to cfo; approvers now include person:carol") ||
			!strings.Contains(details[1], "escalation 2, 40m0s after the request: approvers now include slack:T1/UBOSS") {
			t.Fatalf("escalated events: %q", details)
		}
	})
}

// notify: dm sends the card to each approver it can reach, and no card to
// the channel; the direct cards are updated to the verdict and reminded in
// their own threads. With nobody reachable, the channel gets the card.
func TestDirectCards(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clk, ch := newClock(), newThreadFake("chat")
		svc := stepService(t, db, clk, []gate.Channel{ch},
			gate.Route{Name: "dm", Tool: "dm", Channels: []string{"chat"}, Approvers: []string{"person:alice", "person:bob"}, Timeout: time.Hour,
				Plan: gate.Plan{Notify: gate.NotifyDM, Remind: time.Minute}},
			gate.Route{Name: "nobody", Tool: "nobody", Channels: []string{"chat"}, Approvers: []string{"person:carol"}, Plan: gate.Plan{Notify: gate.NotifyDM}},
			gate.Route{Name: "both", Tool: "both", Channels: []string{"chat"}, Approvers: []string{"person:bob"}, Plan: gate.Plan{Notify: gate.NotifyBoth}})
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{ToolName: "dm"})
		dms := cardsOf(t, svc, r.ID, gate.CardDirect, gate.CardPosted, 2)
		if dms[0].Target != "slack:T1/UALICE" || dms[1].Target != "slack:T1/UBOB" || ch.postCount(r.ID) != 0 {
			t.Fatalf("direct cards %+v; %d channel posts", dms, ch.postCount(r.ID))
		}
		clk.Add(time.Minute)
		cardsOf(t, svc, r.ID, gate.CardReminder, gate.CardPosted, 2)
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UBOB", Via: "chat", Elsewhere: true}); err != nil {
			t.Fatal(err)
		}
		cardsOf(t, svc, r.ID, gate.CardDirect, string(gate.StatusApproved), 2)

		r = submit(t, svc, gate.Submission{ToolName: "nobody"})
		ch.await(t, "post "+r.ID)
		if evs := events(t, svc, r.ID); !strings.Contains(evs[0].Detail, "no approver can be reached directly through chat, so the cards went to the channels") {
			t.Fatalf("created: %+v", evs[0])
		}
		r = submit(t, svc, gate.Submission{ToolName: "both"})
		cardsOf(t, svc, r.ID, gate.CardDirect, gate.CardPosted, 1)
		cardsOf(t, svc, r.ID, gate.CardChannel, gate.CardPosted, 1)
	})
}

// Two replicas on one database, their clocks at the same time, each step
// asked for by many callers on both at once: each reminder and each
// escalation is taken once, and its cards posted once.
func TestStepsOnceAcrossReplicas(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clk := newClock()
		route := gate.Route{Name: "pay", Channels: []string{"ops"}, Approvers: []string{"person:bob"}, Timeout: time.Hour,
			Plan: gate.Plan{Remind: 10 * time.Minute, Escalate: []gate.Escalation{{After: 15 * time.Minute, Channels: []string{"cfo"}}}}}
		var replicas []harness
		var ops, cfo []*threadFake
		for range 2 {
			o, c := newThreadFake("ops"), newThreadFake("cfo")
			ops, cfo = append(ops, o), append(cfo, c)
			replicas = append(replicas, newService(t, db, svcOpts{clock: clk, chans: []gate.Channel{o, c}, routes: []gate.Route{route},
				tweak: func(o *gate.Options) { o.People, o.StepTick, o.SweepInterval = testPeople(), time.Hour, time.Hour }}))
		}
		r := submit(t, replicas[0], gate.Submission{})
		cardsOf(t, replicas[0], r.ID, gate.CardChannel, gate.CardPosted, 1)
		race := func() int {
			var took atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					ok, err := replicas[i%2].Advance(context.Background(), r.ID)
					if err != nil {
						t.Error(err)
					}
					if ok {
						took.Add(1)
					}
				}()
			}
			close(start)
			wg.Wait()
			return int(took.Load())
		}
		if n := race(); n != 0 {
			t.Fatalf("%d steps taken before any was due", n)
		}
		clk.Add(10 * time.Minute)
		if n := race(); n != 1 {
			t.Fatalf("the reminder was taken %d times", n)
		}
		cardsOf(t, replicas[1], r.ID, gate.CardReminder, gate.CardPosted, 1)
		clk.Add(5 * time.Minute)
		if n := race(); n != 1 {
			t.Fatalf("the escalation was taken %d times", n)
		}
		cards := cardsOf(t, replicas[1], r.ID, gate.CardChannel, gate.CardPosted, 2)
		if cards[1].Channel != "cfo" {
			t.Fatalf("cards: %+v", cards)
		}
		reminds := ops[0].reminds.Load() + ops[1].reminds.Load()
		cfoPosts := cfo[0].postCount(r.ID) + cfo[1].postCount(r.ID)
		evs := events(t, replicas[0], r.ID)
		if reminds != 1 || cfoPosts != 1 || countEvents(evs, gate.EventReminded) != 1 || countEvents(evs, gate.EventEscalated) != 1 {
			t.Fatalf("%d reminders sent, %d escalated cards posted; trail: %+v", reminds, cfoPosts, evs)
		}
	})
}

// Steps are rows, not timers: a request made by a server that then died
// is reminded and escalated by the one that runs next, the steps that came
// due meanwhile included (each once).
func TestStepsSurviveARestart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clk := newClock()
		route := gate.Route{Name: "pay", Channels: []string{"ops"}, Approvers: []string{"person:bob"}, Timeout: time.Hour,
			Plan: gate.Plan{Remind: 10 * time.Minute, Escalate: []gate.Escalation{{After: 15 * time.Minute, Channels: []string{"cfo"}}}}}
		died := gate.NewService(gate.Options{Store: db, Routes: []gate.Route{route}, Now: clk.Now, People: testPeople()}) // never started
		r, _, err := died.Submit(context.Background(), gate.Submission{ToolName: "pay"})
		if err != nil {
			t.Fatal(err)
		}
		ops, cfo := newThreadFake("ops"), newThreadFake("cfo")
		next := stepService(t, db, clk, []gate.Channel{ops, cfo}, route)
		card := cardsOf(t, next, r.ID, gate.CardChannel, gate.CardPosted, 1)[0]
		clk.Add(20 * time.Minute)
		ops.await(t, "remind "+r.ID+" "+card.Ref+" slack:T1/UBOB")
		cfo.await(t, "post "+r.ID)
		evs := events(t, next, r.ID)
		if countEvents(evs, gate.EventReminded) != 1 || countEvents(evs, gate.EventEscalated) != 1 || cfo.postCount(r.ID) != 1 {
			t.Fatalf("after the restart: %+v", evs)
		}
	})
}
