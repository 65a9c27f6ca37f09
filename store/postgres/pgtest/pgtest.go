// Package pgtest is a test kit, not part of the store: it runs a
// PostgreSQL server of a test's own, which the test may stop and start
// again with the same data, to see what a store does through a restart.
// The PostgreSQL store's tests and the fault suite of the integration
// module share it; its API follows what they need and may change in any
// release. Without PostgreSQL's server binaries a test is
// skipped, or fails under ELICITVAULT_REQUIRE_BACKENDS=1 (see
// [storetest.Skip]).
package pgtest

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/storetest"
	"github.com/jackc/pgx/v5"
)

// Server is a PostgreSQL cluster in a temporary directory, served on a
// loopback port of its own.
type Server struct {
	bin, data  string
	port       int
	asPostgres bool // run as the postgres user (the server refuses root)
	cmd        *exec.Cmd
	done       chan struct{} // closed when cmd has exited
}

// Start creates a cluster (initdb, trust authentication, user postgres),
// starts it on a free port, waits until it accepts a login and creates
// the store's table in its database postgres ([evpostgres.Migrate], the
// default schema). The server is stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	initdbs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if p, err := exec.LookPath("initdb"); len(initdbs) == 0 && err == nil {
		initdbs = []string{p}
	}
	if len(initdbs) == 0 {
		storetest.Skip(t, "PostgreSQL's server binaries are not installed; this test runs a server of its own")
	}
	s := &Server{bin: filepath.Dir(initdbs[len(initdbs)-1])}

	// The server refuses to run as root: the directory then belongs to the
	// postgres user, under a parent it can enter.
	parent, err := os.MkdirTemp("", "elicitvault-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	os.Chmod(parent, 0o755)
	s.data = filepath.Join(parent, "data")
	if err := os.Mkdir(s.data, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			storetest.Skip(t, "running as root without a postgres user to run the server as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(s.data, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.asPostgres = true
	}
	if out, err := s.command("initdb", "-D", s.data, "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.port = storetest.FreePort(t)
	s.Restart(t)
	t.Cleanup(func() {
		if s.cmd != nil {
			s.Stop(t)
		}
	})
	conn, err := pgx.Connect(t.Context(), s.url())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := evpostgres.Migrate(t.Context(), conn, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.bin, name)
	if s.asPostgres {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// Addr is the server's host:port. Its store URL, the database postgres
// as user postgres, is
// "postgres://postgres@" + Addr() + "/postgres?sslmode=disable".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *Server) url() string {
	return "postgres://postgres@" + s.Addr() + "/postgres?sslmode=disable"
}

// Restart starts the server (again, after Stop: with the same data) and
// waits until it accepts a login.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.cmd = s.command("postgres", "-D", s.data, "-p", strconv.Itoa(s.port), "-k", s.data,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=100")
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting postgres: %v", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		cmd.Wait()
		close(done)
	}(s.cmd, s.done)
	// Until it accepts a login: it listens before it is ready.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, s.url())
		cancel()
		if err == nil {
			c.Close(context.Background())
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres did not accept a login within 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop shuts the server down (a fast shutdown: every session is ended)
// and waits until it has exited.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if out, err := s.command("pg_ctl", "stop", "-D", s.data, "-m", "fast", "-w").CombinedOutput(); err != nil {
		t.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		t.Error("postgres did not stop within 20s")
	}
	s.cmd = nil
}
