package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
	"github.com/gatehouse-dev/gatehouse/internal/redact"
	"github.com/gatehouse-dev/gatehouse/metrics"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/web"
)

// loadConfig parses a subcommand's --config flag (GATEHOUSE_CONFIG by
// default) and loads the file, printing every problem when it is invalid.
func loadConfig(name string, args []string, stderr io.Writer) (*config.Config, string, bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", os.Getenv("GATEHOUSE_CONFIG"), "config file (default: built-in: SQLite gatehouse.db, 127.0.0.1:8080, web approvals)")
	if err := fs.Parse(args); err != nil {
		return nil, "", false
	}
	if strayArgs(name, fs, stderr) {
		return nil, "", false
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse: invalid config:\n%s\n", indent(err))
		return nil, "", false
	}
	return cfg, *path, true
}

// strayArgs refuses arguments after the flags: a config file named there
// instead of with --config would be ignored, and the command would run on
// the built-in config (its ./gatehouse.db) and report on that.
func strayArgs(name string, fs *flag.FlagSet, stderr io.Writer) bool {
	if fs.NArg() == 0 {
		return false
	}
	fmt.Fprintf(stderr, "gatehouse %s: unexpected argument %q (give a config file with --config)\n", name, fs.Arg(0))
	return true
}

func serve(args []string, stderr io.Writer) int {
	cfg, path, ok := loadConfig("serve", args, stderr)
	if !ok {
		return 2
	}
	rd, err := redact.New(cfg.Redact.Keys, cfg.Redact.Patterns)
	if err != nil { // validated already; a second line of defence
		fmt.Fprintf(stderr, "gatehouse: invalid config:\n  %v\n", err)
		return 2
	}
	log := slog.New(redact.Handler(newLogger(cfg.Log, stderr).Handler(), rd))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runServer(ctx, cfg, path, log, rd); err != nil {
		log.Error("gatehouse stopped", "err", err)
		return 1
	}
	return 0
}

