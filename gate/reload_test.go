package gate_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// reloadingStore runs a reload once, at a chosen store call: in the middle
// of a Submit or a Decide.
type reloadingStore struct {
	*store.DB
	mu           sync.Mutex
	onTransition func()
	onFindGrant  func()
}

func (h *reloadingStore) take(p *func()) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := *p
	*p = nil
	return f
}

func (h *reloadingStore) Transition(ctx context.Context, t gate.Transition) (gate.Outcome, error) {
	if f := h.take(&h.onTransition); f != nil {
		f()
	}
	return h.DB.Transition(ctx, t)
}

func (h *reloadingStore) FindGrant(ctx context.Context, route, caller, tool, hash string, now time.Time) (*gate.Grant, error) {
	if f := h.take(&h.onFindGrant); f != nil {
		f()
	}
	return h.DB.FindGrant(ctx, route, caller, tool, hash, now)
}

// A call is decided by one config's routes and people. Here neither the
// config before the reload (web:x is not alice) nor the one after it (the
// route's approver is carol) honours alice's grant; a Submit that read the
// old routes and then, after the reload, the new people honoured it (found
// by a second reader).
func TestSubmitDecidesByOneConfig(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		args := json.RawMessage(`{"env":"prod"}`)
		v0 := gate.Route{Name: "deploys", Tool: "deploy", Channels: []string{"fake"}, Approvers: []string{"person:alice"}, Remember: time.Hour}
		v1 := v0
		v1.Approvers = []string{"person:carol"}
		df := gate.Defaults{Channels: []string{"fake"}}
		hs := &reloadingStore{DB: db}
		svc := newService(t, hs, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{v0},
			tweak: func(o *gate.Options) {
				o.People = gate.NewPeople([]gate.Person{{Name: "alice", Identities: []string{"web:x"}}}, nil)
			}})
		ctx := context.Background()
		in := gate.Submission{ToolName: "deploy", ToolArgs: args, Caller: "bot"}
		r := submit(t, svc, in)
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Remember: true, Actor: "web:x", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		// The config in force: web:x is no longer alice.
		svc.SetPeople(gate.NewPeople([]gate.Person{{Name: "alice", Identities: []string{"web:y"}}}, nil))
		if got := submit(t, svc, in); got.Status != gate.StatusPending {
			t.Fatalf("the config in force honours the grant: %s", got.Status)
		}
		next := gate.NewPeople([]gate.Person{{Name: "alice", Identities: []string{"web:x"}}, {Name: "carol", Identities: []string{"web:c"}}}, nil)
		hs.mu.Lock()
		hs.onFindGrant = func() { // a reload lands while the call is decided
			if err := svc.Reconfigure([]gate.Route{v1}, df, next); err != nil {
				t.Error(err)
			}
		}
		hs.mu.Unlock()
		if got := submit(t, svc, in); got.Status != gate.StatusPending {
			t.Fatalf("a call during the reload: %s via %s by %s", got.Status, got.DecidedVia, got.DecidedBy)
		}
		if got := submit(t, svc, in); got.Status != gate.StatusPending {
			t.Fatalf("the new config honours the grant: %s", got.Status)
		}
	})
}

// Who a tapping identity is, is read under the row's lock: an identity a
// reload took from alice while her tap was on its way does not decide as
// her (found by a second reader: the people were read before the
// transaction).
func TestDecideReadsPeopleUnderTheLock(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		hs := &reloadingStore{DB: db}
		svc := newService(t, hs, svcOpts{chans: []gate.Channel{newFake("fake")},
			routes: []gate.Route{{Name: "pay", Tool: "pay", Channels: []string{"fake"}, Approvers: []string{"person:alice"}}},
			tweak: func(o *gate.Options) {
				o.People = gate.NewPeople([]gate.Person{{Name: "alice", Identities: []string{"slack:T1/UALICE", "slack:T1/USHARED"}}}, nil)
			}})
		r := submit(t, svc, gate.Submission{ToolName: "pay"})
		hs.mu.Lock()
		hs.onTransition = func() {
			svc.SetPeople(gate.NewPeople([]gate.Person{{Name: "alice", Identities: []string{"slack:T1/UALICE"}}}, nil))
		}
		hs.mu.Unlock()
		got, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/USHARED", Via: "fake"})
		if gate.ErrorCode(err) != gate.EFORBIDDEN || got.Status != gate.StatusPending {
			t.Fatalf("a tap by an identity the reload took from alice: %v, %s", err, got.Status)
		}
	})
}

