package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/storetest"
	"github.com/jackc/pgx/v5"
)

// startPgBouncer starts a pgbouncer process of the test's own in front of
// the test server, in transaction pooling, on a free port, and returns
// the URL of the test database through it. It skips t when pgbouncer is
// not installed (fails it when ELICITVAULT_REQUIRE_BACKENDS=1).
func startPgBouncer(t *testing.T, direct string) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, err = os.Stat("/usr/sbin/pgbouncer"); err != nil {
			msg := "pgbouncer is not installed; this test runs one of its own"
			storetest.Skip(t, msg)
		}
		bin = "/usr/sbin/pgbouncer"
	}
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(u.Host)
	db := strings.TrimPrefix(u.Path, "/")
	user := u.User.Username()
	pass, _ := u.User.Password()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lport := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	// pgbouncer refuses to run as root; as another user it must read its
	// files, hence a world-readable directory.
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	conf := fmt.Sprintf(`[databases]
%s = host=%s port=%s dbname=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = 4
max_client_conn = 200
ignore_startup_parameters = extra_float_digits,application_name
`, db, host, port, db, lport, filepath.Join(dir, "users.txt"))
	users := fmt.Sprintf("%q %q\n", user, pass)
	for name, body := range map[string]string{"pgbouncer.ini": conf, "users.txt": users} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 {
		args = append([]string{"-u", "nobody"}, args...)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting pgbouncer: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	pooled := *u
	pooled.Host = fmt.Sprintf("127.0.0.1:%d", lport)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		c, err := pgx.Connect(ctx, pooled.String())
		cancel()
		if err == nil {
			c.Close(context.Background())
			break
		}
		select {
		case <-done:
			t.Fatalf("pgbouncer exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgbouncer does not answer: %v\n%s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return pooled.String()
}

// TestPgBouncer runs the conformance suite through a real pgbouncer in
// transaction pooling, LISTEN on a direct connection (listen_url): every
// statement goes through the pooler, only the subscriptions do not.
func TestPgBouncer(t *testing.T) {
	direct := serverURL(t)
	pooled := startPgBouncer(t, direct)
	storetest.Run(t, func(t *testing.T) store.Store {
		schema := newSchema(t, direct)
		u, _ := url.Parse(pooled)
		q := u.Query()
		q.Set("listen_url", direct)
		u.RawQuery = q.Encode()
		s, err := evpostgres.New(t.Context(), u.String(), &evpostgres.Options{Schema: schema})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestPgBouncerWithoutListenURL checks that a store whose LISTEN would go
// through a transaction-pooling pgbouncer refuses to start, with
// ErrNotifyLost, instead of starting with subscriptions that never hear a
// message; and that it starts with listen_url, or Options.ListenURL.
func TestPgBouncerWithoutListenURL(t *testing.T) {
	direct := serverURL(t)
	pooled := startPgBouncer(t, direct)
	schema := newSchema(t, direct)
	start := time.Now()
	s, err := evpostgres.New(t.Context(), pooled+"&default_query_exec_mode=exec", &evpostgres.Options{Schema: schema})
	if err == nil {
		s.Close()
		t.Fatal("New through pgbouncer without listen_url succeeded")
	}
	if !errors.Is(err, evpostgres.ErrNotifyLost) {
		t.Fatalf("New: %v, want ErrNotifyLost", err)
	}
	t.Logf("refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
	s, err = evpostgres.New(t.Context(), pooled, &evpostgres.Options{Schema: schema, ListenURL: direct})
	if err != nil {
		t.Fatalf("New with Options.ListenURL: %v", err)
	}
	s.Close()
}
