package keyschedule_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/elicitvault/elicitvault/internal/keyschedule"
)

type vectorFile struct {
	Vectors []struct {
		Secret string `json:"secret"`
		KeyID  string `json:"key_id"`
		Keys   []struct {
			Purpose string   `json:"purpose"`
			Binding []string `json:"binding"`
			InfoHex string   `json:"info_hex"`
			KeyHex  string   `json:"key_hex"`
		} `json:"keys"`
	} `json:"vectors"`
}

// TestVectors checks the schedule against testdata/vectors.json, written by
// an independent Python implementation (testdata/gen_vectors.py).
func TestVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(raw, &vf); err != nil {
		t.Fatal(err)
	}
	if len(vf.Vectors) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range vf.Vectors {
		s, err := keyschedule.New([]byte(v.Secret))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.KeyID().String(); got != v.KeyID {
			t.Errorf("key ID = %s, want %s", got, v.KeyID)
		}
		for _, k := range v.Keys {
			info, err := keyschedule.AppendInfo(nil, k.Purpose, k.Binding...)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(info); got != k.InfoHex {
				t.Errorf("info(%q, %q) = %s, want %s", k.Purpose, k.Binding, got, k.InfoHex)
			}
			key, err := s.Key(k.Purpose, k.Binding...)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(key); got != k.KeyHex {
				t.Errorf("key(%q, %q) = %s, want %s", k.Purpose, k.Binding, got, k.KeyHex)
			}
		}
	}
}

func TestShortSecret(t *testing.T) {
	for _, n := range []int{0, 1, 31} {
		if _, err := keyschedule.New(bytes.Repeat([]byte("a"), n)); !errors.Is(err, keyschedule.ErrShortSecret) {
			t.Errorf("len %d: err = %v, want ErrShortSecret", n, err)
		}
	}
	if _, err := keyschedule.New(bytes.Repeat([]byte("a"), 32)); err != nil {
		t.Errorf("len 32: %v", err)
	}
}

func TestBindingIsLengthPrefixed(t *testing.T) {
	s, _ := keyschedule.New([]byte(strings.Repeat("k", 32)))
	a, _ := s.Key("pending", "ab", "c")
	b, _ := s.Key("pending", "a", "bc")
	unbound, _ := s.Key("pending")
	empty, _ := s.Key("pending", "", "")
	if bytes.Equal(a, b) || bytes.Equal(unbound, empty) || bytes.Equal(a, unbound) {
		t.Fatal("distinct bindings derived the same key")
	}
}

func TestInvalidPurpose(t *testing.T) {
	s, _ := keyschedule.New([]byte(strings.Repeat("k", 32)))
	for _, p := range []string{"", "Pending", "a b", "x\x00\x00\x00\x01y", strings.Repeat("a", 65)} {
		if _, err := s.Key(p); !errors.Is(err, keyschedule.ErrInvalidPurpose) {
			t.Errorf("purpose %q: err = %v, want ErrInvalidPurpose", p, err)
		}
	}
}

func TestParseKeyID(t *testing.T) {
	s, _ := keyschedule.New([]byte(strings.Repeat("k", 32)))
	id, err := keyschedule.ParseKeyID(s.KeyID().String())
	if err != nil || id != s.KeyID() {
		t.Fatalf("round trip: %v %v", id, err)
	}
	for _, bad := range []string{"", "0011223", "001122334", "0011223G", "AABBCCDD"} {
		if _, err := keyschedule.ParseKeyID(bad); !errors.Is(err, keyschedule.ErrInvalidKeyID) {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func ExampleSecret_Key() {
	s, err := keyschedule.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	key, _ := s.Key("token/jwe")
	fmt.Println(s.KeyID(), hex.EncodeToString(key))
	// Output: 05db4577 00c04bee944ab6d3beabde1aa483056cfba0bf70347dfb16c6424a545da3acef
}
