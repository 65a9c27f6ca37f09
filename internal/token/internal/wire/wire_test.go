package wire

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

func TestStringVectors(t *testing.T) {
	for _, tc := range []struct {
		in, hex string
	}{
		{"", "00"},
		{"a", "0461"},        // raw: base64 packing would not be shorter
		{"AB", "084142"},     // base32 would need 2 bytes too: raw
		{"ABC", "0e0044"},    // base32: 00000 00001 00010 + 0 → 0x00 0x44
		{"user", "13bac7ab"}, // base64url: 46 44 30 43 → 101110 101100 011110 101011
		{"0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c44", "010b9f3c2e8d414a6e9f0c3d2b1a7e5c44"}, // UUID
		{"a b", "0c612062"}, // raw: space is in no alphabet
	} {
		got := AppendString(nil, tc.in)
		if hex.EncodeToString(got) != tc.hex {
			t.Errorf("%q: %x, want %s", tc.in, got, tc.hex)
		}
		if StringLen(tc.in) != len(got) {
			t.Errorf("%q: StringLen %d, encoded %d", tc.in, StringLen(tc.in), len(got))
		}
		s, rest, err := ReadString(append(got, 0xAA))
		if err != nil || s != tc.in || !bytes.Equal(rest, []byte{0xAA}) {
			t.Errorf("%q: read %q %x %v", tc.in, s, rest, err)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	inputs := []string{
		"5UO7Q7XMRZ3S6F4BMWIQQ7ZL4E", "R4NXKQ2VHD7JW3LMZPB6TCYE5A", "dGhpcyBpcyAxNiBieXRlcw", "-_-_", "zzzz",
		"0B9F3C2E-8D41-4A6E-9F0C-3D2B1A7E5C44", "0b9f3c2e_8d41-4a6e-9f0c-3d2b1a7e5c44", "héllo", "\x00\xff",
		strings.Repeat("A", 300), strings.Repeat("a", 300), strings.Repeat("é", 100),
	}
	for n := range 40 {
		inputs = append(inputs, strings.Repeat("7", n), strings.Repeat("_", n), base64Alphabet[:n], base32Alphabet[:min(n, 32)])
	}
	for _, in := range inputs {
		enc := AppendString(nil, in)
		if StringLen(in) != len(enc) {
			t.Errorf("%q: StringLen %d, encoded %d", in, StringLen(in), len(enc))
		}
		if m := mode(in); m != modeRaw && len(enc) >= 1+len(in) && m != modeUUID {
			t.Errorf("%q: packed into %d bytes", in, len(enc))
		}
		out, rest, err := ReadString(enc)
		if err != nil || out != in || len(rest) != 0 {
			t.Errorf("%q: round trip %q %v", in, out, err)
		}
		for i := range enc {
			if _, _, err := ReadString(enc[:i]); err == nil {
				t.Errorf("%q: truncated to %d accepted", in, i)
			}
		}
	}
}

func TestStringNonCanonical(t *testing.T) {
	for h, why := range map[string]string{
		"0c414243":                             "ABC written raw, but base32 is shorter",
		"0a0044":                               "AB written as base32, but raw is as short",
		"0e0045":                               "ABC with a non-zero padding bit",
		"0d0001":                               "UUID mode with a length",
		"81000b9f3c2e8d414a6e9f0c3d2b1a7e5c44": "non-minimal header",
		"9001":                                 "raw, 36 bytes announced, none follow",
		"ff":                                   "truncated varint",
		"0f":                                   "base64 announcing 3 characters, nothing follows",
	} {
		b, _ := hex.DecodeString(h)
		if s, _, err := ReadString(b); err == nil {
			t.Errorf("%s (%s) accepted as %q", h, why, s)
		}
	}
	// A UUID written raw is not canonical.
	raw := append([]byte{36 << 2}, "0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c44"...)
	if _, _, err := ReadString(raw); err == nil {
		t.Error("raw UUID accepted")
	}
	// Non-minimal uvarints.
	if _, _, err := ReadUvarint([]byte{0x80, 0x00}); err == nil {
		t.Error("non-minimal uvarint accepted")
	}
	if v, _, err := ReadUvarint([]byte{0x80, 0x01}); err != nil || v != 128 {
		t.Error("uvarint 128")
	}
	if _, _, err := ReadBytes([]byte{5, 1, 2}); err == nil {
		t.Error("short bytes accepted")
	}
}

func FuzzReadString(f *testing.F) {
	f.Add([]byte{0})
	f.Add(AppendString(nil, "5UO7Q7XMRZ3S6F4BMWIQQ7ZL4E"))
	f.Add(AppendString(nil, "0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c44"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, rest, err := ReadString(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to exactly the bytes read.
		if enc := AppendString(nil, s); !bytes.Equal(enc, b[:len(b)-len(rest)]) {
			t.Fatalf("%x decodes to %q, which encodes as %x", b, s, enc)
		}
	})
}

// FuzzAppendString checks the encoder against the package's rules: what
// it writes reads back to the string, all of it, and has the length of
// the mode StringLen picks (the first that applies, in order).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", "AB", "ABC", "user", "5UO7Q7XMRZ3S6F4BMWIQQ7ZL4E",
		"0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c44", "0B9F3C2E-8D41-4A6E-9F0C-3D2B1A7E5C44",
		"dGhpcyBpcyAxNiBieXRlcw", "héllo", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := AppendString([]byte("dst"), s)
		if string(enc[:3]) != "dst" {
			t.Fatalf("%q: dst overwritten", s)
		}
		enc = enc[3:]
		if len(enc) != StringLen(s) {
			t.Fatalf("%q: %d bytes, StringLen %d", s, len(enc), StringLen(s))
		}
		got, rest, err := ReadString(enc)
		if err != nil || got != s || len(rest) != 0 {
			t.Fatalf("%q: encoded %x, read %q, %d left, %v", s, enc, got, len(rest), err)
		}
	})
}
