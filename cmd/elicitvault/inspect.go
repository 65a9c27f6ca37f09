package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/elicitvault/elicitvault/hkdf"
	"github.com/elicitvault/elicitvault/rotation"
)

func init() {
	register(&command{
		name:     "inspect",
		synopsis: "--store URL",
		summary:  "count a store's records per key ID and per time to expiry",
		help: `Reads every entry of the store and prints how many records each key ID
holds and when they expire. It reads headers only: it needs no secret and
prints no plaintext, key or binding. When MCP_ELICITATION_SECRET (and
MCP_ELICITATION_SECRET_PREVIOUS) are set, each key ID is marked primary,
previous or unknown; a secret that can be dropped holds zero records.

It needs the store the servers share: --store memory lives inside one
process only and is refused here.`,
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
	r, err := rotation.Inspect(ctx, s, time.Now())
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(formatReport(r, ids))
	return err
}

// formatReport writes r as text. ids are the configured key IDs, primary
// first, or nil when no secret is set.
func formatReport(r rotation.Report, ids []hkdf.KeyID) []byte {
	var buf bytes.Buffer
	records := r.Entries - r.Markers
	fmt.Fprintf(&buf, "entries: %d (%d records, %d other entries such as one-shot markers)\n\n", r.Entries, records, r.Markers)

	fmt.Fprintf(&buf, "records per key ID:\n")
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	seen := map[hkdf.KeyID]bool{}
	row := func(id hkdf.KeyID, role string) {
		seen[id] = true
		fmt.Fprintf(tw, "  %s\t%d\t  %s\t\n", id, r.Records[id], role)
	}
	for i, id := range ids {
		if i == 0 {
			row(id, "primary")
		} else {
			row(id, "previous")
		}
	}
	var others []hkdf.KeyID
	for id := range r.Records {
		if !seen[id] {
			others = append(others, id)
		}
	}
	slices.SortFunc(others, func(a, b hkdf.KeyID) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range others {
		role := "unknown: in no configured secret"
		if ids == nil {
			role = ""
		}
		row(id, role)
	}
	if len(ids) == 0 && len(others) == 0 {
		fmt.Fprintf(tw, "  (none)\t\t\t\n")
	}
	tw.Flush()
	if ids == nil {
		fmt.Fprintf(&buf, "  (set %s and %s to mark the key IDs)\n", rotation.EnvSecret, rotation.EnvPrevious)
	}

	fmt.Fprintf(&buf, "\nrecords per time to expiry:\n")
	tw = tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, b := range r.Expiries {
		label := "≤ " + formatDuration(b.Upto)
		if i == len(r.Expiries)-1 && i > 0 {
			label = "> " + formatDuration(r.Expiries[i-1].Upto)
		}
		fmt.Fprintf(tw, "  %s\t%d\t\n", label, b.Count)
	}
	tw.Flush()
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
