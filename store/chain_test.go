package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// newRequest stores a pending request with its created event.
func newRequest(t testing.TB, db *store.DB, id string) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	_, _, err := db.Create(context.Background(), &gate.Request{ID: id, Status: gate.StatusPending, ToolName: "deploy",
		ToolArgs: []byte(`{}`), Metadata: []byte(`{}`), Route: "default", Quorum: 1, OnTimeout: gate.VerdictDeny,
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, []gate.Event{{Type: gate.EventCreated, At: now, Actor: "agent:bot", Detail: "created"}})
	if err != nil {
		t.Fatal(err)
	}
}

func addEvent(t testing.TB, db *store.DB, id, detail string) {
	t.Helper()
	if err := db.AddEvent(context.Background(), gate.Event{RequestID: id, At: time.Now().UTC(), Type: gate.EventCallbackRefused,
		Actor: "slack:T1/U1", Channel: "ops", Detail: detail}); err != nil {
		t.Fatal(err)
	}
}

// sealAll seals until nothing is left.
func sealAll(t testing.TB, db *store.DB) int {
	t.Helper()
	total := 0
	for {
		n, err := db.Seal(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if n == 0 {
			return total
		}
	}
}

// verify runs the verifier and returns the seq it says is broken (0: whole).
func verify(t testing.TB, db *store.DB, cp *audit.Checkpoint) (audit.Report, int64, string) {
	t.Helper()
	rep, err := audit.Verify(context.Background(), db, cp, nil)
	var b *audit.Broken
	switch {
	case errors.As(err, &b):
		return rep, b.Seq, b.Reason
	case err != nil:
		t.Fatalf("verify could not read the chain: %v", err)
	}
	return rep, 0, ""
}

// A request's life writes its events unsealed; the sealer links every one,
// in order, and the chain verifies. Each event then carries its seq and
// hashes, and the first link's prev_hash is the genesis.
func TestSealedChainVerifies(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		newRequest(t, db, "r1")
		newRequest(t, db, "r2")
		if _, err := db.Transition(ctx, gate.Transition{ID: "r1", To: gate.StatusApproved, At: time.Now(), By: "web:alice", Via: "web",
			Event: gate.Event{RequestID: "r1", At: time.Now(), Type: gate.EventDecided, Actor: "web:alice", Detail: "approved"}}); err != nil {
			t.Fatal(err)
		}
		addEvent(t, db, "r2", `a <"quoted"> & ünïcode detail`)
		evs, _ := db.Events(ctx, "r1")
		if len(evs) != 2 || evs[0].Seq != 0 || evs[0].Hash != "" {
			t.Fatalf("before sealing: %+v", evs)
		}
		if n := sealAll(t, db); n != 4 {
			t.Fatalf("sealed %d, want 4", n)
		}
		if n, _ := db.Unsealed(ctx); n != 0 {
			t.Fatalf("%d unsealed after sealing", n)
		}
		rep, broken, why := verify(t, db, nil)
		if broken != 0 || rep.Links != 4 || rep.Head.Seq != 4 {
			t.Fatalf("verify: %+v broken at %d: %s", rep, broken, why)
		}
		evs, _ = db.Events(ctx, "r1")
		if evs[0].Seq != 1 || evs[0].PrevHash != audit.Genesis || evs[1].Seq != 3 || evs[1].PrevHash == "" || len(evs[1].Hash) != 64 {
			t.Fatalf("after sealing: %+v", evs)
		}
		// More events extend the same chain.
		addEvent(t, db, "r1", "later")
		sealAll(t, db)
		if rep, broken, why := verify(t, db, nil); broken != 0 || rep.Head.Seq != 5 {
			t.Fatalf("after more: %+v broken at %d: %s", rep, broken, why)
		}
	})
}

