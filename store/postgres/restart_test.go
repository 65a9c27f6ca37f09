package postgres_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	evpostgres "github.com/elicitvault/elicitvault/store/postgres"
	"github.com/elicitvault/elicitvault/store/storetest"
	"github.com/jackc/pgx/v5"
)

// pgServer is a PostgreSQL cluster of the test's own, which it may stop
// and start again on the same port with the same data.
type pgServer struct {
	t          *testing.T
	bin, data  string
	port       int
	asPostgres bool // run the server as the postgres user (the test runs as root)
	cmd        *exec.Cmd
	done       chan struct{}
}

// startPrivatePostgres creates a cluster in a temporary folder and starts
// it on a free port. It skips t when PostgreSQL's server binaries are not
// installed (and fails it when ELICITVAULT_REQUIRE_BACKENDS=1).
func startPrivatePostgres(t *testing.T) *pgServer {
	t.Helper()
	skip := func(msg string) { t.Helper(); storetest.Skip(t, msg) }
	initdbs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(initdbs) == 0 {
		skip("PostgreSQL's server binaries are not installed; this test runs a server of its own")
	}
	s := &pgServer{t: t, bin: filepath.Dir(initdbs[len(initdbs)-1])}

	// The server refuses to run as root: the folder then belongs to the
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
			skip("running as root without a postgres user to run the server as")
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s.start()
	t.Cleanup(func() {
		if s.cmd != nil {
			s.stop()
		}
	})
	return s
}

func (s *pgServer) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.bin, name)
	if s.asPostgres {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

func (s *pgServer) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// start starts the server and waits until it accepts connections.
func (s *pgServer) start() {
	s.t.Helper()
	s.cmd = s.command("postgres", "-D", s.data, "-p", strconv.Itoa(s.port), "-k", s.data,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=50")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting postgres: %v", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		cmd.Wait()
		close(done)
	}(s.cmd, s.done)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, s.url())
		cancel()
		if err == nil {
			c.Close(context.Background())
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("postgres did not accept connections within 20s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop shuts the server down (fast shutdown: every session is ended) and
// waits until it has exited.
func (s *pgServer) stop() {
	s.t.Helper()
	if out, err := s.command("pg_ctl", "stop", "-D", s.data, "-m", "fast", "-w").CombinedOutput(); err != nil {
		s.t.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		s.t.Fatal("postgres did not stop within 20s")
	}
	s.cmd = nil
}

// TestServerRestartedUnderLoad runs storetest.RunRestart on a PostgreSQL
// server of the test's own, stopped with a fast shutdown.
func TestServerRestartedUnderLoad(t *testing.T) {
	srv := startPrivatePostgres(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, srv.url())
	if err != nil {
		t.Fatal(err)
	}
	if err := evpostgres.Migrate(ctx, conn, nil); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	storetest.RunRestart(t, storetest.Server{
		Name: "postgres",
		Open: func(t *testing.T) store.Store {
			s, err := evpostgres.New(t.Context(), srv.url(), &evpostgres.Options{Logger: testLogger(t)})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			return s
		},
		Stops: []func(*testing.T){func(*testing.T) { srv.stop() }},
		Start: func(*testing.T) { srv.start() },
	})
}
