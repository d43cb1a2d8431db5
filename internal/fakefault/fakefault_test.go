package fakefault

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestTake(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var s Set
	s.Add(Fault{Status: 503, Methods: []string{"chat.postMessage"}, Calls: 2})
	s.Add(Fault{Status: 500, From: now.Add(time.Second), Until: now.Add(2 * time.Second)})
	s.Add(Fault{Status: 429, Until: now.Add(time.Second)})
	want := []struct {
		method string
		at     time.Time
		name   string
	}{
		{"chat.postMessage", now, "503"},
		{"chat.update", now, "429"},
		{"chat.postMessage", now, "503"},
		{"chat.postMessage", now, "429"}, // the 503s are spent
		{"chat.postMessage", now.Add(time.Second), "500"},
		{"chat.postMessage", now.Add(2 * time.Second), ""},
	}
	for i, w := range want {
		got := ""
		if f := s.Take(w.method, w.at); f != nil {
			got = f.Name()
		}
		if got != w.name {
			t.Errorf("call %d (%s): fault %q, want %q", i, w.method, got, w.name)
		}
	}
	s.Add(Fault{Hang: true})
	s.Clear()
	if f := s.Take("x", now); f != nil {
		t.Errorf("after Clear: %q", f.Name())
	}
}

func TestServe(t *testing.T) {
	var s Set
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := s.Take("", time.Now()); f != nil {
			f.Serve(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	s.Add(Fault{Status: 429, RetryAfter: 1500 * time.Millisecond, Calls: 1})
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("429: got %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	s.Add(Fault{Hang: true, Calls: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a hung call ended with %v, want the caller's timeout", err)
	}
	if resp, err := http.Get(srv.URL); err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the faults: %v %v", resp, err)
	}
}
