package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// oldRequest stores a request created at, with a card, a vote and three
// events, decided (final) unless pending.
func oldRequest(t *testing.T, db *store.DB, id string, at time.Time, final bool) {
	t.Helper()
	ctx := context.Background()
	at = at.UTC().Truncate(time.Microsecond)
	if _, _, err := db.Create(ctx, &gate.Request{ID: id, Status: gate.StatusPending, ToolName: "deploy", ToolArgs: []byte(`{"secret":"x"}`),
		Metadata: []byte(`{}`), Route: "default", Channels: []string{"ops"}, Quorum: 2, OnTimeout: gate.VerdictDeny,
		CreatedAt: at, ExpiresAt: at.Add(time.Hour)}, []gate.Event{{Type: gate.EventCreated, At: at}}); err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"web:a", "web:b"}[:map[bool]int{true: 2, false: 1}[final]] {
		if _, err := db.Transition(ctx, gate.Transition{ID: id, To: gate.StatusApproved, At: at.Add(time.Minute), By: who, Via: "web",
			Vote: &gate.Vote{Voter: who, Actor: who, Via: "web"}, Event: gate.Event{RequestID: id, At: at.Add(time.Minute), Type: gate.EventDecided}}); err != nil {
			t.Fatal(err)
		}
	}
}

func count(t *testing.T, db *store.DB, q string) int64 {
	t.Helper()
	var n int64
	if err := db.Gorm().Raw(q).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// Retention cuts final requests created before the cutoff, with their
// events, cards and votes, and nothing else; each cut event leaves its
// link; the chain records the cut and still verifies, and still catches
// tampering around the cut.
func TestRetentionCutsAndTheChainSaysSo(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Now().UTC()
		old := now.Add(-500 * 24 * time.Hour)
		oldRequest(t, db, "old1", old, true)
		oldRequest(t, db, "young", now.Add(-time.Hour), true) // interleaves with old2's links
		oldRequest(t, db, "old2", old.Add(time.Hour), true)
		oldRequest(t, db, "oldpending", old, false) // not final: kept
		addEvent(t, db, "old1", "a late tap on an old card")
		sealAll(t, db)
		oldRequest(t, db, "old3", old, true) // final and old, but its events are not sealed yet
		linksBefore, _, _ := verify(t, db, nil)

		cut, err := db.Prune(ctx, now.Add(-400*24*time.Hour), now, 100, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cut.Requests != 2 || cut.Events != 9 {
			t.Fatalf("cut %+v, want old1 and old2 with their 9 events", cut)
		}
		for _, id := range []string{"old1", "old2"} {
			if _, err := db.Get(ctx, id); gate.ErrorCode(err) != gate.ENOTFOUND {
				t.Errorf("%s after retention: %v", id, err)
			}
		}
		for _, id := range []string{"young", "oldpending", "old3"} {
			if _, err := db.Get(ctx, id); err != nil {
				t.Errorf("%s was cut: %v", id, err)
			}
		}
		for _, q := range []string{
			`SELECT COUNT(*) FROM events WHERE request_id IN ('old1', 'old2')`,
			`SELECT COUNT(*) FROM cards WHERE request_id IN ('old1', 'old2')`,
			`SELECT COUNT(*) FROM votes WHERE request_id IN ('old1', 'old2')`,
		} {
			if n := count(t, db, q); n != 0 {
				t.Errorf("%s: %d left", q, n)
			}
		}
		if n := count(t, db, `SELECT COUNT(*) FROM audit_records WHERE kind = 'cut' AND at IS NULL AND detail = ''`); n != 9 {
			t.Errorf("%d links without content, want 9", n)
		}
		sealAll(t, db)
		rep, broken, why := verify(t, db, nil)
		if broken != 0 || len(rep.Cuts) != 1 || rep.Cuts[0].Cut.Requests != 2 || rep.Links != linksBefore.Links+1+4 {
			t.Fatalf("verify after retention: %+v broken at %d: %s", rep, broken, why)
		}
		// A second pass, once old3 is sealed, cuts it and is recorded too.
		if cut, err := db.Prune(ctx, now.Add(-400*24*time.Hour), now, 100, nil); err != nil || cut.Requests != 1 {
			t.Fatalf("second pass: %+v %v", cut, err)
		}
		if rep, broken, why := verify(t, db, nil); broken != 0 || len(rep.Cuts) != 2 {
			t.Fatalf("verify after the second pass: %+v broken at %d: %s", rep, broken, why)
		}
		// Tampering around the cut is still caught: a cut link removed, and
		// the retention record's list of what it cut edited.
		firstCut := count(t, db, `SELECT MIN(seq) FROM audit_records WHERE kind = 'cut'`)
		if err := db.Gorm().Exec(`UPDATE audit_records SET detail = REPLACE(detail, '"requests":2', '"requests":1') WHERE kind = 'retention'`).Error; err != nil {
			t.Fatal(err)
		}
		var b *audit.Broken
		if _, err := audit.Verify(ctx, db, nil, nil); !errors.As(err, &b) || !strings.Contains(b.Reason, "changed") {
			t.Fatalf("an edited retention record: %v", err)
		}
		if err := db.Gorm().Exec(`DELETE FROM audit_records WHERE seq = ?`, firstCut).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := audit.Verify(ctx, db, nil, nil); !errors.As(err, &b) || b.Seq != firstCut {
			t.Fatalf("a cut link deleted (seq %d): %v", firstCut, err)
		}
	})
}

