package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// listGrants is GET /api/v1/grants: the token's own grants (every token's
// with the read_all scope), active ones unless ?all=true asks for the
// ended too. all takes what strconv.ParseBool reads (true, 1, false, 0 …);
// anything else is refused, not read as false, so a caller that spelled
// it otherwise is told rather than shown the active grants alone.
func (s *Server) listGrants(c echo.Context) error {
	all := false
	if v := c.QueryParam("all"); v != "" {
		var err error
		if all, err = strconv.ParseBool(v); err != nil {
			return s.apiError(c, gate.Errorf(gate.EINVALID, "all: %q is not true or false", v))
		}
	}
	a := s.access(c)
	// On a server without tokens every caller is who its agent_id says,
	// and its grants are those given to an agent_id (gate.TokenlessGrant).
	open := a.Name == ""
	own := func(g gate.Grant) bool {
		return g.Caller == a.Name || open && strings.HasPrefix(g.Caller, gate.TokenlessGrant)
	}
	var only *string
	if !a.ReadAll && !open {
		only = &a.Name
	}
	gs, err := s.svc.Grants(c.Request().Context(), only, !all)
	if err != nil {
		return s.apiError(c, err)
	}
	shown := []gate.Grant{}
	for _, g := range gs {
		switch {
		case own(g):
		case !a.ReadAll:
			continue
		default:
			// A grant's args_hash would let another token, shown the
			// arguments redacted, test guesses at what is hidden: only the
			// token the grant is for, which reads those arguments whole,
			// gets it.
			g = s.opts.Present.Redactor().Grant(g)
		}
		shown = append(shown, g)
	}
	return c.JSON(http.StatusOK, map[string]any{"grants": shown})
}

// grantsPage lists the grants for people: the active ones, then those
// that ended (revoked or expired), newest first.
func (s *Server) grantsPage(c echo.Context) error {
	// The active ones are read apart: the newest 1000 grants of all may
	// be ended ones, and an active grant left off would have no Revoke.
	live, err := s.svc.Grants(c.Request().Context(), nil, true)
	if err != nil {
		return err
	}
	gs, err := s.svc.Grants(c.Request().Context(), nil, false)
	if err != nil {
		return err
	}
	now := s.now()
	var active, ended []gate.Grant
	for _, g := range live {
		active = append(active, s.opts.Present.Redactor().Grant(g)) // people read requests redacted
	}
	for _, g := range gs {
		if !g.Active(now) {
			ended = append(ended, s.opts.Present.Redactor().Grant(g))
		}
	}
	return s.page(c, http.StatusOK, "grants", pageData{Title: "Grants", Extra: map[string]any{"Active": active, "Ended": ended}})
}

// revokeGrant is the grants page's revoke button (approvers and admins).
func (s *Server) revokeGrant(c echo.Context) error {
	u := s.currentUser(c)
	if !s.checkCSRF(c, u) {
		return s.page(c, http.StatusForbidden, "error", pageData{Title: "Refused", Message: "The form was not sent from this site (missing or wrong CSRF token). Reload the page and try again."})
	}
	if !u.CanDecide() {
		return s.page(c, http.StatusForbidden, "error", pageData{Title: "Not allowed", Message: fmt.Sprintf("Your role (%s) may read grants but not revoke them.", u.Role)})
	}
	if _, err := s.svc.RevokeGrant(c.Request().Context(), c.Param("id"), u.Identity()); err != nil {
		code := gate.ErrorCode(err)
		if code == gate.EINTERNAL || code == gate.EUNAVAILABLE {
			return err
		}
		return s.page(c, statusOf(code), "error", pageData{Title: "Not revoked", Message: gate.ErrorMessage(err),
			Extra: map[string]any{"Back": "/grants"}})
	}
	return c.Redirect(http.StatusSeeOther, "/grants")
}
