package testservers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// fakeTB records what find asks of a test.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Skip(args ...any)                  { f.skipped = fmt.Sprint(args...) }
func (f *fakeTB) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

func TestFind(t *testing.T) {
	const env = "ELICITVAULT_TESTSERVERS_TEST_URL"
	failing := func() *server {
		return &server{start: func(context.Context) (string, error) { return "", errors.New("no container") }}
	}

	t.Setenv(env, "redis://from-the-environment")
	if got := find(&fakeTB{TB: t}, "Test", env, failing()); got != "redis://from-the-environment" {
		t.Errorf("with %s set: %q", env, got)
	}

	t.Setenv(env, "")
	t.Setenv(RequireEnv, "")
	f := &fakeTB{TB: t}
	find(f, "Test", env, failing())
	if !strings.Contains(f.skipped, env) || f.failed != "" {
		t.Errorf("without a server: skipped %q, failed %q; want a skip naming %s", f.skipped, f.failed, env)
	}

	t.Setenv(RequireEnv, "1")
	f = &fakeTB{TB: t}
	find(f, "Test", env, failing())
	if !strings.Contains(f.failed, env) || !strings.Contains(f.failed, RequireEnv) || f.skipped != "" {
		t.Errorf("without a server, required: skipped %q, failed %q; want a failure naming %s and %s", f.skipped, f.failed, env, RequireEnv)
	}
}
