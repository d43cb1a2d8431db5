// Package hookcmd is the command hook for agent clients, shared by
// `gatehouse hook CLIENT` and the lean `gatehouse-hook CLIENT`, which links
// nothing of the server and so starts as fast as a small Go program: it
// runs before every tool call the client makes.
package hookcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/client"
	"github.com/gatehouse-dev/gatehouse/hook"
	"github.com/gatehouse-dev/gatehouse/internal/wait"
)

// maxHookInput bounds what a command hook reads from stdin.
const maxHookInput = 4 << 20

// reportTimeout bounds handing a report of what ran to the server: the agent
// waits for the hook to end.
const reportTimeout = 5 * time.Second

// maxReport keeps a report under the server's 1 MiB body limit.
const maxReport = 1<<20 - 4<<10

// Run is `gatehouse hook CLIENT`: a command hook for an agent client.
// It reads the client's hook JSON on stdin, asks the server, and prints the
// client's decision. Every failure (no server, a bad token, unreadable
// input, no verdict in time) is that client's explicit deny, with a reason
// the user can act on, because the clients run the tool when a hook fails.
//
// A panic is a failure too: the process would end with exit 2 and nothing
// on stdout, which Copilot CLI, reading no exit code, takes as leave to
// run the tool. It is answered as for a client the hook cannot tell.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			code = anyDeny(stdout, stderr, fmt.Sprintf("gatehouse hook: internal error: %v", p))
		}
	}()
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") && hook.ClientNamed(args[0]) == "" {
		// A client the hook does not know (copilot-cli, gemini-cli): no
		// shape is known to be the right one, and Copilot CLI reads no exit
		// code. The input is read and refused as for any client; the
		// answer is a deny in every client's fields, with exit 2.
		var reason strings.Builder
		run(args, stdin, io.Discard, &reason)
		why := strings.TrimSpace(reason.String())
		if why == "" { // a report's input, answered as one
			why = fmt.Sprintf("gatehouse hook: unknown client %q: one of %s", args[0], strings.Join(hook.Clients, ", "))
		}
		return anyDeny(stdout, stderr, why)
	}
	return run(args, stdin, stdout, stderr)
}

// anyDeny is the answer when the hook cannot tell the client: exit 2 with
// the reason on stderr, which Claude Code, Codex, Gemini CLI and Cursor
// read as a block (and then ignore stdout), and on stdout a deny in the
// fields of every client that decides on stdout alone.
func anyDeny(stdout, stderr io.Writer, reason string) int {
	out := hook.AnyDeny(reason)
	fmt.Fprintln(stdout, string(out.Stdout))
	fmt.Fprintln(stderr, out.Stderr)
	return out.Exit
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		// Flags before the client's name: still that client's deny, since
		// some clients run the tool on an exit code alone.
		if l := clientAfterFlags(args); l != "" {
			return emit(stdout, stderr, hook.Invalid(hook.Call{Client: l, Event: hook.PreToolUse},
				fmt.Errorf("name the client first: gatehouse hook %s [flags]", l)))
		}
		return anyDeny(stdout, stderr, "gatehouse hook: name the client: one of "+strings.Join(hook.Clients, ", "))
	}
	name := args[0]
	if l := hook.ClientNamed(name); l != "" {
		name = l // Copilot: still copilot, whose deny is JSON, not an exit code
	}
	call := hook.Call{Client: name, Event: hook.PreToolUse}
	fs := flag.NewFlagSet("hook "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := hook.DefaultWait(name)
	if v := os.Getenv("GATEHOUSE_HOOK_WAIT"); v != "" {
		d, err := parseHookWait(v)
		if err != nil {
			return emit(stdout, stderr, hook.Invalid(call, fmt.Errorf("GATEHOUSE_HOOK_WAIT: %v", err)))
		}
		def = d
	}
	wait := fs.Duration("wait", def, "how long to wait for a verdict before denying; keep it under the client's hook timeout (env GATEHOUSE_HOOK_WAIT)")
	event := fs.String("event", "", "the hook event, for clients whose input does not name it (copilot: preToolUse or permissionRequest)")
	agent := fs.String("agent", os.Getenv("GATEHOUSE_AGENT"), "agent id (default: the token's name)")
	if err := fs.Parse(args[1:]); err != nil {
		return emit(stdout, stderr, hook.Invalid(call, fmt.Errorf("bad flags: %v", err)))
	}
	if fs.NArg() > 0 {
		// An event given as a word (copilot permissionRequest) would be
		// ignored, and the answer shaped for another event.
		return emit(stdout, stderr, hook.Invalid(call, fmt.Errorf("unexpected argument %q: name the event with --event", fs.Arg(0))))
	}
	if *wait <= 0 {
		return emit(stdout, stderr, hook.Invalid(call, errors.New("--wait must be positive")))
	}
	// The wait counts from the start, reading the input included: a
	// client that wrote its input but never closed stdin must get a deny
	// before its own timeout kills the hook, which most clients take as
	// leave to run the tool.
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	body, err := readInput(ctx, stdin)
	if err == nil && len(body) > maxHookInput {
		err = fmt.Errorf("larger than %d MiB", maxHookInput>>20)
	}
	if err != nil {
		if hook.LooksLikeReport(name, body) {
			call = hook.Call{Client: name, Event: hook.PostToolUse} // a report's failure is answered as a report
		}
		return emit(stdout, stderr, hook.Invalid(call, fmt.Errorf("reading stdin: %v", err)))
	}
	call, err = hook.ParseAs(name, body, *event)
	if err != nil {
		return emit(stdout, stderr, hook.Invalid(call, err))
	}
	if call.Report() {
		// The tool ran: hand the report to the server for the request's
		// trail, and let the client go on whatever comes of it.
		if err := client.FromEnv().Report(context.Background(), name, hook.SmallReport(call, body, maxReport), reportTimeout); err != nil {
			fmt.Fprintf(stderr, "gatehouse hook: what ran was not recorded: %v\n", err)
		}
		return emit(stdout, stderr, hook.Noted())
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := client.FromEnv()
	c.FailFast = true // no server at the first try: deny now, do not hold the agent
	// Polls shorter than the whole wait, so the last one still answers
	// "pending" (with the request id) before the wait is up.
	c.Wait = min(55*time.Second, max(*wait-2*time.Second, *wait/2))
	c.OnRetry = func(n int, err error) {
		fmt.Fprintf(stderr, "gatehouse hook: server unreachable, re-attaching (attempt %d): %v\n", n, err)
	}
	// The server maps the input, finds or makes the call's request, waits,
	// and answers in the client's words, which are printed as they are
	// when they are in the shape of the event this hook read, and either
	// say what the request's status allows (an approved or expired one may
	// allow, or leave it to the client's own prompt) or are this event's
	// deny.
	ans, err := c.Hook(ctx, name, body, client.HookOptions{Agent: *agent, Event: *event})
	fits := err == nil && hook.Fits(call, ans.Body)
	if fits && (ans.Status == "approved" || ans.Status == "expired" || hook.Denies(call, ans.Body)) {
		fmt.Fprintln(stdout, string(ans.Body))
		return 0
	}
	var v hook.Verdict
	switch {
	case fits:
		// A status that allows nothing (error, rejected, noted for a
		// call to gate) with an answer that does not deny, from a server
		// of another version or a proxy that rewrote the body: the client
		// would run the tool.
		v = hook.Failure(fmt.Sprintf("the gatehouse server at %s answered status %q with %s, which does not deny", c.URL, ans.Status, ans.Body))
	case err == nil:
		// An answer shaped for another event (from a server that failed
		// the call before it read the event, or an older one) holds no
		// decision the client reads, and the client would run the tool:
		// deny in this event's shape, passing the server's answer on.
		v = hook.Failure(fmt.Sprintf("the gatehouse server at %s answered this %s call in the shape of another event: %s", c.URL, call.Event, ans.Body))
	default:
		v = hookFailure(ctx, c, ans, err, *wait)
	}
	out := hook.Render(call, v)
	out.Stderr = v.Reason
	return emit(stdout, stderr, out)
}

func emit(stdout, stderr io.Writer, out hook.Output) int {
	// On exit 2 the clients read stderr alone.
	if len(out.Stdout) > 0 && out.Exit == 0 {
		fmt.Fprintln(stdout, string(out.Stdout))
	}
	if out.Stderr != "" {
		fmt.Fprintln(stderr, out.Stderr)
	}
	return out.Exit
}

// parseHookWait reads a wait as the server's ?wait= does (wait.Parse),
// which must be positive.
func parseHookWait(v string) (time.Duration, error) {
	d, err := wait.Parse(v)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration such as 590s", v)
	}
	return d, nil
}

