// Package postgres implements elicitvault's store.Store on PostgreSQL, with
// github.com/jackc/pgx/v5.
//
//	pool, err := pgxpool.New(ctx, "postgres://elicitvault@localhost/elicitvault")
//	if err != nil {
//		log.Fatal(err)
//	}
//	if err := postgres.Migrate(ctx, pool, nil); err != nil { // or schema.sql, at deployment
//		log.Fatal(err)
//	}
//	st, err := postgres.NewFromPool(ctx, pool, nil)
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer st.Close()
//	ev, err := elicit.New(keys, st, nil)
//
// # Schema
//
// Entries live in one table, elicitvault_entries, created by Migrate or by
// running schema.sql (the same SQL, embedded in this package):
//
//	CREATE TABLE elicitvault_entries (
//	    key        bytea       PRIMARY KEY,  -- the store key, as given
//	    value      bytea       NOT NULL,
//	    expires_at timestamptz NOT NULL
//	);
//
// The table is in the schema Options.Schema names, or else wherever the
// connection's search_path finds it. Stores in different schemas of one
// database are independent, their messages included.
//
// Beside it, elicitvault_schema holds the schema version, SchemaVersion
// when Migrate last ran. Migrate runs only the migrations a database lacks,
// under an advisory lock, and both Migrate and New refuse a database whose
// version is newer than this package's (ErrNewerSchema): a later release
// migrated it.
//
// # Operations
//
// Every operation is one statement, one round trip to the server:
// Put is INSERT ... ON CONFLICT DO UPDATE; Get is SELECT; Take is DELETE ...
// RETURNING, which keeps what it took under a receipt of the call for 30
// seconds, in the same statement, so that Take can send the statement
// again after its reply was lost and get the value; PutIfAbsent is INSERT ... ON CONFLICT DO UPDATE ... WHERE the
// existing row has expired; Swap locks the row with SELECT ... FOR UPDATE
// and updates it, or inserts it, in data-modifying WITH clauses of one
// statement; CompareAndSwap is UPDATE (or DELETE) ...
// WHERE value = old. Each reads only rows whose expires_at is after now():
// expiry is judged by the database server's clock, consistently, never by
// the client's. Expiries are stored with microsecond precision.
//
// The statements expect PostgreSQL's default isolation level, READ
// COMMITTED, under which concurrent operations on one key wait for each
// other; under a stricter default_transaction_isolation they may fail with
// serialization errors instead (never with a wrong result).
//
// Scan pages by key (key > cursor ORDER BY key LIMIT count); its cursor is
// the last key returned, in unpadded base64url.
//
// Expired rows are deleted by a goroutine every minute (see
// Options.CleanupInterval), until Close.
//
// # Publish and Subscribe
//
// Publish is NOTIFY, through pg_notify. A store channel is the PostgreSQL
// channel "ev_" followed by the first 16 bytes, in hex, of SHA-256(schema ||
// 0x00 || channel): store channels may be long, and PostgreSQL's are
// identifiers of at most 63 bytes. The payload is the message in standard
// base64, since NOTIFY payloads are text; PostgreSQL refuses payloads of
// 8000 bytes or more, so Publish refuses messages over 5900 bytes.
//
// All subscriptions of a Store share one dedicated connection, which runs
// LISTEN for every channel that has a subscription. Its application_name is
// the pool's followed by "/listener". When that connection fails, the store
// reconnects with exponential backoff, runs LISTEN again for every channel,
// and sends every subscription a store.Message with Resubscribed set:
// messages published in between are lost, and the subscriber reads the
// store again.
//
// # Connection poolers
//
// Behind PgBouncer in transaction or statement pooling, LISTEN needs a
// direct connection: give it with the listen_url URL parameter or
// Options.ListenURL, and the pool then runs unnamed statements
// (QueryExecModeExec) unless the URL sets default_query_exec_mode. At
// start-up the store checks that a NOTIFY sent through the pool reaches its
// LISTEN connection, and fails with ErrNotifyLost when it does not.
package postgres

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// entriesTable is the name of the store's table.
const entriesTable = "elicitvault_entries"

// defaultCleanupInterval is how often a Store deletes expired rows, unless
// Options.CleanupInterval says otherwise.
const defaultCleanupInterval = time.Minute

// defaultApplicationName is the application_name of the connections of a
// Store made by New from a URL that sets none.
const defaultApplicationName = "elicitvault"

// cleanupBatch is the number of rows one cleanup statement deletes at most.
const cleanupBatch = 1000

