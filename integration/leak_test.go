package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/postgres"
)

// This file holds what a zero-knowledge test needs, for any flow: a
// backend whose store talks to its server through a recording proxy, a dump
// of everything the backend holds, and a search of both for forbidden
// strings in every form they could take.
//
// To check another flow (the fallbacks, say), drive it over b.Store of
// every backend from zkBackends and call b.CheckNoLeaks with the strings it
// must never store, at every stage worth looking at.

// A blob is one thing a backend holds, or one stream it exchanged with its
// server, named for failure messages.
type blob struct {
	where string
	data  []byte
}

// minForbidden is the length under which a forbidden string would match
// by chance; the tests use longer ones.
const minForbidden = 8

// encodings returns the forms in which s could show up in a dump: raw, hex
// in both cases, and base64 in the standard and URL alphabets at each of
// the three alignments s can have inside a longer encoded value. For an
// alignment, the form is the run of characters that depend on the bytes
// of s alone, which is there whether or not padding follows.
func encodings(s string) []string {
	out := []string{s, hex.EncodeToString([]byte(s)), strings.ToUpper(hex.EncodeToString([]byte(s)))}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for k := range 3 {
			text := enc.EncodeToString(append(make([]byte, k), s...))
			// With k bytes before s, the first 0, 2 or 3 characters
			// carry bits of those bytes; unless s ends a group of three,
			// the last character carries bits of the byte after it.
			skip := [3]int{0, 2, 3}[k]
			end := len(text)
			if (k+len(s))%3 != 0 {
				end--
			}
			out = append(out, text[skip:end])
		}
	}
	return out
}

// A leak is a forbidden string found in a blob.
type leak struct {
	forbidden, form, where string
}

// findLeaks returns every forbidden string that occurs in a blob, in any
// of its encodings.
func findLeaks(dump []blob, forbidden []string) []leak {
	var leaks []leak
	for _, f := range forbidden {
		for _, form := range encodings(f) {
			for _, b := range dump {
				if bytes.Contains(b.data, []byte(form)) {
					leaks = append(leaks, leak{f, form, b.where})
				}
			}
		}
	}
	return leaks
}

// checkNoLeaks fails t for every forbidden string found in dump.
func checkNoLeaks(t *testing.T, stage string, dump []blob, forbidden []string) {
	t.Helper()
	for _, f := range forbidden {
		if len(f) < minForbidden {
			t.Fatalf("forbidden string %q is too short to search for", f)
		}
	}
	seen := map[[2]string]bool{}
	for _, l := range findLeaks(dump, forbidden) {
		if !seen[[2]string{l.forbidden, l.where}] {
			seen[[2]string{l.forbidden, l.where}] = true
			t.Errorf("%s: %q found as %q in %s", stage, l.forbidden, l.form, l.where)
		}
	}
}

// zkBackend is a store on a real server, reached through a recording
// proxy, with a dump of everything the server holds for it.
type zkBackend struct {
	Name  string
	Store store.Store
	// Dump returns every key and value the backend holds for the store,
	// live or expired, and the names of the channels it listens on where
	// the server shows them.
	Dump func(t *testing.T) []blob
	// Channels counts the channels the server shows the store listening
	// on, or returns -1 where the server does not show them.
	Channels func(t *testing.T) int
	// Another opens a second store on the same data through the same
	// recording proxy: another node.
	Another func(t *testing.T) store.Store
	wire    *recorder
}

// CheckNoLeaks fails t if any forbidden string is in the backend's dump or
// in anything the store and its server have sent each other so far.
func (b *zkBackend) CheckNoLeaks(t *testing.T, stage string, forbidden []string) {
	t.Helper()
	dump := b.Dump(t)
	if len(dump) == 0 {
		t.Fatalf("%s: the dump is empty", stage)
	}
	wire := b.wire.streams()
	n := 0
	for _, s := range wire {
		n += len(s.data)
	}
	t.Logf("%s: %d items at rest and %d bytes on the wire searched for %d strings, %d forms each",
		stage, len(dump), n, len(forbidden), len(encodings(forbidden[0])))
	checkNoLeaks(t, stage, append(dump, wire...), forbidden)
}

// forbiddenValues is what may not reach a backend in any form: a test's
// known values, and what the flow reveals as it runs (elicitation IDs,
// tokens). It is safe for concurrent use.
type forbiddenValues struct {
	mu     sync.Mutex
	values []string
}

func (f *forbiddenValues) add(s ...string) {
	f.mu.Lock()
	f.values = append(f.values, s...)
	f.mu.Unlock()
}

func (f *forbiddenValues) snapshot() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.values)
}

