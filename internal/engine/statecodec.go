package engine

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
)

// The plaintext of a requestState token (its claims' state) is a
// requestState in one of two encodings:
//
//	JSON      a JSON object (first byte '{'): what earlier releases wrote,
//	          and what encodeState falls back to for a state the compact
//	          form cannot hold
//	compact   stateCompact, then
//	            mode         1 byte: 'f' form, 'u' URL
//	            key          uvarint length || bytes; length 0 is the
//	                         default key, InputKey of the elicitation ID
//	            fingerprint  16 bytes
//	            waits        uvarint
//	            state        uvarint length || bytes
//	            answers      uvarint length || a JSON array of answered;
//	                         length 0 is none
//
// The asked elicitation's ID is not written: it is the token's elicitation
// ID. The compact form is a third of the JSON's size for a round that asks
// one question, and every JSON layer between the server and the client
// reads the requestState at least twice per round trip.
const stateCompact = 0x02

// fingerprintSize is the size of a fingerprint's bytes (computeFingerprint
// writes them in base64url).
const fingerprintSize = 16

var errStateEncoding = errors.New("elicit: requestState plaintext is malformed")

// defaultInputKey is the key InputKey gives an elicitation asked without
// one.
func defaultInputKey(id string) string {
	if len(id) < 8 {
		return ""
	}
	return "elicit-" + id[:8]
}

// encodeState encodes st, whose Asked.ID is the token's elicitation ID.
func encodeState(st *requestState) ([]byte, error) {
	a := st.Asked
	var mode byte
	switch a.Mode {
	case ModeForm:
		mode = 'f'
	case ModeURL:
		mode = 'u'
	}
	var fp [fingerprintSize]byte
	ok := mode != 0 && a.Key != "" && len(a.FP) == base64.RawURLEncoding.EncodedLen(fingerprintSize)
	if ok {
		n, err := base64.RawURLEncoding.Decode(fp[:], []byte(a.FP))
		ok = err == nil && n == fingerprintSize && base64.RawURLEncoding.EncodeToString(fp[:]) == a.FP
	}
	if !ok {
		return json.Marshal(st)
	}
	var (
		answers []byte
		err     error
	)
	if len(st.Answers) > 0 {
		if answers, err = json.Marshal(st.Answers); err != nil {
			return nil, err
		}
	}
	b := make([]byte, 0, 32+len(a.Key)+len(st.State)+len(answers))
	b = append(b, stateCompact, mode)
	key := a.Key
	if key == defaultInputKey(a.ID) {
		key = ""
	}
	b = appendBytes(b, []byte(key))
	b = append(b, fp[:]...)
	b = binary.AppendUvarint(b, uint64(max(st.Waits, 0)))
	b = appendBytes(b, st.State)
	b = appendBytes(b, answers)
	return b, nil
}

func appendBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

// decodeState decodes the plaintext b of a requestState token whose
// elicitation ID is id.
func decodeState(b []byte, id string) (*requestState, error) {
	if len(b) > 0 && b[0] == '{' {
		st := &requestState{}
		if err := json.Unmarshal(b, st); err != nil || st.Asked == nil || st.Asked.ID != id {
			return nil, errStateEncoding
		}
		if len(st.State) == 0 {
			st.State = nil
		}
		if len(st.Answers) == 0 {
			st.Answers = nil
		}
		return st, nil
	}
	r := stateReader{b: b}
	if r.byte() != stateCompact {
		return nil, errStateEncoding
	}
	a := &asked{ID: id}
	switch r.byte() {
	case 'f':
		a.Mode = ModeForm
	case 'u':
		a.Mode = ModeURL
	default:
		return nil, errStateEncoding
	}
	key := r.bytes()
	if a.Key = string(key); len(key) == 0 {
		a.Key = defaultInputKey(id)
	}
	fp := r.next(fingerprintSize)
	a.FP = base64.RawURLEncoding.EncodeToString(fp)
	waits := r.uvarint()
	st := &requestState{Asked: a, Waits: int(waits)}
	if s := r.bytes(); len(s) > 0 {
		st.State = s
	}
	answers := r.bytes()
	if r.bad || len(r.b) != 0 || a.Key == "" || waits > 1<<30 {
		return nil, errStateEncoding
	}
	if len(answers) > 0 {
		if err := json.Unmarshal(answers, &st.Answers); err != nil || len(st.Answers) == 0 {
			return nil, errStateEncoding
		}
	}
	return st, nil
}

// stateReader reads the compact encoding; bad records the first error.
type stateReader struct {
	b   []byte
	bad bool
}

func (r *stateReader) next(n int) []byte {
	if r.bad || n < 0 || len(r.b) < n {
		r.bad = true
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *stateReader) byte() byte {
	if v := r.next(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *stateReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if r.bad || n <= 0 || n > 1 && r.b[n-1] == 0 {
		r.bad = true // truncated, too long, or not minimal
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	return r.next(int(n))
}
