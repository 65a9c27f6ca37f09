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
	"slices"
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

// The base64 alphabet as an array of 64, which an index masked with 63
// reads without a bounds check.
var b64Table [64]byte

// class holds, per byte, which alphabets it belongs to.
var class [256]uint8

const (
	inB32 = 1 << iota
	inB64
)

func init() {
	for i := range 256 {
		b32Index[i], b64Index[i], hexIndex[i] = 0xFF, 0xFF, 0xFF
	}
	copy(b64Table[:], base64Alphabet)
	for i := range len(base32Alphabet) {
		b32Index[base32Alphabet[i]] = byte(i)
	}
	for i := range len(base64Alphabet) {
		b64Index[base64Alphabet[i]] = byte(i)
	}
	for i := range len(hexDigits) {
		hexIndex[hexDigits[i]] = byte(i)
	}
	for i := range 256 {
		if b32Index[i] != 0xFF {
			class[i] |= inB32
		}
		if b64Index[i] != 0xFF {
			class[i] |= inB64
		}
	}
}

// AppendUvarint appends v as an unsigned LEB128 varint (encoding/binary).
func AppendUvarint(dst []byte, v uint64) []byte { return binary.AppendUvarint(dst, v) }

// ReadUvarint reads a minimally encoded uvarint.
func ReadUvarint(src []byte) (uint64, []byte, error) {
	if len(src) > 0 && src[0] < 0x80 { // one byte, the common case
		return uint64(src[0]), src[1:], nil
	}
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
	n := len(s)
	if n == 0 {
		return modeRaw
	}
	c := uint8(inB32 | inB64)
	for i := range n {
		c &= class[s[i]]
	}
	return modeFor(n, c)
}

// modeFor picks the mode of a string of n bytes, not a UUID, all of whose
// bytes are in the alphabets of c.
func modeFor(n int, c uint8) int {
	switch {
	case c&inB32 != 0 && packedLen(n, 5) < n:
		return modeBase32
	case c&inB64 != 0 && packedLen(n, 6) < n:
		return modeBase64
	}
	return modeRaw
}

func packedLen(n, bits int) int { return int(uint(n*bits+7) / 8) }

