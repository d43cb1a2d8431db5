package web

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// historyPageSize is how many requests one history page shows.
const historyPageSize = 50

// historyView is what the history template needs beyond the requests: the
// filters as the URL holds them (so the form shows them back) and the links
// that keep them.
type historyView struct {
	F          url.Values
	Statuses   []gate.Status
	Next       string // the next page, "" on the last
	First      string // the first page, "" when this is it
	ExportCSV  string
	ExportJSON string
	Charts     string
	Filtered   bool
}

// historyPage lists every request, newest first, filtered by the URL's
// query so that a view can be bookmarked and shared. Pages follow the
// store's keyset cursor.
func (s *Server) historyPage(c echo.Context) error {
	q := c.QueryParams()
	v := newHistoryView(q)
	f, err := peopleFirst(ParseFilter(q.Get))
	if err != nil {
		return s.page(c, http.StatusBadRequest, "history", pageData{Title: "History", Error: gate.ErrorMessage(err), View: v})
	}
	if f.Limit == 0 {
		f.Limit = historyPageSize
	}
	rs, next, err := s.list(c.Request().Context(), f, s.opts.Present.Redactor().Request)
	if err != nil {
		return err
	}
	if next != "" {
		v.Next = "/history?" + withParam(q, "cursor", next)
	}
	return s.page(c, http.StatusOK, "history", pageData{Title: "History", Requests: s.views(rs), View: v})
}

// peopleFirst makes the pages and exports show people's decisions unless
// the filter asks for the policy's verdicts too (?policy=include or only):
// a route that allows thousands of calls would bury them.
func peopleFirst(f gate.Filter, err error) (gate.Filter, error) {
	if f.Policy == "" {
		f.Policy = "exclude"
	}
	return f, err
}

func newHistoryView(q url.Values) historyView {
	v := historyView{F: q, Statuses: []gate.Status{gate.StatusPending, gate.StatusApproved, gate.StatusRejected,
		gate.StatusExpired, gate.StatusCancelled}}
	filters := withParam(q, "cursor", "")
	if q.Get("cursor") != "" {
		v.First = "/history?" + filters
	}
	export := withParam(withValues(q, "cursor", ""), "limit", "")
	v.ExportCSV = "/export.csv?" + export
	v.ExportJSON = "/export.json?" + export
	v.Charts = "/charts?" + export
	for _, k := range []string{"status", "tool", "agent", "decided_by", "route", "since", "until", "q", "policy"} {
		if q.Get(k) != "" {
			v.Filtered = true
		}
	}
	return v
}

// withValues is a copy of q with key set to val (removed when val is "").
func withValues(q url.Values, key, val string) url.Values {
	out := url.Values{}
	for k, vs := range q {
		if k != key && len(vs) > 0 && vs[0] != "" {
			out[k] = vs[:1]
		}
	}
	if val != "" {
		out.Set(key, val)
	}
	return out
}

// withParam is withValues, encoded for a link.
func withParam(q url.Values, key, val string) string { return withValues(q, key, val).Encode() }
