package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// TestRetentionKeepsRequestsOfActiveGrants: a grant outlives the request
// that gave it when retention.keep is shorter than the route's remember
// (keep: 1d, remember: 7d). Retention cut the request, and the grant could
// no longer be revoked (its revocation goes in that request's trail, and
// the foreign key refused it): no one could stop it approving calls.
// Retention now keeps the request while the grant is active, and cuts it
// once the grant is revoked. Found by a reader.
func TestRetentionKeepsRequestsOfActiveGrants(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		at := now.Add(-48 * time.Hour)
		approved(t, db, "giver", at, "g1", at.Add(7*24*time.Hour))
		approved(t, db, "other", at, "", time.Time{})
		sealAll(t, db)
		cut, err := db.Prune(ctx, now.Add(-24*time.Hour), now, 100, nil) // retention.keep: 1d
		if err != nil || cut.Requests != 1 {
			t.Fatalf("prune: %+v %v; want the request without a grant cut", cut, err)
		}
		if _, err := db.Get(ctx, "giver"); err != nil {
			t.Fatalf("the request of an active grant was cut: %v", err)
		}
		if _, err := db.RevokeGrant(ctx, "g1", "web:bob", now); err != nil {
			t.Fatalf("revoking the still-active grant: %v", err)
		}
		sealAll(t, db)
		if cut, err := db.Prune(ctx, now.Add(-24*time.Hour), now, 100, nil); err != nil || cut.Requests != 1 {
			t.Fatalf("prune after the revocation: %+v %v; want the giver cut", cut, err)
		}
	})
}

// TestRevokingAnEndedGrant: once a grant has ended, retention may cut the
// request that gave it; revoking it then went on to write into that
// request's trail, and the foreign key made it a 500. An ended grant is no
// active grant: revoking it is "not found", whether its request is kept or
// cut. Found by a second reader.
func TestRevokingAnEndedGrant(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		at := now.Add(-48 * time.Hour)
		for _, id := range []string{"kept", "cut"} {
			approved(t, db, id, at, "g-"+id, at.Add(time.Hour))
		}
		if _, err := db.RevokeGrant(ctx, "g-kept", "web:bob", now); gate.ErrorCode(err) != gate.ENOTFOUND {
			t.Errorf("revoking an ended grant: %v (code %s), want ENOTFOUND", err, gate.ErrorCode(err))
		}
		sealAll(t, db)
		if cut, err := db.Prune(ctx, now.Add(-24*time.Hour), now, 1, nil); err != nil || cut.Requests != 1 {
			t.Fatalf("prune: %+v %v", cut, err)
		}
		for _, id := range []string{"g-kept", "g-cut"} {
			if _, err := db.RevokeGrant(ctx, id, "web:bob", now); gate.ErrorCode(err) != gate.ENOTFOUND {
				t.Errorf("revoking %s, ended, after retention cut one request: %v (code %s), want ENOTFOUND", id, err, gate.ErrorCode(err))
			}
		}
	})
}

// approved makes a request at at and approves it a minute later, giving
// grant (when named) until until, as the gate does in one transition.
func approved(t *testing.T, db *store.DB, id string, at time.Time, grant string, until time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := db.Create(ctx, &gate.Request{ID: id, Status: gate.StatusPending, ToolName: "deploy", ToolArgs: []byte(`{}`),
		Metadata: []byte(`{}`), Route: "r", Channels: []string{"web"}, Quorum: 1, OnTimeout: gate.VerdictDeny,
		CreatedAt: at, ExpiresAt: at.Add(time.Hour)}, []gate.Event{{Type: gate.EventCreated, At: at}}); err != nil {
		t.Fatal(err)
	}
	tr := gate.Transition{ID: id, To: gate.StatusApproved, At: at.Add(time.Minute), By: "web:alice", Via: "web",
		Event: gate.Event{RequestID: id, At: at.Add(time.Minute), Type: gate.EventDecided}}
	if grant != "" {
		tr.Grant = func(r *gate.Request) (*gate.Grant, gate.Event) {
			g := &gate.Grant{ID: grant, Route: "r", Caller: "bot", Tool: "deploy", GivenBy: "web:alice", GivenVia: "web",
				RequestID: r.ID, CreatedAt: at.Add(time.Minute), ExpiresAt: until}
			return g, gate.Event{RequestID: r.ID, At: at.Add(time.Minute), Type: gate.EventGrantGiven, Detail: "grant " + grant}
		}
	}
	if _, err := db.Transition(ctx, tr); err != nil {
		t.Fatal(err)
	}
}
