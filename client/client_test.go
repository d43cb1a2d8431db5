package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestGateSendsArgumentsAsWritten(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.Write([]byte(`{"request_id":"r1","status":"approved","allow":true}`))
	}))
	defer srv.Close()
	c := &Client{URL: srv.URL}
	if _, err := c.Gate(context.Background(), Request{ToolName: "Bash", ToolArgs: json.RawMessage(`{"command":"make && ./run <in >out"}`)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, `"make && ./run <in >out"`) {
		t.Fatalf("arguments were rewritten on the wire: %s", got)
	}
}

// TestGateReattachesThroughOutages: pending answers and 5xx are retried
// with the same idempotency key until the verdict comes.
func TestGateReattachesThroughOutages(t *testing.T) {
	var calls atomic.Int32
	keys := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req Request
		json.NewDecoder(r.Body).Decode(&req)
		keys[req.IdempotencyKey] = true
		switch calls.Add(1) {
		case 1:
			w.Write([]byte(`{"request_id":"r1","status":"pending","allow":false}`))
		case 2:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"request_id":"","status":"error","allow":false,"error":"database error"}`))
		default:
			w.Write([]byte(`{"request_id":"r1","status":"rejected","allow":false,"error":"Rejected by web:alice"}`))
		}
	}))
	defer srv.Close()
	var pending []string
	c := &Client{URL: srv.URL, Wait: time.Second, OnPending: func(r Result) { pending = append(pending, r.RequestID+" "+r.Status) }}
	res, err := c.Gate(context.Background(), Request{ToolName: "deploy"})
	if err != nil || res.Status != "rejected" || res.Allow || len(keys) != 1 || calls.Load() != 3 {
		t.Fatalf("res %+v err %v keys %v calls %d", res, err, keys, calls.Load())
	}
	if len(pending) != 1 || pending[0] != "r1 pending" {
		t.Fatalf("OnPending heard %q, want the one pending answer", pending)
	}
}

func TestGateGivesUpAsDeny(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"code":"unauthorized","message":"invalid bearer token"}}`))
	}))
	defer srv.Close()
	res, err := (&Client{URL: srv.URL}).Gate(context.Background(), Request{ToolName: "deploy"})
	var apiErr *APIError
	if err == nil || res.Allow || res.Status != "error" || !errors.As(err, &apiErr) || apiErr.Message != "invalid bearer token" {
		t.Fatalf("res %+v err %v", res, err)
	}
	srv.Close()
	res, err = (&Client{URL: srv.URL, MaxOutage: 300 * time.Millisecond}).Gate(context.Background(), Request{ToolName: "deploy"})
	if err == nil || res.Allow || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("server gone: res %+v err %v", res, err)
	}
}