// TestVotesOfRemovedIdentitiesNoLongerCount: a reload that takes an
// identity from alice ends its say on waiting requests, including the
// approval it already gave: alice's old vote through it and her new tap
// through the identity she keeps are one person, not a quorum of 2 (a
// sixth reader).
func TestVotesOfRemovedIdentitiesNoLongerCount(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc, r := votedThenReloaded(t, db, gate.Person{Name: "alice", Identities: []string{"slack:T1/UA"}},
			gate.Person{Name: "bob", Identities: []string{"slack:T1/UB"}})
		ctx := context.Background()
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UX", Via: "fake"}); gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("UX after the reload: %v, want forbidden", err)
		}
		got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake"})
		if err != nil || got.Status != gate.StatusPending {
			t.Fatalf("alice through UA: %v, %s; want her vote counted alone, pending", err, got.Status)
		}
		got, err = svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UB", Via: "fake"})
		if err != nil || got.Status != gate.StatusApproved || got.DecidedBy != "slack:T1/UB" {
			t.Fatalf("bob completes the quorum: %v, %s by %s", err, got.Status, got.DecidedBy)
		}
	})
}

// TestApproversTakenOffStopDecidingPendingRequests: a request keeps the
// approvers its route gave it, but a reload that takes an identity off the
// route's list (bob left) let it go on approving the requests made before,
// where a person taken off stopped at once. An identity must now be on the
// request's list and on its route's list as it is now; a vote it gave
// before no longer counts toward a quorum. Additions do not reach requests
// already made.
func TestApproversTakenOffStopDecidingPendingRequests(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		route := func(approvers ...string) []gate.Route {
			return []gate.Route{{Name: "pay", Tool: "pay", Channels: []string{"fake"}, Approvers: approvers, Quorum: 2}}
		}
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: route("slack:T1/UA", "slack:T1/UB", "slack:T1/UC")})
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{ToolName: "pay"})
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UB", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		if err := svc.SetRoutes(route("slack:T1/UA", "slack:T1/UC", "slack:T1/UD"), gate.Defaults{Channels: []string{"fake"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UB", Via: "fake"}); gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("bob, taken off the route, taps again: %v, want forbidden", err)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UD", Via: "fake"}); gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("dave, added after the request was made: %v, want forbidden", err)
		}
		got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake"})
		if err != nil || got.Status != gate.StatusPending {
			t.Fatalf("alice after bob's removal: %v, %s; want one vote that counts, pending", err, got.Status)
		}
		got, err = svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UC", Via: "fake"})
		if err != nil || got.Status != gate.StatusApproved {
			t.Fatalf("carol completes the quorum: %v, %s", err, got.Status)
		}
		// A route that no longer exists leaves the request its own list.
		r2 := submit(t, svc, gate.Submission{ToolName: "pay"})
		if err := svc.SetRoutes([]gate.Route{{Name: "payments", Tool: "pay", Channels: []string{"fake"}}}, gate.Defaults{Channels: []string{"fake"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r2.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake"}); err != nil {
			t.Fatalf("alice, on a request whose route was renamed: %v", err)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r2.ID, Approve: true, Actor: "slack:T1/UX", Via: "fake"}); gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("a stranger, on a request whose route was renamed: %v, want forbidden", err)
		}
		// A route given a list by a reload leaves the requests made before
		// it to the audience they were sent to (a second reader).
		open := []gate.Route{{Name: "open", Tool: "open", Channels: []string{"fake"}}}
		if err := svc.SetRoutes(open, gate.Defaults{Channels: []string{"fake"}}); err != nil {
			t.Fatal(err)
		}
		r3 := submit(t, svc, gate.Submission{ToolName: "open"})
		open[0].Approvers = []string{"slack:T1/UD"}
		if err := svc.SetRoutes(open, gate.Defaults{Channels: []string{"fake"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r3.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake"}); err != nil {
			t.Fatalf("alice, of the channel a request was sent to before its route had a list: %v", err)
		}
	})
}

