package redis_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evredis "github.com/elicitvault/elicitvault/store/redis"
	"github.com/elicitvault/elicitvault/store/storetest"
	"github.com/redis/go-redis/v9"
)

// TestNew checks New's errors for a server that does not answer and for
// malformed URLs, which it must not repeat: they may hold a password.
func TestNew(t *testing.T) {
	storetest.CheckNew(t, func(ctx context.Context, url string) (store.Store, error) {
		return evredis.New(ctx, url, nil)
	},
		// Port 1 (tcpmux) is closed on any machine the tests run on.
		"redis://user:s3cr3t@127.0.0.1:1/0?max_retries=-1",
		[]string{
			"redis://user:s3cr3t/pass@127.0.0.1:6379/0",
			"http://user:s3cr3t@127.0.0.1/",
			"redis://user:s3cr3t@127.0.0.1:6379/notadb",
		}, "s3cr3t")
}

func TestOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	if _, err := evredis.NewFromClient(c, &evredis.Options{Prefix: "a{b}:"}); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("NewFromClient with braces in the prefix: %v, want ErrInvalidArgument", err)
	}
	if _, err := evredis.NewFromClient(nil, nil); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("NewFromClient(nil): %v, want ErrInvalidArgument", err)
	}
}

// TestKeyLayout checks the documented layout: keys stored as given inside
// the prefix and a hash tag, with the expiry in milliseconds, and channels
// under the prefix.
func TestKeyLayout(t *testing.T) {
	url := serverURL(t)
	s, prefix := openStore(t, url)
	c := admin(t, url)
	ctx := t.Context()

	// Keys are opaque: any bytes, braces and glob characters included.
	expiry := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	for _, key := range []string{"plain", "a}b{c", "*?[x]\\", "\x00\xff"} {
		if err := s.Put(ctx, key, []byte("v:"+key), expiry); err != nil {
			t.Fatalf("Put: %v", err)
		}
		rk := prefix + "{" + key + "}"
		got, err := c.Get(ctx, rk).Bytes()
		if err != nil || string(got) != "v:"+key {
			t.Errorf("GET %q = %q, %v; want %q", rk, got, err, "v:"+key)
		}
		ms, err := c.Do(ctx, "PEXPIRETIME", rk).Int64()
		if err != nil || ms != expiry.UnixMilli() {
			t.Errorf("PEXPIRETIME %q = %d, %v; want %d", rk, ms, err, expiry.UnixMilli())
		}
	}
	var seen []string
	for cursor := ""; ; {
		entries, next, err := s.Scan(ctx, cursor, 2)
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		for _, e := range entries {
			seen = append(seen, e.Key)
			if string(e.Value) != "v:"+e.Key || !e.Expiry.Equal(expiry) {
				t.Errorf("Scan entry %q = %q, %v", e.Key, e.Value, e.Expiry)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(seen) != 4 {
		t.Errorf("Scan returned keys %q, want the 4 written", seen)
	}

	// Channels are laid out the same way.
	ps := c.Subscribe(ctx, prefix+"{chan}")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("SUBSCRIBE: %v", err)
	}
	if err := s.Publish(ctx, "chan", []byte("hello")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	m, err := ps.ReceiveMessage(ctx)
	if err != nil || m.Payload != "hello" {
		t.Errorf("message on %q = %v, %v; want hello", prefix+"{chan}", m, err)
	}
}

// TestPrefixIsolation checks that a prefix with glob characters matches
// only itself in SCAN, and that stores with different prefixes do not see
// each other's entries or messages.
func TestPrefixIsolation(t *testing.T) {
	url := serverURL(t)
	base := randomName("glob")
	a, _ := openStore(t, url, base+"*:")
	b, _ := openStore(t, url, base+"x:")
	t.Cleanup(func() { deletePrefix(t, url, base) })
	ctx := t.Context()
	expiry := time.Now().Add(time.Minute)
	if err := b.Put(ctx, "k", []byte("b's"), expiry); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if _, err := a.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of another prefix's key: %v, want ErrNotFound", err)
	}
	entries, next, err := a.Scan(ctx, "", 100)
	if err != nil || len(entries) != 0 || next != "" {
		t.Errorf("Scan = %d entries, %q, %v; want none", len(entries), next, err)
	}
	// only checks that a, subscribed to achan, receives a's message on
	// achan and not other's on ochan before it.
	only := func(other store.Store, ochan, achan string) {
		t.Helper()
		sub, err := a.Subscribe(ctx, achan)
		if err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		defer sub.Close()
		if err := other.Publish(ctx, ochan, []byte("other's")); err != nil {
			t.Fatalf("Publish: %v", err)
		}
		if err := a.Publish(ctx, achan, []byte("a's")); err != nil {
			t.Fatalf("Publish: %v", err)
		}
		if got := storetest.RecvData(t, sub, 5*time.Second); string(got) != "a's" {
			t.Errorf("received %q, want only a's message", got)
		}
	}
	only(b, "chan", "chan")
	// A prefix that starts with another does not share its channels:
	// ("…*:", "x-chan") and ("…*:x-", "chan") are different channels.
	longer, _ := openStore(t, url, base+"*:x-")
	only(longer, "chan", "x-chan")
}

func TestScanCursor(t *testing.T) {
	url := serverURL(t)
	s, _ := openStore(t, url)
	for _, cursor := range []string{"x", "12.", "end.!!", "-1"} {
		if _, _, err := s.Scan(t.Context(), cursor, 10); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Scan(%q): %v, want ErrInvalidArgument", cursor, err)
		}
	}
	if _, _, err := s.Scan(t.Context(), "", 0); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("Scan with count 0: %v, want ErrInvalidArgument", err)
	}
}