// zkBackends runs f for each backend whose server is configured, each
// subtest with a store of its own, removed when it ends.
func zkBackends(t *testing.T, f func(t *testing.T, b *zkBackend)) {
	t.Run("redis", func(t *testing.T) { f(t, newRedisZK(t)) })
	t.Run("postgres", func(t *testing.T) { f(t, newPostgresZK(t)) })
}

// viaProxy returns rawURL with its host replaced by a recording proxy to
// that host.
func viaProxy(t *testing.T, rawURL string) (string, *recorder) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		t.Fatalf("the server URL has no host to proxy")
	}
	rec := newRecorder(t, u.Host)
	u.Host = rec.addr()
	return u.String(), rec
}

func newRedisZK(t *testing.T) *zkBackend {
	raw := serverURL(t, redisEnv)
	prefix, admin := redisPrefix(t, raw, "evzk")
	proxied, wire := viaProxy(t, raw)
	s := mustOpen(t, "redis", proxied, prefix) // before redisPrefix's clean-up
	pattern := globEscape(prefix) + "*"
	channels := func(t *testing.T) []string {
		names, err := admin.PubSubChannels(context.Background(), pattern).Result()
		if err != nil {
			t.Fatalf("PUBSUB CHANNELS: %v", err)
		}
		return names
	}
	return &zkBackend{
		Name:  "redis",
		Store: s,
		wire:  wire,
		Dump: func(t *testing.T) []blob {
			ctx := context.Background()
			var dump []blob
			iter := admin.Scan(ctx, 0, pattern, 1000).Iterator()
			for iter.Next(ctx) {
				key := iter.Val()
				dump = append(dump, blob{"key name " + key, []byte(key)})
				if v, err := admin.Get(ctx, key).Bytes(); err == nil {
					dump = append(dump, blob{"GET " + key, v})
				} else if err != goredis.Nil {
					t.Fatalf("GET: %v", err)
				}
				if v, err := admin.Dump(ctx, key).Result(); err == nil {
					dump = append(dump, blob{"DUMP " + key, []byte(v)})
				} else if err != goredis.Nil {
					t.Fatalf("DUMP: %v", err)
				}
			}
			if err := iter.Err(); err != nil {
				t.Fatalf("SCAN: %v", err)
			}
			for _, name := range channels(t) {
				dump = append(dump, blob{"channel " + name, []byte(name)})
			}
			return dump
		},
		Channels: func(t *testing.T) int { return len(channels(t)) },
		Another:  func(t *testing.T) store.Store { return mustOpen(t, "redis", proxied, prefix) },
	}
}

