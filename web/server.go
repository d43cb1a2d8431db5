// Package web is Gatehouse's HTTP face: the agent API, the hook endpoints,
// the channel callback routes, and the web pages. Handlers are short; the
// domain work happens in gate.Service.
package web

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
	"github.com/gatehouse-dev/gatehouse/store"
)

// SessionStore keeps web logins. *store.DB implements it.
type SessionStore interface {
	CreateSession(ctx context.Context, s store.Session) error
	GetSession(ctx context.Context, id string, now time.Time) (store.Session, error)
	DeleteSession(ctx context.Context, id string) error
}

// Checkpointer signs the audit chain's head as it stands.
type Checkpointer interface {
	Checkpoint(ctx context.Context) (audit.Checkpoint, error)
}

// Options configure the server.
type Options struct {
	Service  *gate.Service
	Sessions SessionStore
	// Tokens and Users are those in force at start; SetAuth replaces them.
	Tokens []config.APIToken
	Users  []config.User
	// OIDC, when set, adds single sign-on to the web page (web/oidc.go).
	// PublicURL must then be set: the provider sends people back to it.
	OIDC      *config.OIDC
	PublicURL string
	// SessionTTL is how long a web login lasts. 12h when zero.
	SessionTTL time.Duration
	// Callbacks are channel callback handlers, mounted at POST /callbacks/{key}.
	Callbacks map[string]http.Handler
	// Metrics, when set, is served at GET /metrics.
	Metrics http.Handler
	// Checkpoints, when set, signs the audit chain's head for
	// GET /api/v1/audit/checkpoint. *audit.Keeper implements it.
	Checkpoints Checkpointer
	// BootstrapPassword, when no users are configured, lets "admin" log in
	// with it (the server prints it at start), so the zero-config server can
	// approve on the web page.
	BootstrapPassword string
	// Present shows requests to people: redacted, risk first, with their
	// route's looks (pages, exports, and the API for tokens reading
	// requests other than their own). nil: no redaction, no looks.
	Present *present.Presenter
	// MaxWait caps ?wait= on long polls. 10m when zero.
	MaxWait time.Duration
	Logger  *slog.Logger
	Now     func() time.Time
	Version string
}

// Server is the echo application.
type Server struct {
	e      *echo.Echo
	svc    *gate.Service
	opts   Options
	log    *slog.Logger
	now    func() time.Time
	auth   atomic.Pointer[authSet] // swapped whole by SetAuth
	pages  *pages
	sso    *ssoLogin // nil without auth.oidc
	http   *http.Server
	parked parkedCount // long polls answered off net/http (longpoll.go)
}

// parkedCount counts the parked long polls, so Shutdown can wait for their
// answers. Once it is closed nothing more parks.
type parkedCount struct {
	mu     sync.Mutex
	closed bool
	n      atomic.Int64
	wg     sync.WaitGroup
}

// add counts one more parked long poll, unless Shutdown has begun.
func (p *parkedCount) add() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.n.Add(1)
	p.wg.Add(1)
	return true
}

func (p *parkedCount) done() { p.n.Add(-1); p.wg.Done() }

// wait closes the count and waits, at most until ctx ends, for the parked
// long polls' answers.
func (p *parkedCount) wait(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

type tokenHash struct {
	name string
	sum  [32]byte
	// readAll and cancelAll are the token's scopes (config.ScopeReadAll,
	// config.ScopeCancelAll).
	readAll, cancelAll bool
}

// MaxBody is the largest request body accepted.
const MaxBody = 1 << 20

// New builds the server and parses its templates, so a broken template
// fails the boot rather than a request.
func New(o Options) (*Server, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = 12 * time.Hour
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 10 * time.Minute
	}
	s := &Server{e: echo.New(), svc: o.Service, opts: o, log: o.Logger, now: o.Now, sso: newSSO(o.OIDC, o.PublicURL)}
	s.SetAuth(o.Tokens, o.Users)
	if o.Service != nil {
		// A grant given on the web page holds while its giver may still
		// approve here.
		o.Service.SetWebGiverCheck(s.MayApprove)
	}
	p, err := newPages(s)
	if err != nil {
		return nil, err
	}
	s.pages = p
	s.e.HideBanner, s.e.HidePort = true, true
	s.e.HTTPErrorHandler = s.httpErrorHandler
	s.e.Use(middleware.Recover())
	s.e.Use(limitBody)
	s.e.Use(s.accessLog)
	s.routes()
	s.http = &http.Server{
		Handler:           s.e,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// No WriteTimeout: long polls hold responses open by design.
	}
	return s, nil
}

func (s *Server) routes() {
	e := s.e
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	if s.opts.Metrics != nil {
		e.GET("/metrics", echo.WrapHandler(s.opts.Metrics))
	}
	e.GET("/api/v1/openapi.json", s.openapi)
	// The token check is each route's, not the group's: echo gives a group
	// with middleware a catch-all route, which answers a known path asked
	// with another method 404 instead of 405.
	api := e.Group("/api/v1")
	api.POST("/approvals", s.createApproval, s.requireToken)
	api.GET("/approvals", s.listApprovals, s.requireToken)
	api.GET("/approvals/:id", s.getApproval, s.requireToken)
	api.POST("/approvals/:id/cancel", s.cancelApproval, s.requireToken)
	api.GET("/approvals/:id/events", s.approvalEvents, s.requireToken)
	api.POST("/gate", s.gate, s.requireToken)
	api.GET("/grants", s.listGrants, s.requireToken)
	api.GET("/audit/checkpoint", s.auditCheckpoint, s.requireToken)
	s.hookRoutes(e) // POST /hooks/{client}: bearer token checked, every failure a 200 deny (web/hooks.go)
	s.mcpRoute(e)   // POST /mcp: MCP streamable HTTP, the API's bearer tokens (web/mcp.go)
	for key, h := range s.opts.Callbacks {
		e.POST("/callbacks/"+key, echo.WrapHandler(h))
	}
	s.pages.routes(e)
}

// Handler returns the server as an http.Handler (tests use it directly).
func (s *Server) Handler() http.Handler { return s.e }

// Echo exposes the router so that features in sibling files of other
// packages (hooks) can mount their routes before Serve.
func (s *Server) Echo() *echo.Echo { return s.e }

// Serve answers on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops taking connections and waits for the ones in flight and
// for the parked long polls' answers. The service should be stopped first,
// so long polls return at once with "still pending, come back" rather than
// be cut.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	s.parked.wait(ctx)
	return err
}

func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		s.log.Debug("http", "method", c.Request().Method, "path", c.Request().URL.Path,
			"status", c.Response().Status, "took", time.Since(start))
		return nil
	}
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "version": s.opts.Version})
}

func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	if err := s.svc.Ping(ctx); err != nil {
		s.log.Warn("not ready: database unreachable", "err", err)
		return c.JSON(http.StatusServiceUnavailable, newErrorBody(gate.EUNAVAILABLE, "database unreachable"))
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// limitBody caps every request body at MaxBody by failing the read, not by
// answering 413 up front: each handler then answers in its own shape (the
// API's error JSON, /api/v1/gate's hook result, a hook client's deny, which
// must never be a bare 413 that some clients read as "proceed").
func limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		r.Body = http.MaxBytesReader(c.Response(), r.Body, MaxBody)
		return next(c)
	}
}

// tooLarge says a body read failed at limitBody's limit.
func tooLarge(err error) bool {
	var e *http.MaxBytesError
	return errors.As(err, &e)
}