// TestSubscribeServerDown checks that Subscribe gives up when its context
// ends while the server does not answer, and that Close then leaves nothing
// running.
func TestSubscribeServerDown(t *testing.T) {
	before := runtime.NumGoroutine()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	s, err := evredis.NewFromClient(client, nil)
	if err != nil {
		t.Fatalf("NewFromClient: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	sub, err := s.Subscribe(ctx, "chan")
	if err == nil {
		sub.Close()
		t.Fatal("Subscribe succeeded with no server")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Subscribe: %v, want DeadlineExceeded", err)
	}
	if _, err := s.Get(ctx, "k"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get with no server: %v, want the connection's error", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	client.Close()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left running: %d before, %d after Close", before, runtime.NumGoroutine())
		}
	}
}

// TestScanSmallCount scans with counts small enough that SCAN often returns
// more keys than Scan may: the extra keys ride in the cursor, and every key
// is still returned.
func TestScanSmallCount(t *testing.T) {
	url := serverURL(t)
	s, _ := openStore(t, url)
	ctx := t.Context()
	expiry := time.Now().Add(time.Minute)
	const n = 300
	for i := range n {
		if err := s.Put(ctx, fmt.Sprintf("key-%d", i), []byte("v"), expiry); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	for _, count := range []int{1, 3} {
		seen := make(map[string]bool)
		carried := 0
		for cursor := ""; ; {
			entries, next, err := s.Scan(ctx, cursor, count)
			if err != nil {
				t.Fatalf("Scan: %v", err)
			}
			if len(entries) > count {
				t.Fatalf("Scan returned %d entries, want at most %d", len(entries), count)
			}
			for _, e := range entries {
				seen[e.Key] = true
			}
			if strings.Contains(next, ".") {
				carried++
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if len(seen) != n {
			t.Errorf("count %d: Scan returned %d of %d keys", count, len(seen), n)
		}
		t.Logf("count %d: %d cursors carried keys", count, carried)
	}
}

// aclCommands are the commands the README says a Redis ACL user needs.
const aclCommands = "+get +set +getdel +del +scan +pexpiretime +multi +exec +evalsha +eval +publish +subscribe +unsubscribe +ping +hello +client|setname +select"

// TestACLUser runs every operation as an ACL user limited to the store's
// prefix and the documented commands, logged in through the URL.
func TestACLUser(t *testing.T) {
	url := serverURL(t)
	c := admin(t, url)
	ctx := t.Context()
	user := randomName("acl")
	password := randomName("password")
	prefix := user + ":"
	rules := []any{"ACL", "SETUSER", user, "on", ">" + password, "resetkeys", "~" + prefix + "*", "resetchannels", "&" + prefix + "*", "-@all"}
	for cmd := range strings.FieldsSeq(aclCommands) {
		rules = append(rules, cmd)
	}
	if err := c.Do(ctx, rules...).Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	t.Cleanup(func() {
		c.Do(context.Background(), "ACL", "DELUSER", user)
		deletePrefix(t, url, prefix)
	})
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	aclURL := fmt.Sprintf("redis://%s:%s@%s/%d", user, password, o.Addr, o.DB)
	s, err := evredis.New(ctx, aclURL, &evredis.Options{Prefix: prefix})
	if err != nil {
		t.Fatalf("New as an ACL user: %v", err)
	}
	defer s.Close()

	expiry := time.Now().Add(time.Minute)
	check := func(op string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s as an ACL user: %v", op, err)
		}
	}
	sub, err := s.Subscribe(ctx, "chan")
	check("Subscribe", err)
	check("Put", s.Put(ctx, "k", []byte("v"), expiry))
	_, err = s.Get(ctx, "k")
	check("Get", err)
	_, err = s.Swap(ctx, "k", []byte("v2"), expiry)
	check("Swap", err)
	_, err = s.CompareAndSwap(ctx, "k", []byte("v2"), []byte("v3"), expiry)
	check("CompareAndSwap", err)
	_, err = s.CompareAndSwap(ctx, "k", []byte("v3"), nil, time.Time{})
	check("CompareAndSwap (delete)", err)
	_, err = s.PutIfAbsent(ctx, "k", []byte("v"), expiry)
	check("PutIfAbsent", err)
	_, _, err = s.(interface {
		PutIfAbsentGet(context.Context, string, []byte, time.Time, string) (bool, []byte, error)
	}).PutIfAbsentGet(ctx, "k2", []byte("v"), expiry, "k")
	check("PutIfAbsentGet", err)
	_, _, err = s.Scan(ctx, "", 10)
	check("Scan", err)
	_, err = s.Take(ctx, "k")
	check("Take", err)
	check("Delete", s.Delete(ctx, "k"))
	check("Publish", s.Publish(ctx, "chan", []byte("m")))
	if sub != nil {
		if got := storetest.RecvData(t, sub, 5*time.Second); string(got) != "m" {
			t.Errorf("received %q", got)
		}
		sub.Close()
	}
	// The user cannot reach keys outside its prefix: the store's errors say
	// so instead of hiding it.
	other, err := evredis.New(ctx, aclURL, &evredis.Options{Prefix: "elsewhere:"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer other.Close()
	if err := other.Put(ctx, "k", []byte("v"), expiry); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("Put outside the user's keys: %v, want NOPERM", err)
	}
}