// hookFailure says why no verdict came, in words that say what to do.
func hookFailure(ctx context.Context, c *client.Client, ans client.HookAnswer, err error, wait time.Duration) hook.Verdict {
	var apiErr *client.APIError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && ans.RequestID != "":
		v := hook.VerdictOf(hook.Outcome{RequestID: ans.RequestID, Status: hook.Pending}, wait)
		v.Reason += fmt.Sprintf(" (the hook waits %s: raise --wait or GATEHOUSE_HOOK_WAIT together with the client's hook timeout)", wait)
		return v
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return hook.Failure(fmt.Sprintf("no answer from the gatehouse server at %s within %s (%v): check that it is running and reachable", c.URL, wait, err))
	case ctx.Err() != nil:
		return hook.Failure("interrupted before a verdict")
	case errors.As(err, &apiErr) && apiErr.Status == 401:
		return hook.Failure(fmt.Sprintf("the gatehouse server at %s refused the token (%s): set GATEHOUSE_TOKEN to one of its auth.api_tokens", c.URL, apiErr.Message))
	case errors.As(err, &apiErr):
		return hook.Failure(fmt.Sprintf("the gatehouse server at %s refused the call: %s", c.URL, apiErr.Message))
	}
	return hook.Failure(fmt.Sprintf("gatehouse server unreachable at %s (%v): start it (gatehouse serve) or fix GATEHOUSE_URL", c.URL, err))
}

// readInput reads the hook's input, up to one byte past maxHookInput, until
// stdin closes or ctx ends (then an error; the read is left to the
// process's exit).
func readInput(ctx context.Context, stdin io.Reader) ([]byte, error) {
	type read struct {
		body []byte
		err  error
	}
	got := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(stdin, maxHookInput+1))
		got <- read{b, err}
	}()
	select {
	case r := <-got:
		return r.body, r.err
	case <-ctx.Done():
		return nil, errors.New("the client did not close the input within the hook's wait")
	}
}

// clientAfterFlags is the client a command line with the flags first names:
// the first word that is no flag's value, as the flag package reads it
// (every hook flag takes a value: --agent cursor copilot is copilot's),
// or else any word that is a client's name.
func clientAfterFlags(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" && i+1 < len(args):
			a = args[i+1] // the first positional word
		case a == "--":
			continue // the last word: no positional word follows
		case strings.HasPrefix(a, "-"):
			if !strings.Contains(a, "=") {
				i++ // the flag's value
			}
			continue
		}
		if l := hook.ClientNamed(a); l != "" {
			return l
		}
		break
	}
	for _, a := range args {
		if l := hook.ClientNamed(a); l != "" {
			return l
		}
	}
	return ""
}
