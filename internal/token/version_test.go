package token_test

import (
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
)

// A compact token of v0.1, whose envelope is version 1, verifies: tokens in
// flight across an upgrade are not dropped. Issued at 2026-11-27 12:00 UTC
// for ten minutes by a service without a store (token version 1).
func TestVerifiesVersion1Envelope(t *testing.T) {
	const tok = "ev1.AR0K858AAAGiHOmVwH583u34KWWLIGDXHhfbWeU9o4lJfjJI4CS1dSI9XYYMXNuiU-VuEs6aWPxZCfA2mW04mT_OoMPde870MQjcdDFFFXbpKQit"
	at := time.Date(2026, 11, 27, 12, 5, 0, 0, time.UTC)
	k, err := ring.New([]byte("elicitvault-v1-vector-secret-0123456789"), nil, envelope.WithClock(func() time.Time { return at }))
	if err != nil {
		t.Fatal(err)
	}
	s := service(t, k, nil)
	want := token.Expect{Kind: token.URL, SessionID: "session-1", Subject: "user-1", ElicitationID: "elicitation-1"}
	c, err := s.Verify(tok, want)
	if err != nil {
		t.Fatalf("Verify(v0.1 token) = %v", err)
	}
	if got := c.ID; got != [16]byte{0xe0, 0xa2, 0x7c, 0x94, 0xae, 0x28, 0x76, 0x30, 0xf4, 0x9e, 0x8b, 0x22, 0x18, 0xcb, 0xdd, 0xc6} {
		t.Errorf("token ID %x", got)
	}
	if !c.Expiry.Equal(time.Date(2026, 11, 27, 12, 10, 0, 0, time.UTC)) {
		t.Errorf("expiry %v", c.Expiry)
	}
	want.SessionID = "session-2"
	if _, err := s.Verify(tok, want); err == nil {
		t.Error("verified for another session")
	}
	// New tokens are sealed as version 2.
	nc := token.Claims{Kind: token.URL, SessionID: "session-1", ElicitationID: "elicitation-1"}
	fresh, err := s.Issue(&nc, time.Minute, token.Compact)
	if err != nil {
		t.Fatal(err)
	}
	if _, f, ok := token.PeekKeyID(fresh); !ok || f != token.Compact {
		t.Fatalf("PeekKeyID(%q)", fresh)
	}
	if fresh[:4] != "ev1." || fresh[4:7] != "Ah0" { // base64url of 0x02 0x1d...
		t.Errorf("fresh token %q does not start with envelope version 2", fresh[:8])
	}
}