// driver is the store.Driver on PostgreSQL.
type driver struct {
	pool   *pgxpool.Pool
	own    bool // the pool was made by New, and Close closes it
	schema string
	q      queries
	logger *slog.Logger

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the cleanup goroutine
	l      listener
}

var _ store.Driver = (*driver)(nil)

// Options configures a Store, and Migrate; nil means the defaults.
type Options struct {
	// Schema puts the table in the named schema, which Migrate creates if
	// it does not exist. The default is no schema: the table is wherever
	// the connection's search_path leads, usually public.
	Schema string

	// CleanupInterval is how often the store deletes expired rows:
	// a minute when zero. A negative interval disables the
	// cleanup: expired rows then still read as absent, but stay in the
	// table until something else deletes them.
	CleanupInterval time.Duration

	// ListenURL gives the store's LISTEN connection a URL of its own: a
	// direct connection to the PostgreSQL server, when the pool's URL
	// leads to a connection pooler such as PgBouncer in transaction or
	// statement pooling, which does not keep a LISTEN on one server
	// connection. The URL parameter listen_url of New does the same.
	ListenURL string

	// Logger is where the store's background work (the cleanup and the
	// listener connection) reports failures, which have no caller to
	// return them to: slog.Default() when nil.
	Logger *slog.Logger
}

type config struct {
	listenURL       string
	schema          string
	cleanupInterval time.Duration
	logger          *slog.Logger
}

func (o *Options) config() config {
	c := config{cleanupInterval: defaultCleanupInterval, logger: slog.Default()}
	if o == nil {
		return c
	}
	c.schema, c.listenURL = o.Schema, o.ListenURL
	if o.CleanupInterval != 0 {
		c.cleanupInterval = o.CleanupInterval
	}
	if o.Logger != nil {
		c.logger = o.Logger
	}
	return c
}

// New connects to the PostgreSQL server at url, checks that it answers and
// that the store's table exists, and returns a Store that owns the
// connection pool: Close closes it.
//
// The URL is a libpq connection string, as pgx's pgxpool.ParseConfig
// accepts it, in URL or keyword/value form:
//
//	postgres://user:password@host:5432/database?sslmode=verify-full&application_name=myserver
//	host=/var/run/postgresql dbname=elicitvault pool_max_conns=20
//
// TLS is set by sslmode and the ssl* parameters; the pool by the pool_*
// parameters. Without application_name the connections are named
// "elicitvault". The parameter listen_url (see Options.ListenURL) is the
// store's own, removed before the rest goes to pgx. Error text never
// repeats the URL, which may hold a password.
func New(ctx context.Context, url string, opts *Options) (store.Store, error) {
	url, listenURL, err := cutListenURL(url)
	if err != nil {
		return nil, err
	}
	c := opts.config()
	if c.listenURL == "" {
		c.listenURL = listenURL
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parser's message may quote the URL, password included.
		return nil, fmt.Errorf("postgres: invalid URL, want postgres://[user[:password]@]host[:port]/database[?param=value…] or a keyword/value string: %w", store.ErrInvalidArgument)
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = defaultApplicationName
	}
	if c.listenURL != "" && !strings.Contains(url, "default_query_exec_mode") {
		// Behind a pooler a server connection is shared between
		// transactions: no named prepared statement may outlive one.
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: server does not answer: %w", err)
	}
	s, err := newStore(ctx, pool, true, c)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// cutListenURL removes the listen_url parameter from a URL-form url, and
// returns it.
func cutListenURL(raw string) (rest, listen string, err error) {
	if !strings.HasPrefix(raw, "postgres://") && !strings.HasPrefix(raw, "postgresql://") {
		return raw, "", nil
	}
	u, err := neturl.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("postgres: invalid URL: %w", store.ErrInvalidArgument)
	}
	q := u.Query()
	listen = q.Get("listen_url")
	if listen == "" {
		return raw, "", nil
	}
	q.Del("listen_url")
	u.RawQuery = q.Encode()
	return u.String(), listen, nil
}

// NewFromPool returns a Store that uses pool, after checking that the
// store's table exists. The caller keeps ownership of pool: Close does not
// close it. The listener connection is opened with the pool's connection
// configuration.
func NewFromPool(ctx context.Context, pool *pgxpool.Pool, opts *Options) (store.Store, error) {
	if pool == nil {
		return nil, fmt.Errorf("postgres: nil pool: %w", store.ErrInvalidArgument)
	}
	return newStore(ctx, pool, false, opts.config())
}

