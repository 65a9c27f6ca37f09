// Package redis implements elicitvault's store.Store on Redis, with
// github.com/redis/go-redis/v9.
//
//	st, err := redis.New(ctx, "redis://localhost:6379/0", nil) // rediss://, redis+cluster://: see New
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer st.Close()
//	ev, err := elicit.New(keys, st, nil)
//
// # Key layout
//
// Every entry is one Redis string, written with an absolute expiry in
// milliseconds (SET ... PXAT), so Redis itself expires it:
//
//	<prefix>{<key>}      the entry's value
//	<prefix>{<channel>}  the Pub/Sub channel of a store channel
//
// The prefix defaults to "elicitvault:" and is set with Options.Prefix. The key
// is wrapped in braces, a Redis Cluster hash tag: every Redis key derived
// from one store key hashes to the same slot, so operations that touch more
// than one of them can stay atomic on a cluster. Channels are laid out the
// same way, which suits sharded Pub/Sub. The prefix must not contain braces,
// so that the first brace ends it: no two (prefix, key) pairs make the same
// name, even when one prefix starts with another. Keys are stored exactly
// as given: the store adds the prefix and the braces, nothing else.
//
// # Operations
//
// Every operation is one atomic Redis command or script: Put is SET PXAT,
// Get is GET, Take is a Lua script (GET, DEL, and SET PX of a receipt that
// a retry of the same Take reads: see take), PutIfAbsent is SET NX PXAT,
// Swap is SET PXAT GET, CompareAndSwap is a Lua script (GET, compare, then
// SET PXAT or DEL), Delete is DEL. Expiry is compared with the Redis server's clock, and
// stored with millisecond precision, rounded down. Redis 7.0 or later is
// required (PEXPIRETIME).
//
// Scan uses SCAN MATCH <prefix>{*} TYPE string, then reads each key's value
// and expiry in a MULTI/EXEC block. Its cursor is the SCAN cursor, followed
// by the keys SCAN returned beyond count, if any: a Scan never returns more
// than count entries. On a Redis Cluster, Scan scans each primary in turn,
// in the order of their first slot, and its cursor starts with the index
// of the primary. Scan is refused on a Ring client.
//
// # Publish and Subscribe
//
// Publish is PUBLISH on <prefix>{<channel>}. All subscriptions of a Store
// share one go-redis PubSub, that is, one connection, which go-redis
// reconnects and resubscribes after a failure. Subscribe returns once Redis
// has confirmed the subscription. When a channel is subscribed again after
// a reconnection, each of its subscriptions receives a store.Message with
// Resubscribed set: messages published in between are lost, and the
// subscriber reads the store again.
//
// On a Redis Cluster, Publish is SPUBLISH and Subscribe SSUBSCRIBE (sharded
// Pub/Sub): a message goes to the shard serving its channel only, not over
// the whole cluster bus. The channels are spread over 16 groups by an FNV
// hash, named <prefix>{g<NN>}<channel>: the group is the hash tag, so one
// connection per group, to the primary serving the group's slot, carries
// every channel of the group. It also subscribes <prefix>{g<NN>}, the
// group's anchor, on which nothing is published: it keeps the connection
// tied to the slot while the group has no other channel, so the store
// keeps the connection from the group's first Subscribe until Close
// instead of dialling again whenever its subscriptions come back from
// zero. After a failover go-redis reconnects it to
// the promoted replica; when a node stops serving a group's slot while the
// connection stays up (it sends SUNSUBSCRIBE), the store makes a new
// connection. Either way the subscriptions receive Resubscribed.
//
// # Retries
//
// go-redis retries a command whose connection failed, by default up to three
// times (the max_retries URL parameter). A retry after a reply was lost runs
// the command twice: Take then reads the value from its receipt (see take),
// PutIfAbsent may report false for its own write, CompareAndSwap may report
// false for its own swap, and Swap may return the value it wrote itself.
// Each of these fails closed (nothing is consumed twice); elicitvault's
// one-shot markers write a random owner value and read it back to tell
// their own applied write from another's. Set max_retries=-1 in the URL if
// a lost reply must surface as an error instead.
package redis

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/elicitvault/elicitvault/store"
	"github.com/redis/go-redis/v9"
)

