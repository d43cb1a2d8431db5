package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
)

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

// fakeChannel records every post and update, and fails the first `fail`
// calls of each kind when asked to.
type fakeChannel struct {
	name     string
	mu       sync.Mutex
	posts    []string          // request ids
	updates  map[string]string // request id → status shown
	failPost atomic.Int32
	failAll  bool
	calls    *atomic.Int32 // shared across fakes when several services post
	posting  chan struct{} // when set, Post signals it on entry...
	release  chan struct{} // ...and returns once this is closed
}

func newFake(name string) *fakeChannel {
	return &fakeChannel{name: name, updates: map[string]string{}, calls: new(atomic.Int32)}
}

func (f *fakeChannel) Name() string { return f.name }

func (f *fakeChannel) Post(_ context.Context, r *gate.Request) (string, error) {
	f.calls.Add(1)
	if f.posting != nil {
		f.posting <- struct{}{}
		<-f.release
	}
	if f.failAll || f.failPost.Add(-1) >= 0 {
		return "", errors.New("platform says 503")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts = append(f.posts, r.ID)
	return "msg-" + r.ID, nil
}

func (f *fakeChannel) Update(_ context.Context, r *gate.Request, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ref != "msg-"+r.ID {
		return errors.New("update with a reference that was never posted: " + ref)
	}
	f.updates[r.ID] = string(r.Status)
	return nil
}

func (f *fakeChannel) postCount(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range f.posts {
		if p == id {
			n++
		}
	}
	return n
}

func (f *fakeChannel) shown(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.updates[id]
}

type svcOpts struct {
	clock  *clock
	routes []gate.Route
	chans  []gate.Channel
	tweak  func(*gate.Options)
}

// newService builds a started service over db; it stops with the test.
func newService(t *testing.T, db *store.DB, o svcOpts) *gate.Service {
	t.Helper()
	opts := gate.Options{Store: db, Routes: o.routes, SweepInterval: 50 * time.Millisecond, SafetyInterval: 200 * time.Millisecond,
		Defaults: gate.Defaults{Channels: []string{"fake"}}}
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
	t.Cleanup(func() { svc.Stop(); cancel() })
	svc.Start(ctx)
	return svc
}

func submit(t *testing.T, svc *gate.Service, in gate.Submission) *gate.Request {
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

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func events(t *testing.T, svc *gate.Service, id string) []gate.Event {
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

// answered is what a waiter was answered with, within d; the test fails
// with what otherwise.
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

// readCounter counts the reads of a request (Get).
type readCounter struct {
	*store.DB
	gets atomic.Int64
}

func (s *readCounter) Get(ctx context.Context, id string) (*gate.Request, error) {
	s.gets.Add(1)
	return s.DB.Get(ctx, id)
}
