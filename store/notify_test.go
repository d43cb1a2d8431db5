package store_test

import (
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// Waking another replica is tested with two services in gate/.

func TestNotifierNeedsPostgres(t *testing.T) {
	if _, err := store.NewNotifier(context.Background(), storetest.SQLite(t)); err == nil {
		t.Fatal("a SQLite store got a LISTEN/NOTIFY notifier")
	}
}