// Tampering, each kind on a sealed chain of 8 links: verify names the
// first seq that is no longer whole.
func TestVerifyFindsTampering(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sql    []string
		broken int64
		reason string
	}{
		{"a detail changed", []string{`UPDATE events SET detail = 'nothing to see' WHERE seq = 4`}, 4, "the row was changed"},
		{"an actor changed", []string{`UPDATE events SET actor = 'web:mallory' WHERE seq = 2`}, 2, "the row was changed"},
		{"a time changed", []string{`UPDATE events SET at = @then WHERE seq = 6`}, 6, "the row was changed"},
		{"an event moved to another request", []string{`UPDATE events SET request_id = 'r2' WHERE seq = 3`}, 3, "the row was changed"},
		{"a row deleted", []string{`DELETE FROM events WHERE seq = 5`}, 5, "missing"},
		{"the first row deleted", []string{`DELETE FROM events WHERE seq = 1`}, 1, "missing"},
		{"the last row deleted", []string{`DELETE FROM events WHERE seq = 8`}, 8, "the end was cut off"},
		{"the end deleted with the head moved back", []string{`DELETE FROM events WHERE seq >= 7`,
			`UPDATE audit_head SET seq = 6, hash = (SELECT hash FROM events WHERE seq = 6)`}, 0, ""},
		{"a row deleted and the rest renumbered", []string{`DELETE FROM events WHERE seq = 5`,
			`UPDATE events SET seq = seq - 1 WHERE seq > 5`, `UPDATE audit_head SET seq = 7`}, 5, "prev_hash"},
		{"a row inserted in the middle", []string{`UPDATE events SET seq = seq + 100 WHERE seq > 4`, `UPDATE events SET seq = seq - 99 WHERE seq > 100`,
			`INSERT INTO events (request_id, at, type, actor, detail, seq, prev_hash, hash) SELECT 'r1', at, 'decided', 'web:mallory', 'approved', 5, hash, hash FROM events WHERE seq = 4`,
			`UPDATE audit_head SET seq = 9`}, 5, "the row was changed"},
		{"a well-formed link inserted in the middle", []string{`UPDATE events SET seq = seq + 100 WHERE seq > 4`, `UPDATE events SET seq = seq - 99 WHERE seq > 100`,
			`INSERT INTO events (request_id, at, type, actor, detail, seq) VALUES ('r1', @then, 'decided', 'web:mallory', 'approved', 5)`,
			`UPDATE audit_head SET seq = 9`, "rehash 5"}, 6, "prev_hash"},
		{"a prev_hash changed", []string{`UPDATE events SET prev_hash = hash WHERE seq = 3`}, 3, "prev_hash"},
		{"a hash recomputed for a changed row", []string{`UPDATE events SET detail = 'forged', hash = prev_hash WHERE seq = 7`}, 7, "the row was changed"},
		{"an event's content removed as if retention cut it", []string{
			`INSERT INTO audit_records (seq, kind, prev_hash, hash) SELECT seq, 'cut', prev_hash, hash FROM events WHERE seq = 3`,
			`DELETE FROM events WHERE seq = 3`}, 3, "no retention record names it"},
		{"the head row deleted", []string{`DELETE FROM audit_head`}, 9, "head row"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				newRequest(t, db, "r1")
				newRequest(t, db, "r2")
				for i := range 6 {
					addEvent(t, db, []string{"r1", "r2"}[i%2], fmt.Sprintf("event %d", i))
				}
				sealAll(t, db)
				if _, broken, why := verify(t, db, nil); broken != 0 {
					t.Fatalf("untouched chain broken at %d: %s", broken, why)
				}
				for _, q := range tc.sql {
					if seq, ok := strings.CutPrefix(q, "rehash "); ok {
						rehash(t, db, seq)
						continue
					}
					tamper(t, db, q)
				}
				_, err := audit.Verify(context.Background(), db, nil, nil)
				var b *audit.Broken
				if tc.broken == 0 {
					// A clean cut at the end, head and all, is what only a
					// checkpoint can catch (TestCheckpointCatchesTruncation).
					if err != nil {
						t.Fatalf("verify: %v", err)
					}
					return
				}
				if !errors.As(err, &b) || b.Seq != tc.broken || !strings.Contains(b.Reason, tc.reason) {
					t.Fatalf("verify: %v; want broken at seq %d (%s)", err, tc.broken, tc.reason)
				}
			})
		})
	}
}

