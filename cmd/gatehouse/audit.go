package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/store"
)

// auditCmd is `gatehouse audit verify [--config F] [--checkpoint FILE]`:
// exit 0 when the chain is whole, 1 when it is broken (naming the first
// broken seq) or the checkpoint fails its signature, 2 when it cannot be
// checked (bad flags or config, database unreachable).
func auditCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "verify" {
		fmt.Fprintln(stderr, "usage: gatehouse audit verify [--config FILE] [--checkpoint FILE]")
		return 2
	}
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", os.Getenv("GATEHOUSE_CONFIG"), "config file (its database is verified)")
	cpPath := fs.String("checkpoint", "", "a checkpoint file the chain must still hold (written by the server, or fetched from GET /api/v1/audit/checkpoint)")
	if err := fs.Parse(args[1:]); err != nil || strayArgs("audit verify", fs, stderr) {
		return 2
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse: invalid config:\n%s\n", indent(err))
		return 2
	}
	// The server's audit key, when its config has one: checkpoints and
	// the records of retention's cuts must be signed by it.
	var trusted ed25519.PublicKey
	if cfg.Audit.SigningKey != "" {
		if k, err := audit.ParseKey([]byte(cfg.Audit.SigningKey)); err == nil {
			trusted = k.Public().(ed25519.PublicKey)
		}
	}
	var cp *audit.Checkpoint
	if *cpPath != "" {
		if cp, err = audit.ReadCheckpoint(*cpPath); err != nil {
			fmt.Fprintf(stderr, "gatehouse audit verify: %v\n", err)
			return 2
		}
		if err := cp.Check(trusted); err != nil {
			fmt.Fprintf(stdout, "%s: %v\n", *cpPath, err)
			return 1
		}
	}
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Driver: cfg.Database.Driver, DSN: cfg.Database.DSN})
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse audit verify: %v\n", err)
		return 2
	}
	defer db.Close()
	rep, err := audit.Verify(ctx, db, cp, trusted)
	var broken *audit.Broken
	if errors.As(err, &broken) {
		fmt.Fprintf(stdout, "audit chain BROKEN at seq %d: %s\n", broken.Seq, broken.Reason)
		fmt.Fprintf(stdout, "the %d links before it are whole\n", rep.Links)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse audit verify: %v\n", err)
		return 2
	}
	if rep.Links == 0 {
		fmt.Fprintln(stdout, "audit chain whole: no links yet")
	} else {
		fmt.Fprintf(stdout, "audit chain whole: %d links, seq 1 to %d, head %s\n", rep.Links, rep.Head.Seq, rep.Head.Hash)
	}
	for _, c := range rep.Cuts {
		fmt.Fprintf(stdout, "  seq %d: retention cut %d requests created before %s (%d events: seq %s)\n",
			c.Seq, c.Cut.Requests, c.Cut.Cutoff.Format(time.RFC3339), c.Cut.Events, c.Cut.Seqs)
	}
	if len(rep.Cuts) > 0 && trusted == nil {
		fmt.Fprintln(stdout, "  (their signatures are not checked: the config has no audit.signing_key_file)")
	}
	if cp != nil {
		fmt.Fprintf(stdout, "checkpoint of %s (seq %d, key %s): held\n", cp.At.Format(time.RFC3339), cp.Seq, cp.KeyFingerprint())
	}
	if n, err := db.Unsealed(ctx); err == nil && n > 0 {
		fmt.Fprintf(stdout, "%d newer events are not sealed yet (a running server seals them within a second)\n", n)
	}
	return 0
}