func isUUID[T string | []byte](s T) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	for i := range 36 {
		if hexIndex[s[i]] == 0xFF && i != 8 && i != 13 && i != 18 && i != 23 {
			return false
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
//
// Each packed mode is tried in the encoder's order (see the package
// comment) by packing s and checking its alphabet in the same pass; the
// first that applies is kept.
func AppendString(dst []byte, s string) []byte {
	start, n := len(dst), len(s)
	if n == 36 {
		if out, ok := appendUUID(dst, s); ok {
			return out
		}
	}
	if packedLen(n, 5) < n {
		dst = binary.AppendUvarint(dst, uint64(n)<<2|modeBase32)
		if out, ok := packBase32(dst, s); ok {
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

// The SWAR (SIMD within a register) helpers below work on eight bytes at
// once in a uint64, the first byte lowest, each byte a lane of its own:
// ones has 1 in every lane, highs the lane's top bit.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// ge returns highs in each lane of w that is at least lo (0 < lo < 0x80)
// and 0 in the others, for w whose lanes are all below 0x80: adding
// 0x80-lo carries into the top bit of exactly those lanes, and into no
// other lane.
func ge(w uint64, lo byte) uint64 { return (w + ones*uint64(0x80-lo)) & highs }

// le64 and le32 read eight and four bytes of s, the first lowest.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint64 {
	_ = s[3]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
}

// hexBytes decodes eight lowercase hex digits, w's lanes, into four
// bytes, the first lowest; ok is false if a lane is not one.
func hexBytes(w uint64) (b uint32, ok bool) {
	digit := ge(w, '0') &^ ge(w, '9'+1)
	letter := ge(w, 'a') &^ ge(w, 'f'+1)
	if w&highs != 0 || digit|letter != highs {
		return 0, false
	}
	n := w&(ones*0x0F) + letter>>7*9 // each digit's value
	// Join the digits in pairs (the first is the high nibble), then the
	// pairs' bytes.
	n = (n&0x00FF00FF00FF00FF)<<4 | (n>>8)&0x00FF00FF00FF00FF
	n = (n | n>>8) & 0x0000FFFF0000FFFF
	return uint32(n | n>>16), true
}

// hexDigitsOf returns the eight lowercase hex digits of b's four bytes
// (the first lowest) as lanes, each byte's high nibble first.
func hexDigitsOf(b uint32) uint64 {
	x := uint64(b)
	x = (x | x<<16) & 0x0000FFFF0000FFFF
	x = (x | x<<8) & 0x00FF00FF00FF00FF // byte i in lane 2i
	n := (x>>4)&(ones*0x0F&0x00FF00FF00FF00FF) | (x&(ones*0x0F&0x00FF00FF00FF00FF))<<8
	// '0' + n, and 'a' - 10 + n for n ≥ 10.
	return n + ones*'0' + (n+ones*(0x80-10))>>7&ones*('a'-'0'-10)
}

// appendUUID appends the UUID mode's encoding of s, or reports that s is
// not a canonical lowercase UUID.
func appendUUID(dst []byte, s string) ([]byte, bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return dst, false
	}
	// The 32 digits, 8-4-4-4-12, as four words of eight.
	b0, ok0 := hexBytes(le64(s[0:8]))
	b1, ok1 := hexBytes(le32(s[9:13]) | le32(s[14:18])<<32)
	b2, ok2 := hexBytes(le32(s[19:23]) | le32(s[24:28])<<32)
	b3, ok3 := hexBytes(le64(s[28:36]))
	if !(ok0 && ok1 && ok2 && ok3) {
		return dst, false
	}
	dst = append(dst, modeUUID)
	dst = binary.LittleEndian.AppendUint32(dst, b0)
	dst = binary.LittleEndian.AppendUint32(dst, b1)
	dst = binary.LittleEndian.AppendUint32(dst, b2)
	return binary.LittleEndian.AppendUint32(dst, b3), true
}

// appendUUIDText appends the canonical text of the UUID whose 16 bytes
// body holds.
func appendUUIDText(dst []byte, body *[16]byte) []byte {
	start := len(dst)
	dst = slices.Grow(dst, 36)[:start+36]
	u := (*[36]byte)(dst[start:])
	w1 := hexDigitsOf(binary.LittleEndian.Uint32(body[4:]))
	w2 := hexDigitsOf(binary.LittleEndian.Uint32(body[8:]))
	binary.LittleEndian.PutUint64(u[0:], hexDigitsOf(binary.LittleEndian.Uint32(body[0:])))
	binary.LittleEndian.PutUint32(u[9:], uint32(w1))
	binary.LittleEndian.PutUint32(u[14:], uint32(w1>>32))
	binary.LittleEndian.PutUint32(u[19:], uint32(w2))
	binary.LittleEndian.PutUint32(u[24:], uint32(w2>>32))
	binary.LittleEndian.PutUint64(u[28:], hexDigitsOf(binary.LittleEndian.Uint32(body[12:])))
	u[8], u[13], u[18], u[23] = '-', '-', '-', '-'
	return dst
}

// packBase32 is pack for base32, eight characters (five bytes) at a time.
// It may write up to three bytes past its result, in dst's capacity.
func packBase32(dst []byte, s string) ([]byte, bool) {
	start := len(dst)
	for i := 0; i < len(s); i += 8 {
		// Eight characters; the last ones, fewer, in the low lanes, the
		// lanes above padded with 'A', whose bits are zero.
		var w uint64
		switch rem := len(s) - i; {
		case rem >= 8:
			w = le64(s[i:])
		case i > 0: // read with the characters before them
			w = le64(s[len(s)-8:])>>(8*(8-rem)&63) | ones*'A'<<(8*rem&63)
		default:
			w = ones * 'A' << (8 * rem & 63)
			for j := range rem {
				w |= uint64(s[j]) << (8 * j & 63)
			}
		}
		letter := ge(w, 'A') &^ ge(w, 'Z'+1)
		digit := ge(w, '2') &^ ge(w, '7'+1)
		if w&highs != 0 || letter|digit != highs {
			return dst[:start], false
		}
		// Each lane's index in the alphabet: c - 'A' for a letter, c -
		// '2' + 26 for a digit, moved up first so that no lane borrows;
		// then the indexes joined, the first highest: in pairs (10 bits),
		// fours (20) and all eight (40).
		x := w + digit>>7*('A'-'2'+26) - ones*'A'
		x = (x&0x00FF00FF00FF00FF)<<5 | (x>>8)&0x00FF00FF00FF00FF
		x = (x&0x0000FFFF0000FFFF)<<10 | (x>>16)&0x0000FFFF0000FFFF
		x = (x&0xFFFFFFFF)<<20 | x>>32
		dst = binary.BigEndian.AppendUint64(dst, x<<24)[:len(dst)+5]
	}
	return dst[:start+packedLen(len(s), 5)], true
}

// unpackBase32 is unpack for base32, eight characters (five bytes) at a
// time.
func unpackBase32(dst, src []byte, n int) ([]byte, []byte, error) {
	size := packedLen(n, 5)
	if size > len(src) {
		return dst, src, ErrMalformed
	}
	start, in, rest := len(dst), src[:size], src[size:]
	k := 0
	for ; n >= 8; n -= 8 {
		v := uint64(in[k])<<32 | uint64(binary.BigEndian.Uint32(in[k+1:k+5]))
		dst = binary.LittleEndian.AppendUint64(dst, base32Chars(v))
		k += 5
	}
	if n > 0 {
		// The last characters: their bytes, and the padding bits after
		// them, which must be zero.
		var v uint64
		if k > 0 { // read with the bytes before them
			v = uint64(in[size-5])<<32 | uint64(binary.BigEndian.Uint32(in[size-4:]))
			v = v << (8 * (5 - (size - k)) & 63) & (1<<40 - 1)
		} else {
			for i, b := range in {
				v |= uint64(b) << ((32 - 8*i) & 63)
			}
		}
		if v&(uint64(1)<<((40-5*n)&63)-1) != 0 {
			return dst[:start], src, ErrMalformed
		}
		chars := base32Chars(v)
		for i := range n {
			dst = append(dst, byte(chars>>(8*i&63)))
		}
	}
	return dst, rest, nil
}

// base32Chars returns the eight base32 characters of the 40 bits v, the
// first character's five bits highest, as lanes.
func base32Chars(v uint64) uint64 {
	x := v>>20 | (v&0xFFFFF)<<32
	x = (x>>10)&0x000003FF000003FF | (x&0x000003FF000003FF)<<16
	x = (x>>5)&0x001F001F001F001F | (x&0x001F001F001F001F)<<8
	// 'A' + x, and '2' + x - 26 for x ≥ 26.
	return x + ones*'A' - (x+ones*(0x80-26))>>7&ones*('A'-'2'+26)
}

// pack appends the characters of s, bits bits each (their index in the
// alphabet whose table index is), most significant first, zero-padded to
// a whole byte. It reports false, appending nothing, if s has a character
// outside the alphabet. Eight characters make exactly bits bytes, so
// whole groups are packed without carrying bits over. (Shift counts are
// masked with 63 so that the compiler emits plain shifts.)
func pack(dst []byte, s string, bits uint, index *[256]byte) ([]byte, bool) {
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

// ReadString reads a string written by AppendString and rejects any other
// encoding of it.
func ReadString(src []byte) (string, []byte, error) {
	var buf [64]byte
	b, rest, err := AppendReadString(buf[:0], src)
	if err != nil {
		return "", src, err
	}
	return string(b), rest, nil
}

// AppendReadString is ReadString that appends the string's bytes to dst,
// so that a caller reading several strings can convert them at once.
func AppendReadString(dst, src []byte) ([]byte, []byte, error) {
	var h uint64
	var rest []byte
	var err error
	if len(src) > 0 && src[0] < 0x80 { // a one-byte header: up to 31 characters
		h, rest = uint64(src[0]), src[1:]
	} else if h, rest, err = ReadUvarint(src); err != nil {
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
		dst, rest = appendUUIDText(dst, (*[16]byte)(rest)), rest[16:]
	case modeBase32:
		// Every character is in the base32 alphabet, so this mode is the
		// encoder's choice exactly when packing is shorter (and a UUID,
		// which has dashes, is impossible).
		if packedLen(n, 5) >= n {
			return dst, src, ErrMalformed
		}
		if dst, rest, err = unpackBase32(dst, rest, n); err != nil {
			return dst[:start], src, err
		}
	case modeBase64:
		if packedLen(n, 6) >= n {
			return dst, src, ErrMalformed
		}
		if dst, rest, err = unpack(dst, rest, n, 6, &b64Table); err != nil {
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

// unpack appends n characters of alphabet read from src, bits bits each,
// and checks that the padding bits are zero. Whole groups of eight
// characters (bits bytes) are unpacked without carrying bits over, read
// as one 8-byte word where src has room.
func unpack(dst, src []byte, n int, bits uint, alphabet *[64]byte) ([]byte, []byte, error) {
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
