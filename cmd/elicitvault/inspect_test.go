package main

import (
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/epoch"
	"github.com/elicitvault/elicitvault/store"
)

// inspect tells an operator when the store's contents began and that the
// store lost its data before then, naming only random epoch IDs.
func TestFormatEpoch(t *testing.T) {
	created := time.Date(2026, 11, 27, 1, 2, 3, 0, time.UTC)
	for _, tc := range []struct {
		r    epoch.Record
		err  error
		want []string
	}{
		{err: store.ErrNotFound, want: []string{"store epoch: none"}},
		{err: epoch.ErrCorrupt, want: []string{"store epoch: unreadable"}},
		{r: epoch.Record{ID: epoch.ID{1, 2, 3, 4, 5, 6, 7, 8}, Created: created},
			want: []string{"store epoch: 0102030405060708, since 2026-11-27T01:02:03Z\n"}},
		{r: epoch.Record{ID: epoch.ID{1, 2, 3, 4, 5, 6, 7, 8}, Created: created, Previous: epoch.ID{9, 9, 9, 9, 9, 9, 9, 9}},
			want: []string{"since 2026-11-27T01:02:03Z", "lost its data", "replaced epoch 0909090909090909"}},
	} {
		got := string(formatEpoch(tc.r, tc.err))
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("formatEpoch(%+v, %v) = %q, want %q in it", tc.r, tc.err, got, w)
			}
		}
		if tc.r.Previous.IsZero() && strings.Contains(got, "lost its data before") {
			t.Errorf("formatEpoch reports a loss that did not happen: %q", got)
		}
	}
}
