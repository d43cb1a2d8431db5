// Command gatehouse-hook is `gatehouse hook CLIENT` in a binary of its own:
// an agent client runs its hook before every tool call, and this one links
// nothing of the server (no database drivers, no metrics, no chat SDKs,
// no policy engine), so it starts as fast as a minimal Go program. It
// reads the client's hook JSON on stdin and prints the client's decision;
// any failure is a deny.
//
//	gatehouse-hook claude-code    # or codex, cursor, gemini, copilot
package main

import (
	"os"

	"github.com/gatehouse-dev/gatehouse/cmd/internal/hookcmd"
)

func main() {
	os.Exit(hookcmd.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