// defaultPrefix is the key prefix of a Store made without Options.Prefix.
const defaultPrefix = "elicitvault:"

// driver is the store.Driver on Redis.
type driver struct {
	client  redis.UniversalClient
	own     bool   // the client was made by New, and Close closes it
	prefix  string // prepended to every key and channel
	pattern string // the SCAN MATCH pattern of the store's keys
	hubs    []*hub // one, or channelGroups on a cluster
	// durability is what each write waits for (the wait_replicas URL
	// parameter).
	durability durability
}

var _ store.Driver = (*driver)(nil)

// Options configures a Store; nil means the defaults.
type Options struct {
	// Prefix is the prefix of every Redis key and channel name the store
	// uses; "elicitvault:" when empty. Stores with different prefixes on
	// one Redis database do not see each other's entries or messages. It
	// must not contain '{' or '}'.
	Prefix string

	// TLSConfig is the TLS configuration of a rediss:// connection made
	// by New, for a server whose certificate a private CA signed (RootCAs)
	// or that wants a client certificate. The URL's host stays the name
	// the certificate is checked against unless it sets ServerName. New
	// refuses it with a URL that is not rediss://.
	TLSConfig *tls.Config
}

type config struct {
	prefix string
	tls    *tls.Config
}

func (o *Options) config() config {
	c := config{prefix: defaultPrefix}
	if o != nil {
		if o.Prefix != "" {
			c.prefix = o.Prefix
		}
		c.tls = o.TLSConfig
	}
	return c
}

// New connects to the Redis deployment at url, checks that it answers, and
// returns a Store that owns the connection: Close closes it.
//
// The URL has the forms that go-redis's ParseURL accepts, and two of
// elicitvault's own for several servers:
//
//	redis://[[user]:password@]host[:port][/db][?option=value...]
//	rediss://...  (TLS)
//	unix://[[user]:password@]/path/to/redis.sock[?db=db...]
//	redis+cluster://[[user]:password@]host:port[,host:port...][?option=value...]
//	redis+sentinel://[[user]:password@]host:port[,host:port...][/db]?master=name[&option=value...]
//
// redis+cluster:// (rediss+cluster:// with TLS) names some nodes of a Redis
// Cluster, from which go-redis discovers the rest. redis+sentinel://
// (rediss+sentinel://) names Sentinels and the master they watch; its user
// information authenticates to the Sentinels, and the username and
// password parameters to the servers.
//
// An ACL user and its password go in the user information; query
// parameters set go-redis options by their snake-case names, such as
// client_name, dial_timeout or max_retries. Two parameters are
// elicitvault's own: wait_replicas=n makes every write wait, with WAIT on
// its connection, until n replicas have acknowledged it, or fail with
// ErrNotReplicated after wait_timeout (a duration, 1s by default). Without
// it, a write that only the primary acknowledged is lost if a failover
// promotes a replica before it got the write.
//
// New returns an error, and keeps no connection, when the URL is invalid or
// the server (on a cluster, every primary) does not answer before ctx
// ends. Error text never repeats the URL, which may hold a password.
func New(ctx context.Context, url string, opts *Options) (store.Store, error) {
	p, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	cfg := opts.config()
	var c redis.UniversalClient
	switch p.topology {
	case standalone:
		o := p.standalone
		if o.TLSConfig, err = withTLS(cfg.tls, o.TLSConfig, "rediss://"); err != nil {
			return nil, err
		}
		c = redis.NewClient(o)
	case cluster:
		o := p.cluster
		if o.TLSConfig, err = withTLS(cfg.tls, o.TLSConfig, "rediss+cluster://"); err != nil {
			return nil, err
		}
		c = redis.NewClusterClient(o)
	case sentinel:
		o := p.sentinel
		if o.TLSConfig, err = withTLS(cfg.tls, o.TLSConfig, "rediss+sentinel://"); err != nil {
			return nil, err
		}
		c = redis.NewFailoverClient(o)
	}
	s, err := newDriver(c, true, cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	s.durability = p.durability
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis: server does not answer: %w", err)
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		// Every primary must answer, or Scan and sharded Pub/Sub would
		// fail later, one shard at a time.
		err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.Ping(ctx).Err()
		})
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("redis: a cluster primary does not answer: %w", err)
		}
	}
	return store.New("redis", s, nil), nil
}

