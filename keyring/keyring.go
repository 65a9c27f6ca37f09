// Package keyring holds the secrets of an elicitvault deployment: the primary
// MCP_ELICITATION_SECRET, which seals everything new, and the previous
// secrets of MCP_ELICITATION_SECRET_PREVIOUS, which still open what they
// sealed.
//
// A server loads one Keyring at start-up and passes it to elicit.New:
//
//	keys, err := keyring.Load(nil) // MCP_ELICITATION_SECRET, MCP_ELICITATION_SECRET_PREVIOUS
//	if err != nil {
//		log.Fatal(err) // ErrNoSecret: set one made by GenerateSecret
//	}
//	ev, err := elicit.New(keys, memory.New(nil), nil)
//
// Operators use Rewrap to re-seal a whole store under the primary after a
// rotation and Inspect to see how many records each secret still holds;
// the elicitvault CLI's rotate and inspect commands are thin wrappers of
// both. SECURITY.md gives the rotation steps.
//
// The key schedule and the record format are fixed by SECURITY.md; nothing
// in this package exposes key material.
package keyring

import (
	"context"
	"time"

	"github.com/elicitvault/elicitvault/internal/keyschedule"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store"
)

// Errors of Load and New, usable with errors.Is.
var (
	// ErrNoSecret: MCP_ELICITATION_SECRET is unset and no ephemeral
	// development secret was allowed. GenerateSecret makes one.
	ErrNoSecret = ring.ErrNoSecret
	// ErrShortSecret: a secret is shorter than 32 bytes. The error names
	// the variable and position, never the value.
	ErrShortSecret = ring.ErrShortSecret
)

// Keyring is a primary secret and the previous ones. It is safe for
// concurrent use.
type Keyring ring.Keyring

// KeyID names a secret without revealing it: the first 4 bytes of an HKDF
// output (SECURITY.md).
type KeyID [4]byte

// String returns the key ID as 8 lowercase hex characters.
func (id KeyID) String() string { return keyschedule.KeyID(id).String() }

// LoadOptions configures Load. The zero value (or nil) reads the process
// environment and refuses to start without a secret.
type LoadOptions struct {
	// Getenv reads the environment; os.Getenv when nil.
	Getenv func(string) string

	// AllowEphemeral, for development only, generates a random secret when
	// MCP_ELICITATION_SECRET is unset. Everything sealed with it is lost
	// when the process exits, and no other process can open it. Warn is
	// called once when that happens.
	AllowEphemeral bool
	Warn           func(msg string)
}

// Load builds the keyring from MCP_ELICITATION_SECRET (the primary secret,
// at least 32 bytes) and MCP_ELICITATION_SECRET_PREVIOUS (older secrets,
// comma-separated, newest first). opts may be nil.
func Load(opts *LoadOptions) (*Keyring, error) {
	var o ring.LoadOptions
	if opts != nil {
		o = ring.LoadOptions{Getenv: opts.Getenv, AllowEphemeral: opts.AllowEphemeral, Warn: opts.Warn}
	}
	k, err := ring.Load(o)
	return (*Keyring)(k), err
}

// New builds a keyring from a primary secret and previous secrets, newest
// first, as bytes. Most servers call Load instead.
func New(primary []byte, previous ...[]byte) (*Keyring, error) {
	k, err := ring.New(primary, previous)
	return (*Keyring)(k), err
}

// GenerateSecret returns a new secret: base64url (no padding) of 32 bytes
// from crypto/rand, 43 characters.
func GenerateSecret() string { return ring.GenerateSecret() }

// KeyIDs returns the key ID of every secret, primary first.
func (k *Keyring) KeyIDs() []KeyID {
	ids := (*ring.Keyring)(k).KeyIDs()
	out := make([]KeyID, len(ids))
	for i, id := range ids {
		out[i] = KeyID(id)
	}
	return out
}

// RewrapOptions configures Rewrap; nil means the defaults.
type RewrapOptions struct {
	// BatchSize is the number of entries read per Scan (500 when zero).
	BatchSize int
	// Cursor resumes an interrupted rewrap from Progress.Cursor.
	Cursor string
	// Progress, when set, is called after every batch.
	Progress func(Progress)
}

// Progress counts what a rewrap has done so far.
type Progress struct {
	Scanned   int    // entries read
	Rewrapped int    // records now under the primary secret and its index
	Current   int    // records that already were
	Changed   int    // records left alone because they changed (or went) while being rewrapped
	Skipped   int    // entries that are not records (one-shot markers)
	InTransit int    // answers on their way to a waiter, left where they were written
	Failed    int    // records that did not open: invalid, unknown key, or misplaced
	Cursor    string // where to resume; "" once done
}

// Rewrap re-seals every record of s under the primary secret and moves it to
// the primary's blinded key, keeping its binding and expiry, one batch at a
// time. It is safe beside live traffic: it never overwrites an entry that
// changed since it read it, and a crash leaves a record in one place or two,
// never none. An interrupted rewrap resumes from Progress.Cursor.
func (k *Keyring) Rewrap(ctx context.Context, s store.Store, opts *RewrapOptions) (Progress, error) {
	var o ring.RewrapOptions
	if opts != nil {
		o = ring.RewrapOptions{BatchSize: opts.BatchSize, Cursor: opts.Cursor}
		if f := opts.Progress; f != nil {
			o.Progress = func(p ring.Progress) { f(Progress(p)) }
		}
	}
	p, err := (*ring.Keyring)(k).Rewrap(ctx, s, o)
	return Progress(p), err
}

// Report is what Inspect counts.
type Report struct {
	Entries  int           // every entry scanned
	Records  map[KeyID]int // stored records per key ID of their payload
	Markers  int           // entries that are not records (one-shot markers)
	Expiries []Bucket      // records per time left until expiry, shortest first
}

// Bucket counts the records whose time left is at most Upto (and more than
// the previous bucket's).
type Bucket struct {
	Upto  time.Duration
	Count int
}

// Inspect counts the records of s per key ID and per time left until expiry.
// It needs no secret and opens nothing.
func Inspect(ctx context.Context, s store.Store) (Report, error) {
	r, err := ring.Inspect(ctx, s, time.Now())
	out := Report{Entries: r.Entries, Markers: r.Markers, Records: make(map[KeyID]int, len(r.Records))}
	for id, n := range r.Records {
		out.Records[KeyID(id)] = n
	}
	for _, b := range r.Expiries {
		out.Expiries = append(out.Expiries, Bucket(b))
	}
	return out, err
}