func newStore(ctx context.Context, pool *pgxpool.Pool, own bool, c config) (store.Store, error) {
	logger := c.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &driver{
		pool:   pool,
		own:    own,
		schema: c.schema,
		q:      newQueries(tableName(c.schema)),
		logger: logger,
	}
	if _, err := pool.Exec(ctx, s.q.check); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
			return nil, fmt.Errorf("postgres: %s: %w", entriesTable, ErrNotMigrated)
		}
		return nil, fmt.Errorf("postgres: checking the table: %w", err)
	}
	v, err := schemaVersion(ctx, pool, versionTableName(c.schema))
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := checkVersion(v); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	lc := pool.Config().ConnConfig
	if c.listenURL != "" {
		var err error
		if lc, err = pgx.ParseConfig(c.listenURL); err != nil {
			return nil, fmt.Errorf("postgres: invalid listen URL: %w", store.ErrInvalidArgument)
		}
		if lc.RuntimeParams["application_name"] == "" {
			lc.RuntimeParams["application_name"] = pool.Config().ConnConfig.RuntimeParams["application_name"]
		}
	}
	lc = listenerConfig(lc)
	if err := probeNotify(ctx, pool, lc, c.schema); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.l.init(s, lc)
	if c.cleanupInterval > 0 {
		s.wg.Go(func() { s.cleanupEvery(c.cleanupInterval) })
	}
	return store.New("postgres", s, nil), nil
}

// tableName returns the quoted, schema-qualified name of the table.
func tableName(schema string) string {
	if schema == "" {
		return pgx.Identifier{entriesTable}.Sanitize()
	}
	return pgx.Identifier{schema, entriesTable}.Sanitize()
}

// versionTableName returns the quoted name of the schema version's table,
// qualified like tableName's.
func versionTableName(schema string) string {
	if schema == "" {
		return pgx.Identifier{versionTable}.Sanitize()
	}
	return pgx.Identifier{schema, versionTable}.Sanitize()
}

// queries holds the store's SQL, with the table name filled in.
type queries struct {
	check, put, get, take, putIfAbsent          string
	takeFirst, swap                             string
	compareAndSwap, compareAndDelete, del, scan string
	cleanup                                     string
}

func newQueries(t string) queries {
	return queries{
		check: `SELECT 1 FROM ` + t + ` WHERE false`,
		put: `INSERT INTO ` + t + ` (key, value, expires_at) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`,
		get: `SELECT value FROM ` + t + ` WHERE key = $1 AND expires_at > now()`,
		// One statement: taken deletes the row, receipt keeps what it
		// took under the receipt key $2 (see Take) for a while, never
		// past the row's own expiry; a retry of the same Take, which finds
		// the row gone, gets the receipt's value instead. The main query
		// sees the table as it was before the statement: the receipt the
		// statement writes is not read back.
		take: `WITH taken AS (
				DELETE FROM ` + t + ` WHERE key = $1 AND expires_at > now() RETURNING value, expires_at
			), receipt AS (
				INSERT INTO ` + t + ` (key, value, expires_at)
				SELECT $2, value, least(expires_at, now() + $3 * interval '1 millisecond') FROM taken
				ON CONFLICT (key) DO NOTHING
			)
			SELECT value FROM taken
			UNION ALL
			SELECT value FROM ` + t + ` WHERE key = $2 AND expires_at > now() AND NOT EXISTS (SELECT FROM taken)`,
		// take's first attempt: its receipt key $2 is new (a random
		// nonce), so there is no receipt to read, and the row itself
		// becomes the receipt: moved to $2, its expiry cut as take's.
		takeFirst: `UPDATE ` + t + ` SET key = $2, expires_at = least(expires_at, now() + $3 * interval '1 millisecond')
			WHERE key = $1 AND expires_at > now() RETURNING value`,
		putIfAbsent: `INSERT INTO ` + t + ` AS e (key, value, expires_at) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
			WHERE e.expires_at <= now()`,
		// One statement: old locks the row (waiting for a concurrent
		// writer and then reading what it committed), upd replaces it,
		// ins inserts it when there was none. When a concurrent
		// transaction inserted the row in between, ins does nothing and
		// the statement reports that nothing was written: Swap runs it
		// again, and its new snapshot finds that row to lock.
		swap: `WITH old AS (
				SELECT value, expires_at > now() AS live FROM ` + t + ` WHERE key = $1 FOR UPDATE
			), upd AS (
				UPDATE ` + t + ` SET value = $2, expires_at = $3 WHERE key = $1 AND EXISTS (SELECT FROM old) RETURNING 1
			), ins AS (
				INSERT INTO ` + t + ` (key, value, expires_at) SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT FROM old)
				ON CONFLICT (key) DO NOTHING RETURNING 1
			)
			SELECT (SELECT value FROM old WHERE live), EXISTS (SELECT FROM old WHERE live),
				EXISTS (SELECT FROM upd) OR EXISTS (SELECT FROM ins)`,
		compareAndSwap: `UPDATE ` + t + ` SET value = $3, expires_at = $4
			WHERE key = $1 AND value = $2 AND expires_at > now()`,
		compareAndDelete: `DELETE FROM ` + t + ` WHERE key = $1 AND value = $2 AND expires_at > now()`,
		del:              `DELETE FROM ` + t + ` WHERE key = $1`,
		scan: `SELECT key, value, expires_at FROM ` + t + `
			WHERE key > $1 AND expires_at > now() AND NOT (key >= '` + receiptLow + `' AND key < '` + receiptHigh + `')
			ORDER BY key LIMIT $2`,
		cleanup: `DELETE FROM ` + t + ` WHERE key IN (
			SELECT key FROM ` + t + ` WHERE expires_at <= now() LIMIT ` + fmt.Sprint(cleanupBatch) + `
			FOR UPDATE SKIP LOCKED)`,
	}
}

