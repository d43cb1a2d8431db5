package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/hook"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/web"
)

// policyCmd is `gatehouse policy test`: the operator's dry run of the
// config's policy over one call, without a server or a database.
func policyCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "test" {
		fmt.Fprint(stderr, "usage: gatehouse policy test [--config FILE] --tool NAME [--args JSON] [--agent A] [--user U] [--session S]\n"+
			"       gatehouse policy test [--config FILE] --hook CLIENT [--agent A] < hook-input.json\n")
		return 2
	}
	fs := flag.NewFlagSet("policy test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", os.Getenv("GATEHOUSE_CONFIG"), "config file (default: the built-in one)")
	tool := fs.String("tool", "", "the tool name")
	argsJSON := fs.String("args", "{}", "the tool arguments, as JSON")
	agent := fs.String("agent", "", "the agent: the API token's name, which routes' match.agent globs match")
	label := fs.String("agent-id", "", "the agent_id the caller sends (CEL: agent_label)")
	user := fs.String("user", "", "the user_id the caller sends")
	session := fs.String("session", "", "the session_id the caller sends")
	metaJSON := fs.String("metadata", "", "the metadata the caller sends, as a JSON object")
	hookClient := fs.String("hook", "", "read a hook payload of this client on stdin ("+strings.Join(hook.Clients, ", ")+") instead of --tool and --args")
	event := fs.String("event", "", "with --hook: the event the hook is registered on, for clients whose input names none (Copilot), as gatehouse hook --event")
	var confirm *bool
	fs.Func("requires-confirmation", "true or false, as the agent would send it (default: unset, which asks where the agent's flag decides: no route matches "+
		"and defaults.action is unset, or a confirm: false route; on an allow route only true turns the allow into an ask)", func(s string) error {
		b, err := strconv.ParseBool(s)
		confirm = &b
		return err
	})
	if err := fs.Parse(args[1:]); err != nil || strayArgs("policy test", fs, stderr) {
		return 2
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse: invalid config:\n%s\n", indent(err))
		return 1
	}

	var in gate.Submission
	switch {
	case *hookClient != "":
		if *tool != "" {
			fmt.Fprintln(stderr, "gatehouse policy test: give --hook or --tool, not both")
			return 2
		}
		body, err := io.ReadAll(io.LimitReader(stdin, web.MaxBody+1))
		if err != nil {
			fmt.Fprintf(stderr, "gatehouse policy test: reading stdin: %v\n", err)
			return 1
		}
		call, err := hook.ParseAs(*hookClient, body, *event)
		if err != nil {
			fmt.Fprintf(stderr, "gatehouse policy test: %v\n", err)
			return 1
		}
		in = web.HookSubmission(call.Ask(0))
	case *tool == "":
		fmt.Fprintln(stderr, "gatehouse policy test: --tool (or --hook) is required")
		return 2
	default:
		in = gate.Submission{ToolName: *tool, ToolArgs: json.RawMessage(*argsJSON), Metadata: json.RawMessage(*metaJSON),
			RequiresConfirmation: confirm}
		if !json.Valid(in.ToolArgs) {
			fmt.Fprintf(stderr, "gatehouse policy test: --args is not valid JSON: %s\n", *argsJSON)
			return 2
		}
	}
	if confirm != nil {
		in.RequiresConfirmation = confirm
	}
	if names := tokenNames(cfg); len(names) > 0 && !slices.Contains(names, *agent) {
		// With tokens, every call the server takes comes with one, and
		// routes' match.agent, grants and rate limits go by its name; a
		// dry run without one would route on --agent-id, as no live call
		// is routed.
		if *agent == "" {
			fmt.Fprintf(stderr, "gatehouse policy test: --agent is required: the config has api_tokens, so every call comes with one and routes match its name, not --agent-id (tokens: %s)\n", strings.Join(names, ", "))
		} else {
			fmt.Fprintf(stderr, "gatehouse policy test: --agent %q names no token of the config's api_tokens (%s)\n", *agent, strings.Join(names, ", "))
		}
		return 2
	}
	in.Caller, in.AgentID, in.UserID = *agent, *label, *user
	if in.AgentID == "" {
		in.AgentID = *agent // as the server labels a call that names no agent_id
	}
	if len(tokenNames(cfg)) == 0 {
		// Without tokens, no call comes with a token's name: the server
		// routes on the agent_id the caller sends (a hook's, when it sends
		// none, is "anonymous"), so --agent can only be that label.
		in.Caller = ""
		if in.AgentID == "" && *hookClient != "" {
			in.AgentID = "anonymous"
		}
	}
	if *session != "" {
		in.SessionID = *session
	}
	ex, err := gate.Explain(routes(cfg), defaults(cfg), in, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse policy test: %s\n", gate.ErrorMessage(err))
		return 1
	}
	if *hookClient != "" {
		// What the hook answers the client, which is not always the
		// action: an allow only the agent's flag gave (hooks send false)
		// leaves the call to the client's own prompt, as the hook does.
		switch ex.Hook = string(ex.Action); {
		case ex.Action == policy.Allow && ex.AgentDecided:
			ex.Hook = "defer"
			ex.Why = append(ex.Why, fmt.Sprintf("the hook leaves the call to %s's own permission prompt: nothing in the config allows or asks about it", *hookClient))
		case ex.Action == policy.Ask:
			ex.Why = append(ex.Why, "the hook waits for the person's verdict and answers it (deny when its wait runs out first)")
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ex); err != nil {
		return 1
	}
	return 0
}

// tokenNames are the names of the config's API tokens.
func tokenNames(cfg *config.Config) []string {
	var names []string
	for _, t := range cfg.Auth.APITokens {
		names = append(names, t.Name)
	}
	return names
}
