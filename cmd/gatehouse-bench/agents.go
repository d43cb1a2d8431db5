package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
)

type approval struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

type hookResult struct {
	RequestID string `json:"request_id"`
	Status    string `json:"status"`
	Allow     bool   `json:"allow"`
}

func call(ctx context.Context, method, url string, body any, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, data, err := roundTrip(req, nil)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %v", method, url, err)
		}
	}
	return resp.StatusCode, nil
}

func submission(key string) map[string]any {
	return map[string]any{"tool_name": "bench_deploy", "tool_args": map[string]any{"env": "bench", "key": key},
		"summary": "benchmark request " + key, "agent_id": "bench-agent", "idempotency_key": key}
}

// create posts an approval request and returns its id.
func create(ctx context.Context, base, key string) (string, error) {
	var a approval
	_, err := call(ctx, "POST", base+"/api/v1/approvals", submission(key), &a)
	return a.ID, err
}

// longPoll holds GET /api/v1/approvals/{id}?wait= until the verdict.
func longPoll(ctx context.Context, base, id string, wait time.Duration) (string, error) {
	var a approval
	_, err := call(ctx, "GET", base+"/api/v1/approvals/"+id+"?wait="+wait.String(), nil, &a)
	return a.Status, err
}

// get reads a request once, as a polling agent does.
func get(ctx context.Context, base, id string) (string, error) {
	var a approval
	_, err := call(ctx, "GET", base+"/api/v1/approvals/"+id, nil, &a)
	return a.Status, err
}

// gateCall is POST /api/v1/gate?wait=: create-or-attach and hold.
func gateCall(ctx context.Context, base, key string, wait time.Duration) (hookResult, error) {
	var h hookResult
	_, err := call(ctx, "POST", base+"/api/v1/gate?wait="+wait.String(), submission(key), &h)
	return h, err
}

// tap sends a signed Slack button tap for request id.
func tap(ctx context.Context, base, id string) error {
	req, err := newTap(ctx, base, id)
	if err != nil {
		return err
	}
	return sendTap(req, id, nil)
}

// newTap is the signed Slack request of an Approve tap on request id,
// built as Slack builds it before sending.
func newTap(ctx context.Context, base, id string) (*http.Request, error) {
	body := slacktest.Form(slacktest.BlockActions(slacktest.Tap{Team: benchTeam, User: benchUser, Channel: benchSlackCh,
		ActionID: "gatehouse_approve", Value: "approve:" + id, TriggerID: "trig." + id,
		ActionTS: strconv.FormatInt(time.Now().UnixNano(), 10)}))
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/callbacks/slack", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range slacktest.Sign(benchSecret, time.Now(), body) {
		req.Header[k] = v
	}
	return req, nil
}

// sendTap sends a tap built by newTap and checks Slack would see an ack;
// sent, when not nil, is called as its bytes go onto the socket.
func sendTap(req *http.Request, id string, sent func()) error {
	resp, _, err := roundTrip(req, sent)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("tap %s: %d", id, resp.StatusCode)
	}
	return nil
}

// waiters reads the gatehouse_waiters gauge from /metrics.
func waiters(ctx context.Context, base string) (int, error) {
	m, err := scrape(ctx, base, "gatehouse_waiters")
	if err != nil {
		return 0, err
	}
	v, ok := m["gatehouse_waiters"]
	if !ok {
		return 0, fmt.Errorf("no gatehouse_waiters in /metrics")
	}
	return int(v), nil
}

// scrape reads unlabelled series from /metrics.
func scrape(ctx context.Context, base string, names ...string) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	_, b, err := roundTrip(req, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		for _, n := range names {
			if v, ok := strings.CutPrefix(line, n+" "); ok {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					out[n] = f
				}
			}
		}
	}
	return out, nil
}
