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
// rotation (the elicitvault CLI's rotate command is a thin wrapper of it;
// its inspect command counts how many records each secret still holds).
// SECURITY.md gives the rotation steps.
//
// The key schedule and the record format are fixed by SECURITY.md; nothing
// in this package exposes key material.
package keyring

import (
	"context"

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

// KeyIDs returns the key ID of every secret, primary first: 8 lowercase
// hex characters that name a secret without revealing it (the first 4
// bytes of an HKDF output, SECURITY.md), as the elicitvault CLI's inspect
// command and the token's kid show them.
func (k *Keyring) KeyIDs() []string {
	ids := (*ring.Keyring)(k).KeyIDs()
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
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
