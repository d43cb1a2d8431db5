package gate_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

func TestSubmitRoundTrip(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}})
		yes := true
		in := gate.Submission{ToolName: "oa__purchase_pay", ToolArgs: json.RawMessage(`{"vendor": "ACME", "amount": 60000}`),
			RequiresConfirmation: &yes, Summary: "Pay ACME ¥60,000", AgentID: "procurement-bot", UserID: "u_42", Caller: "build-agent",
			SessionID: "s_9", ToolCallID: "call_7", Metadata: json.RawMessage(`{"org_id":"o_1"}`), Timeout: 30 * time.Minute, IdempotencyKey: "call_7"}
		r, created, err := svc.Submit(context.Background(), in)
		if err != nil || !created {
			t.Fatalf("submit: %v created=%v", err, created)
		}
		got, err := svc.Get(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != gate.StatusPending || got.ToolName != in.ToolName || string(got.ToolArgs) != `{"vendor":"ACME","amount":60000}` ||
			got.Summary != in.Summary || got.AgentID != "procurement-bot" || got.UserID != "u_42" || got.SessionID != "s_9" ||
			got.ToolCallID != "call_7" || string(got.Metadata) != `{"org_id":"o_1"}` || got.IdempotencyKey != "call_7" ||
			got.Route != "default" || got.OnTimeout != gate.VerdictDeny || got.Quorum != 1 || got.Caller != "build-agent" {
			t.Fatalf("read back differs: %+v", got)
		}
		if !got.CreatedAt.Equal(r.CreatedAt) || !got.ExpiresAt.Equal(r.CreatedAt.Add(30*time.Minute)) {
			t.Fatalf("times differ: created %v vs %v, expires %v", got.CreatedAt, r.CreatedAt, got.ExpiresAt)
		}
		if got.DecidedAt != nil || got.ModifiedArgs != nil {
			t.Fatalf("undecided request has decision fields: %+v", got)
		}
	})
}

