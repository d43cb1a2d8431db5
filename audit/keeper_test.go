package audit_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

func request(t *testing.T, db *store.DB, id string, at time.Time) {
	t.Helper()
	at = at.UTC().Truncate(time.Microsecond)
	if _, _, err := db.Create(context.Background(), &gate.Request{ID: id, Status: gate.StatusApproved, ToolName: "read",
		ToolArgs: []byte(`{}`), Metadata: []byte(`{}`), Route: "default", Quorum: 1, OnTimeout: gate.VerdictDeny,
		CreatedAt: at, ExpiresAt: at.Add(time.Hour), DecidedAt: &at, DecidedBy: gate.ActorSystem, DecidedVia: gate.ViaPolicy},
		[]gate.Event{{Type: gate.EventAutoAllowed, At: at}}); err != nil {
		t.Fatal(err)
	}
}

// The keeper stops when its context ends, and on the way out seals what
// is left and writes the last checkpoint; retention cuts by the injected
// clock; a checkpoint file is written only when the head has moved.
func TestKeeper(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		_, key, _ := ed25519.GenerateKey(rand.Reader)
		dir := t.TempDir()
		now := time.Now().UTC()
		k := audit.NewKeeper(audit.Options{Store: db, Key: key, CheckpointDir: dir, Keep: 30 * 24 * time.Hour,
			Now: func() time.Time { return now }, SealInterval: time.Hour, PruneInterval: time.Hour, CheckpointInterval: time.Hour})
		request(t, db, "old", now.Add(-31*24*time.Hour))
		request(t, db, "new", now.Add(-29*24*time.Hour))
		if err := k.Prune(context.Background()); err != nil {
			t.Fatal(err)
		}
		request(t, db, "later", now)
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // Run stops at once, then seals and writes its last checkpoint
		k.Run(ctx)
		if n, _ := db.Unsealed(context.Background()); n != 0 {
			t.Fatalf("%d events left unsealed after Run", n)
		}
		if _, err := db.Get(context.Background(), "old"); gate.ErrorCode(err) != gate.ENOTFOUND {
			t.Fatalf("the old request after retention: %v", err)
		}
		if _, err := db.Get(context.Background(), "new"); err != nil {
			t.Fatalf("the new request after retention: %v", err)
		}
		head, _ := db.ChainHead(context.Background())
		files, _ := filepath.Glob(filepath.Join(dir, "checkpoint-*.json"))
		if len(files) != 1 {
			t.Fatalf("checkpoint files: %v", files)
		}
		cp, err := audit.ReadCheckpoint(files[0])
		if err != nil || cp.Seq != head.Seq || cp.Check(key.Public().(ed25519.PublicKey)) != nil {
			t.Fatalf("the last checkpoint %+v (head %+v): %v", cp, head, err)
		}
		if rep, err := audit.Verify(context.Background(), db, cp, nil); err != nil || len(rep.Cuts) != 1 {
			t.Fatalf("verify: %+v %v", rep, err)
		}
		if path, err := k.WriteCheckpoint(context.Background()); path != "" || err != nil {
			t.Fatalf("a checkpoint of an unmoved head: %q %v", path, err)
		}
		if _, err := audit.NewKeeper(audit.Options{Store: db}).Checkpoint(context.Background()); !errors.Is(err, audit.ErrNoKey) {
			t.Fatalf("a checkpoint without a key: %v", err)
		}
	})
}