func newLogger(c config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cmp.Or(c.Level, "info")))
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// runServer wires the parts together and runs until ctx ends, reloading
// the config at path on SIGHUP, then shuts down in order: waiters first
// (told to come back), then HTTP, then the background loops and channel
// connections, then the database.
func runServer(ctx context.Context, cfg *config.Config, path string, log *slog.Logger, rd *redact.Redactor) error {
	db, err := store.Open(ctx, store.Options{Driver: cfg.Database.Driver, DSN: cfg.Database.DSN,
		MaxOpenConns: cfg.Database.MaxOpenConns, Migrate: true, Logger: log})
	if err != nil {
		return err
	}
	defer db.Close()

	var notifier gate.Notifier
	if db.Driver() == store.Postgres {
		// Replicas on one PostgreSQL wake each other's waiters at once.
		n, err := store.NewNotifier(ctx, db)
		if err != nil {
			return err
		}
		notifier = n
	}
	m := metrics.New()
	svc := gate.NewService(gate.Options{
		Store:       db,
		Notifier:    notifier,
		Observer:    m,
		Routes:      routes(cfg),
		Defaults:    defaults(cfg),
		People:      people(cfg),
		Logger:      log,
		CardWorkers: cfg.Cards.Workers,
		StepTick:    stepTick(cfg),
	})
	svc.Register(web.Channel{})
	// Everything shown to people goes through the presenter: redacted, with
	// the route's label and severity as the routes in force say.
	pres := &present.Presenter{Redact: rd, Looks: svc.RouteLooks}
	built, err := buildChannels(cfg, svc, pres, log)
	if err != nil {
		return err
	}
	for _, ch := range built.channels {
		svc.Register(ch)
	}

	bootstrap := ""
	if len(cfg.Auth.Users) == 0 && cfg.Auth.OIDC == nil {
		bootstrap = randomPassword()
		log.Warn("no web users configured: log in as admin with this one-time password (it changes at every start; add users with gatehouse user add)",
			"user", "admin", "password", bootstrap)
	}
	for _, w := range startWarnings(cfg) {
		log.Warn(w)
	}
	keeper, err := auditKeeper(cfg, db, log)
	if err != nil {
		return err
	}
	var checkpoints web.Checkpointer
	if cfg.Audit.SigningKey != "" {
		checkpoints = keeper
	}
	srv, err := web.New(web.Options{
		Service: svc, Sessions: db, Tokens: cfg.Auth.APITokens, Users: cfg.Auth.Users, OIDC: cfg.Auth.OIDC, PublicURL: cfg.PublicURL,
		SessionTTL: cfg.Auth.SessionTTL.D(), Callbacks: built.callbacks, BootstrapPassword: bootstrap,
		Logger: log, Version: versionString(), Metrics: m.Handler(), Checkpoints: checkpoints, Present: pres,
	})
	if err != nil {
		return err
	}
	srv.Echo().Use(m.Middleware())
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}

	bg, cancelBG := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBG()
	svc.Start(bg)
	var wg sync.WaitGroup
	for _, r := range built.runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Run(bg); err != nil && bg.Err() == nil {
				log.Error("channel connection stopped", "err", err)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		keeper.Run(bg) // the audit chain's sealer, retention and checkpoint files
	}()
	go purgeSessions(bg, db, log)
	if addr := os.Getenv("GATEHOUSE_PPROF"); addr != "" {
		go servePprof(bg, addr, log)
	}

	rl := &reloader{path: path, started: cfg, channels: []string{gate.WebChannel}, svc: svc, srv: srv, log: log}
	for _, ch := range built.channels {
		rl.channels = append(rl.channels, ch.Name())
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("gatehouse listening", "addr", "http://"+ln.Addr().String(), "version", versionString(),
		"database", cfg.Database.Driver, "channels", len(built.channels)+1)

wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case err := <-serveErr:
			return err
		case <-hup:
			if err := rl.reload(); err != nil {
				log.Error("config reload refused", "err", err)
			}
		}
	}
	log.Info("shutting down: telling waiting agents to come back")
	svc.Stop()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("shutdown", "err", err)
	}
	flush(built.flushers, 10*time.Second, log)
	// The card posts and updates in flight finish and are recorded before
	// their context ends: cancelled, a post the platform already shows
	// would be recorded as failed, and posted again after the restart.
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	svc.Drain(dctx)
	cancelBG()
	wg.Wait()
	return nil
}

// auditKeeper builds the audit chain's background work from the config.
func auditKeeper(cfg *config.Config, db *store.DB, log *slog.Logger) (*audit.Keeper, error) {
	o := audit.Options{Store: db, Keep: cfg.Retention.Keep.D(), CheckpointDir: cfg.Audit.CheckpointDir,
		CheckpointInterval: cfg.Audit.CheckpointInterval.D(), Logger: log}
	if cfg.Audit.SigningKey != "" {
		k, err := audit.ParseKey([]byte(cfg.Audit.SigningKey))
		if err != nil {
			return nil, fmt.Errorf("audit.signing_key_file: %w", err)
		}
		o.Key = k
	}
	return audit.NewKeeper(o), nil
}

// startWarnings are what serve logs at start, and check-config prints,
// about a config that works but probably not as meant: the config's own
// warnings, and an agent API open to whoever can reach it.
func startWarnings(cfg *config.Config) []string {
	ws := cfg.Warnings()
	if len(cfg.Auth.APITokens) == 0 {
		ws = append(ws, "no api_tokens configured: the agent API is open to anyone who can reach "+cfg.Listen)
	}
	return ws
}

