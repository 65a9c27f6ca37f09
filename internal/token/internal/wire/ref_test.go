package wire

// The encoder and decoder as they were before the SWAR (eight bytes at a
// time) rewrite: byte at a time, through tables. The tests hold the
// package's functions to them, byte for byte and error for error. The
// former base32 code was pack and unpack with the base32 tables, which the
// base64 mode still uses: the reference calls them.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// refAppendString appends the encoding of s.
//
// Each packed mode is tried in the encoder's order (see the package
// comment) by packing s and checking its alphabet in the same pass; the
// first that applies is kept.
func refAppendString(dst []byte, s string) []byte {
	start, n := len(dst), len(s)
	if n == 36 {
		if out, ok := refAppendUUID(dst, s); ok {
			return out
		}
	}
	if packedLen(n, 5) < n {
		dst = binary.AppendUvarint(dst, uint64(n)<<2|modeBase32)
		if out, ok := pack(dst, s, 5, &b32Index); ok {
			return out
		}
		dst = dst[:start]
	}
	if packedLen(n, 6) < n {
		dst = binary.AppendUvarint(dst, uint64(n)<<2|modeBase64)
		if out, ok := pack(dst, s, 6, &b64Index); ok {
			return out
		}
		dst = dst[:start]
	}
	dst = binary.AppendUvarint(dst, uint64(n)<<2|modeRaw)
	return append(dst, s...)
}

// refUUIDDigits holds the offsets of the 16 pairs of hex digits of a UUID.
var refUUIDDigits = [16]uint8{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// refAppendUUID appends the UUID mode's encoding of s, or reports that s is
// not a canonical lowercase UUID.
func refAppendUUID(dst []byte, s string) ([]byte, bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return dst, false
	}
	var body [16]byte
	var bad byte
	for i, at := range refUUIDDigits {
		hi, lo := hexIndex[s[at]], hexIndex[s[at+1]]
		bad |= hi | lo
		body[i] = hi<<4 | lo&0x0F
	}
	if bad == 0xFF {
		return dst, false
	}
	return append(append(dst, modeUUID), body[:]...), true
}

// refAppendReadString is AppendReadString as it was for the modes the
// rewrite changed (UUID and base32); the raw and base64 modes, which it did
// not change, are AppendReadString's.
func refAppendReadString(dst, src []byte) ([]byte, []byte, error) {
	h, rest, err := ReadUvarint(src)
	if err != nil {
		return dst, src, err
	}
	m, n64 := int(h&3), h>>2
	if m != modeUUID && m != modeBase32 {
		return AppendReadString(dst, src)
	}
	if n64 > uint64(len(rest))*8/5 { // no mode packs tighter than 5 bits
		return dst, src, ErrMalformed
	}
	n, start := int(n64), len(dst)
	if m == modeUUID {
		if n != 0 || len(rest) < 16 {
			return dst, src, ErrMalformed
		}
		var u [36]byte
		body := (*[16]byte)(rest)
		for i, at := range refUUIDDigits {
			u[at], u[at+1] = hexDigits[body[i]>>4], hexDigits[body[i]&15]
		}
		u[8], u[13], u[18], u[23] = '-', '-', '-', '-'
		return append(dst, u[:]...), rest[16:], nil
	}
	// Every character is in the base32 alphabet, so this mode is the
	// encoder's choice exactly when packing is shorter (and a UUID, which
	// has dashes, is impossible).
	if packedLen(n, 5) >= n {
		return dst, src, ErrMalformed
	}
	if dst, rest, err = unpack(dst, rest, n, 5, &refB32Table); err != nil {
		return dst[:start], src, err
	}
	return dst, rest, nil
}

// refB32Table is the base32 alphabet as unpack, the former base32 decoder
// (still the base64 one), reads it.
var refB32Table [64]byte

func init() { copy(refB32Table[:], base32Alphabet) }

// refInputs returns strings near every edge of the encoder: each length
// up to 40 in each alphabet, UUIDs with one character changed, and bytes
// just outside the alphabets.
func refInputs(r *rand.Rand) []string {
	var in []string
	alphabets := []string{base32Alphabet, base64Alphabet, hexDigits, base32Alphabet + "a-", "\x00\x7f\x80\xff@[`{/:18"}
	for n := range 41 {
		for _, a := range alphabets {
			b := make([]byte, n)
			for i := range b {
				b[i] = a[r.IntN(len(a))]
			}
			in = append(in, string(b))
		}
	}
	for range 200 {
		u := []byte(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xFFFF, r.Uint32()&0xFFFF, r.Uint32()&0xFFFF, r.Uint64()&(1<<48-1)))
		in = append(in, string(u))
		u[r.IntN(len(u))] = byte(r.IntN(256))
		in = append(in, string(u))
	}
	for c := range 256 {
		in = append(in, strings.Repeat("A", 7)+string(rune(c)), "2222"+string(byte(c))+"777777",
			"0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c4"+string(byte(c)))
	}
	return in
}

// TestReference holds AppendString and AppendReadString to the reference
// implementation: the same bytes for every input, and the same string,
// rest and verdict for every encoding and every corruption of one.
func TestReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range refInputs(r) {
		enc, want := AppendString([]byte("x"), s), refAppendString([]byte("x"), s)
		if !bytes.Equal(enc, want) {
			t.Fatalf("%q: encoded %x, reference %x", s, enc, want)
		}
		checkReadReference(t, enc[1:])
		for range 8 {
			bad := bytes.Clone(enc[1:])
			bad[r.IntN(len(bad))] ^= byte(1 << r.IntN(8))
			checkReadReference(t, bad)
			checkReadReference(t, bad[:r.IntN(len(bad)+1)])
		}
	}
}

func checkReadReference(t *testing.T, b []byte) {
	t.Helper()
	got, rest, err := AppendReadString([]byte("x"), b)
	want, wantRest, wantErr := refAppendReadString([]byte("x"), b)
	if !bytes.Equal(got, want) || len(rest) != len(wantRest) || (err == nil) != (wantErr == nil) {
		t.Fatalf("%x: read %q (%d left, %v), reference %q (%d left, %v)", b, got, len(rest), err, want, len(wantRest), wantErr)
	}
}

func FuzzReference(f *testing.F) {
	for _, s := range []string{"", "ABC", "5UO7Q7XMRZ3S6F4BMWIQQ7ZL4E", "0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c44", "user"} {
		f.Add(s, AppendString(nil, s))
	}
	f.Fuzz(func(t *testing.T, s string, b []byte) {
		if enc, want := AppendString(nil, s), refAppendString(nil, s); !bytes.Equal(enc, want) {
			t.Fatalf("%q: encoded %x, reference %x", s, enc, want)
		}
		checkReadReference(t, b)
	})
}
