package wire

// The encoder and decoder as they were before the SWAR (eight bytes at a
// time) rewrite: byte at a time, through tables. The tests hold the
// package's functions to them, byte for byte and error for error.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
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
		if out, ok := refPack(dst, s, 5, &b32Index); ok {
			return out
		}
		dst = dst[:start]
	}
	if packedLen(n, 6) < n {
		dst = binary.AppendUvarint(dst, uint64(n)<<2|modeBase64)
		if out, ok := refPack(dst, s, 6, &b64Index); ok {
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

// refPack appends the characters of s, bits bits each (their index in the
// alphabet whose table index is), most significant first, zero-padded to
// a whole byte. It reports false, appending nothing, if s has a character
// outside the alphabet. Eight characters make exactly bits bytes, so
// whole groups are packed without carrying bits over. (Shift counts are
// masked with 63 so that the compiler emits plain shifts.)
func refPack(dst []byte, s string, bits uint, index *[256]byte) ([]byte, bool) {
	start, size := len(dst), packedLen(len(s), int(bits))
	// Each group is stored as 8 bytes of which bits count: room for the
	// last group's 8 - bits surplus bytes, cut off at the end.
	dst = slices.Grow(dst, size+8)
	out := dst[start : start+size+8]
	var bad byte // 0xFF, the mark of a byte outside the alphabet, sticks
	i, j := 0, 0
	for ; i+8 <= len(s); i, j = i+8, j+int(bits) {
		g := s[i : i+8]
		c0, c1, c2, c3 := index[g[0]], index[g[1]], index[g[2]], index[g[3]]
		c4, c5, c6, c7 := index[g[4]], index[g[5]], index[g[6]], index[g[7]]
		bad |= c0 | c1 | c2 | c3 | c4 | c5 | c6 | c7
		v := uint64(c0)<<(7*bits&63) | uint64(c1)<<(6*bits&63) | uint64(c2)<<(5*bits&63) |
			uint64(c3)<<(4*bits&63) | uint64(c4)<<(3*bits&63) | uint64(c5)<<(2*bits&63) |
			uint64(c6)<<(bits&63) | uint64(c7)
		binary.BigEndian.PutUint64(out[j:], v<<((64-8*bits)&63))
	}
	var acc uint64
	var have uint
	for ; i < len(s); i++ {
		c := index[s[i]]
		bad |= c
		acc = acc<<(bits&63) | uint64(c)
		have += bits
	}
	for ; have >= 8; j++ {
		have -= 8
		out[j] = byte(acc >> (have & 63))
	}
	if have > 0 {
		out[j] = byte(acc << ((8 - have) & 63))
	}
	if bad == 0xFF {
		return dst[:start], false
	}
	return dst[:start+size], true
}

// refAppendReadString is ReadString that appends the string's bytes to dst,
// so that a caller reading several strings can convert them at once.
func refAppendReadString(dst, src []byte) ([]byte, []byte, error) {
	h, rest, err := ReadUvarint(src)
	if err != nil {
		return dst, src, err
	}
	m, n64 := int(h&3), h>>2
	if n64 > uint64(len(rest))*8/5 { // no mode packs tighter than 5 bits
		return dst, src, ErrMalformed
	}
	n, start := int(n64), len(dst)
	switch m {
	case modeRaw:
		if n > len(rest) {
			return dst, src, ErrMalformed
		}
		dst, rest = append(dst, rest[:n]...), rest[n:]
		c := uint8(inB32 | inB64)
		for _, b := range dst[start:] {
			c &= class[b]
		}
		if n > 0 && (modeFor(n, c) != modeRaw || isUUID(dst[start:])) {
			return dst[:start], src, ErrMalformed
		}
	case modeUUID:
		if n != 0 || len(rest) < 16 {
			return dst, src, ErrMalformed
		}
		var u [36]byte
		body := (*[16]byte)(rest)
		for i, at := range refUUIDDigits {
			u[at], u[at+1] = hexDigits[body[i]>>4], hexDigits[body[i]&15]
		}
		u[8], u[13], u[18], u[23] = '-', '-', '-', '-'
		dst, rest = append(dst, u[:]...), rest[16:]
	case modeBase32:
		// Every character is in the base32 alphabet, so this mode is the
		// encoder's choice exactly when packing is shorter (and a UUID,
		// which has dashes, is impossible).
		if packedLen(n, 5) >= n {
			return dst, src, ErrMalformed
		}
		if dst, rest, err = refUnpack(dst, rest, n, 5, &refB32Table); err != nil {
			return dst[:start], src, err
		}
	case modeBase64:
		if packedLen(n, 6) >= n {
			return dst, src, ErrMalformed
		}
		if dst, rest, err = refUnpack(dst, rest, n, 6, &b64Table); err != nil {
			return dst[:start], src, err
		}
		c := uint8(inB32 | inB64)
		for _, b := range dst[start:] {
			c &= class[b]
		}
		if modeFor(n, c) != modeBase64 || isUUID(dst[start:]) {
			return dst[:start], src, ErrMalformed
		}
	}
	return dst, rest, nil
}

// refUnpack appends n characters of alphabet read from src, bits bits each,
// and checks that the padding bits are zero. Whole groups of eight
// characters (bits bytes) are unpacked without carrying bits over, read
// as one 8-byte word where src has room.
func refUnpack(dst, src []byte, n int, bits uint, alphabet *[64]byte) ([]byte, []byte, error) {
	size := packedLen(n, int(bits))
	if size > len(src) {
		return dst, src, ErrMalformed
	}
	in := src[:size]
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out := dst[start:]
	mask := uint64(1)<<(bits&63) - 1
	j, k := 0, 0
	for ; j+8 <= n; j, k = j+8, k+int(bits) {
		var v uint64
		if k+8 <= len(src) {
			v = binary.BigEndian.Uint64(src[k:]) >> ((64 - 8*bits) & 63)
		} else {
			for _, c := range in[k : k+int(bits)] {
				v = v<<8 | uint64(c)
			}
		}
		g := (*[8]byte)(out[j : j+8])
		g[0] = alphabet[v>>(7*bits&63)&mask&63]
		g[1] = alphabet[v>>(6*bits&63)&mask&63]
		g[2] = alphabet[v>>(5*bits&63)&mask&63]
		g[3] = alphabet[v>>(4*bits&63)&mask&63]
		g[4] = alphabet[v>>(3*bits&63)&mask&63]
		g[5] = alphabet[v>>(2*bits&63)&mask&63]
		g[6] = alphabet[v>>(bits&63)&mask&63]
		g[7] = alphabet[v&mask&63]
	}
	var acc uint64
	var have uint
	for ; j < n; j++ {
		if have < bits {
			acc = acc<<8 | uint64(in[k])
			k++
			have += 8
		}
		have -= bits
		out[j] = alphabet[(acc>>(have&63))&mask&63]
	}
	for ; k < size; k++ {
		acc = acc<<8 | uint64(in[k])
		have += 8
	}
	if have >= 8 || acc&(uint64(1)<<(have&63)-1) != 0 { // padding bits must be zero
		return dst[:start], src, ErrMalformed
	}
	return dst, src[size:], nil
}

// refB32Table is the base32 alphabet as refUnpack reads it.
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
