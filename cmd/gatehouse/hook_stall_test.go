package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/metrics"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
	"github.com/gatehouse-dev/gatehouse/web"
)

// TestHookEndpointAnswersWithinItsWaitWhenTheDatabaseStalls: POST
// /hooks/{client} promises an answer within ?wait=, so the client's hook
// timeout, set a little above it (590 s against 600 s), never runs out. A
// database that stalls (a lock held by a migration, a backup, a stuck
// transaction) held the call past the wait for as long as it stalled: the
// client timed the http hook out, and Claude Code runs the tool when an http
// hook times out. Skipped without GATEHOUSE_TEST_POSTGRES.
func TestHookEndpointAnswersWithinItsWaitWhenTheDatabaseStalls(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	db, err := store.Open(ctx, store.Options{Driver: store.Postgres, DSN: dsn, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := gate.NewService(gate.Options{Store: db, Routes: hookTestRoutes, Observer: metrics.New()})
	svc.Register(web.Channel{})
	srv, err := web.New(web.Options{Service: svc, Sessions: db, Tokens: []config.APIToken{{Name: "agent", Token: hookToken}}})
	if err != nil {
		t.Fatal(err)
	}
	svc.Start(ctx)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { svc.Stop(); ts.Close() })

	// Another session locks the requests table for 30 s.
	locker, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	tx := locker.Begin()
	if err := tx.Exec("LOCK TABLE requests IN ACCESS EXCLUSIVE MODE").Error; err != nil {
		t.Fatal(err)
	}
	release := time.AfterFunc(30*time.Second, func() { tx.Rollback() })
	t.Cleanup(func() { release.Stop(); tx.Rollback() })

	// The client: its hook timeout 10 s above the hook's wait, as the docs
	// set them (590 s and 600 s).
	client := &http.Client{Timeout: 12 * time.Second}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/hooks/claude-code?wait=2s", strings.NewReader(ccPre))
	req.Header.Set("Authorization", "Bearer "+hookToken)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("after %s: %v: the client's hook timed out, and Claude Code runs the tool", time.Since(start).Round(time.Second), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	t.Logf("after %s: %s", time.Since(start).Round(100*time.Millisecond), body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"permissionDecision":"deny"`) {
		t.Errorf("%d %s; want a deny", resp.StatusCode, body)
	}
}