// mergeTLS returns a copy of tc that checks the name and minimum version
// the URL implies unless tc sets them.
func mergeTLS(tc, fromURL *tls.Config) *tls.Config {
	t := tc.Clone()
	if t.ServerName == "" {
		t.ServerName = fromURL.ServerName
	}
	if t.MinVersion == 0 {
		t.MinVersion = fromURL.MinVersion
	}
	return t
}

// withTLS merges Options.TLSConfig into the TLS configuration the URL
// asked for; a URL without TLS (fromURL nil) cannot take one.
func withTLS(opt, fromURL *tls.Config, scheme string) (*tls.Config, error) {
	if opt == nil {
		return fromURL, nil
	}
	if fromURL == nil {
		return nil, fmt.Errorf("redis: Options.TLSConfig needs a %s URL: %w", scheme, store.ErrInvalidArgument)
	}
	return mergeTLS(opt, fromURL), nil
}

// NewFromClient returns a Store that uses client, which may be a
// *redis.Client or a failover client. The caller keeps ownership of
// client: Close does not close it. NewFromClient does not contact the
// server.
func NewFromClient(client redis.UniversalClient, opts *Options) (store.Store, error) {
	if client == nil {
		return nil, fmt.Errorf("redis: nil client: %w", store.ErrInvalidArgument)
	}
	d, err := newDriver(client, false, opts.config())
	if err != nil {
		return nil, err
	}
	return store.New("redis", d, nil), nil
}

func newDriver(client redis.UniversalClient, own bool, c config) (*driver, error) {
	if strings.ContainsAny(c.prefix, "{}") {
		return nil, fmt.Errorf("redis: the key prefix must not contain braces: %w", store.ErrInvalidArgument)
	}
	s := &driver{
		client:  client,
		own:     own,
		prefix:  c.prefix,
		pattern: globEscape(c.prefix) + "{*}",
	}
	s.initHubs()
	return s, nil
}

// redisKey returns the Redis key of a store key.
func (s *driver) redisKey(key string) string {
	return s.prefix + "{" + key + "}"
}

// redisChannel returns the Redis channel of a store channel.
func (s *driver) redisChannel(channel string) string {
	return s.prefix + "{" + channel + "}"
}

// storeKey returns the store key of a Redis key, and false if the Redis key
// is not laid out as redisKey lays keys out.
func (s *driver) storeKey(rk string) (string, bool) {
	rest, ok := strings.CutPrefix(rk, s.prefix+"{")
	if !ok {
		return "", false
	}
	key, ok := strings.CutSuffix(rest, "}")
	if !ok || key == "" {
		return "", false
	}
	return key, true
}

// Put implements store.Driver: SET key value PXAT expiry.
func (s *driver) Put(ctx context.Context, key string, value []byte, expiry time.Time) error {
	rk := s.redisKey(key)
	err := s.write(ctx, rk, func(c commander) redis.Cmder {
		return c.Do(ctx, "SET", rk, value, "PXAT", expiry.UnixMilli())
	})
	if err != nil {
		return err
	}
	return nil
}