// Put implements store.Driver.
func (s *driver) Put(ctx context.Context, key string, value []byte, expiry time.Time) error {
	if _, err := s.pool.Exec(ctx, s.q.put, []byte(key), value, expiry); err != nil {
		return err
	}
	return nil
}

// Get implements store.Driver.
func (s *driver) Get(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := s.pool.QueryRow(ctx, s.q.get, []byte(key)).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return nonNil(v), nil
}

// Take implements store.Driver. What it takes stays for a few seconds
// under a receipt of this call (a row whose key starts with receiptPrefix,
// which Scan skips), so that when the reply is lost (the connection cut
// after the server ran the statement) Take sends it again, on another
// connection, and gets the value instead of finding it gone.
func (s *driver) Take(ctx context.Context, key string) ([]byte, error) {
	var nonce [16]byte
	rand.Read(nonce[:])
	receipt := append([]byte(receiptPrefix), nonce[:]...)
	delay := 20 * time.Millisecond
	q := s.q.takeFirst
	for attempt := 1; ; attempt, q = attempt+1, s.q.take {
		var v []byte
		err := s.pool.QueryRow(ctx, q, []byte(key), receipt, takeReceiptTTL.Milliseconds()).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		if err == nil {
			return nonNil(v), nil
		}
		var pgErr *pgconn.PgError
		if attempt == takeAttempts || ctx.Err() != nil || errors.As(err, &pgErr) {
			return nil, err // the server refused it, or no time is left
		}
		// The outcome is unknown (the connection failed): the same Take
		// again finds the value or its receipt.
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, err
		}
		delay *= 4
	}
}

// Receipts of Take: takeReceiptTTL bounds how long a taken value stays
// under its receipt, for a retry of the same Take; Take sends its
// statement at most takeAttempts times. A receipt's key is receiptPrefix
// and a nonce; keys from receiptLow up to receiptHigh are not the
// caller's (Scan skips them).
const (
	takeReceiptTTL = 30 * time.Second
	takeAttempts   = 3
	receiptPrefix  = "\x00ev-take-receipt\x00"
	receiptLow     = `\x0065762d74616b652d7265636569707400` // receiptPrefix, as a bytea literal
	receiptHigh    = `\x0065762d74616b652d7265636569707401`
)

// PutIfAbsent implements store.Driver.
func (s *driver) PutIfAbsent(ctx context.Context, key string, value []byte, expiry time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, s.q.putIfAbsent, []byte(key), value, expiry)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// PutIfAbsentGet implements store.Driver: the put-if-absent and the get in
// one batch, one round trip, run in one implicit transaction. They are
// two statements, not one, because every read of a statement sees the
// snapshot taken when the statement began, before the insert looked for
// a live row: a row committed or deleted between the two would be
// missed. The get, a statement of its own, takes its snapshot after the
// insert (PostgreSQL's default isolation, read committed, takes one per
// statement).
func (s *driver) PutIfAbsentGet(ctx context.Context, key string, value []byte, expiry time.Time, other string) (bool, []byte, error) {
	b := &pgx.Batch{}
	var won bool
	var v []byte
	b.Queue(s.q.putIfAbsent, []byte(key), value, expiry).Exec(func(tag pgconn.CommandTag) error {
		won = tag.RowsAffected() == 1
		return nil
	})
	b.Queue(s.q.get, []byte(other)).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&v); err != nil {
				return err
			}
			v = nonNil(v)
		}
		return rows.Err()
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return false, nil, err
	}
	return won, v, nil
}

