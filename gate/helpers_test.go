package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
)

// The service's behaviour is tested here, against real databases: every
// test runs on a SQLite file and, when GATEHOUSE_TEST_POSTGRES is set, on a
// fresh PostgreSQL schema (storetest.Each). Tests wait for what they need
// (a signal from a fake, a waiter registered, a row in a state) and never
// sleep to let something happen.

// clock is an injected time source tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now().UTC()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeChannel records every post and update and signals each on calls.
// failPosts makes the next n posts fail; hold makes every Post wait for a
// value on it (after signalling "posting").
type fakeChannel struct {
	name      string
	mu        sync.Mutex
	posts     map[string]int    // request id → posts
	updates   map[string]string // request id → status shown
	failPosts int
	failAll   bool
	panics    bool // every Post and Update panics, as an SDK might
	hold      chan struct{}
	attempts  []int       // gate.CardAttempt of each Post, in order
	calls     chan string // "post <id>", "posting <id>", "update <id> <status>"
}

func newFake(name string) *fakeChannel {
	return &fakeChannel{name: name, posts: map[string]int{}, updates: map[string]string{}, calls: make(chan string, 1000)}
}

func (f *fakeChannel) Name() string { return f.name }

func (f *fakeChannel) Post(ctx context.Context, r *gate.Request) (string, error) {
	if f.hold != nil {
		f.calls <- "posting " + r.ID
		select {
		case <-f.hold:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts = append(f.attempts, gate.CardAttempt(ctx))
	if f.panics {
		panic("sdk: index out of range [0] with length 0")
	}
	if f.failAll || f.failPosts > 0 {
		f.failPosts--
		f.calls <- "failed " + r.ID
		return "", errors.New("platform says 503")
	}
	f.posts[r.ID]++
	f.calls <- "post " + r.ID
	return "msg-" + r.ID, nil
}

func (f *fakeChannel) Update(_ context.Context, r *gate.Request, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panics {
		panic("sdk: index out of range [0] with length 0")
	}
	if ref != "msg-"+r.ID {
		return errors.New("update with a reference that was never posted: " + ref)
	}
	f.updates[r.ID] = string(r.Status)
	f.calls <- "update " + r.ID + " " + string(r.Status)
	return nil
}

func (f *fakeChannel) postCount(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posts[id]
}

// await reads the fake's calls until one equals want, failing after 10 s.
func (f *fakeChannel) await(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c := <-f.calls:
			if c == want {
				return
			}
		case <-timeout:
			t.Fatalf("%s: no %q within 10s", f.name, want)
		}
	}
}

// observer counts the waiters, and lets a test wait until n are waiting.
type observer struct {
	gate.Observer
	mu      sync.Mutex
	waiting int
	changed chan struct{}
	decided []string // "route status via recorded", in order
}

func newObserver() *observer { return &observer{changed: make(chan struct{}, 1)} }

func (o *observer) RequestCreated(string)                              {}
func (o *observer) RequestFinished(string, gate.Status, time.Duration) {}
func (o *observer) CardDone(string, string, error, time.Duration)      {}
func (o *observer) CallbackRefused(string)                             {}
func (o *observer) DecisionRefused(string, string)                     {}

func (o *observer) Decided(route string, status gate.Status, via string, recorded bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.decided = append(o.decided, fmt.Sprintf("%s %s %s %t", route, status, via, recorded))
}

func (o *observer) decisions() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.decided)
}

func (o *observer) WaitersChanged(d int) {
	o.mu.Lock()
	o.waiting += d
	o.mu.Unlock()
	select {
	case o.changed <- struct{}{}:
	default:
	}
}

// awaitWaiters returns once n agents wait, failing after 10 s.
func (o *observer) awaitWaiters(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		o.mu.Lock()
		w := o.waiting
		o.mu.Unlock()
		if w >= n {
			return
		}
		select {
		case <-o.changed:
		case <-timeout:
			t.Fatalf("%d waiters after 10s, want %d", w, n)
		}
	}
}

type svcOpts struct {
	clock  *clock
	routes []gate.Route
	chans  []gate.Channel
	tweak  func(*gate.Options)
}

type harness struct {
	*gate.Service
	obs *observer
}

// newService builds a started service over db; it stops with the test.
func newService(t *testing.T, db gate.Store, o svcOpts) harness {
	t.Helper()
	obs := newObserver()
	opts := gate.Options{Store: db, Routes: o.routes, Observer: obs, Logger: testLogger(t), SweepInterval: 50 * time.Millisecond,
		SafetyInterval: 200 * time.Millisecond, Defaults: gate.Defaults{Channels: []string{"fake"}}}
	if o.clock != nil {
		opts.Now = o.clock.Now
	}
	if o.tweak != nil {
		o.tweak(&opts)
	}
	svc := gate.NewService(opts)
	for _, ch := range o.chans {
		svc.Register(ch)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		svc.Stop()
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		svc.Drain(dctx)
		dcancel()
		cancel()
	})
	svc.Start(ctx)
	return harness{svc, obs}
}

