package gate

import (
	"context"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// overRate counts the call against its route's rate limit and, when the
// count is over it, says why the call is denied. Counts live in the
// database, so every replica shares them; windows are fixed, `per` long,
// aligned to the Unix epoch. Submit answers a retry of a call already
// made (its caller used its idempotency key before) before it gets here,
// so a retry is not counted again.
func (s *Service) overRate(ctx context.Context, in *Submission, rt Route, now time.Time) (string, error) {
	who := ""
	switch rt.Rate.By {
	case "user":
		who = in.UserID
	case "session":
		who = in.SessionID
	case "route":
	default:
		who = agentKey(in.Caller, in.AgentID)
	}
	per := rt.Rate.Per
	window := time.Unix(0, now.UnixNano()/int64(per)*int64(per)).UTC()
	key := fmt.Sprintf("route=%s;%s=%s", rt.Name, rt.Rate.By, who)
	n, err := s.store.CountCall(ctx, key, window, window.Add(-per))
	if err != nil {
		return "", err
	}
	if n <= rt.Rate.Limit {
		return "", nil
	}
	by := rt.Rate.By
	if by == "" {
		by = "agent"
	}
	return fmt.Sprintf("over the rate limit of route %s: %d calls per %s by %s (this was call %d; the count restarts at %s)",
		rt.Name, rt.Rate.Limit, text.Duration(per), by, n, window.Add(per).Format(time.RFC3339)), nil
}