func TestSubmitValidation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{routes: []gate.Route{{Name: "pay", Tool: "oa__purchase_*", Channels: []string{"fake"}}},
			chans: []gate.Channel{newFake("fake")}})
		for _, tc := range []struct {
			name string
			in   gate.Submission
			want string
		}{
			{"no tool", gate.Submission{}, "tool_name: required"},
			{"bad args", gate.Submission{ToolName: "x", ToolArgs: json.RawMessage(`{"a":`)}, "tool_args: not valid JSON"},
			{"metadata not object", gate.Submission{ToolName: "x", Metadata: json.RawMessage(`[1]`)}, "metadata: must be a JSON object"},
			{"unknown route", gate.Submission{ToolName: "x", Route: "nope"}, `route: tool "x" goes to route "default", not "nope"`},
			{"route not the first match", gate.Submission{ToolName: "deploy", Route: "pay"}, `route: tool "deploy" goes to route "default", not "pay"`},
			{"timeout too long", gate.Submission{ToolName: "x", Timeout: 48 * time.Hour}, "timeout_seconds: must be at most"},
			{"NUL in a name", gate.Submission{ToolName: "x", AgentID: "bot\x00"}, "agent_id: not valid UTF-8 text"},
			{"broken UTF-8 in a name", gate.Submission{ToolName: "x\xff"}, "tool_name: not valid UTF-8 text"},
			// Stored as written on SQLite, refused by PostgreSQL, and read
			// as U+FFFD by the audit digest: x\xff and x\xfe would seal alike.
			{"broken UTF-8 in the arguments", gate.Submission{ToolName: "x", ToolArgs: json.RawMessage("{\"cmd\":\"x\xff\"}")}, "tool_args: not valid JSON: not valid UTF-8"},
			{"broken UTF-8 in the metadata", gate.Submission{ToolName: "x", Metadata: json.RawMessage("{\"cwd\":\"\xfe\"}")}, "metadata: not valid JSON: not valid UTF-8"},
			{"summary too long", gate.Submission{ToolName: "x", Summary: strings.Repeat("x", 5000)}, "summary: longer than 4096 bytes"},
			// The policy read the last amount (50) and allowed the payment;
			// a tool whose parser keeps the first would pay 60,000. Found by
			// a ninth reader.
			{"a key twice in the arguments", gate.Submission{ToolName: "oa__purchase_pay", ToolArgs: json.RawMessage(`{"amount":60000, "amount":50}`)},
				`tool_args: the key "amount" appears twice in one object`},
			// A Go tool's struct reads AMOUNT as its amount field; the
			// policy read amount. Found by a tenth reader.
			{"a key twice under two cases", gate.Submission{ToolName: "oa__purchase_pay", ToolArgs: json.RawMessage(`{"vendor":"ACME","amount":10,"AMOUNT":6000000}`)},
				`tool_args: the key "AMOUNT" appears twice in one object (keys that differ only in case count as one)`},
			{"a key twice in the metadata", gate.Submission{ToolName: "x", Metadata: json.RawMessage(`{"cwd":"/srv/prod","cwd":"/tmp"}`)},
				`metadata: the key "cwd" appears twice in one object`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, _, err := svc.Submit(context.Background(), tc.in)
				if gate.ErrorCode(err) != gate.EINVALID || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want invalid %q", err, tc.want)
				}
			})
		}
		rs, _, _ := svc.List(context.Background(), gate.Filter{})
		if len(rs) != 0 {
			t.Fatalf("bad input wrote %d rows", len(rs))
		}
		// Text that PostgreSQL could not store is made storable, not refused.
		r := submit(t, svc, gate.Submission{ToolName: "x", Summary: "pay \x00ACME \xff"})
		if got, _ := svc.Get(context.Background(), r.ID); got.Summary != "pay ACME \uFFFD" {
			t.Fatalf("summary stored as %q", got.Summary)
		}
	})
}

