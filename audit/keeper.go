package audit

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Store is where the chain lives. *store.DB implements it.
type Store interface {
	Source
	// Seal links up to limit unsealed events after the head and says how
	// many; 0 when another replica is sealing.
	Seal(ctx context.Context, limit int) (int, error)
	// Prune cuts up to limit final requests created before cutoff and
	// links the record of the cut at now, signed with key when it is set.
	Prune(ctx context.Context, cutoff, now time.Time, limit int, key ed25519.PrivateKey) (Cut, error)
}

// Options configure a Keeper. Store is required.
type Options struct {
	Store Store
	// SealInterval is how often unsealed events are sealed. 1s when zero.
	SealInterval time.Duration
	// Keep is how long final requests are kept; zero keeps them all.
	Keep time.Duration
	// PruneInterval is how often retention runs when Keep is set. 1h when zero.
	PruneInterval time.Duration
	// Key signs checkpoints and the records of retention's cuts; without
	// it there are no checkpoints and the records are unsigned.
	Key ed25519.PrivateKey
	// CheckpointDir, with Key, receives a checkpoint every
	// CheckpointInterval (1h when zero) when the head has moved.
	CheckpointDir      string
	CheckpointInterval time.Duration
	Now                func() time.Time
	Logger             *slog.Logger
}

// ErrNoKey says checkpoints are off: no signing key is configured.
var ErrNoKey = errors.New("no audit.signing_key_file is configured, so the server signs no checkpoints")

// Keeper runs the chain's background work on every replica: the sealer,
// retention, and checkpoint files. Sealing and retention take the chain's
// head in the database, so across replicas one works at a time and the
// others skip their turn.
type Keeper struct {
	o Options

	mu      sync.Mutex
	written int64 // the seq of the last checkpoint file written
}

// Batch sizes: links sealed, and requests cut, per transaction.
const (
	sealBatch  = 500
	pruneBatch = 200
)

// NewKeeper builds a keeper; Run starts it.
func NewKeeper(o Options) *Keeper {
	if o.SealInterval <= 0 {
		o.SealInterval = time.Second
	}
	if o.PruneInterval <= 0 {
		o.PruneInterval = time.Hour
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Keeper{o: o, written: -1}
}

// Run works until ctx ends, then seals what is left and writes a last
// checkpoint, on a context of its own with a short deadline.
func (k *Keeper) Run(ctx context.Context) {
	var wg sync.WaitGroup
	loop := func(d time.Duration, fn func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(d)
			defer t.Stop()
			for {
				fn(ctx)
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	loop(k.o.SealInterval, func(ctx context.Context) { k.log("sealing the audit chain", k.SealAll(ctx)) })
	if k.o.Keep > 0 {
		loop(k.o.PruneInterval, func(ctx context.Context) { k.log("retention", k.Prune(ctx)) })
	}
	if k.o.Key != nil && k.o.CheckpointDir != "" {
		loop(k.o.CheckpointInterval, func(ctx context.Context) {
			_, err := k.WriteCheckpoint(ctx)
			k.log("writing a checkpoint", err)
		})
	}
	wg.Wait()
	final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	k.log("sealing the audit chain", k.SealAll(final))
	if k.o.Key != nil && k.o.CheckpointDir != "" {
		_, err := k.WriteCheckpoint(final)
		k.log("writing a checkpoint", err)
	}
}

func (k *Keeper) log(what string, err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		k.o.Logger.Error(what+" failed", "err", err)
	}
}

// SealAll seals until nothing is left (or another replica is sealing).
func (k *Keeper) SealAll(ctx context.Context) error {
	for {
		n, err := k.o.Store.Seal(ctx, sealBatch)
		if err != nil || n < sealBatch {
			return err
		}
	}
}

// Prune runs retention until nothing more is due, sealing first so that
// the events of the requests it cuts are links.
func (k *Keeper) Prune(ctx context.Context) error {
	if k.o.Keep <= 0 {
		return nil
	}
	if err := k.SealAll(ctx); err != nil {
		return err
	}
	now := k.o.Now()
	cutoff := now.Add(-k.o.Keep)
	for {
		cut, err := k.o.Store.Prune(ctx, cutoff, now, pruneBatch, k.o.Key)
		if err != nil {
			return err
		}
		if cut.Held > 0 {
			k.o.Logger.Warn("retention left requests whose trail or row does not check out: run gatehouse audit verify", "requests", cut.Held)
		}
		if cut.Requests > 0 {
			k.o.Logger.Info("retention cut requests", "requests", cut.Requests, "events", cut.Events, "created_before", cutoff.UTC().Format(time.RFC3339))
		}
		if cut.Requests < pruneBatch {
			return nil
		}
	}
}

// Checkpoint signs the chain's head as it stands.
func (k *Keeper) Checkpoint(ctx context.Context) (Checkpoint, error) {
	if k.o.Key == nil {
		return Checkpoint{}, ErrNoKey
	}
	head, err := k.o.Store.ChainHead(ctx)
	if err != nil {
		return Checkpoint{}, err
	}
	return Sign(k.o.Key, head, k.o.Now()), nil
}

// WriteCheckpoint writes a checkpoint file when the chain has links and its
// head has moved since the last one this keeper wrote, and returns its path
// ("" when it wrote none).
func (k *Keeper) WriteCheckpoint(ctx context.Context) (string, error) {
	if k.o.CheckpointDir == "" {
		return "", nil
	}
	cp, err := k.Checkpoint(ctx)
	if err != nil {
		return "", err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if cp.Seq == k.written || cp.Seq == 0 {
		return "", nil
	}
	path, err := WriteCheckpoint(k.o.CheckpointDir, cp)
	if err == nil {
		k.written = cp.Seq
		k.o.Logger.Info("audit checkpoint written", "seq", cp.Seq, "path", path)
	}
	return path, err
}
