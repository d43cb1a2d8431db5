package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
)

func scanGrant(rows *sql.Rows) (gate.Grant, error) {
	var g gate.Grant
	var revoked *time.Time
	var ids string
	if err := rows.Scan(&g.ID, &g.Route, &g.Caller, &g.Tool, &g.ArgsHash, &g.GivenBy, &g.GivenVia, &g.RequestID,
		&g.CreatedAt, &g.ExpiresAt, &revoked, &g.RevokedBy, &ids); err != nil {
		return g, err
	}
	if ids != "" { // '' on grants given before migration 9
		// Identities that do not read fail the lookup: the gate answers deny.
		if err := json.Unmarshal([]byte(ids), &g.GivenIDs); err != nil {
			return g, fmt.Errorf("grant %s: given_ids: %w", g.ID, err)
		}
	}
	g.CreatedAt, g.ExpiresAt = g.CreatedAt.UTC(), g.ExpiresAt.UTC()
	if revoked != nil {
		t := revoked.UTC()
		g.RevokedAt = &t
	}
	return g, nil
}

// FindGrant returns an active grant covering a call, or nil.
func (s *DB) FindGrant(ctx context.Context, route, caller, tool, argsHash string, now time.Time) (*gate.Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	rows, err := s.prep.findGrant.QueryContext(ctx, caller, route, tool, argsHash, utc(now))
	if err != nil {
		return nil, wrap("find grant", err)
	}
	var g gate.Grant
	found, err := firstRow(rows, func() (err error) { g, err = scanGrant(rows); return err })
	if !found || err != nil {
		return nil, wrap("find grant", err)
	}
	return &g, nil
}

// Grants lists grants, newest first.
func (s *DB) Grants(ctx context.Context, caller *string, active bool, now time.Time) ([]gate.Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	q := `SELECT ` + grantColumns + ` FROM grants WHERE 1 = 1`
	var args []any
	if caller != nil {
		q += ` AND caller = ?`
		args = append(args, *caller)
	}
	if active {
		q += ` AND revoked_at IS NULL AND expires_at > ?`
		args = append(args, utc(now))
	}
	rows, err := s.rdb.WithContext(ctx).Raw(q+` ORDER BY created_at DESC, id DESC LIMIT 1000`, args...).Rows()
	if err != nil {
		return nil, wrap("list grants", err)
	}
	defer rows.Close()
	var out []gate.Grant
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return nil, wrap("list grants", err)
		}
		out = append(out, g)
	}
	return out, wrap("list grants", rows.Err())
}

// RevokeGrant ends a grant and writes the event to the trail of the
// request that gave it, in one transaction.
func (s *DB) RevokeGrant(ctx context.Context, id, by string, at time.Time) (*gate.Grant, error) {
	at = utc(at)
	var g gate.Grant
	err := s.write(ctx, func(t *wtx) error {
		rows, err := t.query(qRevokeGrant, at, by, id)
		if err != nil {
			return err
		}
		found, err := firstRow(rows, func() (err error) { g, err = scanGrant(rows); return err })
		if err != nil {
			return err
		}
		if !found {
			return gate.Errorf(gate.ENOTFOUND, "no active grant %q", id)
		}
		_, err = t.exec(qInsertEvent, g.RequestID, at, gate.EventGrantRevoked, by, "", "grant "+g.ID+" revoked")
		return err
	})
	if err != nil {
		return nil, wrap("revoke grant", err)
	}
	return &g, nil
}

// CountCall adds one call to a rate counter's window, drops the counter's
// windows older than keep when the call opens a new window, and returns
// the window's count.
func (s *DB) CountCall(ctx context.Context, key string, window, keep time.Time) (int, error) {
	n := 0
	err := s.write(ctx, func(t *wtx) error {
		rows, err := t.query(qCountCall, key, utc(window))
		if err != nil {
			return err
		}
		found, err := firstRow(rows, func() error { return rows.Scan(&n) })
		if err == nil && !found {
			err = errors.New("the counter returned no count")
		}
		if err != nil || n != 1 {
			return err // older windows went when this one opened
		}
		_, err = t.exec(qDropWindows, key, utc(keep))
		return err
	})
	return n, wrap("count call", err)
}