// waitAsync starts a Wait and returns where its answer will arrive, once
// the waiter is registered.
func (h harness) waitAsync(t *testing.T, id string, d time.Duration) <-chan *gate.Request {
	t.Helper()
	h.obs.mu.Lock()
	before := h.obs.waiting
	h.obs.mu.Unlock()
	got := make(chan *gate.Request, 1)
	go func() {
		r, err := h.Wait(context.Background(), id, d)
		if err != nil {
			t.Errorf("wait: %v", err)
		}
		got <- r
	}()
	h.obs.awaitWaiters(t, before+1)
	return got
}

func submit(t *testing.T, svc harness, in gate.Submission) *gate.Request {
	t.Helper()
	if in.ToolName == "" {
		in.ToolName = "oa__purchase_pay"
	}
	if in.ToolArgs == nil {
		in.ToolArgs = json.RawMessage(`{"vendor":"ACME","amount":60000}`)
	}
	r, created, err := svc.Submit(context.Background(), in)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if !created {
		t.Fatalf("submit: request %s was not new", r.ID)
	}
	return r
}

// answered is what a waiter was answered with, within d.
func answered(t *testing.T, ch <-chan *gate.Request, d time.Duration, what string) *gate.Request {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatal(what)
		return nil
	}
}

// eventually checks cond until it holds, failing after 10 s. It is for
// conditions on rows, which have no signal of their own.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func events(t *testing.T, svc harness, id string) []gate.Event {
	t.Helper()
	evs, err := svc.Events(context.Background(), id)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	return evs
}

func countEvents(evs []gate.Event, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// cardsSettle waits until every card of id shows want.
func cardsSettle(t *testing.T, svc harness, id, want string) []gate.Card {
	t.Helper()
	var cards []gate.Card
	eventually(t, "cards of "+id+" show "+want, func() bool {
		cards, _ = svc.Cards(context.Background(), id)
		for _, c := range cards {
			if c.Have != want && !c.Abandoned {
				return false
			}
		}
		return len(cards) > 0
	})
	return cards
}

// faultStore fails the store call named by fail ("create", "findgrant",
// "bykey", "transition", "get"; "" none), as a database that went away does.
type faultStore struct {
	*store.DB
	fail atomic.Value // string
}

var errFault = &gate.Error{Code: gate.EUNAVAILABLE, Message: "database error", Err: errors.New("disk full")}

func (f *faultStore) is(op string) bool { v, _ := f.fail.Load().(string); return v == op }

func (f *faultStore) Create(ctx context.Context, r *gate.Request, ev []gate.Event) (*gate.Request, bool, error) {
	if f.is("create") {
		return nil, false, errFault
	}
	return f.DB.Create(ctx, r, ev)
}
func (f *faultStore) FindGrant(ctx context.Context, route, caller, tool, h string, now time.Time) (*gate.Grant, error) {
	if f.is("findgrant") {
		return nil, errFault
	}
	return f.DB.FindGrant(ctx, route, caller, tool, h, now)
}
func (f *faultStore) ByKey(ctx context.Context, caller, key string) (*gate.Request, error) {
	if f.is("bykey") {
		return nil, errFault
	}
	return f.DB.ByKey(ctx, caller, key)
}
func (f *faultStore) Transition(ctx context.Context, t gate.Transition) (gate.Outcome, error) {
	if f.is("transition") {
		return gate.Outcome{}, errFault
	}
	return f.DB.Transition(ctx, t)
}
func (f *faultStore) Get(ctx context.Context, id string) (*gate.Request, error) {
	if f.is("get") {
		return nil, errFault
	}
	return f.DB.Get(ctx, id)
}

// expiryFailingStore fails expiries only, as a database that refuses one
// write does.
type expiryFailingStore struct{ *store.DB }

func (f expiryFailingStore) Transition(ctx context.Context, t gate.Transition) (gate.Outcome, error) {
	if t.To == gate.StatusExpired {
		return gate.Outcome{}, &gate.Error{Code: gate.EUNAVAILABLE, Message: "database error", Err: errors.New("disk full")}
	}
	return f.DB.Transition(ctx, t)
}

// testLogger keeps the service's log and prints it when the test fails.
// Goroutines may still log after the test ends, so they never call t.Log.
func testLogger(t *testing.T) *slog.Logger {
	w := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			w.mu.Lock()
			t.Log("service log:\n" + w.b.String())
			w.mu.Unlock()
		}
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *logBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// readCounter counts the reads of a request by id.
type readCounter struct {
	*store.DB
	gets atomic.Int64
}

func (s *readCounter) Get(ctx context.Context, id string) (*gate.Request, error) {
	s.gets.Add(1)
	return s.DB.Get(ctx, id)
}