// TestApproversTakenOffDefaultsAndRenamedRoutes: the route of a call no
// route claims is "default", whose approvers are defaults.approvers: one
// taken off them went on approving (a second reader). A route renamed,
// and its old name given to another route with other approvers, left its
// pending requests with no one who could approve or reject them; their
// own approvers may still reject them (a second reader).
func TestApproversTakenOffDefaultsAndRenamedRoutes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{{Name: "pay", Tool: "pay",
			Channels: []string{"fake"}, Approvers: []string{"slack:T1/UA"}, Timeout: time.Hour}},
			tweak: func(o *gate.Options) {
				o.Defaults = gate.Defaults{Channels: []string{"fake"}, Approvers: []string{"slack:T1/UA", "slack:T1/UB"}}
			}})
		other := submit(t, svc, gate.Submission{ToolName: "anything"})
		pay := submit(t, svc, gate.Submission{ToolName: "pay"})
		if err := svc.SetRoutes([]gate.Route{
			{Name: "pay-legacy", Tool: "pay", Channels: []string{"fake"}, Approvers: []string{"slack:T1/UA"}, Timeout: time.Hour},
			{Name: "pay", Tool: "refund", Channels: []string{"fake"}, Approvers: []string{"slack:T1/UZ"}},
		}, gate.Defaults{Channels: []string{"fake"}, Approvers: []string{"slack:T1/UA"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: other.ID, Approve: true, Actor: "slack:T1/UB", Via: "fake"}); gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("bob, taken off defaults.approvers, approves: %v, want forbidden", err)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: pay.ID, Approve: true, Actor: "slack:T1/UZ", Via: "fake"}); gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("zed, of the route that took the old name, approves: %v, want forbidden", err)
		}
		got, err := svc.Decide(ctx, gate.Decision{RequestID: pay.ID, Approve: false, Actor: "slack:T1/UA", Via: "fake"})
		if err != nil || got.Status != gate.StatusRejected {
			t.Fatalf("alice, its own approver, rejects the renamed route's request: %v", err)
		}
	})
}

// An approval is judged by the policy in force, on the call the agent will
// run (found by a reader): a call a reload made the policy deny cannot be
// approved (the agent sending it again under its key is refused too), an
// approver may not edit a call into one the policy denies or into another
// route's, whose approvers may not include them, and a reload that turns
// self-approval off reaches the requests already made.
func TestApprovalIsJudgedByThePolicyInForce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		pay := []gate.Route{
			{Name: "too-big", Tool: "pay", When: `double(args.amount) > 1000000.0`, Action: policy.Deny},
			{Name: "big", Tool: "pay", When: `double(args.amount) > 50000.0`, Channels: []string{"fake"}, Approvers: []string{"slack:T1/UCFO"}},
			{Name: "tiny", Tool: "pay", When: `double(args.amount) < 10.0`, Action: policy.Allow},
			{Name: "small", Tool: "pay", Channels: []string{"fake"}, Approvers: []string{"slack:T1/UA", "slack:T1/UB"}},
		}
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: pay})
		approve := func(id, who, edit string) (*gate.Request, error) {
			d := gate.Decision{RequestID: id, Approve: true, Actor: who, Via: "fake"}
			if edit != "" {
				d.ModifiedArgs = json.RawMessage(edit)
			}
			return svc.Decide(ctx, d)
		}
		small := func() *gate.Request {
			return submit(t, svc, gate.Submission{ToolName: "pay", ToolArgs: json.RawMessage(`{"amount":100}`)})
		}
		r := small()
		for _, edit := range []string{`{"amount":60000}`, `{"amount":5000000}`} {
			if _, err := approve(r.ID, "slack:T1/UA", edit); gate.ErrorCode(err) != gate.EFORBIDDEN {
				t.Fatalf("alice edits ¥100 into %s: %v, want forbidden", edit, err)
			}
		}
		if got, err := approve(r.ID, "slack:T1/UA", `{"amount":200}`); err != nil || got.Status != gate.StatusApproved {
			t.Fatalf("alice edits ¥100 into ¥200, the same route's: %v", err)
		}
		if got, err := approve(small().ID, "slack:T1/UA", `{"amount":5}`); err != nil || got.Status != gate.StatusApproved {
			t.Fatalf("alice edits ¥100 into ¥5, which the policy allows: %v", err)
		}

		// A reload that denies the pending call.
		r = small()
		if err := svc.SetRoutes(append([]gate.Route{{Name: "frozen", Tool: "pay", Action: policy.Deny}}, pay...), gate.Defaults{Channels: []string{"fake"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := approve(r.ID, "slack:T1/UA", ""); gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("approval of a call the reloaded policy denies: %v, want forbidden", err)
		}
		if got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Actor: "slack:T1/UA", Via: "fake"}); err != nil || got.Status != gate.StatusRejected {
			t.Fatalf("its rejection: %v", err)
		}

		// A reload that turns self-approval off.
		if err := svc.SetRoutes(pay, gate.Defaults{Channels: []string{"fake"}}); err != nil {
			t.Fatal(err)
		}
		svc.SetPeople(gate.NewPeople([]gate.Person{{Name: "alice", Identities: []string{"slack:T1/UA"}, Users: []string{"u_alice"}}}, nil))
		r = submit(t, svc, gate.Submission{ToolName: "pay", ToolArgs: json.RawMessage(`{"amount":100}`), UserID: "u_alice"})
		forbid := slices.Clone(pay)
		forbid[3].Plan = gate.Plan{ForbidSelf: true}
		if err := svc.SetRoutes(forbid, gate.Defaults{Channels: []string{"fake"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := approve(r.ID, "slack:T1/UA", ""); gate.ErrorCode(err) != gate.ESELF {
			t.Fatalf("alice approves her own request after self-approval was turned off: %v", err)
		}
		if got, err := approve(r.ID, "slack:T1/UB", ""); err != nil || got.Status != gate.StatusApproved {
			t.Fatalf("bob approves it: %v", err)
		}
	})
}

