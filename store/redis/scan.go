package redis

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
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

// Scan implements store.Driver. It returns up to count entries; see the
// package documentation for how.
func (s *driver) Scan(ctx context.Context, cursor string, count int) ([]store.Entry, string, error) {
	if _, ok := s.client.(*redis.Ring); ok {
		// SCAN on one shard would silently miss the keys of the others.
		return nil, "", errors.New("not supported on a ring client")
	}
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		return s.scanCluster(ctx, cc, cursor, count)
	}
	c, ok := parseCursor(cursor)
	if !ok {
		return nil, "", fmt.Errorf("malformed cursor: %w", store.ErrInvalidArgument)
	}
	keys, c, err := s.scanNode(ctx, s.client, c, count)
	if err != nil {
		return nil, "", err
	}
	entries, err := s.read(ctx, keys)
	if err != nil {
		return nil, "", err
	}
	return entries, c.String(), nil
}

// scanner is a client that SCAN can run on: one server's.
type scanner interface {
	ScanType(ctx context.Context, cursor uint64, match string, count int64, keyType string) *redis.ScanCmd
}

// scanNode collects up to count keys of one server: first those the
// cursor carries, then those SCAN returns. It returns them and the cursor
// after them.
func (s *driver) scanNode(ctx context.Context, node scanner, c scanCursor, count int) ([]string, scanCursor, error) {
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
		rks, next, err := node.ScanType(ctx, c.next, s.pattern, int64(hint), "string").Result()
		if err != nil {
			return nil, c, err
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
	return keys, c, nil
}

// scanCluster scans every primary of a cluster in turn, in the order of
// the first slot each serves. Its cursor is the index of the primary in
// that order, "~", and the cursor of the scan of that primary. A failover
// during a scan gives the slots to a replica whose SCAN cursor differs:
// entries of that shard may then be returned twice or, if the shard's
// scan restarts late, missed in that call only, never returned expired.
func (s *driver) scanCluster(ctx context.Context, cc *redis.ClusterClient, cursor string, count int) ([]store.Entry, string, error) {
	shard := 0
	var c scanCursor
	if cursor != "" {
		i, inner, ok := strings.Cut(cursor, "~")
		n, err := strconv.Atoi(i)
		if !ok || err != nil || n < 0 || n > 16384 || inner == "" {
			return nil, "", fmt.Errorf("malformed cursor: %w", store.ErrInvalidArgument)
		}
		if c, ok = parseCursor(inner); !ok {
			return nil, "", fmt.Errorf("malformed cursor: %w", store.ErrInvalidArgument)
		}
		shard = n
	}
	primaries, err := clusterPrimaries(ctx, cc)
	if err != nil {
		return nil, "", err
	}
	var keys []string
	for shard < len(primaries) && len(keys) < count {
		got, next, err := s.scanNode(ctx, primaries[shard], c, count-len(keys))
		if err != nil {
			return nil, "", err
		}
		keys = append(keys, got...)
		c = next
		if c.done && len(c.pending) == 0 {
			shard++
			c = scanCursor{}
		}
	}
	entries, err := s.read(ctx, keys)
	if err != nil {
		return nil, "", err
	}
	if shard >= len(primaries) {
		return entries, "", nil
	}
	return entries, strconv.Itoa(shard) + "~" + c.String(), nil
}

// clusterPrimaries returns a client of each primary of the cluster, in the
// order of the first slot each serves.
func clusterPrimaries(ctx context.Context, cc *redis.ClusterClient) ([]*redis.Client, error) {
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		return nil, err
	}
	first := make(map[string]int64) // primary address → its first slot
	for _, sh := range shards {
		if len(sh.Slots) == 0 {
			continue // a shard without slots: a primary left empty
		}
		var addr string
		for _, n := range sh.Nodes {
			if n.Role == "master" {
				addr = net.JoinHostPort(n.Endpoint, strconv.FormatInt(n.Port, 10))
			}
		}
		if addr == "" {
			return nil, fmt.Errorf("a shard has no primary (failing over?), retry")
		}
		for _, sl := range sh.Slots {
			if f, ok := first[addr]; !ok || sl.Start < f {
				first[addr] = sl.Start
			}
		}
	}
	var mu sync.Mutex
	clients := make(map[string]*redis.Client)
	err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		mu.Lock()
		clients[n.Options().Addr] = n
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	addrs := make([]string, 0, len(first))
	for addr := range first {
		if clients[addr] == nil {
			cc.ReloadState(ctx)
			return nil, fmt.Errorf("cluster topology changed during the scan, retry")
		}
		addrs = append(addrs, addr)
	}
	sort.Slice(addrs, func(i, j int) bool { return first[addrs[i]] < first[addrs[j]] })
	out := make([]*redis.Client, len(addrs))
	for i, addr := range addrs {
		out[i] = clients[addr]
	}
	return out, nil
}

// read returns the value and expiry of each live key of keys, reading each
// key's pair in one MULTI/EXEC block so that the two belong together.
func (s *driver) read(ctx context.Context, keys []string) ([]store.Entry, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if _, ok := s.client.(*redis.ClusterClient); ok {
		return s.readCluster(ctx, keys)
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

// readEntry returns the value and expiry of KEYS[1] together, as a MULTI
// block would: a cluster cannot run one MULTI over keys of several slots.
var readEntry = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
	return false
end
return {v, redis.call('PEXPIRETIME', KEYS[1])}
`)

// readCluster is read on a cluster: one script per key, pipelined, which
// go-redis sends to each key's primary.
func (s *driver) readCluster(ctx context.Context, keys []string) ([]store.Entry, error) {
	cmds := make([]*redis.Cmd, len(keys))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			// EVALSHA's NOSCRIPT fallback cannot run inside a pipeline.
			cmds[i] = readEntry.Eval(ctx, p, []string{s.redisKey(k)})
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, err
	}
	entries := make([]store.Entry, 0, len(keys))
	for i, k := range keys {
		r, err := cmds[i].Slice()
		if err == redis.Nil {
			continue
		}
		if err != nil {
			return nil, err
		}
		v, ok1 := r[0].(string)
		ms, ok2 := r[1].(int64)
		if len(r) != 2 || !ok1 || !ok2 {
			return nil, fmt.Errorf("unexpected reply of the read script")
		}
		e := store.Entry{Key: k, Value: []byte(v)}
		if ms >= 0 {
			e.Expiry = time.UnixMilli(ms)
		}
		entries = append(entries, e)
	}
	return entries, nil
}
