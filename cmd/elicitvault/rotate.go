package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store"
)

func init() {
	register(&command{
		name:     "rotate",
		synopsis: "--store URL [--batch N] [--cursor C]",
		summary:  "re-seal every record of a store under the primary secret",
		help: `Rewraps every record of the store under MCP_ELICITATION_SECRET, keeping
its binding and expiry. Records sealed under a secret in
MCP_ELICITATION_SECRET_PREVIOUS are opened and sealed again; records
already under the primary are left alone; a record that changes while it
is being rewrapped is never overwritten. Servers may keep running.

It needs the store the servers share: --store memory lives inside one
process only and is refused here.

Progress goes to stderr: a bar on a terminal, otherwise a line a second.
The counts go to stdout at the end. On SIGINT (or SIGTERM) it stops after
the current batch and prints the cursor to resume from with --cursor; a
second SIGINT stops at once, and resuming from the cursor printed is
still safe. It exits 1 when records did not open (invalid, or sealed
under an unknown key): they are left as they are, and the secret they
were sealed under must not be dropped yet. "elicitvault inspect" shows
what the store holds per key ID.` + "\n\n" + storeURLHelp,
		run: runRotate,
	})
}

// errInterrupted ends a rotation stopped by a signal.
var errInterrupted = errors.New("interrupted")

func runRotate(ctx context.Context, e *env, args []string) error {
	c := commands["rotate"]
	fs := newFlagSet(c)
	storeURL := fs.String("store", "", storeFlagHelp+" (required)")
	batch := fs.Int("batch", 500, "entries read and rewrapped per `batch`")
	cursor := fs.String("cursor", "", "resume an interrupted rotation from this `cursor`")
	if err := parseFlags(e, c, fs, args, 0); err != nil {
		return err
	}
	if err := requireFlags(fs, "store"); err != nil {
		return err
	}
	if err := intFlagAtLeast(fs, "batch", *batch, 1); err != nil {
		return err
	}
	if *storeURL == "memory" {
		return configErr(errMemoryStore)
	}
	k, err := loadKeyring(e)
	if err != nil {
		return err
	}
	if len(k.KeyIDs()) == 1 {
		fmt.Fprintf(e.stderr, "elicitvault: rotate: note: %s is empty: only records already under the primary secret will open\n", ring.EnvPrevious)
	}
	s, err := openStore(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer s.Close()

	stop := watchInterrupts(ctx, e)
	defer stop.release()
	bar := newProgressBar(e.stderr)
	if *cursor == "" {
		// Counting first gives the bar its total: the records under any
		// key but the primary. It reads headers only.
		r, err := ring.Inspect(stop.soft, s, time.Now())
		if err != nil {
			if stop.soft.Err() != nil {
				fmt.Fprintln(e.stdout, "interrupted before any record was rewrapped")
				return errInterrupted
			}
			return err
		}
		for id, n := range r.Records {
			if id != k.PrimaryKeyID() {
				bar.total += n
			}
		}
		bar.counted = true
	}
	p, err := rewrap(stop, k, s, ring.RewrapOptions{BatchSize: *batch, Cursor: *cursor}, bar)
	bar.done()
	// A moved record gets a new store key, which the scan may meet again
	// later: it then counts as current.
	fmt.Fprintf(e.stdout, "rewrapped %d records to key ID %s; %d failed; %d changed meanwhile\n",
		p.Rewrapped, k.PrimaryKeyID(), p.Failed, p.Changed)
	fmt.Fprintf(e.stdout, "scanned %d entries: %d current (under %s already, or met again after their move), %d not records\n",
		p.Scanned, p.Current, k.PrimaryKeyID(), p.Skipped)
	if err != nil {
		if *cursor != "" && p.Scanned == 0 && errors.Is(err, store.ErrInvalidArgument) {
			return usagef(fs, "--cursor is not a cursor of this store: use the one a rotation printed")
		}
		switch {
		case p.Cursor != "":
			fmt.Fprintf(e.stdout, "resume with: elicitvault rotate --store URL --cursor %s\n", p.Cursor)
		case *cursor == "":
			fmt.Fprintln(e.stdout, "resume with: elicitvault rotate --store URL")
		}
		return err
	}
	if p.Failed > 0 {
		return fmt.Errorf("%d records did not open (invalid, or unknown key) and were left as they are: "+
			"keep the secrets they were sealed under", p.Failed)
	}
	return nil
}

// interrupts turns SIGINT and SIGTERM into two contexts: soft is cancelled
// by the first signal (stop after the current batch), hard by the second
// (stop now).
type interrupts struct {
	soft, hard context.Context
	release    func()
}

func watchInterrupts(ctx context.Context, e *env) *interrupts {
	hard, cancelHard := context.WithCancel(ctx)
	soft, cancelSoft := context.WithCancel(hard)
	in := &interrupts{soft: soft, hard: hard}
	if e.signals == nil {
		in.release = func() { cancelSoft(); cancelHard() }
		return in
	}
	ch, stopSignals := e.signals()
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-ch:
				if n++; n == 1 {
					cancelSoft()
				} else {
					cancelHard()
				}
			case <-done:
				return
			}
		}
	}()
	in.release = func() {
		stopSignals()
		close(done)
		cancelSoft()
		cancelHard()
	}
	return in
}

// rewrap runs the rewrap with in.hard and stops it after the batch in
// which in.soft was cancelled. The returned progress holds the cursor to
// resume from.
func rewrap(in *interrupts, k *ring.Keyring, s store.Store, opts ring.RewrapOptions, bar *progressBar) (ring.Progress, error) {
	ctx, cancel := context.WithCancel(in.hard)
	defer cancel()
	opts.Progress = func(p ring.Progress) {
		bar.update(p)
		if in.soft.Err() != nil {
			// The batch just reported is complete: Rewrap's next Scan fails
			// with ctx and it returns with the cursor after this batch.
			cancel()
		}
	}
	p, err := k.Rewrap(ctx, s, opts)
	if err != nil && in.soft.Err() != nil && ctx.Err() != nil {
		return p, errInterrupted
	}
	return p, err
}
