// Package wire holds the binary encoding of the claims inside a compact
// token: unsigned varints, fixed-size byte fields and packed strings.
//
// A string is a header, uvarint(n<<2 | mode), followed by its body:
//
//	mode 0, raw:     n bytes, the string itself
//	mode 1, UUID:    n = 0; 16 bytes, a canonical lowercase UUID
//	                 (8-4-4-4-12 hex digits) without its dashes
//	mode 2, base32:  n characters of the RFC 4648 base32 alphabet
//	                 (A–Z, 2–7), 5 bits each (the character's index in
//	                 the alphabet), most significant bit first, the last
//	                 byte padded with zero bits: ceil(5n/8) bytes
//	mode 3, base64:  n characters of the base64url alphabet (A–Z, a–z,
//	                 0–9, '-', '_'), 6 bits each, packed the same way:
//	                 ceil(6n/8) bytes
//
// Packing is on characters, not on decoded bytes, so any string of the
// alphabet round-trips whatever its length and last character (crypto/rand
// Text, which the MCP go-sdk uses for session IDs, has 26 characters of
// base32, 130 bits). The encoder picks the first mode that applies, in the
// order UUID, base32, base64, raw, where a packed mode applies only if it is
// strictly shorter than raw; the decoder accepts only that choice and zero
// padding bits, so every string has exactly one encoding.
package wire

import (
	"encoding/binary"
	"errors"
)

const (
	modeRaw    = 0
	modeUUID   = 1
	modeBase32 = 2
	modeBase64 = 3
)

const (
	base32Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	hexDigits      = "0123456789abcdef"
)

// ErrMalformed is returned by every reader for input that is not a valid
// encoding.
var ErrMalformed = errors.New("wire: malformed")

// index tables: 0xFF marks a byte outside the alphabet.
var b32Index, b64Index, hexIndex [256]byte

func init() {
	for i := range 256 {
		b32Index[i], b64Index[i], hexIndex[i] = 0xFF, 0xFF, 0xFF
	}
	for i := range len(base32Alphabet) {
		b32Index[base32Alphabet[i]] = byte(i)
	}
	for i := range len(base64Alphabet) {
		b64Index[base64Alphabet[i]] = byte(i)
	}
	for i := range len(hexDigits) {
		hexIndex[hexDigits[i]] = byte(i)
	}
}

// AppendUvarint appends v as an unsigned LEB128 varint (encoding/binary).
func AppendUvarint(dst []byte, v uint64) []byte { return binary.AppendUvarint(dst, v) }

// ReadUvarint reads a minimally encoded uvarint.
func ReadUvarint(src []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(src)
	if n <= 0 || (n > 1 && src[n-1] == 0) { // overflow, short, or not minimal
		return 0, src, ErrMalformed
	}
	return v, src[n:], nil
}

// ReadFixed reads n bytes.
func ReadFixed(src []byte, n int) ([]byte, []byte, error) {
	if len(src) < n {
		return nil, src, ErrMalformed
	}
	return src[:n:n], src[n:], nil
}

// AppendBytes appends uvarint(len(b)) || b.
func AppendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// ReadBytes reads uvarint(n) || n bytes. The result aliases src.
func ReadBytes(src []byte) ([]byte, []byte, error) {
	n, rest, err := ReadUvarint(src)
	if err != nil || n > uint64(len(rest)) {
		return nil, src, ErrMalformed
	}
	return rest[:n:n], rest[n:], nil
}

// mode returns the mode the encoder uses for s.
func mode(s string) int {
	if isUUID(s) {
		return modeUUID
	}
	if n := len(s); n > 0 {
		if packedLen(n, 5) < n && inAlphabet(s, &b32Index) {
			return modeBase32
		}
		if packedLen(n, 6) < n && inAlphabet(s, &b64Index) {
			return modeBase64
		}
	}
	return modeRaw
}

func packedLen(n, bits int) int { return (n*bits + 7) / 8 }

