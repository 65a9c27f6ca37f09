package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/elicitvault/elicitvault/internal/epoch"
	"github.com/elicitvault/elicitvault/internal/keyschedule"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store"
)

func init() {
	register(&command{
		name:     "inspect",
		synopsis: "--store URL",
		summary:  "count a store's records per key ID and per time to expiry",
		help: `Reads every entry of the store and prints how many records each key ID
holds and when they expire, and the store's epoch: when its contents
began, and whether a node found that it had lost its data (a restart
without persistence, a flush) before then. It reads headers only: it needs no secret and
prints no plaintext, key or binding. When MCP_ELICITATION_SECRET (and
MCP_ELICITATION_SECRET_PREVIOUS) are set, each key ID is marked primary,
previous or unknown; a secret that can be dropped holds zero records.

It needs the store the servers share: --store memory lives inside one
process only and is refused here.` + "\n\n" + storeURLHelp,
		run: runInspect,
	})
}

func runInspect(ctx context.Context, e *env, args []string) error {
	c := commands["inspect"]
	fs := newFlagSet(c)
	storeURL := fs.String("store", "", storeFlagHelp+" (required)")
	if err := parseFlags(e, c, fs, args, 0); err != nil {
		return err
	}
	if err := requireFlags(fs, "store"); err != nil {
		return err
	}
	if *storeURL == "memory" {
		return configErr(errMemoryStore)
	}
	ids, err := configuredKeyIDs(e)
	if err != nil {
		return err
	}
	s, err := openStore(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer s.Close()
	r, err := ring.Inspect(ctx, s, time.Now())
	if err != nil {
		return err
	}
	ep, err := epoch.Read(ctx, s)
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, epoch.ErrCorrupt) {
		return err
	}
	out := append(formatEpoch(ep, err), '\n')
	_, err = e.stdout.Write(append(out, formatReport(r, ids)...))
	return err
}

// formatEpoch says what the store's epoch record (package internal/epoch)
// tells an operator: when the store's contents began, and whether a node
// found that it had lost its data before. err is Read's.
func formatEpoch(r epoch.Record, err error) []byte {
	var buf bytes.Buffer
	switch {
	case errors.Is(err, store.ErrNotFound):
		fmt.Fprintf(&buf, "store epoch: none (no node has used this store since it was created or lost its data;\n  the next one writes it, and refuses state issued before)\n")
	case err != nil:
		fmt.Fprintf(&buf, "store epoch: unreadable (%v): nodes can neither issue nor accept tokens until it is deleted\n", err)
	default:
		fmt.Fprintf(&buf, "store epoch: %s, since %s\n", r.ID, r.Created.UTC().Format(time.RFC3339))
		if !r.Previous.IsZero() {
			fmt.Fprintf(&buf, "  the store lost its data before then: it replaced epoch %s, and the state issued under that one is refused\n", r.Previous)
		}
	}
	return buf.Bytes()
}

// formatReport writes r as text. ids are the configured key IDs, primary
// first, or nil when no secret is set.
func formatReport(r ring.Report, ids []keyschedule.KeyID) []byte {
	var buf bytes.Buffer
	records := r.Entries - r.Markers
	fmt.Fprintf(&buf, "entries: %d (%d records, %d other entries such as one-shot markers)\n\n", r.Entries, records, r.Markers)

	type row struct {
		id    keyschedule.KeyID
		count int
		role  string
	}
	var rows []row
	seen := map[keyschedule.KeyID]bool{}
	for i, id := range ids {
		role := "previous"
		if i == 0 {
			role = "primary"
		}
		rows = append(rows, row{id, r.Records[id], role})
		seen[id] = true
	}
	var others []row
	for id, n := range r.Records {
		if seen[id] {
			continue
		}
		role := "unknown: in no configured secret"
		if ids == nil {
			role = ""
		}
		others = append(others, row{id, n, role})
	}
	slices.SortFunc(others, func(a, b row) int { return bytes.Compare(a.id[:], b.id[:]) })
	rows = append(rows, others...)

	width := len(strconv.Itoa(r.Entries))
	fmt.Fprintf(&buf, "records per key ID:\n")
	if len(rows) == 0 {
		fmt.Fprintf(&buf, "  (none)\n")
	}
	for _, row := range rows {
		line := fmt.Sprintf("  %s  %*d  %s", row.id, width, row.count, row.role)
		fmt.Fprintln(&buf, strings.TrimRight(line, " "))
	}
	if ids == nil {
		fmt.Fprintf(&buf, "  (set %s and %s to mark the key IDs)\n", ring.EnvSecret, ring.EnvPrevious)
	}

	fmt.Fprintf(&buf, "\nrecords per time to expiry:\n")
	for i, b := range r.Expiries {
		label := "≤ " + formatDuration(b.Upto)
		if i == len(r.Expiries)-1 && i > 0 {
			label = "> " + formatDuration(r.Expiries[i-1].Upto)
		}
		fmt.Fprintf(&buf, "  %-5s  %*d\n", label, width, b.Count)
	}
	return buf.Bytes()
}

// formatDuration writes the histogram's bucket limits briefly: 1m, 5m, 1h, 24h, 7d.
func formatDuration(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0 && d > 24*time.Hour:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
