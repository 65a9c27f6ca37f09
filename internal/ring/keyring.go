// Package ring holds elicitvault's keyring: the primary secret, the
// previous ones, and what is derived from them — the envelope Sealer, the
// blinded store keys, and the stored-record format that lets a rewrap job
// re-seal a whole store under a new primary without dropping a record.
package ring

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/keyschedule"
)

// The environment variables the keyring is loaded from.
const (
	EnvSecret   = "MCP_ELICITATION_SECRET"
	EnvPrevious = "MCP_ELICITATION_SECRET_PREVIOUS"
)

var (
	// ErrNoSecret is returned when MCP_ELICITATION_SECRET is unset or empty
	// and no ephemeral development secret was allowed.
	ErrNoSecret = errors.New("keyring: " + EnvSecret + " is not set")
	// ErrShortSecret is returned for a secret under 32 bytes; the error text
	// names which variable (and which position, for previous secrets).
	ErrShortSecret = keyschedule.ErrShortSecret
	// ErrDuplicateKeyID is returned when two configured secrets share a key ID.
	ErrDuplicateKeyID = envelope.ErrDuplicateKeyID
)

// Keyring is the set of configured secrets. It is safe for concurrent use.
type Keyring struct {
	secrets []*keyschedule.Secret // primary first
	sealer  *envelope.Sealer
	index   []*indexKey // parallel to secrets
}

// New builds a keyring from the primary secret and previous secrets, newest
// first. Options are passed to the envelope Sealer.
func New(primary []byte, previous [][]byte, opts ...envelope.Option) (*Keyring, error) {
	p, err := keyschedule.New(primary)
	if err != nil {
		return nil, fmt.Errorf("keyring: %s: %w", EnvSecret, err)
	}
	secrets := []*keyschedule.Secret{p}
	for i, raw := range previous {
		s, err := keyschedule.New(raw)
		if err != nil {
			return nil, fmt.Errorf("keyring: %s, entry %d: %w", EnvPrevious, i+1, err)
		}
		secrets = append(secrets, s)
	}
	sealer, err := envelope.New(p, secrets[1:], opts...)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	k := &Keyring{secrets: secrets, sealer: sealer}
	for _, s := range secrets {
		ik, err := newIndexKey(s)
		if err != nil {
			return nil, err
		}
		k.index = append(k.index, ik)
	}
	return k, nil
}

// LoadOptions configures Load.
type LoadOptions struct {
	// Getenv reads the environment; os.Getenv when nil.
	Getenv func(string) string

	// AllowEphemeral, for development only, generates a random secret when
	// MCP_ELICITATION_SECRET is unset. Everything sealed with it is lost
	// when the process exits and no other process can open it. Warn is
	// called once when it happens.
	AllowEphemeral bool
	Warn           func(msg string)
}

// Load builds the keyring from MCP_ELICITATION_SECRET and the comma-separated
// MCP_ELICITATION_SECRET_PREVIOUS. A missing secret is ErrNoSecret unless
// opts.AllowEphemeral is set.
func Load(opts LoadOptions, sealerOpts ...envelope.Option) (*Keyring, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	primary := getenv(EnvSecret)
	if primary == "" {
		if !opts.AllowEphemeral {
			return nil, ErrNoSecret
		}
		primary = GenerateSecret()
		if opts.Warn != nil {
			opts.Warn("elicitvault: " + EnvSecret + " is not set; using an ephemeral development secret: " +
				"sealed state will not survive a restart or be readable by other nodes")
		}
	}
	var previous [][]byte
	if list := getenv(EnvPrevious); list != "" {
		for i, p := range strings.Split(list, ",") {
			if p == "" {
				return nil, fmt.Errorf("keyring: %s, entry %d: empty secret", EnvPrevious, i+1)
			}
			// Secrets are used as given; "A, B" would make " B" a secret of
			// its own, whose records then show as unknown key. Refuse it.
			if strings.TrimSpace(p) != p {
				return nil, fmt.Errorf("keyring: %s, entry %d: leading or trailing whitespace (separate secrets with commas only)", EnvPrevious, i+1)
			}
			previous = append(previous, []byte(p))
		}
	}
	return New([]byte(primary), previous, sealerOpts...)
}

// GenerateSecret returns a new secret: base64url (no padding) of 32 random
// bytes, 43 characters.
func GenerateSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Sealer returns the envelope Sealer of the keyring.
func (k *Keyring) Sealer() *envelope.Sealer { return k.sealer }

// WithClock returns a keyring with k's secrets whose Sealer, and so every
// expiry sealed or checked with it, reads the time from now.
func (k *Keyring) WithClock(now func() time.Time) *Keyring {
	c := *k
	c.sealer = k.sealer.WithClock(now)
	return &c
}

// PrimaryKeyID returns the key ID of the primary secret.
func (k *Keyring) PrimaryKeyID() keyschedule.KeyID { return k.secrets[0].KeyID() }

// KeyIDs returns the key IDs of every secret, primary first.
func (k *Keyring) KeyIDs() []keyschedule.KeyID {
	ids := make([]keyschedule.KeyID, len(k.secrets))
	for i, s := range k.secrets {
		ids[i] = s.KeyID()
	}
	return ids
}

// Secret returns the secret with key ID id, for packages that derive keys of
// their own from the schedule (the JWE token key).
func (k *Keyring) Secret(id keyschedule.KeyID) (*keyschedule.Secret, bool) {
	for _, s := range k.secrets {
		if s.KeyID() == id {
			return s, true
		}
	}
	return nil, false
}

// Primary returns the primary secret.
func (k *Keyring) Primary() *keyschedule.Secret { return k.secrets[0] }

// indexKey computes blinded store keys: HMAC-SHA256 under the secret's
// "index" purpose key, over the binding's length-prefixed fields.
type indexKey struct {
	id   keyschedule.KeyID
	pool sync.Pool // of hash.Hash
}

func newIndexKey(s *keyschedule.Secret) (*indexKey, error) {
	key, err := s.Key("index")
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	ik := &indexKey{id: s.KeyID()}
	ik.pool.New = func() any { return hmac.New(sha256.New, key) }
	return ik, nil
}

func (ik *indexKey) blind(b envelope.Binding) string {
	h := ik.pool.Get().(hash.Hash)
	defer ik.pool.Put(h)
	h.Reset()
	var buf [256]byte
	msg := buf[:0]
	if b.Unbound {
		msg = append(msg, 'u')
	} else {
		msg = append(msg, 'b')
	}
	for _, f := range [...]string{b.Purpose, b.Subject, b.SessionID, b.RecordID} {
		msg, _ = keyschedule.AppendField(msg, f)
	}
	h.Write(msg)
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0]))
}

// StoreKey returns the blinded store key of b under the primary secret:
// base64url of HMAC-SHA256(index key, b). New records are written there.
func (k *Keyring) StoreKey(b envelope.Binding) string { return k.index[0].blind(b) }

// StoreKeys returns the blinded store keys of b under every secret, primary
// first: a lookup during rotation tries them in order.
func (k *Keyring) StoreKeys(b envelope.Binding) []string {
	keys := make([]string, len(k.index))
	for i, ik := range k.index {
		keys[i] = ik.blind(b)
	}
	return keys
}

// StoreKeyUnder returns the blinded store key of b under the secret with key
// ID id. One-shot markers use the key of the secret that issued the token,
// so that every node agrees on it whatever its primary.
func (k *Keyring) StoreKeyUnder(id keyschedule.KeyID, b envelope.Binding) (string, bool) {
	for _, ik := range k.index {
		if ik.id == id {
			return ik.blind(b), true
		}
	}
	return "", false
}
