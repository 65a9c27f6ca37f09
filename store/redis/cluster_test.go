package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evredis "github.com/elicitvault/elicitvault/store/redis"
	"github.com/elicitvault/elicitvault/store/redis/redistest"
	"github.com/elicitvault/elicitvault/store/storetest"
	"github.com/redis/go-redis/v9"
)

// openPrivate opens a store on servers of the test's own, with a random
// prefix, closed when t ends.
func openPrivate(t testing.TB, rawURL string, prefix string) store.Store {
	t.Helper()
	s, err := evredis.New(t.Context(), rawURL, &evredis.Options{Prefix: prefix})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	storetest.CloseAtEnd(t, s)
	return s
}

// TestClusterConformance runs the conformance suite on a Redis Cluster of
// six redis-server processes, with and without WAIT after each write.
func TestClusterConformance(t *testing.T) {
	runWithQueries(t, redistest.StartCluster(t).URL, "wait_replicas=1")
}

// TestSentinelConformance runs the conformance suite on a primary with two
// replicas found through a Sentinel.
func TestSentinelConformance(t *testing.T) {
	runWithQueries(t, startSentinel(t).url, "wait_replicas=2")
}

// runWithQueries runs the conformance suite on the URL that urlFor makes
// of no query, and of waitQuery.
func runWithQueries(t *testing.T, urlFor func(query string) string, waitQuery string) {
	for _, query := range []string{"", waitQuery} {
		t.Run("query="+query, func(t *testing.T) {
			url := urlFor(query)
			storetest.Run(t, func(t *testing.T) store.Store {
				return openPrivate(t, url, randomName("prefix")+":")
			})
		})
	}
}

