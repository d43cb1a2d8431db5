package gate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// testPeople: alice has a Slack, a Feishu and a web identity and is user
// u_42; bob has a Slack identity; carol a Feishu one. alice-laptop is
// alice's token.
func testPeople() *gate.People {
	return gate.NewPeople([]gate.Person{
		{Name: "alice", Identities: []string{"slack:T1/UALICE", "feishu:union:on_alice", "web:alice"}, Users: []string{"u_42"}},
		{Name: "bob", Identities: []string{"slack:T1/UBOB"}},
		{Name: "carol", Identities: []string{"feishu:ou_carol"}},
	}, map[string]string{"alice-laptop": "alice"})
}

func peopleService(t *testing.T, db *store.DB, routes ...gate.Route) harness {
	return newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: routes,
		tweak: func(o *gate.Options) { o.People = testPeople() }})
}

// A quorum counts people: alice tapping from Slack and then from Feishu
// (or the web page) is one approval, however many identities she has.
func TestQuorumCountsPeople(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := peopleService(t, db, gate.Route{Name: "pay", Tool: "pay", Channels: []string{"fake"},
			Approvers: []string{"person:alice", "person:bob"}, Quorum: 2})
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{ToolName: "pay"})
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UALICE", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		for _, d := range []gate.Decision{
			{RequestID: r.ID, Approve: true, Actor: "feishu:ou_alice_in_app2", Identities: []string{"feishu:union:on_alice"}, Voter: "feishu:union:on_alice", Via: "fake"},
			{RequestID: r.ID, Approve: true, Actor: "web:alice", Via: "web"},
		} {
			got, err := svc.Decide(ctx, d)
			if gate.ErrorCode(err) != gate.ECONFLICT || !strings.Contains(err.Error(), "person:alice already approved; 1 of 2") || got.Status != gate.StatusPending {
				t.Fatalf("alice again as %s: %v (%s)", d.Actor, err, got.Status)
			}
		}
		// A stranger is no approver; bob completes the quorum.
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UMALLORY", Via: "fake"}); gate.ErrorCode(err) != gate.EFORBIDDEN {
			t.Fatalf("stranger: %v", err)
		}
		got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UBOB", Via: "fake"})
		if err != nil || got.Status != gate.StatusApproved || got.DecidedBy != "slack:T1/UBOB" {
			t.Fatalf("bob: %v %+v", err, got)
		}
		votes := 0
		for _, e := range events(t, svc, r.ID) {
			if e.Type == gate.EventVote {
				votes++
				if e.Actor == "slack:T1/UALICE" && !strings.Contains(e.Detail, "counted for person:alice") {
					t.Errorf("vote event does not say whose: %+v", e)
				}
			}
		}
		if votes != 2 {
			t.Fatalf("%d votes on the trail, want 2", votes)
		}
	})
}

// A quorum counts approvers by the people in force at each tap: a reload
// that gives an identity a person, renames the person, takes the person
// away, or joins two identities into one person does not let one approver
// count twice (found by a second reader: votes were told apart only by
// the voter each was counted for when it came).
func TestQuorumCountsApproversAcrossAReload(t *testing.T) {
	route := gate.Route{Name: "pay", Tool: "pay", Channels: []string{"fake"}, Approvers: []string{"slack:T1/*"}, Quorum: 2}
	joined := gate.NewPeople([]gate.Person{{Name: "al", Identities: []string{"slack:T1/UALICE", "slack:T1/UALICE2"}}}, nil)
	for _, tc := range []struct {
		name          string
		before, after *gate.People
		again         string // the identity alice taps with the second time
	}{
		{"people added", nil, testPeople(), "slack:T1/UALICE"},
		{"person renamed", testPeople(), gate.NewPeople([]gate.Person{{Name: "alice.smith", Identities: []string{"slack:T1/UALICE"}}}, nil), "slack:T1/UALICE"},
		{"person removed", testPeople(), gate.NewPeople(nil, nil), "slack:T1/UALICE"},
		{"identities joined", nil, joined, "slack:T1/UALICE2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{route},
					tweak: func(o *gate.Options) { o.People = tc.before }})
				ctx := context.Background()
				r := submit(t, svc, gate.Submission{ToolName: "pay"})
				tap := gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UALICE", Via: "fake"}
				if got, err := svc.Decide(ctx, tap); err != nil || got.Status != gate.StatusPending {
					t.Fatalf("first tap: %v %v", err, got.Status)
				}
				svc.SetPeople(tc.after) // a reload
				tap.Actor = tc.again
				got, err := svc.Decide(ctx, tap)
				if gate.ErrorCode(err) != gate.ECONFLICT || got.Status != gate.StatusPending {
					t.Fatalf("alice again as %s after the reload: %v, %s (by %s)", tc.again, err, got.Status, got.DecidedBy)
				}
				got, err = svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UBOB", Via: "fake"})
				if err != nil || got.Status != gate.StatusApproved {
					t.Fatalf("bob completes the quorum: %v, %s", err, got.Status)
				}
			})
		})
	}
}

