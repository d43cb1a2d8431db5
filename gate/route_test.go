package gate

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"oa__purchase_*", "oa__purchase_pay", true},
		{"oa__purchase_*", "oa__purchase_", true},
		{"oa__purchase_*", "oa__refund", false},
		{"mcp__*", "mcp__github__create_pr", true},
		{"slack:T123/*", "slack:T123/U456", true},
		{"slack:T123/*", "slack:T999/U456", false},
		{"Bash", "Bash", true},
		{"Bash", "bash", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"*a*b*", "xxaxxbxx", true},
		{"*a*b", "xxaxxbxxc", false},
		{"", "", true},
		{"*", "", true},
	} {
		if got := Glob(tc.pattern, tc.s); got != tc.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
	// Pathological patterns stay linear.
	start := time.Now()
	Glob(strings.Repeat("*a", 30)+"b", strings.Repeat("a", 5000))
	if time.Since(start) > time.Second {
		t.Fatal("glob backtracking is not bounded")
	}
}

func TestMayDecide(t *testing.T) {
	if !MayDecide(nil, "web:anyone") {
		t.Fatal("an empty approvers list admits everyone")
	}
	list := []string{"feishu:ou_abc", "slack:T1/*"}
	if !MayDecide(list, "slack:T1/U9") || !MayDecide(list, "feishu:ou_zzz", "feishu:ou_abc") || MayDecide(list, "feishu:ou_zzz", "") {
		t.Fatal("approver matching is wrong")
	}
}

func TestExplainAndAllowed(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	decided := t0.Add(42 * time.Second)
	r := &Request{Status: StatusRejected, CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute), DecidedAt: &decided,
		DecidedBy: "feishu:ou_abc", DecidedVia: "ops-feishu", Reason: "amount over budget", OnTimeout: VerdictDeny}
	if got := r.Explain(t0); got != "rejected by feishu:ou_abc via ops-feishu after 42s: amount over budget" || r.Allowed() {
		t.Fatalf("rejected: %q allowed=%v", got, r.Allowed())
	}
	r.Status, r.Reason, r.DecidedAt = StatusExpired, "", nil
	if got := r.Explain(t0.Add(time.Hour)); got != "expired: no verdict within 30m0s (on timeout: deny)" || r.Allowed() {
		t.Fatalf("expired: %q", got)
	}
	r.OnTimeout = VerdictAllow
	if !r.Allowed() {
		t.Fatal("expiry on an allow route allows")
	}
	r.Status = StatusPending
	if r.Allowed() {
		t.Fatal("pending must never allow")
	}
}

// TestSealingEventTypes: the audit package recognises the digests the
// gate seals only in the events the gate seals them in; the two lists are
// one fact, held here.
func TestSealingEventTypes(t *testing.T) {
	if want := []string{EventCreated, EventPolicy, EventGrantUsed}; !slices.Equal(audit.CallSeals, want) {
		t.Errorf("audit.CallSeals %q, the gate seals calls in %q", audit.CallSeals, want)
	}
	if want := []string{EventDecided, EventExpired, EventCancelled, EventPolicy, EventGrantUsed}; !slices.Equal(audit.VerdictSeals, want) {
		t.Errorf("audit.VerdictSeals %q, the gate seals verdicts in %q", audit.VerdictSeals, want)
	}
}