// TestClusterShardedPubSub checks that a cluster store subscribes with
// SSUBSCRIBE, so that a message goes to the one shard serving its channel
// instead of being broadcast over the cluster bus, and that however many
// channels it subscribes it keeps at most 16 Pub/Sub connections.
func TestClusterShardedPubSub(t *testing.T) {
	c := redistest.StartCluster(t)
	ctx := t.Context()
	s := openPrivate(t, c.URL("client_name=sharded"), "sharded:")
	var subs []store.Subscription
	for i := range 100 {
		sub, err := s.Subscribe(ctx, fmt.Sprintf("channel-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	shard, classic, conns := 0, 0, 0
	for _, n := range c.Nodes {
		cl := clientOf(n.Addr())
		sc, err := cl.PubSubShardChannels(ctx, "sharded:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		ch, err := cl.PubSubChannels(ctx, "sharded:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		list, err := cl.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range sc {
			if !strings.HasSuffix(name, "}") { // not a group's anchor
				shard++
			}
		}
		classic += len(ch)
		conns += strings.Count(list, "name=sharded ")
		cl.Close()
	}
	t.Logf("100 channels: %d shard channels, %d classic channels, %d Pub/Sub connections", shard, classic, conns)
	if shard != 100 || classic != 0 {
		t.Errorf("%d shard channels and %d classic ones, want 100 and 0", shard, classic)
	}
	if conns > 16 || conns < 3 {
		t.Errorf("%d Pub/Sub connections, want 3 to 16", conns)
	}
	// Each channel still gets its own messages only.
	if err := s.Publish(ctx, "channel-7", []byte("seven")); err != nil {
		t.Fatal(err)
	}
	if got := storetest.RecvData(t, subs[7], 5*time.Second); string(got) != "seven" {
		t.Fatalf("channel-7 got %q", got)
	}
	for i, sub := range subs {
		if i == 7 {
			continue
		}
		select {
		case m := <-sub.Messages():
			t.Errorf("channel-%d got %q", i, m.Data)
		default:
		}
		sub.Close()
	}
}

// TestClusterPubSubKeepsConnection checks that a cluster store keeps its
// sharded Pub/Sub connection when a group's last subscription closes: a
// node whose elicitations come and go one at a time must not dial Redis
// for each of them. The channel is unsubscribed all the same, and the
// connection still delivers after the cycles.
func TestClusterPubSubKeepsConnection(t *testing.T) {
	c := redistest.StartCluster(t)
	ctx := t.Context()
	s := openPrivate(t, c.URL(""), "keep:")
	var admins []*redis.Client
	for _, n := range c.Nodes {
		cl := clientOf(n.Addr())
		t.Cleanup(func() { cl.Close() })
		admins = append(admins, cl)
	}
	received := func() int {
		total := 0
		for _, cl := range admins {
			info, err := cl.Info(ctx, "stats").Result()
			if err != nil {
				t.Fatal(err)
			}
			for line := range strings.SplitSeq(info, "\r\n") {
				if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
					n, err := strconv.Atoi(v)
					if err != nil {
						t.Fatal(err)
					}
					total += n
				}
			}
		}
		return total
	}
	// The first subscription opens the group's connection.
	sub, err := s.Subscribe(ctx, "waiter")
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	before := received()
	const cycles = 30
	for i := range cycles {
		sub, err := s.Subscribe(ctx, "waiter")
		if err != nil {
			t.Fatal(err)
		}
		if i == cycles-1 {
			if err := s.Publish(ctx, "waiter", []byte("last")); err != nil {
				t.Fatal(err)
			}
			if got := storetest.RecvData(t, sub, 5*time.Second); string(got) != "last" {
				t.Fatalf("after %d cycles got %q", cycles, got)
			}
		}
		sub.Close()
	}
	dialled := received() - before
	t.Logf("%d subscribe/close cycles on one channel: %d new connections", cycles, dialled)
	if dialled > 2 {
		t.Errorf("%d subscribe/close cycles dialled %d connections, want the one kept", cycles, dialled)
	}
	// Closed means unsubscribed: only the group's anchor is left.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, cl := range admins {
			chans, err := cl.PubSubShardChannels(ctx, "keep:*").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range chans {
				if !strings.HasSuffix(ch, "}") {
					left = append(left, ch)
				}
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still subscribed after Close: %q", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWaitReplicas shows what wait_replicas is for. With the replica of a
// shard stopped (SIGSTOP) and its link's buffers full, a write without WAIT is acknowledged by the
// primary alone; the primary is then killed and the replica, resumed,
// promoted: the acknowledged write is gone. With wait_replicas=1 the same
// write is refused with ErrNotReplicated instead of being acknowledged, and
// a write that WAIT confirmed survives the same failover.
func TestWaitReplicas(t *testing.T) {
	c := redistest.StartCluster(t)
	quietRedisLog.quiet.Store(true)
	t.Cleanup(func() { quietRedisLog.quiet.Store(false) })
	ctx := t.Context()
	const prefix = "wait:"
	plain := openPrivate(t, c.URL(""), prefix)
	waiting := openPrivate(t, c.URL("wait_replicas=1&wait_timeout=300ms"), prefix)

	primary, replica := c.PrimaryOf(t, prefix+"{kept}")
	// A key of the same shard for each write.
	sameShard := func(base string) string {
		for i := 0; ; i++ {
			k := fmt.Sprintf("%s-%d", base, i)
			if p, _ := c.PrimaryOf(t, prefix+"{"+k+"}"); p == primary {
				return k
			}
		}
	}
	lost, refused := sameShard("lost"), sameShard("refused")
	exp := time.Now().Add(time.Minute)

	if err := waiting.Put(ctx, "kept", []byte("replicated"), exp); err != nil {
		t.Fatalf("Put with the replica running: %v", err)
	}
	// The stopped replica's socket still takes what the primary sends
	// until the kernel's buffers are full: a 48 MiB value fills them, so
	// that what follows stays in the primary's memory.
	replica.Stop(t, syscall.SIGSTOP)
	if err := plain.Put(ctx, sameShard("filler"), make([]byte, 48<<20), exp); err != nil {
		t.Fatalf("Put of the filler: %v", err)
	}
	if err := plain.Put(ctx, lost, []byte("primary only"), exp); err != nil {
		t.Fatalf("Put without WAIT: %v", err)
	}
	err := waiting.Put(ctx, refused, []byte("primary only"), exp)
	if !errors.Is(err, evredis.ErrNotReplicated) {
		t.Fatalf("Put with wait_replicas=1 and the replica stopped: %v, want ErrNotReplicated", err)
	}
	t.Logf("with the replica stopped: the write without WAIT was acknowledged; with WAIT: %v", err)

	primary.Stop(t, syscall.SIGKILL)
	replica.Restart(t)
	took := replica.WaitPromoted(t, 30*time.Second)
	c.WaitOK(t) // the killed primary excepted
	t.Logf("replica promoted %v after the primary was killed", took.Round(time.Millisecond))

	after := openPrivate(t, c.URL(""), prefix)
	if v, err := after.Get(ctx, "kept"); err != nil || string(v) != "replicated" {
		t.Errorf("the write WAIT confirmed: %q, %v after the failover", v, err)
	}
	if _, err := after.Get(ctx, lost); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the write acknowledged without WAIT: %v, want it lost by the failover (ErrNotFound)", err)
	}
	t.Log("the write acknowledged without WAIT is lost by the failover; the one WAIT confirmed is kept")
}

// TestClusterFailover answers 300 elicitations through a cluster store with
// wait_replicas=1 while a primary is killed (SIGKILL) a third of the way
// through. Each answer is written by one store (the node that receives
// it) and awaited on another (the node holding the elicitation) the way
// the elicit flow does: subscribed first, then reading the store after
// each message and each resubscription. Every acknowledged answer must
// reach its waiter, and be taken exactly once afterwards: 0 lost.
func TestClusterFailover(t *testing.T) {
	c := redistest.StartCluster(t)
	runFailover(t, c.URL("wait_replicas=1&wait_timeout=2s"), func() {
		start := time.Now()
		primary, replica := c.PrimaryOf(t, "failover:{answer-0}")
		primary.Stop(t, syscall.SIGKILL)
		took := replica.WaitPromoted(t, 30*time.Second)
		t.Logf("primary killed; replica promoted after %v", took.Round(time.Millisecond))
		// With one replica per shard, the promoted one has none until
		// the dead node comes back (as a process manager would restart
		// it), as a replica: until then WAIT refuses writes to the shard.
		primary.Restart(t)
		c.WaitOK(t)
		t.Logf("the killed node is back as a replica %v after the kill", time.Since(start).Round(time.Millisecond))
	})
}

// TestSentinelFailover is TestClusterFailover on a Sentinel-managed
// primary with two replicas, with wait_replicas=1.
func TestSentinelFailover(t *testing.T) {
	ss := startSentinel(t)
	runFailover(t, ss.url("wait_replicas=1&wait_timeout=2s"), func() {
		ss.primary.Stop(t, syscall.SIGKILL)
		start := time.Now()
		cl := clientOf(ss.sentinelAddr)
		defer cl.Close()
		for {
			addr, err := cl.Do(t.Context(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "evmaster").StringSlice()
			if err == nil && len(addr) == 2 && addr[0]+":"+addr[1] != ss.primary.Addr() {
				t.Logf("primary killed; the Sentinel promoted %s after %v", addr[1], time.Since(start).Round(time.Millisecond))
				return
			}
			if time.Since(start) > 30*time.Second {
				t.Fatal("the Sentinel did not fail over within 30s")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// runFailover is the body of the failover tests; kill kills a primary and
// returns once a replica is promoted.
func runFailover(t *testing.T, url string, kill func()) {
	const (
		answers = 300
		workers = 8
		prefix  = "failover:"
	)
	quietRedisLog.quiet.Store(true)
	t.Cleanup(func() { quietRedisLog.quiet.Store(false) })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	writer := openPrivate(t, url, prefix)
	holder := openPrivate(t, url, prefix)

	// The waiters, on the node holding the elicitations.
	results := make([]chan []byte, answers)
	var resubscribed atomic.Int64
	var wg sync.WaitGroup
	for i := range answers {
		key, channel := fmt.Sprintf("answer-%d", i), fmt.Sprintf("channel-%d", i)
		sub, err := holder.Subscribe(ctx, channel)
		if err != nil {
			t.Fatal(err)
		}
		results[i] = make(chan []byte, 1)
		wg.Go(func() {
			defer sub.Close()
			for {
				// Read the store; a failed read is retried, as a
				// transient failure during the failover.
				for {
					v, err := holder.Get(ctx, key)
					if err == nil {
						results[i] <- v
						return
					}
					if errors.Is(err, store.ErrNotFound) || ctx.Err() != nil {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				select {
				case m, ok := <-sub.Messages():
					if !ok {
						return
					}
					if m.Resubscribed {
						resubscribed.Add(1)
					}
				case <-ctx.Done():
					return
				}
			}
		})
	}

	// The answers, written by workers that retry each until acknowledged.
	var next, acked, failures atomic.Int64
	killAt := make(chan struct{})
	var once sync.Once
	var wwg sync.WaitGroup
	for range workers {
		wwg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= answers {
					return
				}
				key, channel := fmt.Sprintf("answer-%d", i), fmt.Sprintf("channel-%d", i)
				deadline := time.Now().Add(60 * time.Second)
				for {
					err := writer.Put(ctx, key, []byte(key), time.Now().Add(5*time.Minute))
					if err == nil {
						break
					}
					failures.Add(1)
					if time.Now().After(deadline) {
						t.Errorf("answer %d not acknowledged within 60s: %v", i, err)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
				if acked.Add(1) == answers/3 {
					once.Do(func() { close(killAt) })
				}
				// Best effort, like the flow: a lost message is made up
				// for by the waiter's resubscription.
				for range 50 {
					if writer.Publish(ctx, channel, []byte{1}) == nil {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	<-killAt
	start := time.Now()
	kill()
	wwg.Wait()
	t.Logf("all %d answers acknowledged %v after the kill; %d writes failed and were retried", acked.Load(), time.Since(start).Round(time.Millisecond), failures.Load())

	lost := 0
	deadline := time.Now().Add(60 * time.Second)
	for i := range answers {
		select {
		case v := <-results[i]:
			if string(v) != fmt.Sprintf("answer-%d", i) {
				t.Errorf("waiter %d got %q", i, v)
			}
		case <-time.After(time.Until(deadline)):
			lost++
		}
	}
	// Each answer is taken once: the one-shot continuation.
	taken := 0
	for i := range answers {
		for {
			_, err := holder.Take(ctx, fmt.Sprintf("answer-%d", i))
			if err == nil {
				taken++
			} else if !errors.Is(err, store.ErrNotFound) {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			break
		}
		if _, err := holder.Take(ctx, fmt.Sprintf("answer-%d", i)); err == nil {
			t.Errorf("answer %d taken twice", i)
		}
	}
	t.Logf("%d answers: %d reached their waiter, %d lost, %d taken once; %d resubscriptions", answers, answers-lost, lost, taken, resubscribed.Load())
	if lost != 0 || taken != answers {
		t.Errorf("%d answers lost, %d of %d taken", lost, taken, answers)
	}
	cancel()
	wg.Wait()
}

// TestClusterManualFailover fails a primary over gracefully (CLUSTER
// FAILOVER on its replica): the old primary stays up, as a replica, and
// tells the store's Pub/Sub connection that it no longer serves the
// channels (SUNSUBSCRIBE). The store must move those subscriptions to the
// new primary: every channel then still gets its messages.
func TestClusterManualFailover(t *testing.T) {
	c := redistest.StartCluster(t)
	ctx := t.Context()
	s := openPrivate(t, c.URL(""), "manual:")
	pub := openPrivate(t, c.URL(""), "manual:")
	const channels = 48
	var subs []store.Subscription
	for i := range channels {
		sub, err := s.Subscribe(ctx, fmt.Sprintf("channel-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		subs = append(subs, sub)
	}
	// Fail over every shard, so that every group's connection is told.
	for _, n := range c.Nodes {
		cl := clientOf(n.Addr())
		info, _ := cl.Info(ctx, "replication").Result()
		if strings.Contains(info, "role:slave") {
			if err := cl.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
				t.Fatal(err)
			}
			n.WaitPromoted(t, 30*time.Second)
		}
		cl.Close()
	}
	c.WaitOK(t)
	for i, sub := range subs {
		msg := fmt.Sprintf("after-%d", i)
		deadline := time.Now().Add(20 * time.Second)
		got := false
		for !got && time.Now().Before(deadline) {
			if err := pub.Publish(ctx, fmt.Sprintf("channel-%d", i), []byte(msg)); err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			timer := time.NewTimer(500 * time.Millisecond)
		read:
			for {
				select {
				case m := <-sub.Messages():
					if string(m.Data) == msg {
						got = true
						break read
					}
				case <-timer.C:
					break read
				}
			}
			timer.Stop()
		}
		if !got {
			t.Fatalf("channel-%d: no message after the failover", i)
		}
	}
	t.Logf("%d channels receive after every shard failed over", channels)
}
