package fronttest

import (
	"context"
	"testing"

	"github.com/elicitvault/elicitvault/store"
)

// Empty deletes every entry of st, for a test that shares a server with
// others. It runs in a cleanup, after the test's context has ended, so it
// takes none.
func Empty(t testing.TB, st store.Store) {
	t.Helper()
	ctx := context.Background()
	for cursor := ""; ; {
		entries, next, err := st.Scan(ctx, cursor, 500)
		if err != nil {
			t.Errorf("emptying the test store: %v", err)
			return
		}
		for _, e := range entries {
			st.Delete(ctx, e.Key)
		}
		if next == "" {
			return
		}
		cursor = next
	}
}
