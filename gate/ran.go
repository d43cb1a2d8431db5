package gate

import (
	"context"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// MaxOutcome bounds what a trail keeps of a tool's outcome, in bytes.
const MaxOutcome = 2 << 10

// ByCall returns the newest request the caller's token made for a client's
// tool call (its tool_use_id) in a session, or ENOTFOUND. Another token's
// requests are never found.
func (s *Service) ByCall(ctx context.Context, c Caller, session, callID string) (*Request, error) {
	if callID == "" {
		return nil, Errorf(ENOTFOUND, "no call id")
	}
	name := c.Name
	rs, _, err := s.store.List(ctx, Filter{Caller: &name, ToolCallID: callID, SessionID: session, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, Errorf(ENOTFOUND, "no request for call %q", callID)
	}
	return rs[0], nil
}

// ByKey returns the request the caller's token made under an idempotency
// key, or ENOTFOUND.
func (s *Service) ByKey(ctx context.Context, c Caller, key string) (*Request, error) {
	return s.store.ByKey(ctx, c.Name, key)
}

// KeyState is where the request under an idempotency key stands, as a
// hook's walk along a call's keys reads it.
type KeyState struct {
	Status     Status
	DecidedAt  *time.Time
	ToolCallID string
}

// KeyStates returns where the caller's requests under keys stand, by key;
// a key the caller has not used is absent.
func (s *Service) KeyStates(ctx context.Context, c Caller, keys []string) (map[string]KeyState, error) {
	return s.store.KeyStates(ctx, c.Name, keys)
}

// Ran appends what became of an approved call to its request's trail:
// tool_ran with the tool's output, or tool_failed with its error, as the
// agent's client reported it after running the tool. detail must already be
// redacted (the trail is sealed as written); it is cut to MaxOutcome bytes
// here. Only the token that made the request may report on it, only an
// approved request (the tool was allowed to run) takes a report, and only
// its first: recorded says whether this one was written. A report that does
// not fit is no error: the client is told nothing either way.
func (s *Service) Ran(ctx context.Context, c Caller, id string, failed bool, detail string) (recorded bool, err error) {
	r, err := s.store.Get(ctx, id)
	if err != nil {
		return false, err
	}
	if r.Caller != c.Name || !r.Allowed() {
		return false, nil
	}
	e := Event{RequestID: id, At: s.stamp(), Type: EventToolRan, Actor: actorOf(r), Channel: "hook",
		Detail: outcome(detail)}
	if failed {
		e.Type = EventToolFailed
	}
	added, err := s.store.AddOutcome(ctx, e)
	if err != nil {
		return false, fmt.Errorf("gate: record what ran: %w", err)
	}
	if added {
		s.log.Info("tool outcome recorded", "request_id", id, "type", e.Type)
	}
	return added, nil
}

// outcome is a report as the trail keeps it: at most MaxOutcome bytes, a
// JSON report shrunk (jsonx.Shrink) so that it stays JSON with its keys
// whole (the page redacts it by key when shown, with the rules of that
// day: a cut report would be read as text, by the patterns alone),
// anything else cut without splitting a word.
func outcome(detail string) string {
	detail = text.Clean(detail)
	if len(detail) <= MaxOutcome {
		return detail
	}
	if out, ok := jsonx.Shrink([]byte(detail), MaxOutcome); ok {
		return string(out)
	}
	return text.EllipsisWords(detail, MaxOutcome)
}
