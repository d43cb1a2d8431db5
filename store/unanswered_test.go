package store_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// silentProxy forwards TCP to a server until silence, from which it
// forwards nothing more and answers nothing, holding every connection
// open: a network that drops packets, as a failed switch or a security
// group change does, where the server's port is neither closed nor
// refusing.
type silentProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	quiet  bool
	conns  []net.Conn
}

func newSilentProxy(t *testing.T, target string) *silentProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silentProxy{ln: ln, target: target}
	go p.serve()
	return p
}

func (p *silentProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		quiet := p.quiet
		p.mu.Unlock()
		if quiet {
			continue // accepted, never answered
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, s)
		p.mu.Unlock()
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

// pipe copies until silence, then swallows what comes.
func (p *silentProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		quiet := p.quiet
		p.mu.Unlock()
		if n > 0 && !quiet {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *silentProxy) silence() {
	p.mu.Lock()
	p.quiet = true
	p.mu.Unlock()
}

func (p *silentProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// A PostgreSQL that stops answering fails the writes and reads a gate call
// needs within the store's bound, so the gate answers deny at once rather
// than holding the agent (and a goroutine) for as long as TCP retries; the
// background loops' work fails within it too, so their next round tries
// again on a fresh connection.
func TestPostgresThatStopsAnsweringFailsInTime(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		t.Skipf("%s is not a URL with a host: %v", storetest.EnvPostgres, err)
	}
	const bound = time.Second
	defer store.SetOpTimeout(bound)()
	proxy := newSilentProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	db := storetest.Open(t, store.Postgres, u.String())
	t.Cleanup(proxy.close) // runs before the store's Close, which would wait on a silent peer
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	req := func(id string) *gate.Request {
		return &gate.Request{ID: id, Status: gate.StatusPending, ToolName: "deploy", ToolArgs: []byte(`{}`), Metadata: []byte(`{}`),
			Route: "default", Quorum: 1, OnTimeout: gate.VerdictDeny, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	if _, _, err := db.Create(ctx, req("01JBEFORE"), nil); err != nil {
		t.Fatal(err)
	}
	// Open connections first, so the operations below find live ones in
	// the pool and stall mid-statement, not only while connecting.
	var warm sync.WaitGroup
	for range 10 {
		warm.Go(func() {
			if _, err := db.Get(ctx, "01JBEFORE"); err != nil {
				t.Error(err)
			}
		})
	}
	warm.Wait()
	proxy.silence()
	ops := []struct {
		name string
		do   func() error
	}{
		{"create", func() error { _, _, err := db.Create(ctx, req("01JAFTER"), nil); return err }},
		{"decide", func() error {
			_, err := db.Transition(ctx, gate.Transition{ID: "01JBEFORE", To: gate.StatusApproved, At: now, By: "web:a", Via: "web"})
			return err
		}},
		{"get", func() error { _, err := db.Get(ctx, "01JBEFORE"); return err }},
		{"by key", func() error { _, err := db.ByKey(ctx, "bot", "k1"); return err }},
		{"key states", func() error { _, err := db.KeyStates(ctx, "bot", []string{"k1", "k1-1"}); return err }},
		{"grant", func() error { _, err := db.FindGrant(ctx, "default", "bot", "deploy", "", now); return err }},
		{"rate", func() error { _, err := db.CountCall(ctx, "r", now, now); return err }},
		{"list", func() error { _, _, err := db.List(ctx, gate.Filter{Limit: 10}); return err }},
		{"events", func() error { _, err := db.Events(ctx, "01JBEFORE"); return err }},
		{"votes", func() error { _, err := db.Votes(ctx, "01JBEFORE"); return err }},
		// The background loops' work.
		{"overdue", func() error { _, err := db.Overdue(ctx, now, 10); return err }},
		{"safety re-read", func() error { _, err := db.Settled(ctx, []string{"01JBEFORE"}); return err }},
		{"due steps", func() error { _, err := db.DueSteps(ctx, now, 10); return err }},
		{"cards", func() error { _, err := db.Cards(ctx, "01JBEFORE"); return err }},
		{"seal", func() error { _, err := db.Seal(ctx, 10); return err }},
		{"retention", func() error { _, err := db.Prune(ctx, now, now, 10, nil); return err }},
		{"chain head", func() error { _, err := db.ChainHead(ctx); return err }},
		{"chain records", func() error { _, err := db.ChainRecords(ctx, 0, 10); return err }},
		{"unsealed", func() error { _, err := db.Unsealed(ctx); return err }},
		{"grants", func() error { _, err := db.Grants(ctx, nil, false, now); return err }},
		{"session", func() error { _, err := db.GetSession(ctx, "s1", now); return err }},
		{"sign-in", func() error {
			return db.CreateSession(ctx, store.Session{ID: "s2", UserName: "alice", CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
		}},
		{"sign-out", func() error { return db.DeleteSession(ctx, "s1") }},
		{"purge sessions", func() error { return db.PurgeSessions(ctx, now) }},
	}
	// All at once: each on a connection of its own or waiting for one,
	// all in the silence.
	var wg sync.WaitGroup
	for _, op := range ops {
		wg.Go(func() {
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- op.do() }()
			select {
			case err := <-done:
				took := time.Since(start)
				if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
					t.Errorf("%s: %v, want the bound's deadline", op.name, err)
				} else if took < bound {
					t.Errorf("%s failed after %v, before the bound: not the silence's doing", op.name, took)
				}
			case <-time.After(20 * time.Second):
				t.Errorf("%s: no answer 20 s after the database fell silent (the bound is %v)", op.name, bound)
			}
		})
	}
	wg.Wait()
}