// tamper runs a writer's SQL on the database, @then standing for a time
// long past.
func tamper(t *testing.T, db *store.DB, q string) {
	t.Helper()
	var args []any
	if strings.Contains(q, "@then") {
		args = append(args, map[string]any{"then": time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)})
	}
	if err := db.Gorm().Exec(q, args...).Error; err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// rehash gives the link at seq the hashes an attacker who knows the format
// would compute: prev_hash from the link before it, hash over its content.
func rehash(t *testing.T, db *store.DB, seq string) {
	t.Helper()
	var n int64
	fmt.Sscan(seq, &n)
	recs, err := db.ChainRecords(context.Background(), n-2, 2)
	if err != nil || len(recs) != 2 || recs[1].Seq != n {
		t.Fatalf("rehash %d: %+v %v", n, recs, err)
	}
	r := recs[1]
	audit.Head{Seq: n - 1, Hash: recs[0].Hash}.Seal(&r)
	if err := db.Gorm().Exec(`UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?`, r.PrevHash, r.Hash, n).Error; err != nil {
		t.Fatal(err)
	}
}

// A checkpoint pins the chain's head: a chain cut short after it (the end
// deleted, the head row moved back to match) is caught, and so is one
// rewritten before it; a forged or foreign checkpoint is refused.
func TestCheckpointCatchesTruncation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		key, other := testKey(t), testKey(t)
		newRequest(t, db, "r1")
		for i := range 5 {
			addEvent(t, db, "r1", fmt.Sprint(i))
		}
		sealAll(t, db)
		head, err := db.ChainHead(ctx)
		if err != nil || head.Seq != 6 {
			t.Fatalf("head: %+v %v", head, err)
		}
		cp := audit.Sign(key, head, time.Now())
		if err := cp.Check(key.Public().(ed25519.PublicKey)); err != nil {
			t.Fatal(err)
		}
		if err := cp.Check(other.Public().(ed25519.PublicKey)); err == nil {
			t.Fatal("a checkpoint passed as another key's")
		}
		forged := cp
		forged.Seq = 4
		if err := forged.Check(nil); err == nil {
			t.Fatal("a checkpoint edited after signing passed")
		}
		addEvent(t, db, "r1", "after the checkpoint")
		sealAll(t, db)
		if rep, broken, why := verify(t, db, &cp); broken != 0 || rep.Checkpoint != 6 {
			t.Fatalf("a chain grown past its checkpoint: %+v broken at %d: %s", rep, broken, why)
		}
		// Cut short: seqs 5.. gone, the head row rewritten to match.
		for _, q := range []string{`DELETE FROM events WHERE seq >= 5`, `UPDATE audit_head SET seq = 4, hash = (SELECT hash FROM events WHERE seq = 4)`} {
			if err := db.Gorm().Exec(q).Error; err != nil {
				t.Fatal(err)
			}
		}
		if _, broken, _ := verify(t, db, nil); broken != 0 {
			t.Fatalf("without a checkpoint a clean truncation is invisible, but verify says %d", broken)
		}
		if _, broken, why := verify(t, db, &cp); broken != 5 || !strings.Contains(why, "cut short after the checkpoint") {
			t.Fatalf("truncated chain with its checkpoint: broken at %d: %s", broken, why)
		}
	})
}

