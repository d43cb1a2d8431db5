package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
	"github.com/gatehouse-dev/gatehouse/internal/present"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages renders the server-side pages from embedded templates, parsed once
// at start-up.
type pages struct {
	s    *Server
	tmpl map[string]*template.Template
}

// pageData is what every page template gets.
type pageData struct {
	Title   string
	User    *User
	Message string
	Error   string
	Next    string
	CSRF    string
	// Request and Requests are shown to people: redacted views.
	Request  *present.View
	Requests []*present.View
	Events   []gate.Event
	Cards    []gate.Card
	Now      time.Time
	Extra    map[string]any
	// View is the page's own data (the history's filters, the charts).
	View any
}

func newPages(s *Server) (*pages, error) {
	p := &pages{s: s, tmpl: map[string]*template.Template{}}
	funcs := template.FuncMap{
		"ts":      func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"tsShort": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") },
		"tsp": func(t *time.Time) string {
			if t == nil {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05 UTC")
		},
		"left":     func(v *present.View, now time.Time) string { return v.Left(now) },
		"waited":   func(v *present.View, now time.Time) string { return roundDuration(v.Waited(now)).String() },
		"explain":  func(v *present.View, now time.Time) string { return v.Explain(now) },
		"pretty":   func(raw json.RawMessage) string { return jsonx.Pretty(raw) },
		"unix":     func(t time.Time) int64 { return t.UnixMilli() },
		"dur":      func(d time.Duration) string { return roundDuration(d).String() },
		"sameJSON": jsonx.Same,
		"ran":      func(e gate.Event) bool { return e.Type == gate.EventToolRan || e.Type == gate.EventToolFailed },
		"outcome": func(s string) string {
			if json.Valid([]byte(s)) {
				return jsonx.Pretty([]byte(s))
			}
			return s
		},
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		base := n[len("templates/") : len(n)-len(".html")]
		if base == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", n, err)
		}
		p.tmpl[base] = t
	}
	return p, nil
}

// view is r as people see it: redacted, risk first, with its route's looks.
func (s *Server) view(r *gate.Request) *present.View {
	v := s.opts.Present.View(r)
	return &v
}

// views is view over a list.
func (s *Server) views(rs []*gate.Request) []*present.View {
	out := make([]*present.View, len(rs))
	for i, r := range rs {
		out[i] = s.view(r)
	}
	return out
}

// shownEvents are a trail as people see it: details redacted.
func (s *Server) shownEvents(evs []gate.Event) []gate.Event {
	out := make([]gate.Event, len(evs))
	for i, e := range evs {
		out[i] = s.opts.Present.Event(e)
	}
	return out
}

