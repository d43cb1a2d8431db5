package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/client"
	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
)

// Exit codes of gatehouse request, for shell scripts:
// gatehouse request --tool deploy --args '{"env":"prod"}' && ./deploy.sh
const (
	exitApproved = 0
	exitRejected = 1
	exitExpired  = 2 // expired or cancelled
	exitError    = 3
	// exitEdited: approved only with edited arguments (modified_args,
	// printed with the verdict), so the call as asked was not approved.
	exitEdited = 4
)

func request(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("request", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tool := fs.String("tool", "", "tool name (required)")
	argsJSON := fs.String("args", "{}", "tool arguments as JSON")
	summary := fs.String("summary", "", "one line for the approver")
	route := fs.String("route", "", "route name (default: the first route that matches)")
	timeout := fs.Duration("timeout", 0, "how long to wait for a verdict (default: the route's)")
	agent := fs.String("agent", os.Getenv("GATEHOUSE_AGENT"), "agent id (default: the token's name)")
	key := fs.String("idempotency-key", "", "ties retries of one call to one request (default: random)")
	retryFor := fs.Duration("retry-for", 2*time.Minute, "how long to keep re-attaching to an unreachable server before giving up (exit 3)")
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	if fs.NArg() > 0 {
		// Flag parsing stops at the first other word: in --summary Deploy
		// prod --args '{"env":"prod"}', the approver would be asked about
		// empty arguments, and the script would run as if prod were approved.
		fmt.Fprintf(stderr, "gatehouse request: unexpected argument %q: the flags after it would be ignored (quote a value that has spaces)\n", fs.Arg(0))
		return exitError
	}
	if *tool == "" {
		fmt.Fprintln(stderr, "gatehouse request: --tool is required")
		return exitError
	}
	if !json.Valid([]byte(*argsJSON)) {
		fmt.Fprintln(stderr, "gatehouse request: --args is not valid JSON")
		return exitError
	}
	c := client.FromEnv()
	c.OnRetry = func(n int, err error) {
		fmt.Fprintf(stderr, "gatehouse request: server unreachable, re-attaching (attempt %d): %v\n", n, err)
	}
	req := client.Request{ToolName: *tool, ToolArgs: json.RawMessage(*argsJSON), Summary: *summary, Route: *route,
		AgentID: *agent, TimeoutSeconds: timeout.Seconds(), IdempotencyKey: *key}
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = client.NewKey()
	}
	// A server restart in the middle costs nothing: the client re-attaches
	// with the same key until the server has been gone for --retry-for.
	c.MaxOutage = *retryFor
	ctx := context.Background()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout+*retryFor)
		defer cancel()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Make the request first, to say where a person can follow it while
	// the agent waits; Gate then re-attaches with the same key. A first
	// attempt that fails is left to Gate, which retries it; one the policy
	// (or a grant) decided at once is the answer.
	res, err := c.Start(ctx, req)
	if err == nil && res.Status == "pending" && res.RequestID != "" {
		fmt.Fprintf(stderr, "gatehouse request: waiting for approval of request %s: %s\n", res.RequestID, c.PageURL(res))
	}
	if final := map[string]bool{"approved": true, "rejected": true, "expired": true, "cancelled": true}; err != nil || !final[res.Status] {
		if err == nil {
			req.RequestID = res.RequestID // an answer about another request is no verdict on this one
		}
		res, err = c.Gate(ctx, req)
	}
	out, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(out))
	if err != nil {
		var apiErr *client.APIError
		if errors.As(err, &apiErr) {
			fmt.Fprintf(stderr, "gatehouse request: %s\n", apiErr.Message)
		} else {
			fmt.Fprintf(stderr, "gatehouse request: %v\n", err)
		}
		return exitError
	}
	if res.Allow && jsonx.Edited(res.ModifiedArgs, req.ToolArgs) {
		fmt.Fprintf(stderr, "gatehouse request: approved only with edited arguments %s, not as asked\n", res.ModifiedArgs)
		return exitEdited
	}
	return exitCode(res)
}

// exitCode maps a verdict to the documented exit codes. An expiry on a route
// whose timeout verdict is allow exits 0: the verdict is allow.
func exitCode(res client.Result) int {
	switch {
	case res.Allow:
		return exitApproved
	case res.Status == "rejected":
		return exitRejected
	case res.Status == "expired" || res.Status == "cancelled":
		return exitExpired
	}
	return exitError
}
