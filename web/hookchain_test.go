package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/hook"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/web"
)

// keyReads counts the reads of requests by idempotency key.
type keyReads struct {
	gate.Store
	n atomic.Int64
}

func (k *keyReads) ByKey(ctx context.Context, caller, key string) (*gate.Request, error) {
	k.n.Add(1)
	return k.Store.ByKey(ctx, caller, key)
}

func (k *keyReads) KeyStates(ctx context.Context, caller string, keys []string) (map[string]gate.KeyState, error) {
	k.n.Add(1)
	return k.Store.KeyStates(ctx, caller, keys)
}

// TestRepeatedHookCallReadsItsKeysOnce: the same command run over and over
// in one session (each a new call, with its own tool_use_id) finds its
// place along the call's keys in one read, however many identical calls
// came before: the walk read each key in turn, 64 reads for a command run
// 64 times (4 ms a hook call on SQLite, and a round trip each on
// PostgreSQL). Each call still gets a request of its own, past the end of
// the keys too, and a report of what ran finds the call it is about.
func TestRepeatedHookCallReadsItsKeysOnce(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "gh.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reads := &keyReads{Store: db}
	svc := gate.NewService(gate.Options{Store: reads, Routes: []gate.Route{{Name: "tests", Tool: "Bash", Action: "allow"}}})
	bg, cancel := context.WithCancel(ctx)
	svc.Start(bg)
	t.Cleanup(func() { svc.Stop(); cancel() })
	s, err := web.New(web.Options{Service: svc, Sessions: db, Tokens: []config.APIToken{{Name: "agent-a", Token: scopeTokens["agent-a"]}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)

	const input = `"session_id":"s1","cwd":"/repo","tool_name":"Bash","tool_input":{"command":"npm test"}`
	runs := hook.MaxChain + 3
	for i := range runs {
		before := reads.n.Load()
		code, out := call(t, hs.URL, "agent-a", http.MethodPost, "/hooks/claude-code",
			fmt.Sprintf(`{"hook_event_name":"PreToolUse",%s,"tool_use_id":"toolu_%02d"}`, input, i))
		if code != http.StatusOK || !strings.Contains(out, `"permissionDecision":"allow"`) {
			t.Fatalf("call %d: %d %s", i, code, out)
		}
		if n := reads.n.Load() - before; n > 1 {
			t.Fatalf("call %d read requests by key %d times, want once", i, n)
		}
		if i == 5 {
			code, out = call(t, hs.URL, "agent-a", http.MethodPost, "/hooks/claude-code",
				fmt.Sprintf(`{"hook_event_name":"PostToolUse",%s,"tool_use_id":"toolu_05","tool_response":{"stdout":"ok"}}`, input))
			if code != http.StatusOK || out != "{}" {
				t.Fatalf("report: %d %s", code, out)
			}
		}
	}
	rs, _, err := svc.List(ctx, gate.Filter{Limit: 200})
	if err != nil || len(rs) != runs {
		t.Fatalf("%d requests (%v), want one per call: %d", len(rs), err, runs)
	}
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[r.ToolCallID] || r.Status != gate.StatusApproved {
			t.Fatalf("request %s for %s: %s (or a second request for the call)", r.ID, r.ToolCallID, r.Status)
		}
		seen[r.ToolCallID] = true
		evs, err := svc.Events(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		ran := false
		for _, e := range evs {
			ran = ran || e.Type == gate.EventToolRan
		}
		if ran != (r.ToolCallID == "toolu_05") {
			t.Errorf("request for %s: what ran recorded %v", r.ToolCallID, ran)
		}
	}
}