func (p *pages) routes(e *echo.Echo) {
	s := p.s
	sub, _ := fs.Sub(staticFS, "static")
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", http.FileServer(http.FS(sub)))))
	e.GET("/favicon.ico", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/static/favicon.svg") })
	e.GET("/login", s.loginPage)
	e.POST("/login", s.login)
	if s.sso != nil {
		e.GET(oidcPath+"login", s.ssoStart)
		e.GET(oidcPath+"callback", s.ssoCallback)
	}
	e.POST("/logout", s.logout)
	e.GET("/", s.queuePage, s.requireLogin)
	e.GET("/approvals/:id", s.detailPage, s.requireLogin)
	e.POST("/approvals/:id/decide", s.decide, s.requireLogin)
	e.GET("/history", s.historyPage, s.requireLogin)
	e.GET("/export.csv", s.exportCSV, s.requireLogin)
	e.GET("/export.json", s.exportJSON, s.requireLogin)
	e.GET("/charts", s.chartsPage, s.requireLogin)
	e.GET("/grants", s.grantsPage, s.requireLogin)
	e.POST("/grants/:id/revoke", s.revokeGrant, s.requireLogin)
	e.GET("/live/queue", s.liveQueue)
}

// roundDuration keeps durations readable: whole seconds, or tenths under a
// second.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// page renders a template with the common fields filled in.
func (s *Server) page(c echo.Context, status int, name string, d pageData) error {
	t, ok := s.pages.tmpl[name]
	if !ok {
		return fmt.Errorf("web: no template %q", name)
	}
	if d.User == nil {
		d.User = s.currentUser(c)
	}
	if d.User != nil {
		d.CSRF = d.User.CSRF
	}
	if d.Now.IsZero() {
		d.Now = s.now()
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return fmt.Errorf("web: render %s: %w", name, err)
	}
	securityHeaders(c)
	return c.HTMLBlob(status, buf.Bytes())
}

// contentSecurityPolicy allows nothing from elsewhere and no inline script
// or style: the pages' JavaScript and CSS are files under /static, and the
// charts are SVG drawn on the server.
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"

// securityHeaders are set on every page and fragment.
func securityHeaders(c echo.Context) {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

func (s *Server) loginPage(c echo.Context) error {
	tok := randomToken()
	s.setCookie(c, loginCookie, tok, 3600)
	return s.page(c, http.StatusOK, "login", pageData{Title: "Log in", Next: safeNext(c.QueryParam("next")), CSRF: tok, Extra: s.loginExtra()})
}

// loginExtra tells the login page which ways in there are.
func (s *Server) loginExtra() map[string]any {
	return map[string]any{"SSO": s.sso != nil, "Passwords": len(s.auth.Load().users) > 0 || s.opts.BootstrapPassword != ""}
}

func (s *Server) login(c echo.Context) error {
	ck, err := c.Cookie(loginCookie)
	if err != nil || ck.Value == "" || ck.Value != c.FormValue("csrf") {
		return s.page(c, http.StatusForbidden, "error", pageData{Title: "Form expired", Message: "The login form expired or was not sent from this site. Reload it and try again."})
	}
	u, cred, ok := s.checkPassword(c.FormValue("username"), c.FormValue("password"))
	if !ok {
		tok := randomToken()
		s.setCookie(c, loginCookie, tok, 3600)
		s.log.Warn("web login failed", "user", c.FormValue("username"), "ip", c.RealIP())
		return s.page(c, http.StatusUnauthorized, "login", pageData{Title: "Log in", Error: "Wrong user name or password.", Next: safeNext(c.FormValue("next")), CSRF: tok, Extra: s.loginExtra()})
	}
	if err := s.startSession(c, u, "", cred); err != nil {
		return err
	}
	s.setCookie(c, loginCookie, "", -1)
	s.log.Info("web login", "user", u.Name, "role", u.Role)
	return c.Redirect(http.StatusSeeOther, safeNext(c.FormValue("next")))
}

func (s *Server) logout(c echo.Context) error {
	if u := s.currentUser(c); u != nil {
		if !s.checkCSRF(c, u) {
			return s.page(c, http.StatusForbidden, "error", pageData{Title: "Refused", Message: "The form was not sent from this site (missing or wrong CSRF token)."})
		}
		ck, _ := c.Cookie(sessionCookie)
		if err := s.opts.Sessions.DeleteSession(c.Request().Context(), sessionID(ck.Value)); err != nil {
			return err
		}
	}
	s.setCookie(c, sessionCookie, "", -1)
	return c.Redirect(http.StatusSeeOther, "/login")
}

func (s *Server) queuePage(c echo.Context) error {
	ctx := c.Request().Context()
	d, err := s.queueData(ctx, c.QueryParam("policy"))
	if err != nil {
		return err
	}
	if id := c.QueryParam("decided"); id != "" {
		// Computed here, not carried in the URL, so a link cannot put words
		// on the page.
		if r, err := s.svc.Get(ctx, id); err == nil && r.Status.Final() {
			d.Message = "Recorded: " + s.view(r).Explain(s.now())
			d.Extra["Decided"] = r.ID
		}
	}
	return s.page(c, http.StatusOK, "queue", d)
}

func (s *Server) detailPage(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := s.svc.Get(ctx, c.Param("id"))
	if gate.ErrorCode(err) == gate.ENOTFOUND {
		return s.page(c, http.StatusNotFound, "error", pageData{Title: "Not found", Message: "There is no request with this id."})
	}
	if err != nil {
		return err
	}
	evs, err := s.svc.Events(ctx, r.ID)
	if err != nil {
		return err
	}
	cards, err := s.svc.Cards(ctx, r.ID)
	if err != nil {
		return err
	}
	v := s.view(r)
	d := pageData{Title: v.Sentence, Request: v, Events: s.shownEvents(evs), Cards: cards}
	if c.QueryParam("decided") != "" {
		// Computed here, not carried in the URL, so a link cannot put words on the page.
		d.Message = "Recorded: " + v.Explain(s.now())
	}
	return s.page(c, http.StatusOK, "detail", d)
}

// decide applies a web verdict through the same compare-and-set as the
// channels. Auditors may look but not decide. An approval on a critical
// route is confirmed first: the page's script asks in place, and without it
// a confirmation page does. A verdict given on the queue lands back on the
// queue.
func (s *Server) decide(c echo.Context) error {
	u := s.currentUser(c)
	if !s.checkCSRF(c, u) {
		return s.page(c, http.StatusForbidden, "error", pageData{Title: "Refused", Message: "The form was not sent from this site (missing or wrong CSRF token). Reload the page and try again."})
	}
	if !u.CanDecide() {
		return s.page(c, http.StatusForbidden, "error", pageData{Title: "Not allowed", Message: fmt.Sprintf("Your role (%s) may read requests but not approve or reject them.", u.Role)})
	}
	verdict := c.FormValue("verdict")
	if verdict != "approve" && verdict != "reject" && verdict != "approve_for" {
		return s.page(c, http.StatusBadRequest, "error", pageData{Title: "Bad form", Message: "verdict must be approve, approve_for or reject."})
	}
	ctx := c.Request().Context()
	id := c.Param("id")
	notDecided := func(err error) error {
		code := gate.ErrorCode(err)
		if code == gate.EINTERNAL || code == gate.EUNAVAILABLE {
			return err
		}
		return s.page(c, statusOf(code), "error", pageData{Title: "Not decided", Message: gate.ErrorMessage(err),
			Extra: map[string]any{"Back": "/approvals/" + id}})
	}
	r, err := s.svc.Get(ctx, id)
	if err != nil {
		return notDecided(err)
	}
	v := s.view(r)
	if verdict != "reject" && v.Critical() && r.Status == gate.StatusPending && c.FormValue("confirmed") != "1" {
		return s.page(c, http.StatusOK, "confirm", pageData{Title: "Confirm the approval", Request: v,
			Extra: map[string]any{"Verdict": verdict, "Reason": c.FormValue("reason"), "ModifiedArgs": c.FormValue("modified_args"),
				"From": c.FormValue("from")}})
	}
	d := gate.Decision{RequestID: id, Approve: verdict != "reject", Remember: verdict == "approve_for",
		Actor: u.Identity(), Via: gate.WebChannel, Reason: c.FormValue("reason"), Entitled: s.entitled(u)}
	if d.Approve {
		args, err := s.editedArgs(c.FormValue("modified_args"), r)
		if err != nil {
			return notDecided(err)
		}
		d.ModifiedArgs = args
	}
	if r, err = s.svc.Decide(ctx, d); err != nil {
		return notDecided(err)
	}
	if c.FormValue("from") == "queue" {
		return c.Redirect(http.StatusSeeOther, "/?decided="+r.ID)
	}
	return c.Redirect(http.StatusSeeOther, "/approvals/"+r.ID+"?decided=1")
}

// editedArgs is the decide form's modified_args when the approver changed
// them. The page fills the field with the arguments as shown (redacted),
// so sending those back unchanged is no edit, and values left redacted are
// put back as the agent sent them: an edit never passes "[redacted]" on to
// the tool in place of a secret.
func (s *Server) editedArgs(form string, r *gate.Request) (json.RawMessage, error) {
	m := json.RawMessage(strings.TrimSpace(form))
	if len(m) == 0 {
		return nil, nil
	}
	rd := s.opts.Present.Redactor()
	if jsonx.Same(m, r.ToolArgs) || jsonx.Same(m, rd.JSON(r.ToolArgs)) {
		return nil, nil
	}
	whole, err := rd.Restore(m, r.ToolArgs)
	if err != nil {
		return nil, gate.Errorf(gate.EINVALID, "modified_args: %v", err)
	}
	if jsonx.Same(whole, r.ToolArgs) {
		return nil, nil
	}
	return whole, nil
}