func TestIdempotentSubmit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}})
		ctx := context.Background()
		var wg sync.WaitGroup
		ids := make([]string, 20)
		created := make([]bool, 20)
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, c, err := svc.Submit(ctx, gate.Submission{ToolName: "deploy", IdempotencyKey: "call-1", Caller: "bot"})
				if err != nil {
					t.Errorf("submit %d: %v", i, err)
					return
				}
				ids[i], created[i] = r.ID, c
			}()
		}
		wg.Wait()
		n := 0
		for i := range ids {
			if ids[i] != ids[0] {
				t.Fatalf("submission %d got request %s, want %s", i, ids[i], ids[0])
			}
			if created[i] {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d submissions claim to have created the request, want 1", n)
		}
		cards, _ := svc.Cards(ctx, ids[0])
		if len(cards) != 1 {
			t.Fatalf("%d cards for one request", len(cards))
		}
		for name, in := range map[string]gate.Submission{
			"another tool":          {ToolName: "rm_rf", IdempotencyKey: "call-1", Caller: "bot"},
			"other arguments":       {ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"prod"}`), IdempotencyKey: "call-1", Caller: "bot"},
			"another agent label":   {ToolName: "deploy", AgentID: "other", IdempotencyKey: "call-1", Caller: "bot"},
			"no confirmation asked": {ToolName: "deploy", IdempotencyKey: "call-1", Caller: "bot", RequiresConfirmation: new(bool)},
			"another directory":     {ToolName: "deploy", IdempotencyKey: "call-1", Caller: "bot", Metadata: json.RawMessage(`{"cwd":"/home/u"}`)},
			"another MCP server":    {ToolName: "deploy", IdempotencyKey: "call-1", Caller: "bot", Metadata: json.RawMessage(`{"mcp_url":"https://prod.example.com"}`)},
			"an MCP server command": {ToolName: "deploy", IdempotencyKey: "call-1", Caller: "bot", Metadata: json.RawMessage(`{"mcp_command":"npx prod-mcp"}`)},
		} {
			if _, _, err := svc.Submit(ctx, in); gate.ErrorCode(err) != gate.EIDEMPOTENCY {
				t.Errorf("%s under a used key: %v, want idempotency_conflict", name, err)
			}
		}
	})
}

// An idempotency key names one call: a submission under it with another
// call id is another call, even while the first waits (an approval is for
// that call and never answers another), and one without a call id (a
// client's second event of the call) still attaches.
func TestIdempotencyKeyHoldsOneCallID(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{{Name: "bank", Tool: "transfer", Channels: []string{"fake"}}}})
		in := gate.Submission{ToolName: "transfer", ToolArgs: json.RawMessage(`{"to":"ACME","amount":100}`), Caller: "bot", IdempotencyKey: "k", ToolCallID: "t1"}
		first := submit(t, svc, in)
		in.ToolCallID = "t2"
		if r, _, err := svc.Submit(context.Background(), in); gate.ErrorCode(err) != gate.EIDEMPOTENCY {
			t.Errorf("another call id under a pending call's key: %v, %v; want idempotency_conflict", r, err)
		}
		in.ToolCallID = ""
		if r, _, err := svc.Submit(context.Background(), in); err != nil || r.ID != first.ID {
			t.Errorf("no call id under the key: %v, %v; want request %s", r, err, first.ID)
		}
	})
}

// Defect: re-attaching by idempotency_key compared the agent_id the caller
// chose, not the token, so a second token sending the same body received
// the first one's approval. Keys are scoped to the token now.
func TestIdempotencyKeyIsScopedToTheToken(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fake := newFake("fake")
		svc := newService(t, db, svcOpts{chans: []gate.Channel{fake}})
		ctx := context.Background()
		body := gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"prod"}`), AgentID: "deploy-bot", IdempotencyKey: "call_7"}
		mine := body
		mine.Caller = "build-agent"
		r := submit(t, svc, mine)
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:alice", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		theirs := body
		theirs.Caller = "intruder"
		got, created, err := svc.Submit(ctx, theirs)
		if err != nil {
			t.Fatal(err)
		}
		if !created || got.ID == r.ID || got.Status != gate.StatusPending || got.Allowed() {
			t.Fatalf("another token's same key got %+v (created %v): it must be a request of its own, pending", got, created)
		}
		// The first token still re-attaches to its own approval.
		again, created, err := svc.Submit(ctx, mine)
		if err != nil || created || again.ID != r.ID || again.Status != gate.StatusApproved {
			t.Fatalf("re-attach by the owner: %+v created %v err %v", again, created, err)
		}
	})
}

func TestNoConfirmationNeeded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		fake := newFake("fake")
		svc := newService(t, db, svcOpts{chans: []gate.Channel{fake},
			routes: []gate.Route{{Name: "shell", Tool: "Bash", Channels: []string{"fake"}}}})
		no := false
		r, _, err := svc.Submit(context.Background(), gate.Submission{ToolName: "Read", RequiresConfirmation: &no})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != gate.StatusApproved || r.DecidedVia != gate.ViaPolicy || !r.Allowed() {
			t.Fatalf("a call no route gates should be allowed by policy: %+v", r)
		}
		gated, _, err := svc.Submit(context.Background(), gate.Submission{ToolName: "Bash", RequiresConfirmation: &no})
		if err != nil {
			t.Fatal(err)
		}
		if gated.Status != gate.StatusPending || gated.Route != "shell" {
			t.Fatalf("a route that demands confirmation must gate the call: %+v", gated)
		}
		fake.await(t, "post "+gated.ID)
		if cards, _ := svc.Cards(context.Background(), r.ID); len(cards) != 0 || fake.postCount(r.ID) != 0 {
			t.Fatalf("a call that needed no human has cards: %+v", cards)
		}
	})
}