// The PostgreSQL hazard: an event with a smaller id commits after events
// with larger ids were committed and sealed. The sealer must not skip it:
// it is sealed in a later round, after them, and the chain verifies.
func TestSealerTakesLateCommits(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	ctx := context.Background()
	a := storetest.Open(t, store.Postgres, dsn)
	b := storetest.Open(t, store.Postgres, dsn)
	newRequest(t, a, "r1")
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	slow, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lateID int64
	if err := slow.QueryRowContext(ctx, `INSERT INTO events (request_id, at, type, detail) VALUES ('r1', now(), 'vote', 'late') RETURNING id`).Scan(&lateID); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		addEvent(t, b, "r1", fmt.Sprint("early ", i))
	}
	if n := sealAll(t, a); n != 4 {
		t.Fatalf("sealed %d before the late commit, want 4", n)
	}
	var maxID int64
	a.Gorm().Raw(`SELECT MAX(id) FROM events`).Scan(&maxID)
	if lateID >= maxID {
		t.Fatalf("the late event's id %d is not smaller than the sealed ones' (%d)", lateID, maxID)
	}
	if err := slow.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := sealAll(t, b); n != 1 {
		t.Fatalf("sealed %d after the late commit, want 1", n)
	}
	var seq int64
	a.Gorm().Raw(`SELECT seq FROM events WHERE id = ?`, lateID).Scan(&seq)
	if seq != 5 {
		t.Fatalf("the late event has seq %d, want 5", seq)
	}
	if rep, broken, why := verify(t, a, nil); broken != 0 || rep.Links != 5 {
		t.Fatalf("verify: %+v broken at %d: %s", rep, broken, why)
	}
}

// Replicas writing and sealing at once: three stores on one database, each
// with writers adding events while each runs its sealer in a loop (on
// PostgreSQL a sealer that finds the head held skips its turn). Every event
// is sealed exactly once, into one chain with no gap or repeat that verifies.
func TestReplicasSealOneChain(t *testing.T) {
	for _, driver := range []string{store.SQLite, store.Postgres} {
		t.Run(driver, func(t *testing.T) { replicasSealOneChain(t, driver) })
	}
}

func replicasSealOneChain(t *testing.T, driver string) {
	{
		dsn := filepath.Join(t.TempDir(), "chain.db")
		if driver == store.Postgres {
			dsn = storetest.PostgresDSN(t)
		}
		var replicas []*store.DB
		for range 3 {
			replicas = append(replicas, storetest.Open(t, driver, dsn))
		}
		first := replicas[0]
		ctx := context.Background()
		newRequest(t, first, "r1")
		const writers, each = 6, 40
		var wg sync.WaitGroup
		var written atomic.Int64
		stop := make(chan struct{})
		var sealers sync.WaitGroup
		var sealed atomic.Int64
		for _, db := range replicas {
			sealers.Add(1)
			go func() {
				defer sealers.Done()
				for {
					n, err := db.Seal(ctx, 25)
					if err != nil {
						t.Error(err)
						return
					}
					sealed.Add(int64(n))
					select {
					case <-stop:
						return
					default:
					}
				}
			}()
		}
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db := replicas[w%len(replicas)]
				for i := range each {
					if err := db.AddEvent(ctx, gate.Event{RequestID: "r1", At: time.Now(), Type: gate.EventVote, Detail: fmt.Sprint(w, "/", i)}); err != nil {
						t.Error(err)
						return
					}
					written.Add(1)
				}
			}()
		}
		wg.Wait()
		close(stop)
		sealers.Wait()
		sealed.Add(int64(sealAll(t, first)))
		if want := written.Load() + 1; sealed.Load() != want {
			t.Fatalf("sealed %d events, %d were written", sealed.Load(), want)
		}
		rep, broken, why := verify(t, first, nil)
		if broken != 0 || rep.Links != written.Load()+1 {
			t.Fatalf("verify: %+v broken at %d: %s", rep, broken, why)
		}
	}
}

func testKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestVerifyFindsChangedCalls: the event that records a request's creation
// seals a digest of its call (gate.Request.Call), so a row changed after
// the fact — its arguments, tool, summary, agent or time — breaks the
// chain at that event, though no event changed.
func TestVerifyFindsChangedCalls(t *testing.T) {
	for _, tc := range []struct{ name, sql string }{
		{"the arguments", `UPDATE requests SET tool_args = '{"amount":1}' WHERE id = 'r2'`},
		{"the tool", `UPDATE requests SET tool_name = 'read_docs' WHERE id = 'r2'`},
		{"the summary", `UPDATE requests SET summary = 'nothing to see' WHERE id = 'r2'`},
		{"the agent", `UPDATE requests SET agent_id = 'intern' WHERE id = 'r2'`},
		{"the time", `UPDATE requests SET created_at = @then WHERE id = 'r2'`},
		{"the route", `UPDATE requests SET route = 'small-payments' WHERE id = 'r2'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				now := time.Now().UTC().Truncate(time.Microsecond)
				sealedRequest(t, db, "r1", now)
				sealedRequest(t, db, "r2", now)
				addEvent(t, db, "r2", "later")
				sealAll(t, db)
				if _, broken, why := verify(t, db, nil); broken != 0 {
					t.Fatalf("untouched: broken at %d: %s", broken, why)
				}
				tamper(t, db, tc.sql)
				if _, broken, why := verify(t, db, nil); broken != 2 || !strings.Contains(why, "request r2: its row no longer holds the call") {
					t.Fatalf("broken at %d (%s), want seq 2 and the call changed", broken, why)
				}
			})
		})
	}
}

// TestVerifyFindsChangedVerdicts: the event that records how a request
// ended seals a digest of the verdict its row holds (gate.SealVerdict, in
// the transition's transaction), so a row whose status, decider, channel,
// time or reason changed afterwards breaks the chain at that event.
func TestVerifyFindsChangedVerdicts(t *testing.T) {
	for _, tc := range []struct{ name, sql string }{
		{"the status", `UPDATE requests SET status = 'rejected' WHERE id = 'r1'`},
		{"who decided", `UPDATE requests SET decided_by = 'web:cfo' WHERE id = 'r1'`},
		{"the channel", `UPDATE requests SET decided_via = 'ops-feishu' WHERE id = 'r1'`},
		{"the reason", `UPDATE requests SET reason = 'checked with finance' WHERE id = 'r1'`},
		{"when", `UPDATE requests SET decided_at = @then WHERE id = 'r1'`},
		{"edited arguments", `UPDATE requests SET modified_args = '{"amount":1}' WHERE id = 'r1'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				newRequest(t, db, "r1")
				at := time.Now().UTC().Truncate(time.Microsecond)
				if _, err := db.Transition(ctx, gate.Transition{ID: "r1", To: gate.StatusApproved, At: at, By: "web:alice", Via: "web", Reason: "fine",
					Event: gate.Event{RequestID: "r1", At: at, Type: gate.EventDecided, Actor: "web:alice", Channel: "web", Detail: "approved: fine"}}); err != nil {
					t.Fatal(err)
				}
				addEvent(t, db, "r1", "later")
				sealAll(t, db)
				if _, broken, why := verify(t, db, nil); broken != 0 {
					t.Fatalf("untouched: broken at %d: %s", broken, why)
				}
				tamper(t, db, tc.sql)
				if _, broken, why := verify(t, db, nil); broken != 2 || !strings.Contains(why, "request r1: its row no longer holds the verdict") {
					t.Fatalf("broken at %d (%s), want seq 2 and the verdict changed", broken, why)
				}
			})
		})
	}
}

