package web

import (
	"context"
	"errors"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// Charts read the requests of a window page by page through svc.List and
// count in memory; chartMaxRows bounds the work of one page view. (An
// aggregate query in the store would lift the bound; see web/README.md.)
const (
	chartMaxRows    = 100_000
	chartMaxDays    = 366
	chartDefaultDay = 14
)

// counts tallies requests by where they stand.
type counts struct {
	Total, Pending, Approved, Rejected, Expired, Cancelled int
}

func (c *counts) add(st gate.Status) {
	c.Total++
	switch st {
	case gate.StatusPending:
		c.Pending++
	case gate.StatusApproved:
		c.Approved++
	case gate.StatusRejected:
		c.Rejected++
	case gate.StatusExpired:
		c.Expired++
	case gate.StatusCancelled:
		c.Cancelled++
	}
}

// Pct is n as a percentage of the total, for the rate tables.
func (c counts) Pct(n int) float64 {
	if c.Total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(c.Total)
}

// dayStats is one UTC day of the window, by the requests created that day.
type dayStats struct {
	Day time.Time
	counts
	waits       []time.Duration
	Median, P90 time.Duration
}

// Decided is how many of the day's requests a person decided.
func (d *dayStats) Decided() int { return len(d.waits) }

// routeStats is one route's outcomes over the window.
type routeStats struct {
	Route string
	counts
}

// chartsView is what the charts template shows.
type chartsView struct {
	F            url.Values
	Since, Until time.Time // the window, [Since, Until)
	All          counts
	Decided      int
	Median, P90  time.Duration
	Days         []*dayStats
	Routes       []*routeStats
	Truncated    bool
	History      string
	PerDay       template.HTML
	Waits        template.HTML
	PerRoute     template.HTML
}

// chartsPage draws requests and verdicts per day, time to decision and the
// outcome rates per route for a window (the last two weeks unless since and
// until say otherwise), honouring the history's other filters too.
func (s *Server) chartsPage(c echo.Context) error {
	q := c.QueryParams()
	f, err := peopleFirst(ParseFilter(q.Get))
	if err != nil {
		return s.page(c, http.StatusBadRequest, "charts", pageData{Title: "Charts", Error: gate.ErrorMessage(err), View: &chartsView{F: q}})
	}
	v := &chartsView{F: q, History: "/history?" + withParam(withValues(q, "cursor", ""), "limit", "")}
	v.Since, v.Until = chartWindow(f, s.now())
	f.Since, f.Until, f.Cursor, f.Limit = v.Since, v.Until, "", 1000
	if err := s.tally(c.Request().Context(), f, v); err != nil {
		return err
	}
	v.PerDay, v.Waits, v.PerRoute = svgPerDay(v.Days), svgWaits(v.Days), svgPerRoute(v.Routes)
	return s.page(c, http.StatusOK, "charts", pageData{Title: "Charts", View: v})
}

// chartWindow is the filter's date range, whole UTC days, defaulting to the
// last chartDefaultDay days and capped at chartMaxDays.
func chartWindow(f gate.Filter, now time.Time) (since, until time.Time) {
	until = f.Until
	if until.IsZero() {
		until = now.UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	}
	until = until.UTC()
	if t := until.Truncate(24 * time.Hour); !t.Equal(until) {
		until = t.AddDate(0, 0, 1)
	}
	since = f.Since.UTC().Truncate(24 * time.Hour)
	if f.Since.IsZero() {
		since = until.AddDate(0, 0, -chartDefaultDay)
	}
	if until.Sub(since) > chartMaxDays*24*time.Hour {
		since = until.AddDate(0, 0, -chartMaxDays)
	}
	if !since.Before(until) {
		since = until.AddDate(0, 0, -1)
	}
	return since, until
}

// tally reads the window's requests page by page and counts them.
func (s *Server) tally(ctx context.Context, f gate.Filter, v *chartsView) error {
	byRoute := map[string]*routeStats{}
	for d := v.Since; d.Before(v.Until); d = d.AddDate(0, 0, 1) {
		v.Days = append(v.Days, &dayStats{Day: d})
	}
	var all []time.Duration
	seen := 0
	err := s.eachRequest(ctx, f, func(r *gate.Request) error {
		if seen++; seen > chartMaxRows {
			v.Truncated = true
			return errEnough
		}
		i := int(r.CreatedAt.UTC().Sub(v.Since) / (24 * time.Hour))
		if i < 0 || i >= len(v.Days) {
			return nil
		}
		day := v.Days[i]
		day.add(r.Status)
		v.All.add(r.Status)
		rs := byRoute[r.Route]
		if rs == nil {
			rs = &routeStats{Route: r.Route}
			byRoute[r.Route] = rs
		}
		rs.add(r.Status)
		if w, ok := decisionTime(r); ok {
			day.waits = append(day.waits, w)
			all = append(all, w)
		}
		return nil
	}, func() error { return nil })
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	for _, d := range v.Days {
		d.Median, d.P90 = percentile(d.waits, 0.5), percentile(d.waits, 0.9)
	}
	v.Decided, v.Median, v.P90 = len(all), percentile(all, 0.5), percentile(all, 0.9)
	for _, rs := range byRoute {
		v.Routes = append(v.Routes, rs)
	}
	slices.SortFunc(v.Routes, func(a, b *routeStats) int {
		if a.Total != b.Total {
			return b.Total - a.Total
		}
		return strings.Compare(a.Route, b.Route)
	})
	return nil
}

// errEnough stops a tally at chartMaxRows.
var errEnough = errors.New("web: chart row limit reached")

// decisionTime is how long a person took to approve or reject; requests a
// route allowed at once, and those that expired or were cancelled, have none.
func decisionTime(r *gate.Request) (time.Duration, bool) {
	if r.DecidedAt == nil || r.DecidedVia == gate.ViaPolicy || r.DecidedVia == gate.ViaTimeout {
		return 0, false
	}
	if r.Status != gate.StatusApproved && r.Status != gate.StatusRejected {
		return 0, false
	}
	return r.DecidedAt.Sub(r.CreatedAt), true
}

// percentile is the nearest-rank p-th percentile (0 for none). It sorts ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[max(i, 0)]
}
