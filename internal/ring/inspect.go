package ring

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/elicitvault/elicitvault/internal/keyschedule"
	"github.com/elicitvault/elicitvault/store"
)

// Report is what Inspect finds in a store. It never holds plaintext: only
// key IDs and expiries, read from headers without any key.
type Report struct {
	Entries  int                       // every entry scanned
	Records  map[keyschedule.KeyID]int // stored records per key ID of their payload
	Markers  int                       // entries that are not records (one-shot markers)
	Expiries []Bucket                  // records per time left until expiry
}

// Bucket counts records whose time to expiry is at most Upto (and more than
// the previous bucket's).
type Bucket struct {
	Upto  time.Duration
	Count int
}

var bucketLimits = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 1<<63 - 1}

// Inspect counts the records of s per key ID and per time left to expiry.
// It needs no secret.
func Inspect(ctx context.Context, s store.Store, now time.Time) (Report, error) {
	r := Report{Records: map[keyschedule.KeyID]int{}}
	for _, l := range bucketLimits {
		r.Expiries = append(r.Expiries, Bucket{Upto: l})
	}
	cursor := ""
	for {
		entries, next, err := s.Scan(ctx, cursor, 1000)
		if err != nil {
			return r, fmt.Errorf("keyring: inspect: %w", err)
		}
		for _, e := range entries {
			r.Entries++
			h, err := RecordHeader(e.Value)
			if err != nil {
				r.Markers++
				continue
			}
			r.Records[h.KeyID]++
			left := h.Expiry.Sub(now)
			i := sort.Search(len(bucketLimits), func(i int) bool { return left <= bucketLimits[i] })
			r.Expiries[i].Count++
		}
		if next == "" {
			return r, nil
		}
		cursor = next
	}
}
