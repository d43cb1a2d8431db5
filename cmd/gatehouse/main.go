// Command gatehouse is the Gatehouse binary: the approval server and the
// tools around it (request, hook, mcp, check-config, user, migrate, audit, version).
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/gatehouse-dev/gatehouse/cmd/internal/hookcmd"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

const usage = `gatehouse: human-in-the-loop approvals for AI agents

Usage:
  gatehouse serve [--config FILE]            run the server
  gatehouse request --tool NAME [--args JSON] [--summary TEXT] [--route NAME] [--timeout 10m]
                                             ask for approval and wait (exit 0 allowed, 1 rejected,
                                             2 expired or cancelled, 3 error, 4 approved only with
                                             edited arguments); see gatehouse request --help
  gatehouse hook CLIENT [--wait 590s] [--event NAME]
                                             a command hook for claude-code, codex, cursor, gemini or
                                             copilot: reads the client's hook JSON on stdin, asks the
                                             server, prints the client's decision (any failure denies)
  gatehouse mcp [--agent ID] [--retry-for 2m] an MCP server on stdio (tools request_approval and
                                             approval_prompt) asking the server at GATEHOUSE_URL
  gatehouse policy test [--config FILE] --tool NAME [--args JSON] [--agent A] [--user U] [--session S]
  gatehouse policy test [--config FILE] --hook CLIENT < hook-input.json
                                             dry-run the policy over one call: prints as JSON the route,
                                             the action (ask, allow, deny) and why, route by route
  gatehouse check-config [--config FILE]     validate a config file, naming every bad key
  gatehouse user add NAME --role ROLE [--password-stdin]
                                             print the config lines for a web login
  gatehouse migrate [--config FILE]          apply database migrations
  gatehouse audit verify [--config FILE] [--checkpoint FILE]
                                             check the tamper-evident trail (exit 0 whole, 1 broken,
                                             naming the first broken seq)
  gatehouse version                          print the version

The CLI finds the server through GATEHOUSE_URL (default http://127.0.0.1:8080)
and authenticates with GATEHOUSE_TOKEN.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run dispatches a subcommand and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return serve(rest, stderr)
	case "request":
		return request(rest, stdout, stderr)
	case "hook":
		return hookcmd.Run(rest, stdin, stdout, stderr)
	case "mcp":
		return mcpCmd(rest, stdin, stdout, stderr)
	case "policy":
		return policyCmd(rest, stdin, stdout, stderr)
	case "check-config":
		return checkConfig(rest, stdout, stderr)
	case "user":
		return user(rest, stdin, stdout, stderr)
	case "migrate":
		return migrate(rest, stdout, stderr)
	case "audit":
		return auditCmd(rest, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "gatehouse", versionString())
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "gatehouse: unknown command %q\n\n%s", cmd, usage)
	return 2
}
