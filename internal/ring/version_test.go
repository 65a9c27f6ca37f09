package ring_test

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store/memory"
)

// v1Stored is a stored record written by v0.1 (envelope version 1, in the
// payload and the binding box) for v1Binding under v1Secret, expiring in 2099.
const v1Stored = "e1005d011d0af39f000003b3d512ac00d6de64c741666cef806f1b2c9bd331eee2911f878fa13386f74f3a5f20b5b174af0ed504b137fe42ffd360b242d23f75500f3868c823906d949182ca04c208678cffacf1804a7737515c27c75f1d9e29011d0af39f000003b3d512ac009a84968da021acb665ebcf1caa7eec837ae42f3e2d73c661b90d2d1cf28d65cf4ec76e25fab309978be0"

const v1Secret = "elicitvault-v1-vector-secret-0123456789"

var v1Binding = envelope.Binding{Purpose: "pending", Subject: "user-1", SessionID: "session-1", RecordID: "elicitation-1"}

// A record of v0.1 opens, and Rewrap writes it as version 2 under the same
// secret: after one rewrap no record of the old format is left, and a
// second finds nothing to do.
func TestRewrapWritesVersion2(t *testing.T) {
	ctx := context.Background()
	s := memory.New(nil)
	defer s.Close()
	k := mustKeyring(t, v1Secret)
	rec, err := hex.DecodeString(v1Stored)
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := k.OpenRecord(v1Binding, rec); err != nil || string(pt) != "stored by v0.1" {
		t.Fatalf("OpenRecord(v0.1 record) = %q, %v", pt, err)
	}
	h, err := ring.RecordHeader(rec)
	if err != nil || h.Version != 1 {
		t.Fatalf("header %+v, %v", h, err)
	}
	expiry := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.Put(ctx, k.StoreKey(v1Binding), rec, expiry); err != nil {
		t.Fatal(err)
	}

	p, err := k.Rewrap(ctx, s, ring.RewrapOptions{})
	if err != nil || p.Rewrapped != 1 || p.Current != 0 || p.Failed != 0 {
		t.Fatalf("rewrap: %+v, %v", p, err)
	}
	got, err := k.Lookup(ctx, s, v1Binding)
	if err != nil {
		t.Fatal(err)
	}
	h, err = ring.RecordHeader(got)
	if err != nil || h.Version != envelope.Version || !h.Expiry.Equal(expiry) {
		t.Fatalf("rewrapped header %+v, %v", h, err)
	}
	if got[3] != envelope.Version { // the binding box's version byte
		t.Errorf("binding box version %#x", got[3])
	}
	if pt, err := k.OpenRecord(v1Binding, got); err != nil || string(pt) != "stored by v0.1" {
		t.Fatalf("OpenRecord(rewrapped) = %q, %v", pt, err)
	}
	p, err = k.Rewrap(ctx, s, ring.RewrapOptions{})
	if err != nil || p.Rewrapped != 0 || p.Current != 1 {
		t.Fatalf("second rewrap: %+v, %v", p, err)
	}
}
