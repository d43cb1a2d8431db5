package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// The history's tool filter is a glob like a route's tool match: case
// counts, on both drivers, as it does for an exact name. SQLite's LIKE
// folds ASCII case, so tool=Deploy* listed (and exported) deploy_docs too.
func TestToolGlobFilterKeepsCase(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		for id, tool := range map[string]string{"r1": "Deploy_prod", "r2": "deploy_docs"} {
			if _, _, err := db.Create(ctx, &gate.Request{ID: id, Status: gate.StatusPending, ToolName: tool, ToolArgs: []byte(`{}`),
				Metadata: []byte(`{}`), Route: "default", Quorum: 1, OnTimeout: gate.VerdictDeny, CreatedAt: now,
				ExpiresAt: now.Add(time.Hour)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		for tool, want := range map[string]string{"Deploy*": "r1", "deploy*": "r2", "Deploy_prod": "r1", "deploy_docs": "r2"} {
			rs, _, err := db.List(ctx, gate.Filter{Tool: tool})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, r.ID)
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("tool=%s: %v, want [%s]", tool, got, want)
			}
		}
	})
}