// routes turns the config's routes into the gate's.
func routes(cfg *config.Config) []gate.Route {
	out := make([]gate.Route, len(cfg.Routes))
	for i, r := range cfg.Routes {
		chs := r.Channels
		if len(chs) == 0 {
			chs = cfg.Defaults.Channels
		}
		if len(chs) == 0 {
			chs = []string{gate.WebChannel}
		}
		action := policy.Action(r.Action)
		if r.Action == "" && r.Confirm != nil && !*r.Confirm {
			action = policy.Agent // the older confirm: false
		}
		g := gate.Route{Name: r.Name, Tool: r.Match.Tool, Agent: r.Match.Agent, When: r.Match.When, Calls: r.Match.Call,
			Action: action, Message: r.Message, NoRecord: r.Record != nil && !*r.Record,
			Channels: chs, Approvers: r.Approvers, Quorum: r.Quorum, Timeout: r.Timeout.D(), OnTimeout: gate.Verdict(r.OnTimeout),
			Looks: gate.Looks{Label: r.Label, Severity: r.Severity}}
		if r.Remember != nil {
			g.Remember, g.RememberAny = r.Remember.For.D(), r.Remember.Args == "any"
		}
		if r.Rate != nil {
			g.Rate = &gate.Rate{Limit: r.Rate.Limit, Per: r.Rate.Per.D(), By: r.Rate.By}
		}
		g.Plan = plan(r)
		out[i] = g
	}
	return out
}

// stepTick is how often due reminders and escalations are looked for:
// every second, or twice as often as the most frequent step a route
// schedules (at least every 50 ms), so they come close to their time.
func stepTick(cfg *config.Config) time.Duration {
	tick := time.Second
	for _, r := range cfg.Routes {
		steps := []time.Duration{r.Remind.D()}
		for _, e := range r.Escalate {
			steps = append(steps, e.After.D())
		}
		for _, d := range steps {
			if d > 0 {
				tick = min(tick, max(d/2, 50*time.Millisecond))
			}
		}
	}
	return tick
}

// plan is what a route asks of people beyond its first cards.
func plan(r config.Route) gate.Plan {
	p := gate.Plan{ForbidSelf: r.SelfApproval == config.SelfApprovalForbid, Remind: r.Remind.D()}
	switch r.Notify {
	case config.NotifyDM:
		p.Notify = gate.NotifyDM
	case config.NotifyBoth:
		p.Notify = gate.NotifyBoth
	}
	for _, e := range r.Escalate {
		p.Escalate = append(p.Escalate, gate.Escalation{After: e.After.D(), Channels: e.Channels, Approvers: e.Approvers})
	}
	return p
}

// people turns the config's people, and the tokens that belong to them,
// into the gate's.
func people(cfg *config.Config) *gate.People {
	persons := make([]gate.Person, len(cfg.People))
	for i, p := range cfg.People {
		persons[i] = gate.Person{Name: p.Name, Identities: p.Identities, Users: p.Users}
	}
	tokens := map[string]string{}
	for _, t := range cfg.Auth.APITokens {
		if t.Person != "" {
			tokens[t.Name] = t.Person
		}
	}
	return gate.NewPeople(persons, tokens)
}

// defaults turns the config's defaults into the gate's.
func defaults(cfg *config.Config) gate.Defaults {
	d := cfg.Defaults
	return gate.Defaults{Action: policy.Action(d.Action), Timeout: d.Timeout.D(), MaxTimeout: d.MaxTimeout.D(),
		OnTimeout: gate.Verdict(d.OnTimeout), Channels: d.Channels, Approvers: d.Approvers}
}

func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func purgeSessions(ctx context.Context, db *store.DB, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if err := db.PurgeSessions(ctx, time.Now()); err != nil && ctx.Err() == nil {
			log.Warn("purging expired sessions failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func indent(err error) string {
	var errs config.Errors
	if errors.As(err, &errs) {
		s := ""
		for _, e := range errs {
			s += "  " + e.Error() + "\n"
		}
		return s[:len(s)-1]
	}
	return "  " + err.Error()
}

// flush waits, up to limit, for channels to finish taps they acknowledged
// (Slack is answered before its verdict is recorded).
func flush(fs []interface{ Flush() }, limit time.Duration, log *slog.Logger) {
	done := make(chan struct{})
	go func() {
		for _, f := range fs {
			f.Flush()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		log.Warn("shutdown: acknowledged taps still being recorded after " + limit.String())
	}
}
