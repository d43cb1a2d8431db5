package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// HookAnswer is the server's answer to a hook call: the client's JSON
// (Body, to print as it is), the request's status (pending when the wait
// ended before a verdict, error for a failure the body denies) and id.
type HookAnswer struct {
	Status    string
	RequestID string
	Body      []byte
}

// HookOptions are what a command hook adds to the client's input.
type HookOptions struct {
	Agent string // the agent id to record (routes match the token)
	Event string // the hook event, for clients whose input does not name it
}

// Hook sends a client's hook input, as the client wrote it, to the
// server's hook endpoint (POST /hooks/{client}), which finds or makes the
// call's request, waits for the verdict and answers in the client's words.
// Like Gate it re-attaches through long polls that end still pending,
// dropped connections, 5xx answers and restarts (the input's keys lead
// back to the same request), until ctx ends: then the last answer is
// returned, pending (with its request id), with ctx's error.
func (c *Client) Hook(ctx context.Context, client string, input []byte, o HookOptions) (HookAnswer, error) {
	wait := c.wait()
	q := url.Values{"wait": {wait.String()}}
	if o.Agent != "" {
		q.Set("agent", o.Agent)
	}
	if o.Event != "" {
		q.Set("event", o.Event)
	}
	target := strings.TrimRight(c.URL, "/") + "/hooks/" + url.PathEscape(client) + "?" + q.Encode()
	var ans, last HookAnswer
	err := c.exchange(ctx, func() (bool, error) {
		var err error
		if ans, err = c.postHook(ctx, target, input, wait+15*time.Second); err != nil {
			return false, err
		}
		if last.RequestID != "" && ans.RequestID != last.RequestID && ans.Status != hookError {
			// The server named the call's request on a pending answer: an
			// answer about another (a cache in the way, another caller's)
			// is no verdict on this call, as for Gate. (The server's own
			// failure, a deny that names no request, says what failed.)
			return false, aboutAnother("request", ans.RequestID, last.RequestID)
		}
		if ans.Status != "pending" {
			return false, nil
		}
		last = ans
		return true, nil
	})
	if err != nil {
		return last, err
	}
	return ans, nil
}

// hookStatus is the header naming the request's status on a hook answer;
// hookError is its value on the server's failure, whose body denies.
const (
	hookStatus = "Gatehouse-Status"
	hookError  = "error"
)

func (c *Client) postHook(ctx context.Context, target string, input []byte, timeout time.Duration) (HookAnswer, error) {
	h, data, err := c.send(ctx, target, input, timeout)
	if err != nil {
		return HookAnswer{}, err
	}
	status := h.Get(hookStatus)
	if status == "" {
		// Something answered 200 that is not Gatehouse's hook endpoint (a
		// wrong GATEHOUSE_URL, a captive proxy): its body is no verdict.
		return HookAnswer{}, &APIError{Status: http.StatusOK, Code: "not_gatehouse",
			Message: "the answer from " + c.URL + " is not a Gatehouse hook answer (no " + hookStatus + " header): check GATEHOUSE_URL"}
	}
	if !jsonObject(data) {
		// The answer is printed for the agent client to read as its
		// verdict; one it cannot read (cut short, or rewritten by a proxy
		// on the way) would let the call through.
		return HookAnswer{}, &APIError{Status: http.StatusOK, Code: "bad_answer",
			Message: "the hook answer from " + c.URL + " is not a JSON object: " + strconv.Quote(string(data[:min(len(data), 80)]))}
	}
	return HookAnswer{Status: status, RequestID: h.Get("Gatehouse-Request-Id"), Body: data}, nil
}

// jsonObject reports whether data is one JSON object.
func jsonObject(data []byte) bool {
	trimmed := bytes.TrimSpace(data)
	return len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed)
}