// An MCP server's tool named like the client's shell is judged at approval
// as it was asked: as the server's, which Bash(…) rules do not read.
func TestApprovalOfAnMCPCallIsJudgedAsOne(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		routes := []gate.Route{
			{Name: "no-rm", Calls: []string{"Bash(rm:*)"}, Action: policy.Deny},
			{Name: "tools", Tool: "Bash", Channels: []string{"fake"}},
		}
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: routes})
		r := submit(t, svc, gate.Submission{ToolName: "Bash", ToolArgs: json.RawMessage(`{"command":"rm -rf build"}`), MCPServer: true})
		if r.Route != "tools" {
			t.Fatalf("the MCP server's Bash went to %q", r.Route)
		}
		got, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake"})
		if err != nil || got.Status != gate.StatusApproved {
			t.Fatalf("approval of the MCP server's call: %v", err)
		}
	})
}

// An edit may move a call into an allow route's only as the policy would
// allow it: over that route's rate limit, the policy rejects the call, so
// an approver of another route must not let it through by editing.
func TestEditIntoAnAllowRouteOverItsRateIsRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		routes := []gate.Route{
			{Name: "tiny", Tool: "pay", When: `double(args.amount) < 10.0`, Action: policy.Allow,
				Rate: &gate.Rate{Limit: 1, Per: time.Hour, By: "agent"}},
			{Name: "small", Tool: "pay", Channels: []string{"fake"}, Approvers: []string{"slack:T1/UA"}},
		}
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: routes})
		five := gate.Submission{ToolName: "pay", ToolArgs: json.RawMessage(`{"amount":5}`), Caller: "bot"}
		if r := submit(t, svc, five); r.Status != gate.StatusApproved {
			t.Fatalf("the first ¥5: %s", r.Status)
		}
		if r := submit(t, svc, five); r.Status != gate.StatusRejected {
			t.Fatalf("the second ¥5 in the hour: %s, want rejected by the rate limit", r.Status)
		}
		r := submit(t, svc, gate.Submission{ToolName: "pay", ToolArgs: json.RawMessage(`{"amount":100}`), Caller: "bot"})
		got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake",
			ModifiedArgs: json.RawMessage(`{"amount":5}`)})
		if gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("alice edits ¥100 into a third ¥5 the rate limit rejects: %v %v, want forbidden", err, got.Status)
		}
	})
}

// The re-evaluation at approval reads agent_label as the submission did:
// an agent that sent no agent_id was judged with agent_label "", though
// the request records its token's name as its agent.
func TestApprovalReadsTheAgentLabelAsAsked(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		routes := []gate.Route{
			{Name: "unlabelled-big", Tool: "pay", When: `agent_label == "" && double(args.amount) > 1000.0`, Action: policy.Deny},
			{Name: "small", Tool: "pay", Channels: []string{"fake"}, Approvers: []string{"slack:T1/UA"}},
		}
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: routes})
		r := submit(t, svc, gate.Submission{ToolName: "pay", ToolArgs: json.RawMessage(`{"amount":100}`), Caller: "bot"})
		// What the policy makes of ¥5000 sent as this request was.
		denied := submit(t, svc, gate.Submission{ToolName: "pay", ToolArgs: json.RawMessage(`{"amount":5000}`), Caller: "bot"}).Status == gate.StatusRejected
		got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake",
			ModifiedArgs: json.RawMessage(`{"amount":5000}`)})
		if denied != (gate.ErrorCode(err) == gate.EFORBIDDEN) {
			t.Fatalf("alice edits ¥100 into ¥5000 (denied when sent: %v): %v %v", denied, err, got.Status)
		}
	})
}

