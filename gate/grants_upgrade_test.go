package gate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
)

// TestGrantOnARequestMadeBeforeTheUpgrade: a request made on a
// remember-any route by a Gatehouse before 8a2c586 (its stored plan has no
// "matched") and approved-for after the upgrade. Its grant was hashed with
// no match and covered nothing, while the trail said a grant for any
// arguments was given; it now takes the match of the route in force.
func TestGrantOnARequestMadeBeforeTheUpgrade(t *testing.T) {
	eachRaw(t, func(t *testing.T, db *store.DB, raw *sql.DB, _ string) {
		routes := []gate.Route{{Name: "deploys", Tool: "deploy", Channels: []string{"fake"}, Remember: time.Hour, RememberAny: true}}
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: routes})
		ctx := context.Background()
		first := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"staging"}`), Caller: "bot"})
		// The row as the Gatehouse before the change wrote it: no plan.
		if _, err := raw.Exec(`UPDATE requests SET plan = '' WHERE id = '` + first.ID + `'`); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: first.ID, Approve: true, Actor: "web:alice", Via: "fake", Remember: true}); err != nil {
			t.Fatal(err)
		}
		if r := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"staging","v":2}`), Caller: "bot"}); r.DecidedVia != gate.ViaGrant {
			t.Errorf("the grant given after the upgrade, on the request made before it, covered nothing: %s via %q", r.Status, r.DecidedVia)
		}
	})
}
