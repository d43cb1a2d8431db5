package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
)

// Session is a web login, kept in the database so that it survives restarts,
// works on every replica, and ends for real at logout.
type Session struct {
	ID        string `gorm:"primaryKey"` // SHA-256 of the cookie's token, never the token itself
	UserName  string
	Role      string
	CSRF      string
	CreatedAt time.Time
	ExpiresAt time.Time
	// Provider says how the login was made: "" a password, "oidc" single sign-on.
	Provider string
	// Credential is, for a password login, a fingerprint of the secret it
	// was made with (the web server's: never the password), which must
	// still match the config's for the session to hold. '' for single
	// sign-on, and for password logins made before schema version 11.
	Credential string
}

// ErrNoSession is returned for an unknown or expired session.
var ErrNoSession = errors.New("store: no such session")

// CreateSession stores a new login.
func (s *DB) CreateSession(ctx context.Context, se Session) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	se.CreatedAt, se.ExpiresAt = utc(se.CreatedAt), utc(se.ExpiresAt)
	return wrap("create session", s.db.WithContext(ctx).Create(&se).Error)
}

// GetSession returns a live session by its id.
func (s *DB) GetSession(ctx context.Context, id string, now time.Time) (Session, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var se Session
	err := s.rdb.WithContext(ctx).Where("id = ? AND expires_at > ?", id, utc(now)).Take(&se).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Session{}, ErrNoSession
	}
	return se, wrap("get session", err)
}

// DeleteSession ends a login.
func (s *DB) DeleteSession(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return wrap("delete session", s.db.WithContext(ctx).Where("id = ?", id).Delete(&Session{}).Error)
}

// PurgeSessions deletes expired logins.
func (s *DB) PurgeSessions(ctx context.Context, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return wrap("purge sessions", s.db.WithContext(ctx).Where("expires_at <= ?", utc(now)).Delete(&Session{}).Error)
}
