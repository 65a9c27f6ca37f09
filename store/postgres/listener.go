package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// maxMessageSize is the largest message Publish sends. PostgreSQL refuses
// NOTIFY payloads of 8000 bytes or more, and the payload is the message in
// base64, which takes 4 bytes for every 3: 5900 bytes make 7868.
const maxMessageSize = 5900

// The listener's timings.
const (
	// minBackoff and maxBackoff bound the wait between two attempts to
	// connect the listener; it doubles after each failure.
	minBackoff = 50 * time.Millisecond
	maxBackoff = 5 * time.Second
	// healthInterval is how long the listener waits for a notification
	// before it checks that its connection still works.
	healthInterval = 15 * time.Second
	// healthTimeout bounds that check.
	healthTimeout = 5 * time.Second
)

// channelName returns the PostgreSQL channel of a store channel.
func channelName(schema, channel string) string {
	h := sha256.New()
	h.Write([]byte(schema))
	h.Write([]byte{0})
	h.Write([]byte(channel))
	return "ev_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// listenerConfig returns the configuration of the listener connection: the
// pool's, with "/listener" appended to the application_name, and with
// context cancellation that only interrupts the read, which leaves the
// connection usable (see listener.wait).
func listenerConfig(pool *pgx.ConnConfig) *pgx.ConnConfig {
	cfg := pool.Copy()
	name := cfg.RuntimeParams["application_name"]
	if name == "" {
		name = defaultApplicationName
	}
	cfg.RuntimeParams["application_name"] = name + "/listener"
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	return cfg
}

// Publish implements store.Driver: pg_notify(channel, base64(msg)). It
// returns ErrInvalidArgument for a msg over maxMessageSize bytes.
func (s *driver) Publish(ctx context.Context, channel string, msg []byte) error {
	if len(msg) > maxMessageSize {
		return fmt.Errorf("message of %d bytes, over the %d that NOTIFY carries: %w", len(msg), maxMessageSize, store.ErrInvalidArgument)
	}
	payload := base64.StdEncoding.EncodeToString(msg)
	if _, err := s.pool.Exec(ctx, "SELECT pg_notify($1, $2)", channelName(s.schema, channel), payload); err != nil {
		return err
	}
	return nil
}

// Subscribe implements store.Driver. It returns once the listener connection
// has run LISTEN for the channel, or when ctx ends.
func (s *driver) Subscribe(ctx context.Context, channel string, deliver func(store.Message)) (func(), error) {
	name := channelName(s.schema, channel)
	c, ready, err := s.l.add(name, deliver)
	if err != nil {
		return nil, err
	}
	unsubscribe := func() { s.l.remove(name, c) }
	select {
	case <-ready:
		return unsubscribe, nil
	case <-ctx.Done():
		unsubscribe()
		return nil, errors.Join(ctx.Err(), s.l.lastError())
	case <-s.ctx.Done():
		return nil, store.ErrClosed
	}
}

// listener runs the store's dedicated LISTEN connection, and routes its
// notifications to subscriptions.
//
// One goroutine, run, owns the connection. It connects, runs LISTEN and
// UNLISTEN until the connection listens to exactly the channels that have
// subscriptions, and waits for a notification. Subscribe and
// Subscription.Close change the set of channels and interrupt the wait, so
// that run applies the change.
//
// mu guards the routing table and every call of a channel's deliver, so
// that none comes after the channel's unsubscribe returned.
type listener struct {
	s      *driver
	config *pgx.ConnConfig
	done   chan struct{} // closed when run returns

	mu       sync.Mutex
	started  bool
	closed   bool
	channels map[string]*pchannel // the channels with subscriptions, by name
	listened map[string]bool      // the channels the connection listens to
	changed  bool                 // channels changed since run last applied them
	wake     context.CancelFunc   // interrupts run's wait, if it waits
	lastErr  error                // the last failure of the connection
}

// pchannel is the state of one PostgreSQL channel.
type pchannel struct {
	deliver func(store.Message) // the Store's
	// listening reports that the current connection runs LISTEN for the
	// channel. ready is closed when listening becomes true, and replaced
	// when the connection is lost. active reports that a connection has
	// listened to the channel: a later LISTEN is a resubscription.
	listening bool
	active    bool
	ready     chan struct{}
}

func (l *listener) init(s *driver, config *pgx.ConnConfig) {
	l.s = s
	l.config = config
	l.done = make(chan struct{})
	l.channels = make(map[string]*pchannel)
	l.listened = make(map[string]bool)
}

// add subscribes the channel name, whose notifications go to deliver, and
// returns it with a channel closed once the connection listens to name.
// The first call starts run.
func (l *listener) add(name string, deliver func(store.Message)) (*pchannel, <-chan struct{}, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, nil, store.ErrClosed
	}
	if !l.started {
		l.started = true
		go l.run()
	}
	c := &pchannel{deliver: deliver, ready: make(chan struct{})}
	l.channels[name] = c
	l.changedLocked()
	return c, c.ready, nil
}

// remove removes c, the channel name: the listener runs UNLISTEN for it.
func (l *listener) remove(name string, c *pchannel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.channels[name] != c {
		return // the listener is closed
	}
	delete(l.channels, name)
	l.changedLocked()
}

// changedLocked records that the set of channels changed, and interrupts
// run's wait. l.mu must be held.
func (l *listener) changedLocked() {
	l.changed = true
	if l.wake != nil {
		l.wake()
	}
}

