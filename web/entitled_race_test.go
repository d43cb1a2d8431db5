package web_test

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// hookStore runs a function once, as a verdict reaches the store: after
// the web page checked the user's role, before the row's transaction.
type hookStore struct {
	*store.DB
	mu           sync.Mutex
	onTransition func()
}

func (h *hookStore) Transition(ctx context.Context, t gate.Transition) (gate.Outcome, error) {
	h.mu.Lock()
	f := h.onTransition
	h.onTransition = nil
	h.mu.Unlock()
	if f != nil {
		f()
	}
	return h.DB.Transition(ctx, t)
}

func (h *hookStore) at(f func()) {
	h.mu.Lock()
	h.onTransition = f
	h.mu.Unlock()
}

// newEnvOn is newEnv over db, with the verdicts passing through a hookStore.
func newEnvOn(t *testing.T, db *store.DB, routes []gate.Route, users []config.User) (*env, *hookStore) {
	t.Helper()
	hs := &hookStore{DB: db}
	return newEnvOver(t, hs, db, routes, users, nil), hs
}

// TestWebVerdictAfterDemotionIsRefused: the decide handler reads the web
// user's role when the form arrives, and the gate writes the verdict later,
// under the row's lock, without asking again. A reload that demotes the
// user (or removes them, or changes their password) and has been applied
// before the verdict's transaction begins must refuse it, as it refuses
// the user's next request and the grants they gave (SetWebGiverCheck).
func TestWebVerdictAfterDemotionIsRefused(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	other, err := bcrypt.GenerateFromPassword([]byte("another password"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	before := []config.User{
		{Name: "alice", Role: config.RoleApprover, PasswordBcrypt: string(hash)},
		{Name: "admin", Role: config.RoleAdmin, PasswordBcrypt: string(hash)},
	}
	reloads := map[string][]config.User{
		"demoted to auditor": {{Name: "alice", Role: config.RoleAuditor, PasswordBcrypt: string(hash)}, before[1]},
		"removed":            {before[1]},
		"password changed":   {{Name: "alice", Role: config.RoleApprover, PasswordBcrypt: string(other)}, before[1]},
	}
	routes := []gate.Route{{Name: "deploys", Tool: "deploy", Channels: []string{gate.WebChannel}, Timeout: time.Hour}}
	for name, after := range reloads {
		for _, verdict := range []string{"approve", "reject"} {
			t.Run(name+"/"+verdict, func(t *testing.T) {
				storetest.Each(t, func(t *testing.T, db *store.DB) {
					e, hs := newEnvOn(t, db, routes, before)
					r := e.submit(`{"tool_name":"deploy","tool_args":{"env":"prod"}}`)
					alice := e.login("alice")
					var applied atomic.Bool
					hs.at(func() {
						e.web.SetAuth(nil, after) // the reload, applied in full
						applied.Store(true)
					})
					res, body := alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {verdict}})
					if !applied.Load() {
						t.Fatalf("the verdict never reached the store: %d %s", res.StatusCode, body)
					}
					got, err := e.svc.Get(context.Background(), r.ID)
					if err != nil {
						t.Fatal(err)
					}
					if got.Status != gate.StatusPending {
						t.Fatalf("alice's %s, written after the reload that %s her was applied: %s by %s via %s (HTTP %d)",
							verdict, name, got.Status, got.DecidedBy, got.DecidedVia, res.StatusCode)
					}
					if res.StatusCode != http.StatusForbidden {
						t.Errorf("refused verdict answered %d, want 403", res.StatusCode)
					}
					// Her session no longer decides either (held before the fix).
					res, _ = alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {verdict}})
					if res.StatusCode == http.StatusSeeOther {
						t.Fatalf("after the reload, alice's next %s was taken", verdict)
					}
				})
			})
		}
	}
}

// TestWebQuorumVoteOfADemotedUser: on a route that needs two approvals,
// alice approves on the web page, a reload demotes her to auditor (she
// stays on the approvers list), and bob's approval then meets the quorum
// with hers: the request is approved with the vote of someone who, when
// the verdict is written, may not approve. An identity taken off the
// approvers list has its earlier approvals stop counting (docs/policy.md);
// a web user who lost the approver role keeps hers.
func TestWebQuorumVoteOfADemotedUser(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	before := []config.User{
		{Name: "alice", Role: config.RoleApprover, PasswordBcrypt: string(hash)},
		{Name: "bob", Role: config.RoleApprover, PasswordBcrypt: string(hash)},
	}
	routes := []gate.Route{{Name: "deploys", Tool: "deploy", Channels: []string{gate.WebChannel}, Timeout: time.Hour,
		Approvers: []string{"web:alice", "web:bob"}, Quorum: 2}}
	for name, after := range map[string][]config.User{
		"demoted": {{Name: "alice", Role: config.RoleAuditor, PasswordBcrypt: string(hash)}, before[1]},
		"removed": {before[1]},
	} {
		t.Run(name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				e, _ := newEnvOn(t, db, routes, before)
				r := e.submit(`{"tool_name":"deploy","tool_args":{"env":"prod"}}`)
				alice, bob := e.login("alice"), e.login("bob")
				if res, body := alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"}}); res.StatusCode != http.StatusSeeOther {
					t.Fatalf("alice's vote: %d %.300s", res.StatusCode, body)
				}
				e.web.SetAuth(nil, after)
				bob.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {bob.csrf}, "verdict": {"approve"}})
				got, err := e.svc.Get(context.Background(), r.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != gate.StatusPending {
					t.Fatalf("alice %s before bob's vote; the request is %s by %s with her vote counted", name, got.Status, got.DecidedBy)
				}
			})
		})
	}
}