// Get implements store.Driver: GET key.
func (s *driver) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := s.client.Get(ctx, s.redisKey(key)).Bytes()
	if err == redis.Nil {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Take implements store.Store with the take script: what it takes stays
// under a receipt of this call for a few seconds, so that go-redis's retry
// of a call whose reply it lost (a timeout, a connection cut) gets the
// value instead of finding it gone.
func (s *driver) Take(ctx context.Context, key string) ([]byte, error) {
	rk := s.redisKey(key)
	// The receipt's name is this call's: go-redis sends the same script
	// again when it retries the call.
	var nonce [12]byte
	rand.Read(nonce[:])
	keys := []string{rk, rk + "~take:" + base64.RawURLEncoding.EncodeToString(nonce[:])}
	until := time.Now().Add(takeReceiptTTL).UnixMilli()
	var cmd *redis.Cmd
	err := s.write(ctx, rk, func(c commander) redis.Cmder {
		if _, pipelined := c.(redis.Pipeliner); pipelined {
			// EVALSHA's NOSCRIPT fallback cannot run inside a pipeline.
			cmd = take.Eval(ctx, c, keys, until)
		} else {
			cmd = take.Run(ctx, c, keys, until)
		}
		return cmd
	})
	if err == nil {
		var v string
		v, err = cmd.Text()
		if err == nil {
			return []byte(v), nil
		}
	}
	if err == redis.Nil {
		return nil, store.ErrNotFound
	}
	return nil, err
}

// takeReceiptTTL bounds how long a taken value stays under its receipt,
// for a retry of the same Take to find: longer than go-redis's retries.
const takeReceiptTTL = 30 * time.Second

// take reads and deletes KEYS[1], keeping what it took under the receipt
// KEYS[2] until ARGV[1] (Unix ms) at most, never past the value's own
// expiry (PEXPIRETIME, which the ACL of the README allows), and
// returns it; when KEYS[1] is gone it returns what the receipt holds. A
// call that go-redis sends again after losing its reply (a timeout, a
// connection cut after the script ran) thus gets the value its first
// sending took, instead of nil with the value gone for good. The receipt
// has the key's hash tag, so it is in the key's slot, and does not end in
// "}", so Scan does not return it.
var take = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
	local at = redis.call('PEXPIRETIME', KEYS[1])
	redis.call('DEL', KEYS[1])
	local keep = tonumber(ARGV[1])
	if at > 0 and at < keep then keep = at end
	redis.call('SET', KEYS[2], v, 'PXAT', keep)
	return v
end
return redis.call('GET', KEYS[2])
`)

// PutIfAbsent implements store.Driver: SET key value PXAT expiry NX.
func (s *driver) PutIfAbsent(ctx context.Context, key string, value []byte, expiry time.Time) (bool, error) {
	rk := s.redisKey(key)
	err := s.write(ctx, rk, func(c commander) redis.Cmder {
		return c.Do(ctx, "SET", rk, value, "PXAT", expiry.UnixMilli(), "NX")
	})
	if err == redis.Nil {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// putIfAbsentGet sets KEYS[1] to ARGV[1], expiring at ARGV[2] (Unix ms),
// if it does not exist, then reads KEYS[2]: {1 when it set, KEYS[2]'s
// value or nil}.
var putIfAbsentGet = redis.NewScript(`
local set = redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2], 'NX')
local v = redis.call('GET', KEYS[2])
if set then return {1, v} end
return {0, v}
`)

// PutIfAbsentGet implements store.Driver with the putIfAbsentGet script,
// which Redis runs atomically: one round trip. On Redis Cluster (or any
// client but a *redis.Client, which a failover client also is) the two
// keys may be on different nodes (each key is its own hash tag, so they
// are in different slots, which no script may touch together), so it
// returns errors.ErrUnsupported, and the Store calls PutIfAbsent, then
// Get: two.
func (s *driver) PutIfAbsentGet(ctx context.Context, key string, value []byte, expiry time.Time, other string) (bool, []byte, error) {
	if _, one := s.client.(*redis.Client); !one {
		return false, nil, errors.ErrUnsupported
	}
	rk := s.redisKey(key)
	keys := []string{rk, s.redisKey(other)}
	var cmd *redis.Cmd
	err := s.write(ctx, rk, func(c commander) redis.Cmder {
		if _, pipelined := c.(redis.Pipeliner); pipelined {
			// EVALSHA's NOSCRIPT fallback cannot run inside a pipeline.
			cmd = putIfAbsentGet.Eval(ctx, c, keys, value, expiry.UnixMilli())
		} else {
			cmd = putIfAbsentGet.Run(ctx, c, keys, value, expiry.UnixMilli())
		}
		return cmd
	})
	var r []any
	if err == nil {
		r, err = cmd.Slice()
	}
	if err != nil {
		return false, nil, err
	}
	if len(r) != 2 {
		return false, nil, fmt.Errorf("put if absent and get: %d replies, want 2", len(r))
	}
	set, _ := r[0].(int64)
	switch v := r[1].(type) {
	case nil:
		return set == 1, nil, nil
	case string:
		return set == 1, []byte(v), nil
	default:
		return false, nil, fmt.Errorf("put if absent and get: unexpected reply %T", v)
	}
}

// Swap implements store.Driver: SET key value PXAT expiry GET.
func (s *driver) Swap(ctx context.Context, key string, value []byte, expiry time.Time) ([]byte, error) {
	rk := s.redisKey(key)
	var cmd *redis.Cmd
	err := s.write(ctx, rk, func(c commander) redis.Cmder {
		cmd = c.Do(ctx, "SET", rk, value, "PXAT", expiry.UnixMilli(), "GET")
		return cmd
	})
	var old string
	if err == nil {
		old, err = cmd.Text()
	}
	if err == redis.Nil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []byte(old), nil
}

// compareAndSwap replaces KEYS[1] with ARGV[2], expiring at ARGV[3] (Unix
// milliseconds), if it holds ARGV[1]. A missing key reads as false, which
// no string equals. Lua strings compare byte by byte.
var compareAndSwap = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3])
return 1
`)

