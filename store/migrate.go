package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// migration is one schema step. Its SQL is written once for both drivers,
// where {{ts}}, {{serial}} and {{bool}} become each driver's types, unless
// the step needs SQL of each driver's own (pg, then sql is SQLite's).
type migration struct {
	version int
	name    string
	sql     string
	pg      string
}

// migrations are append-only: never edit one that has shipped.
var migrations = []migration{
	{version: 1, name: "requests, events, cards, votes, sessions", sql: `
CREATE TABLE requests (
	id TEXT PRIMARY KEY,
	status TEXT NOT NULL,
	tool_name TEXT NOT NULL,
	tool_args TEXT NOT NULL,
	requires_confirmation {{bool}} NOT NULL,
	summary TEXT NOT NULL DEFAULT '',
	agent_id TEXT NOT NULL DEFAULT '',
	user_id TEXT NOT NULL DEFAULT '',
	session_id TEXT NOT NULL DEFAULT '',
	tool_call_id TEXT NOT NULL DEFAULT '',
	metadata TEXT NOT NULL DEFAULT '{}',
	route TEXT NOT NULL,
	idempotency_key TEXT UNIQUE,
	channels TEXT NOT NULL DEFAULT '[]',
	approvers TEXT NOT NULL DEFAULT '[]',
	quorum INTEGER NOT NULL DEFAULT 1,
	on_timeout TEXT NOT NULL,
	created_at {{ts}} NOT NULL,
	expires_at {{ts}} NOT NULL,
	decided_at {{ts}},
	decided_by TEXT NOT NULL DEFAULT '',
	decided_via TEXT NOT NULL DEFAULT '',
	reason TEXT NOT NULL DEFAULT '',
	modified_args TEXT
);
CREATE INDEX requests_status_expires ON requests (status, expires_at);
CREATE INDEX requests_tool ON requests (tool_name);
CREATE INDEX requests_agent ON requests (agent_id);
CREATE INDEX requests_decided_by ON requests (decided_by);
CREATE INDEX requests_created ON requests (created_at);
CREATE TABLE events (
	id {{serial}},
	request_id TEXT NOT NULL REFERENCES requests (id),
	at {{ts}} NOT NULL,
	type TEXT NOT NULL,
	actor TEXT NOT NULL DEFAULT '',
	channel TEXT NOT NULL DEFAULT '',
	detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_request ON events (request_id, id);
CREATE TABLE cards (
	id {{serial}},
	request_id TEXT NOT NULL REFERENCES requests (id),
	channel TEXT NOT NULL,
	ref TEXT NOT NULL DEFAULT '',
	want TEXT NOT NULL,
	have TEXT NOT NULL DEFAULT '',
	attempts INTEGER NOT NULL DEFAULT 0,
	last_error TEXT NOT NULL DEFAULT '',
	abandoned {{bool}} NOT NULL DEFAULT FALSE,
	next_attempt_at {{ts}} NOT NULL,
	lease_until {{ts}} NOT NULL,
	lease_owner TEXT NOT NULL DEFAULT '',
	updated_at {{ts}} NOT NULL,
	UNIQUE (request_id, channel)
);
CREATE INDEX cards_due ON cards (next_attempt_at) WHERE want <> have AND abandoned = FALSE;
CREATE TABLE votes (
	request_id TEXT NOT NULL REFERENCES requests (id),
	actor TEXT NOT NULL,
	via TEXT NOT NULL,
	at {{ts}} NOT NULL,
	PRIMARY KEY (request_id, actor)
);
CREATE TABLE sessions (
	id TEXT PRIMARY KEY,
	user_name TEXT NOT NULL,
	role TEXT NOT NULL,
	csrf TEXT NOT NULL,
	created_at {{ts}} NOT NULL,
	expires_at {{ts}} NOT NULL
);
CREATE INDEX sessions_expires ON sessions (expires_at)`},
	// A verdict used to move the request in two indexes: from the pending
	// part of (status, expires_at) to its final status, and from the ''
	// part of decided_by to its approver, each a delete and an insert on
	// other pages. Only pending rows are looked up by deadline (the
	// sweeper), and only decided rows by approver (the history filter), so
	// both become partial: a verdict deletes one entry and adds one.
	{version: 2, name: "partial indexes for the sweeper and the approver filter", sql: `
DROP INDEX requests_status_expires;
CREATE INDEX requests_pending_expires ON requests (expires_at) WHERE status = 'pending';
DROP INDEX requests_decided_by;
CREATE INDEX requests_decided_by ON requests (decided_by) WHERE decided_by <> ''`},
	// Idempotency keys are scoped to the API token that made the request:
	// a second token sending the same key gets a request of its own, never
	// the first one's verdict. The key's table-wide UNIQUE goes, and
	// (caller, idempotency_key) is unique instead. SQLite cannot drop a
	// column's UNIQUE, so its table is rebuilt the way SQLite documents
	// (Migrate turns foreign keys off around it and checks them before
	// COMMIT). Rows made before this step have no caller ('').
	{version: 3, name: "requests.caller; idempotency keys scoped to it", sql: `
CREATE TABLE requests_v3 (
	id TEXT PRIMARY KEY,
	status TEXT NOT NULL,
	tool_name TEXT NOT NULL,
	tool_args TEXT NOT NULL,
	requires_confirmation BOOLEAN NOT NULL,
	summary TEXT NOT NULL DEFAULT '',
	agent_id TEXT NOT NULL DEFAULT '',
	user_id TEXT NOT NULL DEFAULT '',
	session_id TEXT NOT NULL DEFAULT '',
	tool_call_id TEXT NOT NULL DEFAULT '',
	metadata TEXT NOT NULL DEFAULT '{}',
	route TEXT NOT NULL,
	caller TEXT NOT NULL DEFAULT '',
	idempotency_key TEXT,
	channels TEXT NOT NULL DEFAULT '[]',
	approvers TEXT NOT NULL DEFAULT '[]',
	quorum INTEGER NOT NULL DEFAULT 1,
	on_timeout TEXT NOT NULL,
	created_at DATETIME NOT NULL,
	expires_at DATETIME NOT NULL,
	decided_at DATETIME,
	decided_by TEXT NOT NULL DEFAULT '',
	decided_via TEXT NOT NULL DEFAULT '',
	reason TEXT NOT NULL DEFAULT '',
	modified_args TEXT
);
INSERT INTO requests_v3 (id, status, tool_name, tool_args, requires_confirmation, summary, agent_id, user_id, session_id,
	tool_call_id, metadata, route, idempotency_key, channels, approvers, quorum, on_timeout, created_at, expires_at,
	decided_at, decided_by, decided_via, reason, modified_args)
SELECT id, status, tool_name, tool_args, requires_confirmation, summary, agent_id, user_id, session_id,
	tool_call_id, metadata, route, idempotency_key, channels, approvers, quorum, on_timeout, created_at, expires_at,
	decided_at, decided_by, decided_via, reason, modified_args FROM requests;
DROP TABLE requests;
ALTER TABLE requests_v3 RENAME TO requests;
CREATE INDEX requests_pending_expires ON requests (expires_at) WHERE status = 'pending';
CREATE INDEX requests_tool ON requests (tool_name);
CREATE INDEX requests_agent ON requests (agent_id);
CREATE INDEX requests_decided_by ON requests (decided_by) WHERE decided_by <> '';
CREATE INDEX requests_created ON requests (created_at);
CREATE UNIQUE INDEX requests_caller_key ON requests (caller, idempotency_key)`, pg: `
ALTER TABLE requests ADD COLUMN caller TEXT NOT NULL DEFAULT '';
ALTER TABLE requests DROP CONSTRAINT requests_idempotency_key_key;
CREATE UNIQUE INDEX requests_caller_key ON requests (caller, idempotency_key)`},
	// Policy (issue 13): what a request's approvers may remember, the
	// grants they give ("approve for 1h"), and the rate counters routes
	// share across replicas. A grant names the request that gave it but
	// does not hold it: retention may delete that request before an old
	// grant that has ended (never before an active one: version 10).
	{version: 4, name: "grants and rate counters", sql: `
ALTER TABLE requests ADD COLUMN remember_seconds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN remember_any {{bool}} NOT NULL DEFAULT FALSE;
CREATE TABLE grants (
	id TEXT PRIMARY KEY,
	route TEXT NOT NULL,
	caller TEXT NOT NULL,
	tool TEXT NOT NULL,
	args_hash TEXT NOT NULL,
	given_by TEXT NOT NULL,
	given_via TEXT NOT NULL,
	request_id TEXT NOT NULL,
	created_at {{ts}} NOT NULL,
	expires_at {{ts}} NOT NULL,
	revoked_at {{ts}},
	revoked_by TEXT NOT NULL DEFAULT ''
);
CREATE INDEX grants_lookup ON grants (caller, route, tool, args_hash);
CREATE TABLE rate_counts (
	key TEXT NOT NULL,
	window_start {{ts}} NOT NULL,
	count INTEGER NOT NULL,
	PRIMARY KEY (key, window_start)
)`},
	// The tamper-evident trail (audit/, store/chain.go). Events are
	// inserted as before, unsealed (seq NULL); the sealer gives each its
	// seq, prev_hash and hash. events_unsealed is its work list (a partial
	// index, so sealed rows leave it); events_seq keeps seqs unique.
	// audit_records holds the links that are not live events: retention's
	// records, and what remains of the events it cut. audit_head is the
	// chain's last link, whose row lock lets one sealer work at a time.
	// Existing events are sealed, oldest first, on the first start.
	// sessions.provider says how a web login was made ('' a password,
	// 'oidc' single sign-on). Only columns and tables are added, so the
	// step runs alike on both drivers and keeps what other steps added.
	{version: 5, name: "hash-chained events; single sign-on sessions", sql: `
ALTER TABLE events ADD COLUMN seq BIGINT;
ALTER TABLE events ADD COLUMN prev_hash TEXT;
ALTER TABLE events ADD COLUMN hash TEXT;
CREATE UNIQUE INDEX events_seq ON events (seq) WHERE seq IS NOT NULL;
CREATE INDEX events_unsealed ON events (id) WHERE seq IS NULL;
CREATE TABLE audit_records (
	seq BIGINT PRIMARY KEY,
	kind TEXT NOT NULL,
	at {{ts}},
	type TEXT NOT NULL DEFAULT '',
	actor TEXT NOT NULL DEFAULT '',
	detail TEXT NOT NULL DEFAULT '',
	prev_hash TEXT NOT NULL,
	hash TEXT NOT NULL
);
CREATE TABLE audit_head (
	id INTEGER PRIMARY KEY,
	seq BIGINT NOT NULL,
	hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');
ALTER TABLE sessions ADD COLUMN provider TEXT NOT NULL DEFAULT ''`},
	// What ran (issue 15): a client's PostToolUse names its call by
	// tool_use_id, and the outcome is attached to the request its token
	// made for that call. Partial: most requests have no call id.
	{version: 6, name: "requests by caller and tool call", sql: `
CREATE INDEX requests_call ON requests (caller, tool_call_id) WHERE tool_call_id <> ''`},
	// People, reminders and escalation (issue 14). A request keeps the
	// person who asked and its route's plan (self-approval, direct cards,
	// reminders, escalation, as JSON), and when its next step is due,
	// which a partial index of pending rows finds. steps is the log of the
	// reminders and escalations taken: its key (request_id, step) is what
	// lets one replica, and one only, take each step. A card now has a
	// kind: the channel's card, a direct card to one approver (target: the
	// identity), or a reminder in the thread of a card (target: that
	// card's reference; step: its step), so a request has many cards in
	// one channel and (request_id, channel) is no longer unique. SQLite
	// cannot drop a UNIQUE constraint, so its cards table is rebuilt (as
	// step 3 rebuilt requests).
	{version: 7, name: "people, direct cards, reminders and escalation", sql: `
ALTER TABLE requests ADD COLUMN person TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN plan TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN next_step_at DATETIME;
CREATE INDEX requests_next_step ON requests (next_step_at) WHERE status = 'pending' AND next_step_at IS NOT NULL;
CREATE TABLE steps (
	request_id TEXT NOT NULL REFERENCES requests (id),
	step INTEGER NOT NULL,
	kind TEXT NOT NULL,
	due_at DATETIME NOT NULL,
	at DATETIME NOT NULL,
	PRIMARY KEY (request_id, step)
);
CREATE TABLE cards_v6 (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	request_id TEXT NOT NULL REFERENCES requests (id),
	channel TEXT NOT NULL,
	kind TEXT NOT NULL DEFAULT 'card',
	target TEXT NOT NULL DEFAULT '',
	step INTEGER NOT NULL DEFAULT 0,
	ref TEXT NOT NULL DEFAULT '',
	want TEXT NOT NULL,
	have TEXT NOT NULL DEFAULT '',
	attempts INTEGER NOT NULL DEFAULT 0,
	last_error TEXT NOT NULL DEFAULT '',
	abandoned BOOLEAN NOT NULL DEFAULT FALSE,
	next_attempt_at DATETIME NOT NULL,
	lease_until DATETIME NOT NULL,
	lease_owner TEXT NOT NULL DEFAULT '',
	updated_at DATETIME NOT NULL
);
INSERT INTO cards_v6 (id, request_id, channel, ref, want, have, attempts, last_error, abandoned, next_attempt_at, lease_until,
	lease_owner, updated_at)
SELECT id, request_id, channel, ref, want, have, attempts, last_error, abandoned, next_attempt_at, lease_until,
	lease_owner, updated_at FROM cards;
DROP TABLE cards;
ALTER TABLE cards_v6 RENAME TO cards;
CREATE UNIQUE INDEX cards_one ON cards (request_id, channel, kind, target, step);
CREATE INDEX cards_due ON cards (next_attempt_at) WHERE want <> have AND abandoned = FALSE`, pg: `
ALTER TABLE requests ADD COLUMN person TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN plan TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN next_step_at TIMESTAMPTZ;
CREATE INDEX requests_next_step ON requests (next_step_at) WHERE status = 'pending' AND next_step_at IS NOT NULL;
CREATE TABLE steps (
	request_id TEXT NOT NULL REFERENCES requests (id),
	step INTEGER NOT NULL,
	kind TEXT NOT NULL,
	due_at TIMESTAMPTZ NOT NULL,
	at TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (request_id, step)
);
ALTER TABLE cards ADD COLUMN kind TEXT NOT NULL DEFAULT 'card';
ALTER TABLE cards ADD COLUMN target TEXT NOT NULL DEFAULT '';
ALTER TABLE cards ADD COLUMN step INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cards DROP CONSTRAINT cards_request_id_channel_key;
CREATE UNIQUE INDEX cards_one ON cards (request_id, channel, kind, target, step)`},
	// A vote keeps the identities its approver tapped with (JSON), so
	// that a quorum counts approvers by the people in force at each tap,
	// not only by the person a vote was counted for when it came. Votes
	// already cast get the identity their event recorded (written with
	// the vote, at the same time), so a request pending across the
	// upgrade counts its approvers the same way.
	{version: 8, name: "votes keep their identities", sql: `
ALTER TABLE votes ADD COLUMN identities TEXT NOT NULL DEFAULT '';
UPDATE votes SET identities = COALESCE((SELECT '["' || REPLACE(REPLACE(e.actor, '\', '\\'), '"', '\"') || '"]' FROM events e
	WHERE e.request_id = votes.request_id AND e.type = 'vote' AND e.at = votes.at AND e.actor <> '' LIMIT 1), '')`},
	// A grant keeps every identity its giver tapped with, as a vote does:
	// a Feishu tap's actor is an app's open_id, and the person is found by
	// the union_id beside it (self-approval, person: approvers). Grants
	// given before keep their giver alone, as they were judged.
	{version: 9, name: "grants keep their giver's identities", sql: `
ALTER TABLE grants ADD COLUMN given_ids TEXT NOT NULL DEFAULT ''`},
	// Retention keeps a request while a grant it gave is active (the
	// revocation is written to its trail), and finds those grants by it.
	{version: 10, name: "grants found by the request that gave them", sql: `
CREATE INDEX grants_request ON grants (request_id)`},
	// A password session keeps a fingerprint of the credential it was
	// made with (web/session.go), so that changing a user's password, or
	// the bootstrap password a new start prints, ends the sessions made
	// with the old one. Sessions made before have none (''): a password
	// session without one ends at its next request, since which password
	// made it cannot be told; single sign-on sessions never have one.
	{version: 11, name: "sessions keep their credential", sql: `
ALTER TABLE sessions ADD COLUMN credential TEXT NOT NULL DEFAULT ''`},
	// The history's search reads the arguments as the pages show them: a
	// call's tool_args stay byte for byte as the agent sent them (the
	// audit chain seals them), and where they spell a character as an
	// escape (D\u0052OP) args_text holds them with it decoded (DROP), so
	// a search for what the page shows finds it. '' when the two are the
	// same, as for nearly every call, and for requests made before.
	{version: 12, name: "requests' arguments as shown, for search", sql: `
ALTER TABLE requests ADD COLUMN args_text TEXT NOT NULL DEFAULT ''`},
	// A Cursor MCP call's bare tool name (Shell, Read) is its server's,
	// which the policy reads apart from the client's own tools; an
	// approval is judged by the policy in force (gate.Decide), so the row
	// keeps which it was. Requests made before read as the client's.
	{version: 13, name: "requests say whether the call is an MCP server's", sql: `
ALTER TABLE requests ADD COLUMN mcp_server BOOLEAN NOT NULL DEFAULT FALSE`},
	// requires_confirmation holds the flag the gate went by, true when the
	// agent sent none (it fails closed); confirmation_sent says whether
	// the agent sent it, so that the audit shows the agent's own word and
	// not the gate's reading of its silence. Requests made before read as
	// sent: for them the two cannot be told apart.
	{version: 14, name: "requests say whether the agent sent requires_confirmation", sql: `
ALTER TABLE requests ADD COLUMN confirmation_sent BOOLEAN NOT NULL DEFAULT TRUE`},
}