// lastError returns the last failure of the listener connection.
func (l *listener) lastError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

// close ends every subscription, stops run and waits for it to return.
// The store's context must be canceled first.
func (l *listener) close() {
	l.mu.Lock()
	l.closed = true
	l.channels = nil
	started := l.started
	l.mu.Unlock()
	if started {
		<-l.done
	}
}

// run keeps a connection listening to the channels with subscriptions,
// and delivers its notifications, until the store is closed. After a
// failure it waits, from minBackoff doubling up to maxBackoff, before it
// connects again.
func (l *listener) run() {
	defer close(l.done)
	ctx := l.s.ctx
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			closeConn(conn)
		}
	}()
	backoff := minBackoff
	fail := func(err error) {
		if ctx.Err() != nil {
			return // closing, not failing
		}
		if conn != nil {
			closeConn(conn)
			conn = nil
		}
		l.lost(err)
		sleep(ctx, backoff)
		backoff = min(2*backoff, maxBackoff)
	}
	for ctx.Err() == nil {
		if conn == nil {
			c, err := pgx.ConnectConfig(ctx, l.config)
			if err != nil {
				fail(fmt.Errorf("connecting: %w", err))
				continue
			}
			conn = c
		}
		if err := l.apply(ctx, conn); err != nil {
			fail(err)
			continue
		}
		backoff = minBackoff
		n, err := l.wait(ctx, conn)
		if err != nil {
			fail(err)
			continue
		}
		if n != nil {
			l.deliver(n)
		}
	}
}

// closeConn closes conn, giving the server a moment to hear it.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn.Close(ctx)
}

// sleep waits for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// apply runs LISTEN for every channel with subscriptions that conn does not
// listen to yet, and UNLISTEN for every channel conn listens to that has
// none left. A channel that was listened to before receives a
// Resubscribed notice: it was listened to on a connection that failed
// since.
func (l *listener) apply(ctx context.Context, conn *pgx.Conn) error {
	l.mu.Lock()
	l.changed = false
	var listen, unlisten []string
	for name, c := range l.channels {
		if !c.listening {
			listen = append(listen, name)
		}
	}
	for name := range l.listened {
		if l.channels[name] == nil {
			unlisten = append(unlisten, name)
		}
	}
	l.mu.Unlock()
	if len(listen)+len(unlisten) == 0 {
		return nil
	}

	var sql strings.Builder
	for _, name := range listen {
		fmt.Fprintf(&sql, "LISTEN %s;", pgx.Identifier{name}.Sanitize())
	}
	for _, name := range unlisten {
		fmt.Fprintf(&sql, "UNLISTEN %s;", pgx.Identifier{name}.Sanitize())
	}
	if _, err := conn.Exec(ctx, sql.String()); err != nil {
		return fmt.Errorf("LISTEN: %w", err)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range unlisten {
		delete(l.listened, name)
	}
	for _, name := range listen {
		l.listened[name] = true
		c := l.channels[name]
		if c == nil {
			// Every subscription closed meanwhile: the next apply runs
			// UNLISTEN.
			continue
		}
		c.listening = true
		close(c.ready)
		if c.active {
			c.deliver(store.Message{Resubscribed: true})
		}
		c.active = true
	}
	return nil
}

// wait waits for a notification on conn. It returns early, with neither a
// notification nor an error, when the set of channels changes, and after
// healthInterval, once it has checked that conn still works. An error means
// conn failed.
//
// Canceling the wait is safe: the listener connection's context watcher
// interrupts the read with a deadline, which pgx treats as a timeout that
// leaves the connection, and any message half read, intact.
func (l *listener) wait(ctx context.Context, conn *pgx.Conn) (*pgconn.Notification, error) {
	waitCtx, cancel := context.WithTimeout(ctx, healthInterval)
	defer cancel()
	l.mu.Lock()
	if l.changed {
		l.mu.Unlock()
		return nil, nil
	}
	l.wake = cancel
	l.mu.Unlock()

	n, err := conn.WaitForNotification(waitCtx)

	l.mu.Lock()
	l.wake = nil
	l.mu.Unlock()
	switch {
	case err == nil:
		return n, nil
	case ctx.Err() != nil || conn.IsClosed():
		return nil, err
	case errors.Is(waitCtx.Err(), context.DeadlineExceeded):
		pingCtx, cancel := context.WithTimeout(ctx, healthTimeout)
		defer cancel()
		if err := conn.Ping(pingCtx); err != nil {
			return nil, fmt.Errorf("health check: %w", err)
		}
		return nil, nil
	case waitCtx.Err() != nil:
		return nil, nil // woken: the channels changed
	default:
		return nil, err
	}
}

// lost records that the connection failed: no channel is listened to
// until the next apply.
func (l *listener) lost(err error) {
	l.s.logger.Warn("postgres store: listener connection failed; reconnecting", "err", err)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastErr = err
	clear(l.listened)
	for _, c := range l.channels {
		if c.listening {
			c.listening = false
			c.ready = make(chan struct{})
		}
	}
}

// deliver routes a notification to the subscriptions of its channel.
func (l *listener) deliver(n *pgconn.Notification) {
	data, err := base64.StdEncoding.DecodeString(n.Payload)
	if err != nil {
		// Not sent by a Store: someone else notified the channel.
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.channels[n.Channel]; c != nil {
		c.deliver(store.Message{Data: data})
	}
}
