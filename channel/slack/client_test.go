package slack

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
)

func TestPostRetries(t *testing.T) {
	saved := retryPolicy
	retryPolicy.Base = 10 * time.Millisecond
	t.Cleanup(func() { retryPolicy = saved })
	tests := []struct {
		name    string
		answers []func(http.ResponseWriter)
		calls   int
		wantErr string
	}{
		{"429 honours Retry-After", []func(http.ResponseWriter){slacktest.Status(429, "Retry-After", "1")}, 2, ""},
		{"5xx then success", []func(http.ResponseWriter){slacktest.Status(503), slacktest.Status(500)}, 3, ""},
		{"transient Slack error", []func(http.ResponseWriter){slacktest.Error("internal_error")}, 2, ""},
		{"5xx every time", []func(http.ResponseWriter){slacktest.Status(502), slacktest.Status(502), slacktest.Status(502)}, 3, "502"},
		{"Retry-After beyond the budget", []func(http.ResponseWriter){slacktest.Status(429, "Retry-After", "120")}, 1, "rate limit"},
		{"permanent error", []func(http.ResponseWriter){slacktest.Error("channel_not_found")}, 1, "channel_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSlack(t)
			f.FailNext("chat.postMessage", tt.answers...)
			c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0))
			start := time.Now()
			ref, err := c.Post(context.Background(), testRequest("01JREQ", t0))
			took := time.Since(start)
			if n := len(f.CallsOf("chat.postMessage")); n != tt.calls {
				t.Errorf("%d calls, want %d", n, tt.calls)
			}
			if tt.wantErr == "" {
				if err != nil || ref == "" {
					t.Fatalf("ref %q, err %v", ref, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want one saying %q", err, tt.wantErr)
			}
			if strings.HasPrefix(tt.name, "429") && took < time.Second {
				t.Errorf("retried after %v, before Retry-After", took)
			}
		})
	}
}

func TestUpdateRetriesTimeouts(t *testing.T) {
	saved := retryPolicy
	retryPolicy.Base, retryPolicy.PerAttempt = 10*time.Millisecond, 100*time.Millisecond
	t.Cleanup(func() { retryPolicy = saved })
	f := newFakeSlack(t)
	f.FailNext("chat.update", func(w http.ResponseWriter) { time.Sleep(300 * time.Millisecond); w.WriteHeader(500) })
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0))
	r := testRequest("01JREQ", t0)
	r.Status, r.DecidedBy = "approved", "web:alice"
	if err := c.Update(context.Background(), r, slackCh+":1.1"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.CallsOf("chat.update")); n != 2 {
		t.Errorf("%d calls, want 2 (one timed out)", n)
	}
}