// Nothing to cut writes nothing: no record, the head unmoved.
func TestRetentionWithNothingToCut(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		oldRequest(t, db, "young", time.Now().Add(-time.Hour), true)
		sealAll(t, db)
		before, _ := db.ChainHead(ctx)
		if cut, err := db.Prune(ctx, time.Now().Add(-24*time.Hour), time.Now(), 100, nil); err != nil || cut.Requests != 0 {
			t.Fatalf("prune: %+v %v", cut, err)
		}
		if after, _ := db.ChainHead(ctx); after != before {
			t.Fatalf("the head moved from %+v to %+v", before, after)
		}
	})
}

// TestSignedRetentionRecords: with the audit key, retention signs the
// record of each cut, and verify given the key refuses a record it did
// not sign. Without it, a writer of the database could pass a deleted
// event off as cut: move the event's content out (leaving its link) and
// append a well-formed record of a cut that names it.
func TestSignedRetentionRecords(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		_, key, _ := ed25519.GenerateKey(rand.Reader)
		_, other, _ := ed25519.GenerateKey(rand.Reader)
		pub := key.Public().(ed25519.PublicKey)
		now := time.Now().UTC().Truncate(time.Microsecond)
		oldRequest(t, db, "old", now.Add(-500*24*time.Hour), true)
		oldRequest(t, db, "young", now.Add(-time.Hour), true)
		sealAll(t, db)
		if cut, err := db.Prune(ctx, now.Add(-400*24*time.Hour), now, 100, key); err != nil || cut.Requests != 1 || cut.Signature == "" {
			t.Fatalf("prune: %+v %v", cut, err)
		}
		var b *audit.Broken
		if rep, err := audit.Verify(ctx, db, nil, pub); err != nil || len(rep.Cuts) != 1 {
			t.Fatalf("a signed cut, verified with its key: %+v %v", rep, err)
		}
		if _, err := audit.Verify(ctx, db, nil, other.Public().(ed25519.PublicKey)); !errors.As(err, &b) || !strings.Contains(b.Reason, "not the audit key's") {
			t.Fatalf("verified with another key: %v", err)
		}

		// The signed record copied to the head (as it could be into another
		// chain under the same key): its signature is for its own place.
		signed := count(t, db, `SELECT seq FROM audit_records WHERE kind = 'retention'`)
		recs, err := db.ChainRecords(ctx, int64(signed)-1, 1)
		if err != nil || len(recs) != 1 {
			t.Fatalf("the signed record: %+v %v", recs, err)
		}
		before, _ := db.ChainHead(ctx)
		copied := audit.Record{Kind: audit.KindRetention, At: now, Type: audit.KindRetention, Actor: gate.ActorSystem, Detail: recs[0].Detail}
		after := before.Seal(&copied)
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO audit_records (seq, kind, at, type, actor, detail, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				[]any{copied.Seq, copied.Kind, copied.At, copied.Type, copied.Actor, copied.Detail, copied.PrevHash, copied.Hash}},
			{`UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1`, []any{after.Seq, after.Hash}},
		} {
			if err := db.Gorm().Exec(q.sql, q.args...).Error; err != nil {
				t.Fatal(err)
			}
		}
		if _, err := audit.Verify(ctx, db, nil, pub); !errors.As(err, &b) || b.Seq != copied.Seq || !strings.Contains(b.Reason, "copied from another chain") {
			t.Fatalf("a signed record copied to another place: %v", err)
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`DELETE FROM audit_records WHERE seq = ?`, []any{copied.Seq}},
			{`UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1`, []any{before.Seq, before.Hash}},
		} {
			if err := db.Gorm().Exec(q.sql, q.args...).Error; err != nil {
				t.Fatal(err)
			}
		}

		// The forgery: young's first event becomes a cut link, and a record
		// of a cut naming it is appended at the head, hashed as the sealer
		// would.
		seq := int64(count(t, db, `SELECT MIN(seq) FROM events WHERE request_id = 'young'`))
		for _, q := range []string{
			`INSERT INTO audit_records (seq, kind, prev_hash, hash) SELECT seq, 'cut', prev_hash, hash FROM events WHERE seq = ?`,
			`DELETE FROM events WHERE seq = ?`,
		} {
			if err := db.Gorm().Exec(q, seq).Error; err != nil {
				t.Fatal(err)
			}
		}
		head, err := db.ChainHead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		forged := audit.Cut{Cutoff: now, Requests: 1, Events: 1, Seqs: fmt.Sprint(seq)}
		rec := audit.Record{Kind: audit.KindRetention, At: now, Type: audit.KindRetention, Actor: gate.ActorSystem, Detail: forged.Detail()}
		newHead := head.Seal(&rec)
		if err := db.Gorm().Exec(`INSERT INTO audit_records (seq, kind, at, type, actor, detail, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			rec.Seq, rec.Kind, rec.At, rec.Type, rec.Actor, rec.Detail, rec.PrevHash, rec.Hash).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm().Exec(`UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1`, newHead.Seq, newHead.Hash).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := audit.Verify(ctx, db, nil, nil); err != nil {
			t.Fatalf("without the key the forgery is not caught, as docs/security.md says; verify: %v", err)
		}
		if _, err := audit.Verify(ctx, db, nil, pub); !errors.As(err, &b) || b.Seq != rec.Seq || !strings.Contains(b.Reason, "not signed") {
			t.Fatalf("a forged record of a cut, verified with the key: %v; want broken at seq %d", err, rec.Seq)
		}
	})
}

// sealedRequest stores a pending request whose created event seals its
// call, as gate's sealCall does.
func sealedRequest(t *testing.T, db *store.DB, id string, at time.Time) {
	t.Helper()
	r := &gate.Request{ID: id, Status: gate.StatusPending, ToolName: "pay", ToolArgs: []byte(`{"amount":60000}`), Metadata: []byte(`{}`),
		Route: "payments", Quorum: 1, OnTimeout: gate.VerdictDeny, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	ev := gate.Event{Type: gate.EventCreated, At: at, Actor: "agent:bot", Detail: "route payments; " + r.Call().Mark()}
	if _, _, err := db.Create(context.Background(), r, []gate.Event{ev}); err != nil {
		t.Fatal(err)
	}
}

// decidedAndSealed stores a request made at created (sealedRequest), applies
// tr to it, and seals the chain.
func decidedAndSealed(t *testing.T, db *store.DB, created time.Time, tr gate.Transition) {
	t.Helper()
	sealedRequest(t, db, tr.ID, created)
	if _, err := db.Transition(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	sealAll(t, db)
}

// TestRetentionLeavesTamperedRequests: a writer of the database backdates
// a request decided a minute ago; retention, which picks requests by
// their rows, must not delete it and sign the cut (verify would then be
// whole). It checks each candidate's links, their times and the row's
// sealed call and verdict, and leaves the request for verify to report
// (a second reader found the laundering).
func TestRetentionLeavesTamperedRequests(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		_, key, _ := ed25519.GenerateKey(rand.Reader)
		now := time.Now().UTC().Truncate(time.Microsecond)
		sealedRequest(t, db, "evidence", now.Add(-time.Minute))
		sealedRequest(t, db, "old", now.Add(-500*24*time.Hour))
		for _, id := range []string{"evidence", "old"} {
			at := now
			if id == "old" {
				at = now.Add(-500*24*time.Hour + time.Minute)
			}
			if _, err := db.Transition(ctx, gate.Transition{ID: id, To: gate.StatusRejected, At: at, By: "web:alice", Via: "web", Reason: "no",
				Event: gate.Event{RequestID: id, At: at, Type: gate.EventDecided, Actor: "web:alice", Channel: "web", Detail: "rejected: no"}}); err != nil {
				t.Fatal(err)
			}
		}
		sealAll(t, db)
		if err := db.Gorm().Exec(`UPDATE requests SET created_at = ? WHERE id = 'evidence'`, now.Add(-1000*24*time.Hour)).Error; err != nil {
			t.Fatal(err)
		}
		cut, err := db.Prune(ctx, now.Add(-400*24*time.Hour), now, 100, key)
		if err != nil || cut.Requests != 1 || cut.Held != 1 {
			t.Fatalf("retention: %+v %v; want the old request cut and the backdated one held", cut, err)
		}
		if _, err := db.Get(ctx, "evidence"); err != nil {
			t.Fatalf("the backdated request: %v", err)
		}
		var b *audit.Broken
		if _, err := audit.Verify(ctx, db, nil, key.Public().(ed25519.PublicKey)); !errors.As(err, &b) || !strings.Contains(b.Reason, "request evidence") {
			t.Fatalf("verify after retention: %v; want the backdated request reported", err)
		}
	})
}

// TestVerifyFindsAVerdictNoEventRecorded: a pending request's row given a
// verdict in the database (approved by web:cfo) has no event that sealed
// it; verify reports it at the seal of its call (a second reader).
func TestVerifyFindsAVerdictNoEventRecorded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		sealedRequest(t, db, "r1", now)
		sealedRequest(t, db, "r2", now)
		sealAll(t, db)
		if _, broken, why := verify(t, db, nil); broken != 0 {
			t.Fatalf("pending requests: broken at %d: %s", broken, why)
		}
		if err := db.Gorm().Exec(`UPDATE requests SET status = 'approved', decided_by = 'web:cfo', decided_via = 'web', decided_at = ? WHERE id = 'r2'`, now).Error; err != nil {
			t.Fatal(err)
		}
		if _, broken, why := verify(t, db, nil); broken != 2 || !strings.Contains(why, "request r2: its row shows a verdict (approved by web:cfo)") {
			t.Fatalf("broken at %d (%s), want seq 2", broken, why)
		}
	})
}

// TestRetentionLeavesAFlippedTimeout: a writer of the database flips an
// old expired request's on_timeout from deny to allow, so that its row
// (and an agent re-attaching under its key) says silence allowed the call.
// The verdict's digest does not hold on_timeout; verify finds the flip by
// the sealed expiry's reason. Retention must leave that request for verify
// to report, as it does a row whose call or verdict changed, rather than
// cut it and sign a record that makes the chain whole again.
func TestRetentionLeavesAFlippedTimeout(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		_, key, _ := ed25519.GenerateKey(rand.Reader)
		now := time.Now().UTC().Truncate(time.Microsecond)
		at := now.Add(-500 * 24 * time.Hour)
		reason := audit.ExpiryReason(time.Hour, string(gate.VerdictDeny))
		decidedAndSealed(t, db, at, gate.Transition{ID: "flipped", To: gate.StatusExpired, Kind: gate.AfterDeadline, At: at.Add(time.Hour),
			By: gate.ActorSystem, Via: "timeout", Reason: reason,
			Event: gate.Event{RequestID: "flipped", At: at.Add(time.Hour), Type: gate.EventExpired, Actor: gate.ActorSystem, Detail: reason}})
		if err := db.Gorm().Exec(`UPDATE requests SET on_timeout = 'allow' WHERE id = 'flipped'`).Error; err != nil {
			t.Fatal(err)
		}
		if r, err := db.Get(ctx, "flipped"); err != nil || !r.Allowed() {
			t.Fatalf("the flipped row: %+v, %v; want an expiry that allows", r, err)
		}
		cut, err := db.Prune(ctx, now.Add(-400*24*time.Hour), now, 100, key)
		if err != nil || cut.Requests != 0 || cut.Held != 1 {
			t.Fatalf("retention: %+v %v; want the flipped request held, not cut", cut, err)
		}
		var b *audit.Broken
		if _, err := audit.Verify(ctx, db, nil, key.Public().(ed25519.PublicKey)); !errors.As(err, &b) || !strings.Contains(b.Reason, "request flipped") {
			t.Fatalf("verify after retention: %v; want the flipped request reported", err)
		}
	})
}

// TestRetentionLeavesAnEventOutsideTheChain: a writer of the database adds
// to an old request's trail an event that the walk never reads (seq 0,
// with hashes computed as the sealer would), say a vote by web:cfo; verify
// reports it as written outside the chain. Retention must leave that
// request for verify to report, not cut it (and its forged event's "link")
// under a signed record, after which verify says the chain is whole.
func TestRetentionLeavesAnEventOutsideTheChain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		_, key, _ := ed25519.GenerateKey(rand.Reader)
		now := time.Now().UTC().Truncate(time.Microsecond)
		at := now.Add(-500 * 24 * time.Hour)
		decidedAndSealed(t, db, at, gate.Transition{ID: "forged", To: gate.StatusRejected, At: at.Add(time.Minute), By: "web:alice", Via: "web", Reason: "no",
			Event: gate.Event{RequestID: "forged", At: at.Add(time.Minute), Type: gate.EventDecided, Actor: "web:alice", Channel: "web", Detail: "rejected: no"}})
		then := at.Add(30 * time.Second)
		if err := db.Gorm().Exec(`INSERT INTO events (request_id, at, type, actor, channel, detail, seq, prev_hash, hash)
			VALUES ('forged', ?, 'voted', 'web:cfo', 'web', 'approved: checked with finance', 0, ?, 'x')`, then, audit.Genesis).Error; err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := db.Gorm().Raw(`SELECT id FROM events WHERE seq = 0`).Scan(&id).Error; err != nil {
			t.Fatal(err)
		}
		r := audit.Record{Kind: audit.KindEvent, ID: id, RequestID: "forged", At: then, Type: "voted", Actor: "web:cfo", Channel: "web",
			Detail: "approved: checked with finance", PrevHash: audit.Genesis}
		if err := db.Gorm().Exec(`UPDATE events SET hash = ? WHERE id = ?`, audit.Hash(r.PrevHash, r.Canonical()), id).Error; err != nil {
			t.Fatal(err)
		}
		pub := key.Public().(ed25519.PublicKey)
		var b *audit.Broken
		if _, err := audit.Verify(ctx, db, nil, pub); !errors.As(err, &b) || !strings.Contains(b.Reason, "outside the chain") {
			t.Fatalf("verify before retention: %v; want the forged event reported", err)
		}
		cut, err := db.Prune(ctx, now.Add(-400*24*time.Hour), now, 100, key)
		if err != nil || cut.Requests != 0 || cut.Held != 1 {
			t.Fatalf("retention: %+v %v; want the request with the forged event held, not cut", cut, err)
		}
		if _, err := audit.Verify(ctx, db, nil, pub); !errors.As(err, &b) || !strings.Contains(b.Reason, "outside the chain") {
			t.Fatalf("verify after retention: %v; want the forged event still reported", err)
		}
	})
}