// Silence on a route that allows on timeout is no allow of a call the
// policy in force denies: a reload that denies the call reaches its expiry
// as it reaches an approval.
func TestExpiryAllowsNoCallTheReloadedPolicyDenies(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := newClock()
		routes := []gate.Route{{Name: "lenient", Tool: "pay", Channels: []string{"fake"}, OnTimeout: gate.VerdictAllow, Timeout: time.Minute}}
		svc := newService(t, db, svcOpts{clock: clk, chans: []gate.Channel{newFake("fake")}, routes: routes})
		r := submit(t, svc, gate.Submission{ToolName: "pay", ToolArgs: json.RawMessage(`{"amount":100}`)})
		if err := svc.SetRoutes(append([]gate.Route{{Name: "frozen", Tool: "pay", Action: policy.Deny}}, routes...), gate.Defaults{Channels: []string{"fake"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake"}); gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("approval after the freeze: %v, want forbidden", err)
		}
		clk.Add(2 * time.Minute)
		got, _ := svc.Expire(ctx, r.ID)
		if got == nil {
			got, _ = svc.Get(ctx, r.ID)
		}
		if got.Allowed() {
			t.Fatalf("expired after the freeze: %s on timeout %s, allowed", got.Status, got.OnTimeout)
		}
		// People were asked about it: it is rejected at the deadline, not
		// by the policy without asking anyone, which the people-first
		// history and export leave out (found by a reader).
		if got.Status != gate.StatusRejected || got.DecidedVia != gate.ViaTimeout || !strings.Contains(got.Reason, "frozen") {
			t.Fatalf("expired after the freeze: %s via %s (%s), want rejected via timeout naming route frozen", got.Status, got.DecidedVia, got.Reason)
		}
		if listed, _, err := svc.List(ctx, gate.Filter{Policy: "exclude", Limit: 10}); err != nil || len(listed) != 1 || listed[0].ID != r.ID {
			t.Fatalf("the people-first history: %d listed, %v", len(listed), err)
		}
		// The trail says so, and verifies.
		if _, err := db.Seal(ctx, 1000); err != nil {
			t.Fatal(err)
		}
		if _, err := audit.Verify(ctx, db, nil, nil); err != nil {
			t.Fatalf("audit verify: %v", err)
		}
	})
}

// A route's name given by a reload to other calls is not the route the
// request was asked under: an edit must not move a call its approver may
// still approve (now another route's) into the calls the name means now,
// which the reloaded policy puts before another audience.
func TestEditIntoARouteNameAReloadGaveOtherCallsIsRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		before := []gate.Route{{Name: "payments", Tool: "pay", Channels: []string{"fake"}, Approvers: []string{"slack:T1/UA"}}}
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake"), newFake("exec")}, routes: before})
		r := submit(t, svc, gate.Submission{ToolName: "pay", ToolArgs: json.RawMessage(`{"amount":100}`)})
		after := []gate.Route{
			{Name: "payments", Tool: "pay", When: `double(args.amount) > 50000.0`, Channels: []string{"exec"}},
			{Name: "petty", Tool: "pay", Channels: []string{"fake"}, Approvers: []string{"slack:T1/UA"}},
		}
		if err := svc.SetRoutes(after, gate.Defaults{Channels: []string{"fake"}}); err != nil {
			t.Fatal(err)
		}
		got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake",
			ModifiedArgs: json.RawMessage(`{"amount":60000}`)})
		if gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("alice edits ¥100 (now petty) into ¥60000 (now the exec channel's payments): %v %v, want forbidden", err, got.Status)
		}
		if got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake"}); err != nil || got.Status != gate.StatusApproved {
			t.Fatalf("alice approves it as proposed: %v", err)
		}
	})
}

// An edit of an object's arguments is an object: a tool's input is one,
// and clients apply no other (a reader found a string sent as a hook's
// updatedInput).
func TestEditedArgumentsAreAnObject(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{{Name: "sh", Tool: "Bash", Channels: []string{"fake"}}}})
		r := submit(t, svc, gate.Submission{ToolName: "Bash", ToolArgs: json.RawMessage(`{"command":"rm -rf build"}`)})
		for _, edit := range []string{`"rm -rf build/tmp"`, `["rm","-rf","build/tmp"]`, `null`} {
			_, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake", ModifiedArgs: json.RawMessage(edit)})
			if gate.ErrorCode(err) != gate.EINVALID {
				t.Fatalf("edit %s: %v, want invalid", edit, err)
			}
		}
	})
}
