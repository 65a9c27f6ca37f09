package token

import (
	"bytes"
	"crypto/sha256"
	"errors"

	"github.com/elicitvault/elicitvault/internal/token/internal/jcs"
)

// ErrArgs is returned by HashArgs for arguments that are not a JSON
// object or are not I-JSON (RFC 7493).
var ErrArgs = errors.New("token: tool arguments are not canonicalisable JSON")

// HashArgs returns the hash a RequestState token binds its tool call's
// arguments with: SHA-256 of their RFC 8785 (JCS) canonical form.
//
// Hashing the bytes a client sent would tie the token to one serialisation,
// and clients re-encode arguments between the rounds of a multi-round-trip
// call (member order, whitespace, 1.0 versus 1, escapes). The canonical
// form is what every conforming re-encoding of the same JSON value shares,
// and other languages have JCS implementations. Numbers are IEEE 754
// doubles, as in JavaScript clients: integers beyond 2^53 that round to the
// same double hash the same.
//
// args must be a JSON object; absent arguments (nil, empty or JSON null)
// hash as the empty object {}, since MCP treats them alike; whitespace
// alone is not JSON and is ErrArgs, as for encoding/json. Input that is
// not valid UTF-8, has a duplicate member name, a lone surrogate escape, a
// number beyond the range of a double, or nesting deeper than 64 is
// ErrArgs.
func HashArgs(args []byte) ([sha256.Size]byte, error) {
	trimmed := bytes.Trim(args, " \t\r\n") // JSON whitespace only
	if len(args) == 0 || string(trimmed) == "null" {
		return sha256.Sum256([]byte("{}")), nil
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return [sha256.Size]byte{}, ErrArgs
	}
	canon, err := jcs.Append(make([]byte, 0, len(trimmed)), trimmed)
	if err != nil {
		return [sha256.Size]byte{}, ErrArgs
	}
	return sha256.Sum256(canon), nil
}
