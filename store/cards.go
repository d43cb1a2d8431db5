package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// cardRow is the cards table: one row per card of a request (a channel's
// card, a direct card, a reminder).
type cardRow struct {
	ID            int64 `gorm:"primaryKey"`
	RequestID     string
	Channel       string
	Kind          string
	Target        string
	Step          int
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
	return gate.Card{ID: c.ID, RequestID: c.RequestID, Channel: c.Channel, Kind: c.Kind, Target: c.Target, Step: c.Step, Ref: c.Ref,
		Want: c.Want, Have: c.Have, Attempts: c.Attempts, LastError: c.LastError, Abandoned: c.Abandoned, UpdatedAt: c.UpdatedAt.UTC()}
}

// cardColumns are what scanCard reads.
const cardColumns = `id, request_id, channel, kind, target, step, ref, want, have, attempts, last_error, abandoned, updated_at`

// scanCard reads the current row of cardColumns.
func scanCard(rows *sql.Rows) (gate.Card, error) {
	var c gate.Card
	err := rows.Scan(&c.ID, &c.RequestID, &c.Channel, &c.Kind, &c.Target, &c.Step, &c.Ref, &c.Want, &c.Have, &c.Attempts,
		&c.LastError, &c.Abandoned, &c.UpdatedAt)
	c.UpdatedAt = c.UpdatedAt.UTC()
	return c, err
}

// never is the zero lease and the "no retry pending" time.
var never = time.Unix(0, 0).UTC()

// Cards returns a request's cards.
func (s *DB) Cards(ctx context.Context, requestID string) ([]gate.Card, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var rows []cardRow
	if err := s.rdb.WithContext(ctx).Where("request_id = ?", requestID).Order("id").Find(&rows).Error; err != nil {
		return nil, wrap("list cards", err)
	}
	return toCards(rows), nil
}

func toCards(rows []cardRow) []gate.Card {
	out := make([]gate.Card, len(rows))
	for i := range rows {
		out[i] = rows[i].toCard()
	}
	return out
}