// An expired request's allow is read from its row's on_timeout, which the
// verdict's digest does not hold (rows sealed before it would not
// verify); the sealed reason of an expiry names it, so a row whose
// on_timeout was flipped after the seal, to make a denied expiry an
// allow, is found.
func TestVerifyFindsAFlippedTimeout(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		newRequest(t, db, "r1") // on_timeout: deny
		at := time.Now().UTC().Truncate(time.Microsecond).Add(2 * time.Hour)
		reason := audit.ExpiryReason(time.Hour, string(gate.VerdictDeny))
		if _, err := db.Transition(ctx, gate.Transition{ID: "r1", To: gate.StatusExpired, Kind: gate.AfterDeadline, At: at, By: gate.ActorSystem,
			Via: "timeout", Reason: reason, Event: gate.Event{RequestID: "r1", At: at, Type: gate.EventExpired, Actor: gate.ActorSystem, Detail: reason}}); err != nil {
			t.Fatal(err)
		}
		sealAll(t, db)
		if _, broken, why := verify(t, db, nil); broken != 0 {
			t.Fatalf("untouched: broken at %d: %s", broken, why)
		}
		tamper(t, db, `UPDATE requests SET on_timeout = 'allow' WHERE id = 'r1'`)
		if r, err := db.Get(ctx, "r1"); err != nil || !r.Allowed() {
			t.Fatalf("the flipped row: %+v, %v; want an expiry that allows", r, err)
		}
		if _, broken, why := verify(t, db, nil); broken != 2 || !strings.Contains(why, `request r1: its row's on_timeout ("allow") is not the one its sealed expiry names`) {
			t.Fatalf("broken at %d (%s), want seq 2 and the on_timeout changed", broken, why)
		}
	})
}

// An event written into the events table with a seq of 0 (or below) is
// outside the chain: the sealer skips it (seq is not NULL), the walk never
// read it (ChainRecords reads seq > 0), yet the request's trail shows it.
// Found by a reader.
func TestVerifyFindsAnEventOutsideTheChain(t *testing.T) {
	for _, seq := range []string{"0", "-1"} {
		t.Run("seq "+seq, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				newRequest(t, db, "r1")
				addEvent(t, db, "r1", "first")
				sealAll(t, db)
				tamper(t, db, `INSERT INTO events (request_id, at, type, actor, channel, detail, seq, prev_hash, hash)
					VALUES ('r1', @then, 'voted', 'web:cfo', 'web', 'approved: checked with finance', `+seq+`, 'x', 'y')`)
				sealAll(t, db)
				evs, _ := db.Events(ctx, "r1")
				shown := false
				for _, e := range evs {
					shown = shown || e.Actor == "web:cfo"
				}
				_, broken, why := verify(t, db, nil)
				if !shown || broken == 0 || !strings.Contains(why, "written outside the chain") {
					t.Fatalf("the trail shows the forged event: %v (%d events); verify: broken at %d: %s", shown, len(evs), broken, why)
				}
			})
		})
	}
}

// A link written twice was caught only when both copies fell in one page
// of the walk: at a page's end (seq 1000) the second copy was never read,
// on PostgreSQL. Found by a reader.
func TestVerifyFindsALinkWrittenTwiceAtAPageEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		newRequest(t, db, "r1")
		newRequest(t, db, "r2")
		for i := 0; i < 996; i++ {
			addEvent(t, db, "r1", "e")
		}
		if _, err := db.Transition(ctx, gate.Transition{ID: "r1", To: gate.StatusApproved, At: time.Now(), By: "web:alice", Via: "web",
			Event: gate.Event{RequestID: "r1", At: time.Now(), Type: gate.EventDecided, Actor: "web:alice", Detail: "approved"}}); err != nil {
			t.Fatal(err)
		}
		sealAll(t, db) // seqs 1-999
		if _, err := db.Prune(ctx, time.Now().Add(time.Hour), time.Now(), 10, nil); err != nil {
			t.Fatal(err)
		}
		if _, broken, why := verify(t, db, nil); broken != 0 {
			t.Fatalf("before: broken at %d: %s", broken, why)
		}
		// seq 1000 is the retention record; a forged event takes the same seq.
		tamper(t, db, `INSERT INTO events (request_id, at, type, actor, channel, detail, seq, prev_hash, hash)
			SELECT 'r2', @then, 'decided', 'web:cfo', 'web', 'approved', seq, prev_hash, hash FROM audit_records WHERE seq = 1000`)
		evs, _ := db.Events(ctx, "r2")
		_, broken, why := verify(t, db, nil)
		if broken != 1000 {
			t.Fatalf("r2's trail shows a forged event at seq 1000 (%d events); verify: broken at %d: %s", len(evs), broken, why)
		}
	})
}
