package store

import (
	"context"
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

// never is the zero lease and the "no retry pending" time.
var never = time.Unix(0, 0).UTC()

// Cards returns a request's cards.
func (s *DB) Cards(ctx context.Context, requestID string) ([]gate.Card, error) {
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
