package redis

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/elicitvault/elicitvault/store"
	"github.com/redis/go-redis/v9"
)

// maxScanCount bounds the COUNT hint of one SCAN call. Scan doubles the
// hint, starting from the number of entries it still needs, while SCAN finds
// none of the store's keys, so that a database shared with many other keys
// takes few round trips; the keys found beyond count are carried in the
// cursor, so the bound also bounds the cursor's length.
const maxScanCount = 256

// scanCursor is the state of a scan between two calls of Scan. Its text
// form is the decimal SCAN cursor, or "end" once SCAN has ended, followed
// by one ".<key>" per key SCAN returned that Scan has not yet returned, each
// in unpadded base64url: "0" and "" both start a scan.
type scanCursor struct {
	next    uint64   // the SCAN cursor to continue from
	done    bool     // SCAN has returned cursor 0
	pending []string // store keys found but not yet returned
}

func parseCursor(s string) (scanCursor, bool) {
	var c scanCursor
	if s == "" {
		return c, true
	}
	parts := strings.Split(s, ".")
	if parts[0] == "end" {
		c.done = true
	} else {
		n, err := strconv.ParseUint(parts[0], 10, 64)
		if err != nil {
			return c, false
		}
		c.next = n
	}
	for _, p := range parts[1:] {
		k, err := base64.RawURLEncoding.DecodeString(p)
		if err != nil || len(k) == 0 {
			return c, false
		}
		c.pending = append(c.pending, string(k))
	}
	return c, true
}

// String returns the text form of c, "" when the scan has ended.
func (c scanCursor) String() string {
	if c.done && len(c.pending) == 0 {
		return ""
	}
	var b strings.Builder
	if c.done {
		b.WriteString("end")
	} else {
		b.WriteString(strconv.FormatUint(c.next, 10))
	}
	for _, k := range c.pending {
		b.WriteByte('.')
		b.WriteString(base64.RawURLEncoding.EncodeToString([]byte(k)))
	}
	return b.String()
}

// Scan implements store.Store. It returns up to count entries; see the
// package documentation for how. It returns ErrInvalidArgument for a count
// below 1 or a cursor it did not return.
func (s *Store) Scan(ctx context.Context, cursor string, count int) ([]store.Entry, string, error) {
	const op = "scan"
	if err := s.begin(ctx, op); err != nil {
		return nil, "", err
	}
	if count < 1 {
		return nil, "", fmt.Errorf("redis: %s: count below 1: %w", op, store.ErrInvalidArgument)
	}
	c, ok := parseCursor(cursor)
	if !ok {
		return nil, "", fmt.Errorf("redis: %s: malformed cursor: %w", op, store.ErrInvalidArgument)
	}
	switch s.client.(type) {
	case *redis.ClusterClient, *redis.Ring:
		// SCAN on one node would silently miss the keys of the others.
		return nil, "", fmt.Errorf("redis: %s: not supported on a cluster or ring client", op)
	}

	// Collect up to count keys: first those the cursor carries, then those
	// SCAN returns.
	var keys []string
	seen := make(map[string]bool)
	n := min(count, len(c.pending))
	for _, k := range c.pending[:n] {
		keys = append(keys, k)
		seen[k] = true
	}
	c.pending = c.pending[n:]
	hint := count - len(keys)
	for len(keys) < count && !c.done {
		rks, next, err := s.client.ScanType(ctx, c.next, s.pattern, int64(hint), "string").Result()
		if err != nil {
			return nil, "", s.fail(op, err)
		}
		c.next, c.done = next, next == 0
		found := 0
		for _, rk := range rks {
			k, ok := s.storeKey(rk)
			if !ok || seen[k] {
				continue
			}
			seen[k] = true
			found++
			if len(keys) < count {
				keys = append(keys, k)
			} else {
				c.pending = append(c.pending, k)
			}
		}
		if found == 0 {
			hint = min(2*hint, maxScanCount)
		} else {
			hint = max(count-len(keys), 1)
		}
	}

	entries, err := s.read(ctx, keys)
	if err != nil {
		return nil, "", s.fail(op, err)
	}
	return entries, c.String(), nil
}

// read returns the value and expiry of each live key of keys, reading each
// key's pair in one MULTI/EXEC block so that the two belong together.
func (s *Store) read(ctx context.Context, keys []string) ([]store.Entry, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	gets := make([]*redis.StringCmd, len(keys))
	exps := make([]*redis.Cmd, len(keys))
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			rk := s.redisKey(k)
			gets[i] = p.Get(ctx, rk)
			exps[i] = p.Do(ctx, "PEXPIRETIME", rk)
		}
		return nil
	})
	// err is the first command's error, which may be redis.Nil for a key
	// that expired or was deleted since SCAN returned it: check each.
	if err != nil && err != redis.Nil {
		return nil, err
	}
	entries := make([]store.Entry, 0, len(keys))
	for i, k := range keys {
		v, err := gets[i].Bytes()
		if err == redis.Nil {
			continue
		}
		if err != nil {
			return nil, err
		}
		ms, err := exps[i].Int64()
		if err != nil {
			return nil, err
		}
		e := store.Entry{Key: k, Value: v}
		if ms >= 0 { // -1: no expiry, which the store never writes
			e.Expiry = time.UnixMilli(ms)
		}
		entries = append(entries, e)
	}
	return entries, nil
}
