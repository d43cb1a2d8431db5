package store

import (
	"context"
	"time"

	"gorm.io/gorm"

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
	lock := ""
	if s.driver == Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var rows []cardRow
	err := s.db.WithContext(ctx).Raw(`UPDATE cards SET lease_owner = ?, lease_until = ?, attempts = attempts + 1
			WHERE lease_until <= ? AND want <> have AND abandoned = FALSE AND id IN (
				SELECT id FROM cards WHERE want <> have AND abandoned = FALSE AND next_attempt_at <= ? AND lease_until <= ?
				ORDER BY next_attempt_at LIMIT ?`+lock+`)
			RETURNING id, request_id, channel, ref, want, have, attempts, last_error, abandoned, next_attempt_at, lease_until, lease_owner, updated_at`,
		owner, now.Add(lease), now, now, now, limit).Scan(&rows).Error
	if err != nil {
		return nil, wrap("claim cards", err)
	}
	out := make([]gate.Card, len(rows))
	for i := range rows {
		out[i] = rows[i].toCard()
	}
	return out, nil
}

// FinishCard records a claimed card's outcome, if the claim is still ours.
func (s *DB) FinishCard(ctx context.Context, r gate.CardResult) error {
	next := never
	if !r.NextAttempt.IsZero() {
		next = utc(r.NextAttempt)
	}
	attempts := "attempts"
	if r.Err == "" {
		attempts = "0"
	}
	finish := func(tx *gorm.DB) error {
		return tx.Exec(`UPDATE cards SET have = ?, ref = CASE WHEN ? <> '' THEN ? ELSE ref END, last_error = ?,
		abandoned = ?, next_attempt_at = ?, lease_until = ?, lease_owner = '', attempts = `+attempts+`, updated_at = ?
		WHERE id = ? AND lease_owner = ?`,
			r.Have, r.Ref, r.Ref, r.Err, r.Abandoned, next, never, utc(r.At), r.ID, r.Owner).Error
	}
	var err error
	if r.Event != nil && s.driver == Postgres {
		// One statement for the event and the card: the event is written
		// whether or not the claim is still ours, as in the transaction.
		e := toEventRow(*r.Event)
		err = s.db.WithContext(ctx).Exec(`WITH e AS (INSERT INTO events (request_id, at, type, actor, channel, detail) VALUES (?, ?, ?, ?, ?, ?))
		UPDATE cards SET have = ?, ref = CASE WHEN ? <> '' THEN ? ELSE ref END, last_error = ?,
		abandoned = ?, next_attempt_at = ?, lease_until = ?, lease_owner = '', attempts = `+attempts+`, updated_at = ?
		WHERE id = ? AND lease_owner = ?`,
			e.RequestID, e.At, e.Type, e.Actor, e.Channel, e.Detail,
			r.Have, r.Ref, r.Ref, r.Err, r.Abandoned, next, never, utc(r.At), r.ID, r.Owner).Error
	} else if r.Event == nil {
		err = finish(s.db.WithContext(ctx))
	} else {
		// One transaction for the card and its event: one trip to the
		// writer instead of two.
		err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(toEventRow(*r.Event)).Error; err != nil {
				return err
			}
			return finish(tx)
		})
	}
	return wrap("finish card", err)
}
