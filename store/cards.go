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
			RETURNING `+cardCols,
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

// cardCols are the cards columns RETURNING hands back.
const cardCols = `id, request_id, channel, ref, want, have, attempts, last_error, abandoned, next_attempt_at, lease_until, lease_owner, updated_at`

// FinishCard records a claimed card's outcome, if the claim is still ours.
func (s *DB) FinishCard(ctx context.Context, r gate.CardResult) error {
	_, err := s.FinishCardLeased(ctx, r, gate.Lease{})
	return err
}

// FinishCardLeased is FinishCard that, after a successful attempt which
// leaves the card still behind its request (settled while the card was
// being posted), keeps the card leased to l.Owner and returns it.
func (s *DB) FinishCardLeased(ctx context.Context, r gate.CardResult, l gate.Lease) (*gate.Card, error) {
	if l.Owner == "" || r.Err != "" || r.Abandoned || r.Have == "" {
		return nil, s.finishCard(ctx, r)
	}
	until := utc(l.Until)
	tsParam := "?"
	if s.driver == Postgres {
		tsParam = "CAST(? AS TIMESTAMPTZ)" // both arms are parameters: say their type
	}
	var rows []cardRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if r.Event != nil {
			if err := tx.Create(toEventRow(*r.Event)).Error; err != nil {
				return err
			}
		}
		return tx.Raw(`UPDATE cards SET have = ?, ref = CASE WHEN ? <> '' THEN ? ELSE ref END, last_error = '',
		abandoned = FALSE, next_attempt_at = ?, updated_at = ?,
		lease_owner = CASE WHEN want <> ? THEN ? ELSE '' END,
		lease_until = CASE WHEN want <> ? THEN `+tsParam+` ELSE `+tsParam+` END,
		attempts = CASE WHEN want <> ? THEN 1 ELSE 0 END
		WHERE id = ? AND lease_owner = ? RETURNING `+cardCols,
			r.Have, r.Ref, r.Ref, never, utc(r.At), r.Have, l.Owner, r.Have, until, never, r.Have, r.ID, r.Owner).Scan(&rows).Error
	})
	if err != nil {
		return nil, wrap("finish card", err)
	}
	if len(rows) == 1 && rows[0].Want != rows[0].Have && rows[0].LeaseOwner == l.Owner {
		c := rows[0].toCard()
		return &c, nil
	}
	return nil, nil
}

func (s *DB) finishCard(ctx context.Context, r gate.CardResult) error {
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
	if r.Event == nil {
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