// votedThenReloaded is a request of quorum 2 (person:alice, person:bob)
// approved once through slack:T1/UX, then one of alice's identities, after
// which a reload puts these people in force.
func votedThenReloaded(t *testing.T, db *store.DB, after ...gate.Person) (harness, *gate.Request) {
	t.Helper()
	before := gate.NewPeople([]gate.Person{{Name: "alice", Identities: []string{"slack:T1/UA", "slack:T1/UX"}}, {Name: "bob", Identities: []string{"slack:T1/UB"}}}, nil)
	svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")},
		routes: []gate.Route{{Name: "pay", Tool: "pay", Channels: []string{"fake"}, Approvers: []string{"person:alice", "person:bob"}, Quorum: 2}},
		tweak:  func(o *gate.Options) { o.People = before }})
	r := submit(t, svc, gate.Submission{ToolName: "pay"})
	if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UX", Via: "fake"}); err != nil {
		t.Fatal(err)
	}
	svc.SetPeople(gate.NewPeople(after, nil))
	return svc, r
}

// An identity moved from one person to another by a reload is the new
// person's: bob's earlier tap with it, counted for alice then, is bob's
// now, and alice can still give the second approval (found by a second
// reader: both were refused, and the request could only expire).
func TestMovedIdentityCountsForItsNewPerson(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc, r := votedThenReloaded(t, db, gate.Person{Name: "alice", Identities: []string{"slack:T1/UA"}},
			gate.Person{Name: "bob", Identities: []string{"slack:T1/UB", "slack:T1/UX"}})
		ctx := context.Background()
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UB", Via: "fake"}); gate.ErrorCode(err) != gate.ECONFLICT {
			t.Fatalf("bob again, through another identity: %v", err)
		}
		got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UA", Via: "fake"})
		if err != nil || got.Status != gate.StatusApproved {
			t.Fatalf("alice gives the second approval: %v, %s", err, got.Status)
		}
	})
}

// self_approval: forbid. The person who asked may not approve, through
// whichever identity, channel or route to "who asked" (their token, the
// user_id the agent sent); they may reject; someone else may approve.
// Each refusal is on the trail.
func TestSelfApprovalForbidden(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		forbid := gate.Route{Name: "pay", Tool: "pay", Channels: []string{"fake"}, Approvers: []string{"person:alice", "person:bob", "slack:T1/*"},
			Plan: gate.Plan{ForbidSelf: true}}
		svc := peopleService(t, db, forbid, gate.Route{Name: "open", Tool: "open", Channels: []string{"fake"}, Approvers: []string{"person:alice"}})
		ctx := context.Background()
		for _, tc := range []struct {
			name  string
			in    gate.Submission
			tries []gate.Decision
		}{
			{"her token", gate.Submission{ToolName: "pay", Caller: "alice-laptop"}, []gate.Decision{
				{Actor: "slack:T1/UALICE", Via: "fake"},
				{Actor: "web:alice", Via: "web"},
				{Actor: "feishu:ou_app2", Identities: []string{"feishu:union:on_alice"}, Voter: "feishu:union:on_alice", Via: "fake"},
			}},
			{"her user_id on a shared token", gate.Submission{ToolName: "pay", Caller: "ci", UserID: "u_42"}, []gate.Decision{
				{Actor: "slack:T1/UALICE", Via: "fake"},
			}},
			{"her approval for a while", gate.Submission{ToolName: "pay", Caller: "alice-laptop"}, []gate.Decision{
				{Actor: "slack:T1/UALICE", Via: "fake", Remember: true},
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := submit(t, svc, tc.in)
				if r.Person != "alice" {
					t.Fatalf("asked by %q, want alice", r.Person)
				}
				for _, d := range tc.tries {
					d.RequestID, d.Approve = r.ID, true
					got, err := svc.Decide(ctx, d)
					if gate.ErrorCode(err) != gate.ESELF || got.Status != gate.StatusPending ||
						!strings.Contains(gate.ErrorMessage(err), "you asked for this; someone else must approve") {
						t.Fatalf("alice approving her own as %s: %v (%s)", d.Actor, err, got.Status)
					}
				}
				refused := 0
				for _, e := range events(t, svc, r.ID) {
					if e.Type == gate.EventRefused && strings.Contains(e.Detail, "you asked for this") {
						refused++
					}
				}
				if refused != len(tc.tries) {
					t.Fatalf("%d refusals on the trail, want %d", refused, len(tc.tries))
				}
				got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UBOB", Via: "fake"})
				if err != nil || got.Status != gate.StatusApproved {
					t.Fatalf("bob: %v %+v", err, got)
				}
			})
		}
		t.Run("rejecting her own", func(t *testing.T) {
			r := submit(t, svc, gate.Submission{ToolName: "pay", Caller: "alice-laptop"})
			got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Actor: "web:alice", Via: "web", Reason: "changed my mind"})
			if err != nil || got.Status != gate.StatusRejected {
				t.Fatalf("reject: %v %+v", err, got)
			}
		})
		t.Run("a route that allows it", func(t *testing.T) {
			r := submit(t, svc, gate.Submission{ToolName: "open", Caller: "alice-laptop"})
			got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:alice", Via: "web"})
			if err != nil || got.Status != gate.StatusApproved {
				t.Fatalf("approve: %v %+v", err, got)
			}
		})
	})
}