func newPostgresZK(t *testing.T) *zkBackend {
	raw := serverURL(t, postgresEnv)
	ctx := context.Background()
	schema, pool := migratedSchema(t, raw, "evzk_")
	proxied, wire := viaProxy(t, raw)
	s := mustOpen(t, "postgres", proxied, schema)
	table := pgx.Identifier{schema, "elicitvault_entries"}.Sanitize()
	return &zkBackend{
		Name:  "postgres",
		Store: s,
		wire:  wire,
		Dump: func(t *testing.T) []blob {
			rows, err := pool.Query(ctx, "SELECT key, value, expires_at::text FROM "+table)
			if err != nil {
				t.Fatalf("reading the table: %v", err)
			}
			var dump []blob
			n := 0
			var key, value []byte
			var expires string
			_, err = pgx.ForEachRow(rows, []any{&key, &value, &expires}, func() error {
				n++
				dump = append(dump,
					blob{fmt.Sprintf("row %d key", n), bytes.Clone(key)},
					blob{fmt.Sprintf("row %d value", n), bytes.Clone(value)},
					blob{fmt.Sprintf("row %d expires_at", n), []byte(expires)})
				return nil
			})
			if err != nil {
				t.Fatalf("reading the table: %v", err)
			}
			return dump
		},
		// PostgreSQL shows a session's channels only to that session
		// (pg_listening_channels); the LISTEN statements are in the wire
		// recording instead.
		Channels: func(t *testing.T) int { return -1 },
		Another: func(t *testing.T) store.Store {
			s, err := postgres.New(ctx, proxied, &postgres.Options{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

// redisPrefix returns a fresh key prefix, kind-<random>:, on the Redis
// server at raw, whose keys are deleted when the test ends, and a client of
// that server for the test's own checks.
func redisPrefix(t *testing.T, raw, kind string) (prefix string, admin *goredis.Client) {
	t.Helper()
	prefix = kind + "-" + randomName() + ":"
	o, err := goredis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	admin = goredis.NewClient(o)
	t.Cleanup(func() {
		deleteRedisKeys(t, admin, prefix)
		admin.Close()
	})
	return prefix, admin
}

// redisStoreURL is the store URL of a fresh prefix (see redisPrefix) on
// the test's Redis server, for `elicitvault serve --store`.
func redisStoreURL(t *testing.T, kind string) string {
	t.Helper()
	raw := serverURL(t, redisEnv)
	prefix, _ := redisPrefix(t, raw, kind)
	return withQuery(t, raw, "prefix", prefix)
}

// withQuery is raw with its query parameter key set to value.
func withQuery(t *testing.T, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// deleteRedisKeys deletes every key that starts with prefix.
func deleteRedisKeys(t *testing.T, c *goredis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, globEscape(prefix)+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("cleaning up: %v", err)
		return
	}
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		if err := c.Unlink(ctx, keys[:n]...).Err(); err != nil {
			t.Errorf("cleaning up: %v", err)
			return
		}
		keys = keys[n:]
	}
}

// globEscape escapes the bytes that Redis glob patterns give a meaning.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}

// recorder is a TCP proxy to one server that keeps every byte each
// connection carries, in each direction, so that a test can search what a
// client sent and received: keys, values, channel names, notification
// payloads, statements.
type recorder struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  []net.Conn
	logs   []*stream
	closed bool
}

// stream is what one connection carried in one direction; the
// recorder's mu guards it.
type stream struct {
	r    *recorder
	name string
	buf  bytes.Buffer
}

func (s *stream) Write(p []byte) (int, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return s.buf.Write(p)
}

func newRecorder(t *testing.T, target string) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{ln: ln, target: target}
	r.wg.Go(r.accept)
	t.Cleanup(r.close)
	return r
}

func (r *recorder) addr() string { return r.ln.Addr().String() }

func (r *recorder) accept() {
	for n := 1; ; n++ {
		client, err := r.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", r.target)
		if err != nil {
			client.Close()
			continue
		}
		up := &stream{r: r, name: fmt.Sprintf("connection %d, client to server", n)}
		down := &stream{r: r, name: fmt.Sprintf("connection %d, server to client", n)}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			client.Close()
			server.Close()
			return
		}
		r.conns = append(r.conns, client, server)
		r.logs = append(r.logs, up, down)
		r.mu.Unlock()
		pipe := func(dst, src net.Conn, log *stream) {
			io.Copy(io.MultiWriter(dst, log), src)
			// One side ended: end both, as a dropped connection would.
			dst.Close()
			src.Close()
		}
		r.wg.Go(func() { pipe(server, client, up) })
		r.wg.Go(func() { pipe(client, server, down) })
	}
}

// streams returns a copy of everything recorded so far, a blob per
// connection and direction.
func (r *recorder) streams() []blob {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []blob
	for _, s := range r.logs {
		out = append(out, blob{"wire: " + s.name, bytes.Clone(s.buf.Bytes())})
	}
	return out
}

func (r *recorder) close() {
	r.mu.Lock()
	r.closed = true
	for _, c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.ln.Close()
	r.wg.Wait()
}

// TestLeakSearch checks the search itself: a forbidden string hidden in
// a value, raw, in hex or in base64 of either alphabet at any offset, with
// or without padding, is found; a value without it is not.
func TestLeakSearch(t *testing.T) {
	const secret = "zk-canary-4c1d-e9f2"
	for pre := range 3 {
		for post := range 3 {
			v := append(bytes.Repeat([]byte{0xA5}, pre), secret...)
			v = append(v, bytes.Repeat([]byte{0x5A}, post)...)
			forms := map[string]string{
				"raw":      string(v),
				"hex":      hex.EncodeToString(v),
				"HEX":      strings.ToUpper(hex.EncodeToString(v)),
				"std":      base64.StdEncoding.EncodeToString(v),
				"std-raw":  base64.RawStdEncoding.EncodeToString(v),
				"url":      base64.URLEncoding.EncodeToString(v),
				"url-raw":  base64.RawURLEncoding.EncodeToString(v),
				"embedded": "key:" + base64.RawURLEncoding.EncodeToString(v) + ":tail",
			}
			for name, form := range forms {
				dump := []blob{{name, []byte(form)}}
				if len(findLeaks(dump, []string{secret})) == 0 {
					t.Errorf("%d bytes before, %d after, %s: not found in %q", pre, post, name, form)
				}
			}
		}
	}
	other := []blob{{"other", []byte(base64.StdEncoding.EncodeToString([]byte("an unrelated value, as long")))}}
	if l := findLeaks(other, []string{secret}); len(l) != 0 {
		t.Errorf("found in a value without it: %+v", l)
	}
}