func inAlphabet(s string, index *[256]byte) bool {
	for i := range len(s) {
		if index[s[i]] == 0xFF {
			return false
		}
	}
	return true
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range 36 {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if hexIndex[s[i]] == 0xFF {
				return false
			}
		}
	}
	return true
}

// StringLen returns the number of bytes AppendString appends for s.
func StringLen(s string) int {
	n := len(s)
	switch mode(s) {
	case modeUUID:
		return 1 + 16
	case modeBase32:
		return uvarintLen(uint64(n)<<2) + packedLen(n, 5)
	case modeBase64:
		return uvarintLen(uint64(n)<<2) + packedLen(n, 6)
	}
	return uvarintLen(uint64(n)<<2) + n
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// AppendString appends the encoding of s.
func AppendString(dst []byte, s string) []byte {
	switch m := mode(s); m {
	case modeUUID:
		dst = append(dst, modeUUID)
		for i := 0; i < 36; i += 2 {
			if s[i] == '-' {
				i++
			}
			dst = append(dst, hexIndex[s[i]]<<4|hexIndex[s[i+1]])
		}
		return dst
	case modeBase32:
		dst = binary.AppendUvarint(dst, uint64(len(s))<<2|modeBase32)
		return pack(dst, s, 5, &b32Index)
	case modeBase64:
		dst = binary.AppendUvarint(dst, uint64(len(s))<<2|modeBase64)
		return pack(dst, s, 6, &b64Index)
	}
	dst = binary.AppendUvarint(dst, uint64(len(s))<<2|modeRaw)
	return append(dst, s...)
}

func pack(dst []byte, s string, bits uint, index *[256]byte) []byte {
	var acc uint32
	var have uint
	for i := range len(s) {
		acc = acc<<bits | uint32(index[s[i]])
		have += bits
		for have >= 8 {
			have -= 8
			dst = append(dst, byte(acc>>have))
		}
	}
	if have > 0 {
		dst = append(dst, byte(acc<<(8-have)))
	}
	return dst
}

// ReadString reads a string written by AppendString and rejects any other
// encoding of it.
func ReadString(src []byte) (string, []byte, error) {
	h, rest, err := ReadUvarint(src)
	if err != nil {
		return "", src, err
	}
	m, n64 := int(h&3), h>>2
	if n64 > uint64(len(rest))*8/5 { // no mode packs tighter than 5 bits
		return "", src, ErrMalformed
	}
	n := int(n64)
	var s string
	switch m {
	case modeRaw:
		if n > len(rest) {
			return "", src, ErrMalformed
		}
		s, rest = string(rest[:n]), rest[n:]
	case modeUUID:
		if n != 0 || len(rest) < 16 {
			return "", src, ErrMalformed
		}
		var b [36]byte
		j := 0
		for i, c := range rest[:16] {
			if i == 4 || i == 6 || i == 8 || i == 10 {
				b[j] = '-'
				j++
			}
			b[j], b[j+1] = hexDigits[c>>4], hexDigits[c&15]
			j += 2
		}
		s, rest = string(b[:]), rest[16:]
	case modeBase32:
		if s, rest, err = unpack(rest, n, 5, base32Alphabet); err != nil {
			return "", src, err
		}
	case modeBase64:
		if s, rest, err = unpack(rest, n, 6, base64Alphabet); err != nil {
			return "", src, err
		}
	}
	if mode(s) != m {
		return "", src, ErrMalformed
	}
	return s, rest, nil
}

func unpack(src []byte, n int, bits uint, alphabet string) (string, []byte, error) {
	size := packedLen(n, int(bits))
	if size > len(src) {
		return "", src, ErrMalformed
	}
	out := make([]byte, n)
	var acc uint32
	var have uint
	mask := uint32(1)<<bits - 1
	j := 0
	for _, c := range src[:size] {
		acc = acc<<8 | uint32(c)
		have += 8
		for have >= bits && j < n {
			have -= bits
			out[j] = alphabet[(acc>>have)&mask]
			j++
		}
	}
	if acc&(uint32(1)<<have-1) != 0 { // padding bits must be zero
		return "", src, ErrMalformed
	}
	return string(out), src[size:], nil
}
