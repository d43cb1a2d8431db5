package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// KeyStates reads, in one query, where the caller's requests under the
// keys asked about stand; another caller's request under the same key, and
// keys not asked about, are not in the answer.
func TestKeyStates(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		add := func(id, caller, key, callID string) {
			t.Helper()
			r := pendingRow(id)
			r.ToolName, r.Caller, r.IdempotencyKey, r.ToolCallID = "Bash", caller, key, callID
			storeRow(t, db, r)
		}
		add("01KA", "bot", "k", "toolu_a")
		add("01KB", "bot", "k-1", "")
		add("01KC", "other", "k-2", "toolu_c")
		add("01KD", "bot", "j", "")
		if _, err := db.Transition(ctx, gate.Transition{ID: "01KA", To: gate.StatusApproved, At: now, By: "web:a", Via: "web"}); err != nil {
			t.Fatal(err)
		}
		got, err := db.KeyStates(ctx, "bot", []string{"k", "k-1", "k-2", "k-3"})
		if err != nil {
			t.Fatal(err)
		}
		a, b := got["k"], got["k-1"]
		if len(got) != 2 || a.Status != gate.StatusApproved || a.DecidedAt == nil || !a.DecidedAt.Equal(now) ||
			a.ToolCallID != "toolu_a" || b.Status != gate.StatusPending || b.DecidedAt != nil || b.ToolCallID != "" {
			t.Fatalf("key states: %+v", got)
		}
		if got, err := db.KeyStates(ctx, "bot", nil); err != nil || len(got) != 0 {
			t.Fatalf("no keys: %v %v", got, err)
		}
	})
}
