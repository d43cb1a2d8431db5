package web

import (
	"bytes"
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// queueData reads what the pending queue shows: every pending request and
// the last few decided ones, people's decisions only unless policy is
// "include" (a route that allows thousands of calls would bury them).
func (s *Server) queueData(ctx context.Context, policy string) (pageData, error) {
	pending, _, err := s.svc.List(ctx, gate.Filter{Status: []gate.Status{gate.StatusPending}, Limit: 200})
	if err != nil {
		return pageData{}, err
	}
	f := gate.Filter{Status: []gate.Status{gate.StatusApproved, gate.StatusRejected, gate.StatusExpired, gate.StatusCancelled},
		Policy: "exclude", Limit: 20}
	live := "/live/queue"
	if policy == "include" {
		f.Policy, live = "", live+"?policy=include"
	}
	recent, _, err := s.svc.List(ctx, f)
	if err != nil {
		return pageData{}, err
	}
	return pageData{Title: "Pending approvals", Requests: s.views(pending),
		Extra: map[string]any{"Recent": s.views(recent), "Policy": f.Policy == "", "Live": live}}, nil
}

// liveQueue answers static/live.js's poll with the queue as an HTML
// fragment, rendered by the same template as the page, so that the live
// view and the no-JavaScript view cannot drift apart. Without a session it
// answers 401 and the script reloads into the login page.
func (s *Server) liveQueue(c echo.Context) error {
	u := s.currentUser(c)
	if u == nil {
		return c.NoContent(http.StatusUnauthorized)
	}
	d, err := s.queueData(c.Request().Context(), c.QueryParam("policy"))
	if err != nil {
		return err
	}
	d.User, d.CSRF, d.Now = u, u.CSRF, s.now()
	var buf bytes.Buffer
	if err := s.pages.tmpl["queue"].ExecuteTemplate(&buf, "live", d); err != nil {
		return err
	}
	securityHeaders(c)
	return c.HTMLBlob(http.StatusOK, buf.Bytes())
}