// A tap from another chat than the channel's (a forwarded card, a direct
// message) decides only for a listed approver.
func TestElsewhereNeedsAnApprover(t *testing.T) {
	db := storetest.SQLite(t)
	svc := peopleService(t, db, gate.Route{Name: "listed", Tool: "listed", Channels: []string{"fake"}, Approvers: []string{"person:bob"}})
	ctx := context.Background()
	r := submit(t, svc, gate.Submission{ToolName: "open"})
	if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UANY", Via: "fake", Elsewhere: true}); gate.ErrorCode(err) != gate.EFORBIDDEN {
		t.Fatalf("an unlisted tap from elsewhere: %v", err)
	}
	r = submit(t, svc, gate.Submission{ToolName: "listed"})
	if got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UBOB", Via: "fake", Elsewhere: true}); err != nil || got.Status != gate.StatusApproved {
		t.Fatalf("bob from a direct message: %v", err)
	}
}

// MightDecide is the channels' courtesy check: it lets person entries
// through for the gate to judge.
func TestMightDecide(t *testing.T) {
	if !gate.MightDecide([]string{"person:alice"}, "slack:T1/U1") || gate.MightDecide([]string{"slack:T1/U2"}, "slack:T1/U1") {
		t.Fatal("MightDecide")
	}
}

// self_approval: forbid, quorum 2. Alice approves her own request
// through an identity the people do not know yet (slack:T1/UALT, admitted by
// the glob). A reload then gives that identity to alice. By the people in
// force now she is the asker, so her vote must not count toward the
// quorum: bob's approval alone must not approve the request. Found by a
// reader.
func TestAskersEarlierVoteCountsNoMoreAfterAReload(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		route := gate.Route{Name: "pay", Tool: "pay", Channels: []string{"fake"},
			Approvers: []string{"person:alice", "person:bob", "slack:T1/*"}, Quorum: 2, Plan: gate.Plan{ForbidSelf: true}}
		svc := peopleService(t, db, route)
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{ToolName: "pay", Caller: "alice-laptop"})
		if r.Person != "alice" {
			t.Fatalf("asked by %q", r.Person)
		}
		if got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UALT", Via: "fake"}); err != nil || got.Status != gate.StatusPending {
			t.Fatalf("first tap: %v %v", err, got.Status)
		}
		// A reload: alice's second Slack account is added to her person.
		svc.SetPeople(gate.NewPeople([]gate.Person{
			{Name: "alice", Identities: []string{"slack:T1/UALICE", "slack:T1/UALT", "feishu:union:on_alice", "web:alice"}, Users: []string{"u_42"}},
			{Name: "bob", Identities: []string{"slack:T1/UBOB"}},
			{Name: "carol", Identities: []string{"feishu:ou_carol"}},
		}, map[string]string{"alice-laptop": "alice"}))
		// A fresh tap from that identity is refused now ...
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UALT", Via: "fake"}); gate.ErrorCode(err) != gate.ESELF {
			t.Fatalf("alice's alt after the reload: %v", err)
		}
		// ... yet her earlier vote still counts.
		got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UBOB", Via: "fake"})
		if got.Status == gate.StatusApproved {
			t.Fatalf("approved with the asker's own vote counted: bob's tap %v, decided by %s", err, got.DecidedBy)
		}
	})
}

// The same, with the asker learnt by a reload of users: a request
// on a shared token for user u_77 (nobody's); alice approves it; a reload
// says u_77 is alice. Her earlier vote must not meet the quorum with bob's.
func TestAskersEarlierVoteCountsNoMoreAfterAUsersReload(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		route := gate.Route{Name: "pay", Tool: "pay", Channels: []string{"fake"},
			Approvers: []string{"person:alice", "person:bob"}, Quorum: 2, Plan: gate.Plan{ForbidSelf: true}}
		svc := peopleService(t, db, route)
		ctx := context.Background()
		r := submit(t, svc, gate.Submission{ToolName: "pay", Caller: "ci", UserID: "u_77"})
		if got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UALICE", Via: "fake"}); err != nil || got.Status != gate.StatusPending {
			t.Fatalf("alice's tap: %v %v", err, got.Status)
		}
		svc.SetPeople(gate.NewPeople([]gate.Person{
			{Name: "alice", Identities: []string{"slack:T1/UALICE"}, Users: []string{"u_42", "u_77"}},
			{Name: "bob", Identities: []string{"slack:T1/UBOB"}},
		}, nil))
		got, err := svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "slack:T1/UBOB", Via: "fake"})
		if got.Status == gate.StatusApproved {
			t.Fatalf("approved with the asker's own vote counted: bob's tap %v", err)
		}
	})
}
