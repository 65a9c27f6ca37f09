package keyring_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
)

// The types of keyring are its own (not aliases of internal ones): what
// Rewrap reports reaches the caller through them, converted field by
// field; KeyIDs are the hex the CLI and the tokens show.
func TestRewrapReportAndKeyIDs(t *testing.T) {
	keys, err := keyring.New([]byte("keyring test secret, thirty-two bytes"), []byte("older keyring test secret, 32 bytes"))
	if err != nil {
		t.Fatal(err)
	}
	ids := keys.KeyIDs()
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("KeyIDs: %v", ids)
	}
	for _, id := range ids {
		if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(id) {
			t.Errorf("KeyIDs: %q", id)
		}
	}
	st := memory.New(nil)
	defer st.Close()
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	for _, k := range []string{"a", "b", "c"} {
		if err := st.Put(ctx, k, []byte("not a record"), exp); err != nil {
			t.Fatal(err)
		}
	}
	var calls []keyring.Progress
	p, err := keys.Rewrap(ctx, st, &keyring.RewrapOptions{BatchSize: 2, Progress: func(p keyring.Progress) { calls = append(calls, p) }})
	if err != nil || p.Scanned != 3 || p.Skipped != 3 || p.Cursor != "" {
		t.Fatalf("Rewrap: %+v, %v", p, err)
	}
	if len(calls) < 2 || calls[len(calls)-1] != p {
		t.Errorf("Progress called %d times (%+v), the last with %+v", len(calls), calls, p)
	}
}
