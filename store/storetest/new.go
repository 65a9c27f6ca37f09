package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// CheckNew checks the errors of a backend's New, which open stands for:
// with down, the URL of a server that does not answer, New fails with an
// error that says so, not ErrInvalidArgument, and keeps nothing running;
// with each malformed URL in invalid, it fails with ErrInvalidArgument.
// No error repeats secret, the password those URLs hold.
func CheckNew(t *testing.T, open func(ctx context.Context, url string) (store.Store, error), down string, invalid []string, secret string) {
	t.Run("ServerDown", func(t *testing.T) {
		checkNoLeaks(t)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		s, err := open(ctx, down)
		if err == nil {
			s.Close()
			t.Fatal("New succeeded with no server")
		}
		if !strings.Contains(err.Error(), "server does not answer") || errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("New: %v, want an error that says the server does not answer", err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("New's error repeats the password: %v", err)
		}
	})
	t.Run("InvalidURL", func(t *testing.T) {
		for _, url := range invalid {
			s, err := open(t.Context(), url)
			if err == nil {
				s.Close()
				t.Errorf("New accepted a malformed URL")
				continue
			}
			if !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("New: %v, want ErrInvalidArgument", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("New's error repeats the password: %v", err)
			}
		}
	})
}
