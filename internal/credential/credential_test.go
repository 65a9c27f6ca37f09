package credential

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	for _, c := range []*Credential{
		{},
		{AccessToken: "at", TokenType: "Bearer", RefreshToken: "rt", Scope: "openid offline_access", Expiry: time.Unix(1800000000, 0)},
		{AccessToken: strings.Repeat("a", MaxField)},
	} {
		b, err := Append(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if *got != *c && !(got.Expiry.Equal(c.Expiry) && got.AccessToken == c.AccessToken) {
			t.Fatalf("got %+v", got)
		}
		again, _ := Append(nil, got)
		if !bytes.Equal(again, b) {
			t.Fatal("not canonical")
		}
	}
}

func TestRefused(t *testing.T) {
	if _, err := Append(nil, &Credential{RefreshToken: strings.Repeat("r", MaxField+1)}); !errors.Is(err, ErrMalformed) {
		t.Fatal("oversized field accepted")
	}
	good, _ := Append(nil, &Credential{AccessToken: "at", Expiry: time.Unix(1800000000, 0)})
	for name, b := range map[string][]byte{
		"empty":         nil,
		"version":       append([]byte{2}, good[1:]...),
		"truncated":     good[:len(good)-1],
		"trailing":      append(append([]byte{}, good...), 0),
		"long varint":   {1, 0x80, 0x00, 0, 0, 0, 0},
		"length beyond": {1, 0, 9, 'a'},
	} {
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
