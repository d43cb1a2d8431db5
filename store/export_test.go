package store

import (
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// For the external tests: the PostgreSQL statements as sent.

func TransitionStatementPG(t gate.Transition, known bool, notify *string) (string, []any) {
	return transitionStatementPG(t, utc(t.At), known, notify)
}

func ClaimStatementPG(owner string, now time.Time, lease time.Duration, limit int) (string, []any) {
	return claimCardsPG, claimArgsPG(owner, utc(now), lease, limit)
}

// Dollars numbers a statement's placeholders as PostgreSQL's.
var Dollars = dollars
