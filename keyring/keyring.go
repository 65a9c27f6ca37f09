// Package keyring holds the secrets of an elicitvault deployment: the primary
// MCP_ELICITATION_SECRET, which seals everything new, and the previous
// secrets of MCP_ELICITATION_SECRET_PREVIOUS, which still open what they
// sealed.
//
// A server loads one Keyring at start-up and passes it to elicit.New.
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

// The environment variables Load reads.
const (
	EnvSecret   = ring.EnvSecret   // the primary secret, at least 32 bytes
	EnvPrevious = ring.EnvPrevious // older secrets, comma-separated, newest first
)

// Errors of Load and New, usable with errors.Is.
var (
	// ErrNoSecret: MCP_ELICITATION_SECRET is unset and no ephemeral
	// development secret was allowed.
	ErrNoSecret = ring.ErrNoSecret
	// ErrShortSecret: a secret is shorter than 32 bytes. The error names
	// the variable and position, never the value.
	ErrShortSecret = ring.ErrShortSecret
	// ErrDuplicateKeyID: two configured secrets share a key ID (the same
	// secret listed twice).
	ErrDuplicateKeyID = ring.ErrDuplicateKeyID
)

// Keyring is a primary secret and the previous ones. It is safe for
// concurrent use.
type Keyring ring.Keyring

// KeyID names a secret without revealing it: the first 4 bytes of an HKDF
// output (SECURITY.md). Its String form is 8 lowercase hex characters.
type KeyID = keyschedule.KeyID

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

// Load builds the keyring from MCP_ELICITATION_SECRET and the
// comma-separated MCP_ELICITATION_SECRET_PREVIOUS.
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
func (k *Keyring) KeyIDs() []KeyID { return (*ring.Keyring)(k).KeyIDs() }

// RewrapOptions configures Rewrap; nil means the defaults.
type RewrapOptions = ring.RewrapOptions

// Progress counts what a rewrap has done so far.
type Progress = ring.Progress

// Rewrap re-seals every record of s under the primary secret and moves it to
// the primary's blinded key, keeping its binding and expiry, one batch at a
// time. It is safe beside live traffic: it never overwrites an entry that
// changed since it read it, and a crash leaves a record in one place or two,
// never none. An interrupted rewrap resumes from Progress.Cursor.
func (k *Keyring) Rewrap(ctx context.Context, s store.Store, opts *RewrapOptions) (Progress, error) {
	var o RewrapOptions
	if opts != nil {
		o = *opts
	}
	return (*ring.Keyring)(k).Rewrap(ctx, s, o)
}

// Report is what Inspect counts.
type Report = ring.Report

// Bucket counts the records whose time left is at most Upto.
type Bucket = ring.Bucket

// Inspect counts the records of s per key ID and per time left until expiry.
// It needs no secret and opens nothing.
func Inspect(ctx context.Context, s store.Store) (Report, error) {
	return ring.Inspect(ctx, s, time.Now())
}