// compareAndDelete deletes KEYS[1] if it holds ARGV[1].
var compareAndDelete = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
return 1
`)

// CompareAndSwap implements store.Store with a Lua script, which Redis runs
// atomically. It returns ErrInvalidArgument for a nil old.
func (s *driver) CompareAndSwap(ctx context.Context, key string, old, value []byte, expiry time.Time) (bool, error) {
	rk := s.redisKey(key)
	keys := []string{rk}
	var cmd *redis.Cmd
	err := s.write(ctx, rk, func(c commander) redis.Cmder {
		script, args := compareAndDelete, []any{old}
		if value != nil {
			script, args = compareAndSwap, []any{old, value, expiry.UnixMilli()}
		}
		if _, pipelined := c.(redis.Pipeliner); pipelined {
			// EVALSHA's NOSCRIPT fallback cannot run inside a pipeline.
			cmd = script.Eval(ctx, c, keys, args...)
		} else {
			cmd = script.Run(ctx, c, keys, args...)
		}
		return cmd
	})
	var n int64
	if err == nil {
		n, err = cmd.Int64()
	}
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// Delete implements store.Driver: DEL key.
func (s *driver) Delete(ctx context.Context, key string) error {
	rk := s.redisKey(key)
	err := s.write(ctx, rk, func(c commander) redis.Cmder { return c.Del(ctx, rk) })
	if err != nil {
		return err
	}
	return nil
}

// Close implements store.Driver. It ends every subscription, closes the
// Pub/Sub connection and waits for the goroutine that reads it, and closes
// the client if New made it. A second Close returns ErrClosed.
func (s *driver) Close() error {
	var err error
	for _, h := range s.hubs {
		err = errors.Join(err, h.close())
	}
	if s.own {
		if cerr := s.client.Close(); cerr != nil && !errors.Is(cerr, redis.ErrClosed) {
			err = errors.Join(err, cerr)
		}
	}
	return err
}

// globEscape escapes the bytes that SCAN MATCH patterns give a meaning.
// Redis reads a backslash as "the next byte is literal", whatever it is.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
