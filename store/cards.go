package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// cardRow is the cards table: one row per request and channel.
type cardRow struct {
	ID            int64 `gorm:"primaryKey"`
	RequestID     string
	Channel       string
	Ref           string
	Want          string
	Have          string
	Attempts      int
	LastError     string
	Abandoned     bool
	NextAttemptAt time.Time
	LeaseUntil    time.Time
	LeaseOwner    string
	UpdatedAt     time.Time
}

func (cardRow) TableName() string { return "cards" }

func (c *cardRow) toCard() gate.Card {
	return gate.Card{ID: c.ID, RequestID: c.RequestID, Channel: c.Channel, Ref: c.Ref, Want: c.Want, Have: c.Have,
		Attempts: c.Attempts, LastError: c.LastError, Abandoned: c.Abandoned, UpdatedAt: c.UpdatedAt.UTC()}
}

// Cards returns a request's cards.
func (s *DB) Cards(ctx context.Context, requestID string) ([]gate.Card, error) {
	var rows []cardRow
	if err := s.rdb.WithContext(ctx).Where("request_id = ?", requestID).Order("id").Find(&rows).Error; err != nil {
		return nil, wrap("list cards", err)
	}
	out := make([]gate.Card, len(rows))
	for i := range rows {
		out[i] = rows[i].toCard()
	}
	return out, nil
}

// ClaimCards leases due card work in one statement. On PostgreSQL the inner
// SELECT skips rows another replica holds (FOR UPDATE SKIP LOCKED) and the
// outer WHERE re-checks the lease, so no two workers ever hold one card;
// SQLite has a single writer, which gives the same.
func (s *DB) ClaimCards(ctx context.Context, now time.Time, lease time.Duration, owner string, limit int) ([]gate.Card, error) {
	now = utc(now)
	var rows []cardRow
	var err error
	if s.w != nil {
		rows, err = s.claimSQLite(ctx, now, lease, owner, limit)
	} else {
		var r *sql.Rows
		if r, err = s.pgQuery(ctx, claimCardsPG, claimArgsPG(owner, now, lease, limit)...); err == nil {
			rows, err = scanCards(r, nil)
		}
	}
	if err != nil {
		return nil, wrap("claim cards", err)
	}
	return toCards(rows), nil
}

// claimArgsPG are claimCardsPG's arguments, in its placeholders' order.
func claimArgsPG(owner string, now time.Time, lease time.Duration, limit int) []any {
	return []any{owner, now.Add(lease), now, now, now, limit}
}

func toCards(rows []cardRow) []gate.Card {
	if len(rows) == 0 {
		return nil
	}
	out := make([]gate.Card, len(rows))
	for i := range rows {
		out[i] = rows[i].toCard()
	}
	return out
}

// finishCardPG is FinishCard on PostgreSQL: one statement for the event and
// the card; the event is written whether or not the claim is still ours.
const finishCardPG = `WITH e AS (INSERT INTO events (request_id, at, type, actor, channel, detail)
		SELECT ?::text, ?::timestamptz, ?::text, ?::text, ?::text, ?::text WHERE ?)
	UPDATE cards SET ` + finishSet + `
	WHERE id = ? AND lease_owner = ? RETURNING ` + finishDue

// FinishCard records a claimed card's outcome, if the claim is still ours.
func (s *DB) FinishCard(ctx context.Context, r gate.CardResult) (bool, error) {
	next := never
	if !r.NextAttempt.IsZero() {
		next = utc(r.NextAttempt)
	}
	at := utc(r.At)
	var due []bool
	var err error
	if s.w != nil {
		due, err = s.finishSQLite(ctx, r, next, at)
		return len(due) == 1 && due[0], wrap("finish card", err)
	}
	var e eventRow
	if r.Event != nil {
		e = *toEventRow(*r.Event)
	}
	rows, err := s.pgQuery(ctx, finishCardPG,
		e.RequestID, utc(e.At), e.Type, e.Actor, e.Channel, e.Detail, r.Event != nil,
		r.Have, r.Ref, r.Ref, r.Err, r.Abandoned, next, never, r.Err == "", at, r.ID, r.Owner, at)
	if err != nil {
		return false, wrap("finish card", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d bool
		if err := rows.Scan(&d); err != nil {
			return false, wrap("finish card", err)
		}
		due = append(due, d)
	}
	return len(due) == 1 && due[0], wrap("finish card", rows.Err())
}