// SchemaVersion is the newest migration this binary knows.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

func (s *DB) dialect(sql string) string {
	r := strings.NewReplacer("{{ts}}", "DATETIME", "{{serial}}", "INTEGER PRIMARY KEY AUTOINCREMENT", "{{bool}}", "BOOLEAN")
	if s.driver == Postgres {
		r = strings.NewReplacer("{{ts}}", "TIMESTAMPTZ", "{{serial}}", "BIGSERIAL PRIMARY KEY", "{{bool}}", "BOOLEAN")
	}
	return r.Replace(sql)
}

// migrateLock is the PostgreSQL advisory lock key that serialises replicas
// migrating at once. ("gatehouse" in ASCII, folded into an int64.)
const migrateLock = 0x67617465686f75

// Migrate applies every pending migration in one transaction under a lock,
// so replicas that boot together apply each step exactly once. On SQLite the
// transaction is BEGIN IMMEDIATE, which is the lock.
func (s *DB) Migrate(ctx context.Context) error { return s.migrateTo(ctx, SchemaVersion()) }

func (s *DB) migrateTo(ctx context.Context, target int) error {
	if s.driver == SQLite {
		// A step may rebuild a table that others reference, which SQLite
		// allows only with foreign keys off; they cannot be switched inside
		// a transaction. The pool's one write connection is the one the
		// transaction runs on, and foreign_key_check below proves the
		// result before it commits.
		if err := s.db.WithContext(ctx).Exec("PRAGMA foreign_keys = OFF").Error; err != nil {
			return fmt.Errorf("store: migrate: %w", err)
		}
		defer s.db.Exec("PRAGMA foreign_keys = ON")
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if s.driver == Postgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", migrateLock).Error; err != nil {
				return err
			}
		}
		if err := tx.Exec(s.dialect(`CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at {{ts}} NOT NULL)`)).Error; err != nil {
			return err
		}
		applied, err := appliedVersions(tx)
		if err != nil {
			return err
		}
		if v := unknownVersion(applied); v != 0 {
			return fmt.Errorf("the database schema has version %d, which this binary (version %d) does not know: upgrade gatehouse", v, SchemaVersion())
		}
		// Every step not yet applied, in order: not only those above the
		// highest applied, so a step that joined the list below another
		// (branches merged in either order) is applied too.
		for _, m := range migrations {
			if applied[m.version] || m.version > target {
				continue
			}
			text := m.sql
			if s.driver == Postgres && m.pg != "" {
				text = m.pg
			}
			for _, stmt := range strings.Split(s.dialect(text), ";\n") {
				if strings.TrimSpace(stmt) == "" {
					continue
				}
				if err := tx.Exec(stmt).Error; err != nil {
					return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
				}
			}
			if err := tx.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				m.version, m.name, utc(time.Now())).Error; err != nil {
				return err
			}
			s.log.Info("migrated", "version", m.version, "name", m.name)
		}
		if s.driver == SQLite {
			var broken []struct{ Table string }
			if err := tx.Raw("PRAGMA foreign_key_check").Scan(&broken).Error; err != nil {
				return err
			}
			if len(broken) > 0 {
				return fmt.Errorf("%d rows of %s point at missing rows", len(broken), broken[0].Table)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return nil
}

// appliedVersions are the steps a database has had.
func appliedVersions(tx *gorm.DB) (map[int]bool, error) {
	var vs []int
	if err := tx.Raw("SELECT version FROM schema_migrations").Scan(&vs).Error; err != nil {
		return nil, err
	}
	out := make(map[int]bool, len(vs))
	for _, v := range vs {
		out[v] = true
	}
	return out, nil
}

// unknownVersion is a step the database had that this binary does not
// know (a newer binary applied it), or 0.
func unknownVersion(applied map[int]bool) int {
	known := map[int]bool{}
	for _, m := range migrations {
		known[m.version] = true
	}
	for v := range applied {
		if !known[v] {
			return v
		}
	}
	return 0
}

// checkVersion refuses a database whose schema is behind or ahead of the binary.
func (s *DB) checkVersion(ctx context.Context) error {
	var n int64
	tx := s.db.WithContext(ctx)
	if err := tx.Raw(s.tableExistsSQL(), "schema_migrations").Scan(&n).Error; err != nil {
		return fmt.Errorf("store: %w", err)
	}
	applied := map[int]bool{}
	if n > 0 {
		var err error
		if applied, err = appliedVersions(tx); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	if v := unknownVersion(applied); v != 0 {
		return fmt.Errorf("store: the database schema has version %d, which this binary (version %d) does not know: upgrade gatehouse", v, SchemaVersion())
	}
	for _, m := range migrations {
		if !applied[m.version] {
			return fmt.Errorf("store: the database schema lacks version %d (%s) that this binary needs: run gatehouse migrate", m.version, m.name)
		}
	}
	return nil
}

func (s *DB) tableExistsSQL() string {
	if s.driver == Postgres {
		return "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?"
	}
	return "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
}
