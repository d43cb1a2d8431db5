package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// PGNotifier carries "request changed" signals between replicas through
// PostgreSQL LISTEN/NOTIFY, so a verdict taken on one replica wakes the
// waiters on every other at once. Once a store has a notifier, its
// Transition sends pg_notify in the statement that makes the change:
// PostgreSQL delivers it at commit, never for a change rolled back, and a
// crash right after the commit cannot lose it. Listen holds one dedicated
// connection of its own. A signal lost while the listening connection is
// down is caught by the gate's periodic re-read.
type PGNotifier struct {
	db      *DB
	channel string
	// OnListen, when set, is called each time the LISTEN is in place
	// (tests wait for it rather than sleep).
	OnListen func()
}

var _ gate.Notifier = (*PGNotifier)(nil)

// NewNotifier returns the notifier of a PostgreSQL store. The NOTIFY
// channel is named after the schema in use, so several Gatehouse
// installations (or test schemas) on one database do not wake each other.
func NewNotifier(ctx context.Context, db *DB) (*PGNotifier, error) {
	if db.driver != Postgres {
		return nil, fmt.Errorf("store: LISTEN/NOTIFY needs PostgreSQL, not %s", db.driver)
	}
	var schema string
	if err := db.db.WithContext(ctx).Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
		return nil, wrap("read current schema", err)
	}
	ch := "gatehouse_" + schema
	if len(ch) > 63 { // PostgreSQL truncates identifiers at 63 bytes
		ch = ch[:63]
	}
	db.notify.Store(&ch)
	return &PGNotifier{db: db, channel: ch}, nil
}

// Channel is the NOTIFY channel in use.
func (n *PGNotifier) Channel() string { return n.channel }

// Listen opens a dedicated connection, LISTENs on the channel, calls
// listening, then fn with every payload until ctx ends (nil) or the
// connection fails (the error; the caller reconnects). Notifications that
// arrive while listening runs wait in the connection.
func (n *PGNotifier) Listen(ctx context.Context, listening func(), fn func(requestID string)) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.Connect(cctx, n.db.dsn)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("store: listen: connect: %w", redact(err, n.db.dsn))
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{n.channel}.Sanitize()); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("store: listen: %w", err)
	}
	listening()
	if n.OnListen != nil {
		n.OnListen()
	}
	for {
		note, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return nil
			}
			return fmt.Errorf("store: listen: %w", err)
		}
		fn(note.Payload)
	}
}
