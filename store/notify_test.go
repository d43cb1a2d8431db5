package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

func TestNotifierNeedsPostgres(t *testing.T) {
	if _, err := store.NewNotifier(context.Background(), storetest.SQLite(t)); err == nil {
		t.Fatal("a SQLite store got a LISTEN/NOTIFY notifier")
	}
}

// TestNotifierWakesAnotherReplica: two services on one PostgreSQL schema,
// as two replicas are; the safety re-read is set to an hour, so only
// NOTIFY can wake the waiter on A when B decides.
func TestNotifierWakesAnotherReplica(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	dbA, dbB := storetest.Open(t, store.Postgres, dsn), storetest.Open(t, store.Postgres, dsn)
	replica := func(db *store.DB) *gate.Service {
		n, err := store.NewNotifier(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		return newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, tweak: func(o *gate.Options) {
			o.Notifier, o.SafetyInterval = n, time.Hour
		}})
	}
	a, b := replica(dbA), replica(dbB)
	time.Sleep(300 * time.Millisecond) // let both LISTENs start
	for i := range 3 {
		r := submit(t, a, gate.Submission{ToolName: "deploy"})
		got := make(chan *gate.Request, 1)
		go func() {
			w, _ := a.Wait(context.Background(), r.ID, 10*time.Second)
			got <- w
		}()
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		if _, err := b.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: i%2 == 0, Actor: "web:alice", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		select {
		case w := <-got:
			if w == nil || !w.Status.Final() {
				t.Fatalf("waiter on A returned %+v", w)
			}
			if took := time.Since(start); took > time.Second {
				t.Fatalf("waiter on A woke after %s: NOTIFY did not carry the verdict", took)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("waiter on A was not woken by a verdict on B")
		}
	}
}
