package web

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
	"github.com/gatehouse-dev/gatehouse/internal/present"
)

// ExportColumns are the CSV export's columns, in order. The README documents
// each; add new ones at the end so that spreadsheets built on the old
// order keep working.
var ExportColumns = []string{
	"id", "status", "tool_name", "summary", "agent_id", "user_id", "session_id", "tool_call_id", "route",
	"created_at", "expires_at", "decided_at", "decided_by", "decided_via", "waited_seconds", "reason",
	"tool_args", "modified_args", "metadata", "edited", "caller", "approvals",
}

// exportPageSize is how many rows are read from the store at a time, so a
// large history streams out instead of being held in memory.
const exportPageSize = 500

// exportCSV streams the filtered history as CSV.
func (s *Server) exportCSV(c echo.Context) error {
	f, ok, err := s.exportFilter(c)
	if !ok {
		return err
	}
	startDownload(c, "text/csv; charset=utf-8", "csv", s.now())
	w := csv.NewWriter(c.Response())
	if err := w.Write(ExportColumns); err != nil {
		return nil // the client went away
	}
	rd := s.opts.Present.Redactor()
	ctx := c.Request().Context()
	err = s.eachRequest(ctx, f, func(r *gate.Request) error {
		row := csvRow(rd.Request(r), present.Edited(r))
		approvals := ""
		if r.Quorum > 1 {
			// decided_by names the vote that met the quorum; the others
			// are in the trail's vote events.
			v, err := s.svc.Votes(ctx, r.ID)
			if err != nil {
				return err
			}
			slices.Sort(v.Tappers)
			approvals = defuseFormula(strings.Join(v.Tappers, " "))
		}
		return w.Write(append(row, approvals))
	}, func() error { w.Flush(); c.Response().Flush(); return w.Error() })
	return s.endDownload(err)
}

// exportJSON streams the filtered history as one JSON array of requests,
// each as the API shows it.
func (s *Server) exportJSON(c echo.Context) error {
	f, ok, err := s.exportFilter(c)
	if !ok {
		return err
	}
	startDownload(c, "application/json; charset=utf-8", "json", s.now())
	w := c.Response()
	sep := "[\n"
	rd := s.opts.Present.Redactor()
	err = s.eachRequest(c.Request().Context(), f, func(r *gate.Request) error {
		b, err := json.Marshal(rd.Request(r))
		if err != nil {
			return err
		}
		if _, err := w.Write(append([]byte(sep), b...)); err != nil {
			return err
		}
		sep = ",\n"
		return nil
	}, func() error { w.Flush(); return nil })
	if err == nil {
		if sep == "[\n" {
			_, err = w.Write([]byte("["))
		}
		if err == nil {
			_, err = w.Write([]byte("\n]\n"))
		}
	}
	return s.endDownload(err)
}

// exportFilter parses the history's filters; on bad input it answers the
// error page itself and ok is false.
func (s *Server) exportFilter(c echo.Context) (gate.Filter, bool, error) {
	f, err := peopleFirst(ParseFilter(c.QueryParams().Get))
	if err != nil {
		return f, false, s.page(c, http.StatusBadRequest, "error", pageData{Title: "Bad filter", Message: gate.ErrorMessage(err)})
	}
	f.Limit = exportPageSize
	return f, true, nil
}

func startDownload(c echo.Context, contentType, ext string, now time.Time) {
	h := c.Response().Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="gatehouse-history-%s.%s"`, now.UTC().Format("20060102-150405"), ext))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	c.Response().WriteHeader(http.StatusOK)
}

// endDownload handles a failure after the 200 went out: the only honest
// signal left is to cut the connection, so the file is visibly incomplete
// rather than silently short.
func (s *Server) endDownload(err error) error {
	if err != nil {
		s.log.Error("export failed midway; cutting the download", "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// eachRequest calls fn for every request the filter selects, newest first,
// one store page at a time, and flush after each page.
func (s *Server) eachRequest(ctx context.Context, f gate.Filter, fn func(*gate.Request) error, flush func() error) error {
	for {
		rs, next, err := s.list(ctx, f, s.opts.Present.Redactor().Request)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if err := fn(r); err != nil {
				return err
			}
		}
		if err := flush(); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		f.Cursor = next
	}
}

// csvRow is one request in ExportColumns order; edited is judged on the
// request before redaction (an edit of a hidden value looks like none).
func csvRow(r *gate.Request, edited bool) []string {
	decided, waited := "", ""
	if r.DecidedAt != nil {
		decided = r.DecidedAt.UTC().Format(time.RFC3339)
		waited = strconv.FormatFloat(r.DecidedAt.Sub(r.CreatedAt).Seconds(), 'f', 3, 64)
	}
	row := []string{
		r.ID, string(r.Status), r.ToolName, r.Summary, r.AgentID, r.UserID, r.SessionID, r.ToolCallID, r.Route,
		r.CreatedAt.UTC().Format(time.RFC3339), r.ExpiresAt.UTC().Format(time.RFC3339), decided, r.DecidedBy,
		r.DecidedVia, waited, r.Reason, jsonCell(r.ToolArgs), jsonCell(r.ModifiedArgs), jsonCell(r.Metadata),
		strconv.FormatBool(edited), r.Caller,
	}
	for i, cell := range row {
		row[i] = defuseFormula(cell)
	}
	return row
}

// jsonCell is raw JSON on one line; absent and null are empty.
func jsonCell(raw json.RawMessage) string {
	if s := string(jsonx.Compact(raw)); s != "null" {
		return s
	}
	return ""
}

// defuseFormula stops a spreadsheet from running a cell as a formula (CSV
// injection): a cell starting with = + - @, a tab or a carriage return gets
// a leading apostrophe, which spreadsheets show as text.
func defuseFormula(cell string) string {
	if cell == "" {
		return cell
	}
	switch cell[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + cell
	}
	return cell
}
