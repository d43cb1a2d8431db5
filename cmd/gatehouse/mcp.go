package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/client"
	"github.com/gatehouse-dev/gatehouse/mcpserver"
)

// mcpCmd is `gatehouse mcp`: an MCP server on stdin and stdout whose tools
// (request_approval, approval_prompt) ask the server at GATEHOUSE_URL with
// GATEHOUSE_TOKEN, like the other CLI commands. Its log goes to stderr.
func mcpCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	agent := fs.String("agent", os.Getenv("GATEHOUSE_AGENT"), "agent id (default: the token's name)")
	retryFor := fs.Duration("retry-for", 2*time.Minute, "how long a tool call keeps re-attaching to an unreachable server before it denies")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gatehouse mcp: unexpected argument %q (the server speaks MCP on stdin and stdout)\n", fs.Arg(0))
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := client.FromEnv()
	c.MaxOutage = *retryFor
	c.OnRetry = func(n int, err error) {
		log.Warn("gatehouse server unreachable, re-attaching", "attempt", n, "err", err)
	}
	s := mcpserver.New(mcpserver.Remote{Client: c, AgentID: *agent}, mcpserver.Options{Version: versionString(), Logger: log})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		fmt.Fprintf(stderr, "gatehouse mcp: %v\n", err)
		return 1
	}
	return 0
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