// maxSwapAttempts bounds the rounds of Swap; see Swap.
const maxSwapAttempts = 100

// Swap implements store.Store, in one statement (one round trip): it locks
// the row with SELECT ... FOR UPDATE and updates it, or, when there is no
// row, inserts one with ON CONFLICT DO NOTHING. When a concurrent
// transaction inserted the row in between, the insert does nothing and
// Swap runs the statement again, which locks the row that transaction
// committed, and so on; a round repeats only when another transaction
// both inserted and deleted the row in between.
func (s *driver) Swap(ctx context.Context, key string, value []byte, expiry time.Time) ([]byte, error) {
	for range maxSwapAttempts {
		var old []byte
		var live, written bool
		if err := s.pool.QueryRow(ctx, s.q.swap, []byte(key), value, expiry).Scan(&old, &live, &written); err != nil {
			return nil, err
		}
		switch {
		case !written:
			continue
		case live:
			return nonNil(old), nil
		default:
			return nil, nil
		}
	}
	return nil, fmt.Errorf("the row changed under %d rounds", maxSwapAttempts)
}

// CompareAndSwap implements store.Driver.
func (s *driver) CompareAndSwap(ctx context.Context, key string, old, value []byte, expiry time.Time) (bool, error) {
	var tag pgconn.CommandTag
	var err error
	if value == nil {
		tag, err = s.pool.Exec(ctx, s.q.compareAndDelete, []byte(key), old)
	} else {
		tag, err = s.pool.Exec(ctx, s.q.compareAndSwap, []byte(key), old, value, expiry)
	}
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// Delete implements store.Driver.
func (s *driver) Delete(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, s.q.del, []byte(key)); err != nil {
		return err
	}
	return nil
}

// Scan implements store.Driver. It returns ErrInvalidArgument for a cursor
// it did not return.
func (s *driver) Scan(ctx context.Context, cursor string, count int) ([]store.Entry, string, error) {
	after, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, "", fmt.Errorf("malformed cursor: %w", store.ErrInvalidArgument)
	}
	if after == nil {
		after = []byte{} // key > '' is every key; key > NULL none
	}
	rows, err := s.pool.Query(ctx, s.q.scan, after, count)
	if err != nil {
		return nil, "", err
	}
	entries, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Entry, error) {
		var key, value []byte
		var expiry time.Time
		if err := row.Scan(&key, &value, &expiry); err != nil {
			return store.Entry{}, err
		}
		return store.Entry{Key: string(key), Value: nonNil(value), Expiry: expiry}, nil
	})
	if err != nil {
		return nil, "", err
	}
	if len(entries) < count {
		return entries, "", nil
	}
	last := entries[len(entries)-1].Key
	return entries, base64.RawURLEncoding.EncodeToString([]byte(last)), nil
}

// cleanupEvery deletes expired rows every interval until Close.
func (s *driver) cleanupEvery(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.cleanup(s.ctx); err != nil && s.ctx.Err() == nil {
			s.logger.Warn("postgres store: deleting expired rows failed", "err", err)
		}
	}
}

// cleanup deletes expired rows, in batches, and returns how many.
func (s *driver) cleanup(ctx context.Context) (int64, error) {
	var n int64
	for {
		tag, err := s.pool.Exec(ctx, s.q.cleanup)
		if err != nil {
			return n, err
		}
		n += tag.RowsAffected()
		if tag.RowsAffected() < cleanupBatch {
			return n, nil
		}
	}
}

// Close implements store.Driver. It ends every subscription, stops the
// cleanup and the listener and waits for their goroutines, and closes the
// pool if New made it. A second Close returns ErrClosed.
func (s *driver) Close() error {
	s.cancel()
	s.l.close()
	s.wg.Wait()
	if s.own {
		s.pool.Close()
	}
	return nil
}

// nonNil returns b, or an empty slice for nil: pgx reads an empty bytea as
// nil, and the store distinguishes an empty value from none.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
