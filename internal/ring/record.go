package ring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/keyschedule"
)

// A stored record is what elicitvault writes into a store:
//
//	0xE1 || len(box) (2 bytes, big-endian) || box || payload
//
// payload is an envelope sealed for the record's binding, under the key
// bound to its subject and session. box is an envelope sealed for the
// unbound binding {Purpose: "record/binding"} whose plaintext is the
// record's binding (purpose, subject, session ID, record ID, each
// length-prefixed, then one byte: 1 when unbound). The box is what lets a
// rewrap job holding only the secrets and the store find each record's key
// again; the store sees neither.
const (
	recordMagic    = 0xE1
	recordPrefix   = 3
	bindingPurpose = "record/binding"
)

var bindingBox = envelope.Binding{Purpose: bindingPurpose, Unbound: true}

// ErrNotRecord is returned for a stored value that is not a record.
var ErrNotRecord = errors.New("keyring: not a stored record")

// SealRecord seals plaintext for b into a stored record that expires at
// expiry, under the primary secret.
func (k *Keyring) SealRecord(b envelope.Binding, plaintext []byte, expiry time.Time) ([]byte, error) {
	payload, err := k.sealer.Seal(b, plaintext, expiry)
	if err != nil {
		return nil, err
	}
	box, err := k.sealer.Seal(bindingBox, encodeBinding(b), expiry)
	if err != nil {
		return nil, err
	}
	if len(box) > 0xFFFF {
		return nil, envelope.ErrBinding
	}
	out := make([]byte, 0, recordPrefix+len(box)+len(payload))
	out = append(out, recordMagic)
	out = binary.BigEndian.AppendUint16(out, uint16(len(box)))
	out = append(out, box...)
	return append(out, payload...), nil
}

// OpenRecord opens a stored record sealed for b. Its errors are the
// envelope's: ErrInvalid for anything forged or misplaced, ErrExpired,
// ErrUnknownKey.
//
// Both parts are verified: the payload under b, and the binding box, which
// must name b. A record that opens is therefore one a rewrap can re-seal.
// Both carry the same authenticated expiry, so ErrExpired is reported only
// when both tags verified and both have expired; a box under a secret that
// is not configured is ErrUnknownKey; any other mix is ErrInvalid.
func (k *Keyring) OpenRecord(b envelope.Binding, record []byte) ([]byte, error) {
	box, payload, err := splitRecord(record)
	if err != nil {
		return nil, envelope.ErrInvalid
	}
	plaintext, err := k.sealer.Open(b, payload)
	if err != nil && !errors.Is(err, envelope.ErrExpired) {
		return nil, err
	}
	raw, boxErr := k.sealer.Open(bindingBox, box)
	switch {
	case err == nil && boxErr == nil && bytes.Equal(raw, encodeBinding(b)):
		return plaintext, nil
	case errors.Is(err, envelope.ErrExpired) && errors.Is(boxErr, envelope.ErrExpired):
		return nil, envelope.ErrExpired
	case errors.Is(boxErr, envelope.ErrUnknownKey):
		clear(plaintext)
		return nil, envelope.ErrUnknownKey
	}
	clear(plaintext)
	return nil, envelope.ErrInvalid
}

// RecordHeader returns the unauthenticated header of a stored record's
// payload (key ID and expiry), readable without any key.
func RecordHeader(record []byte) (envelope.Header, error) {
	_, payload, err := splitRecord(record)
	if err != nil {
		return envelope.Header{}, err
	}
	return envelope.ParseHeader(payload)
}

// recordBinding opens the binding box of a stored record.
func (k *Keyring) recordBinding(record []byte) (envelope.Binding, error) {
	box, _, err := splitRecord(record)
	if err != nil {
		return envelope.Binding{}, err
	}
	raw, err := k.sealer.Open(bindingBox, box)
	if err != nil {
		return envelope.Binding{}, err
	}
	b, ok := decodeBinding(raw)
	if !ok {
		return envelope.Binding{}, envelope.ErrInvalid
	}
	return b, nil
}

func splitRecord(record []byte) (box, payload []byte, err error) {
	if len(record) < recordPrefix || record[0] != recordMagic {
		return nil, nil, ErrNotRecord
	}
	n := int(binary.BigEndian.Uint16(record[1:3]))
	rest := record[recordPrefix:]
	if n < envelope.Overhead || len(rest) < n+envelope.Overhead {
		return nil, nil, ErrNotRecord
	}
	return rest[:n], rest[n:], nil
}

func encodeBinding(b envelope.Binding) []byte {
	var out []byte
	for _, f := range [...]string{b.Purpose, b.Subject, b.SessionID, b.RecordID} {
		out, _ = keyschedule.AppendField(out, f)
	}
	if b.Unbound {
		return append(out, 1)
	}
	return append(out, 0)
}

func decodeBinding(raw []byte) (envelope.Binding, bool) {
	var fields [4]string
	for i := range fields {
		if len(raw) < 4 {
			return envelope.Binding{}, false
		}
		n := binary.BigEndian.Uint32(raw)
		raw = raw[4:]
		if uint64(len(raw)) < uint64(n) {
			return envelope.Binding{}, false
		}
		fields[i], raw = string(raw[:n]), raw[n:]
	}
	if len(raw) != 1 || raw[0] > 1 {
		return envelope.Binding{}, false
	}
	return envelope.Binding{Purpose: fields[0], Subject: fields[1], SessionID: fields[2], RecordID: fields[3], Unbound: raw[0] == 1}, true
}
