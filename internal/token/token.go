// Package token issues and verifies the tokens elicitvault hands to clients
// and browsers: URL-mode callback tokens, OAuth state values, and the
// requestState of the multi-round-trip protocol (2026-07-28).
//
// A token is encrypted and authenticated under a key derived from the
// keyring's secrets; its claims (session ID, subject, elicitation ID, token
// ID, times, kind and kind-specific claims) are inside the ciphertext, so a
// URL that carries one carries no PII. Two formats exist:
//
//   - Compact (the default): "ev1." followed by base64url (no padding) of an
//     envelope sealed for Binding{Purpose: "token/<kind>", Unbound: true}.
//     A typical URL token has 130 to 160 characters and needs no escaping
//     in a URL. "ev2." is the same with the store epoch (WithEpoch) among
//     the claims and the version in the AAD.
//   - JWE: compact JWE with alg "dir", enc "A256GCM", kid the key ID, under
//     the "token/jwe" purpose key, for verifiers in other languages.
//
// TOKENS.md, at the root of the repository, specifies both formats byte for
// byte.
//
// Verify checks the format, the key, the tag, the kind, the expiry and the
// binding the caller expects; every failure is one of ErrInvalid,
// ErrExpired and ErrUnknownKey, and none says more than that. Consume is
// Verify plus one-shot use: the first consumer of a token wins in every
// process that shares the store, every later one gets ErrReplayed.
//
// Errors never carry a session ID, subject, claim value, key or token text.
package token

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/epoch"
	"github.com/elicitvault/elicitvault/internal/keyschedule"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store"
)

// Kind is what a token is for. A token of one kind never verifies as
// another: the kind selects the key and is authenticated.
type Kind string

// The kinds of token.
const (
	// URL is a URL-mode elicitation callback token.
	URL Kind = "url"
	// OAuthState is an OAuth 2.0 state value; it may carry a PKCE code
	// verifier.
	OAuthState Kind = "oauth-state"
	// RequestState is the requestState of a multi-round-trip tool call,
	// bound to the tool name and the hash of its arguments.
	RequestState Kind = "request-state"
)

// Kinds lists every kind, in a fixed order.
var Kinds = []Kind{URL, OAuthState, RequestState}

// Valid reports whether k is one of the kinds.
func (k Kind) Valid() bool { return k == URL || k == OAuthState || k == RequestState }

// DefaultTTL is the lifetime of a token of kind k when Issue is given none:
// 10 minutes for URL (the user may have to sign in before the callback),
// 10 minutes for OAuthState (the common lifetime of an authorization
// request), 5 minutes for RequestState (the default wait of an
// elicitation).
func (k Kind) DefaultTTL() time.Duration {
	if k == RequestState {
		return 5 * time.Minute
	}
	return 10 * time.Minute
}

// MaxTTL is the longest lifetime Issue accepts.
const MaxTTL = 24 * time.Hour

// Format is a token's serialisation.
type Format int

const (
	// Compact is "ev1." or "ev2." + base64url(envelope): short, for URLs.
	Compact Format = iota
	// JWE is a compact JWE (dir, A256GCM), for verifiers in other languages.
	JWE
)

// String returns "compact" or "jwe".
func (f Format) String() string {
	switch f {
	case Compact:
		return "compact"
	case JWE:
		return "jwe"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Limits on claims, checked by Issue. Verify rejects tokens beyond them.
const (
	// MaxIDSize bounds SessionID, Subject, ElicitationID and Tool, in bytes.
	MaxIDSize = 256
	// MaxStateSize bounds Claims.State.
	MaxStateSize = 16 << 10
	// MaxTokenSize bounds the text of any token Verify reads.
	MaxTokenSize = 32 << 10
)

// Claims are the contents of a token.
type Claims struct {
	// Kind is required.
	Kind Kind

	// ID is the random 128-bit token ID (JWT "jti"); Issue sets it.
	ID [16]byte
	// KeyID is the key ID of the secret the token was issued under; Issue
	// and Verify set it.
	KeyID keyschedule.KeyID
	// IssuedAt and Expiry have a resolution of one second; Issue sets them.
	IssuedAt, Expiry time.Time
	// Epoch is the store epoch the token was issued in (package
	// internal/epoch); Issue sets it on a Service with WithEpoch. Zero in
	// a version 1 token, which carries none.
	Epoch epoch.ID

	// SessionID and ElicitationID are required; Subject is the
	// authenticated user, empty when the server has none.
	SessionID, Subject, ElicitationID string

	// CodeVerifier is an OAuthState's PKCE code verifier (RFC 7636: 43 to
	// 128 characters of A–Z a–z 0–9 - . _ ~), or empty.
	CodeVerifier string
	// Provider is an OAuthState's provider: the name of the OAuth 2.0
	// authorization server the state was issued for (at most MaxIDSize
	// bytes), or empty. A state issued for one provider is refused by the
	// callback of another.
	Provider string

	// Tool is a RequestState's tool name (required for that kind), and
	// ArgsHash the hash of its arguments (see HashArgs).
	Tool     string
	ArgsHash [sha256.Size]byte
	// State is a RequestState's opaque payload (at most MaxStateSize
	// bytes), sealed with the rest.
	State []byte
}

// Expect is what Verify checks a token against, beyond its key, tag and
// expiry.
//
// Kind is required. SessionID, ElicitationID, Tool and Provider are each checked when
// not empty, ArgsHash when not zero. The subject follows the key schedule's
// rule that state belongs to a (subject, session) pair: it is checked when
// Subject is not empty, and also whenever SessionID is set, so that an
// anonymous caller (Subject "") does not match a token issued to a user.
// A mismatch is ErrInvalid, whatever the field.
type Expect struct {
	Kind                              Kind
	SessionID, Subject, ElicitationID string
	Tool                              string
	ArgsHash                          [sha256.Size]byte
	// Provider, when not empty, must be an OAuthState's provider.
	Provider string
	// AnyEpoch skips the check of the store's epoch, for a caller that
	// makes it itself (CheckEpoch) and has a use for a token of an earlier
	// epoch: handing an answer to a call still waiting in its own process.
	AnyEpoch bool
}

// tokenError is a sentinel that also matches the envelope's sentinel of the
// same meaning, so that errors.Is works with either.
type tokenError struct {
	msg  string
	also error
}

func (e *tokenError) Error() string        { return e.msg }
func (e *tokenError) Is(target error) bool { return target == e.also && e.also != nil }

var (
	// ErrInvalid is returned for a token that is malformed, was tampered
	// with, is of another kind, or does not match what the caller expects.
	// It is deliberately one error. errors.Is(err, envelope.ErrInvalid)
	// also holds.
	ErrInvalid error = &tokenError{"token: invalid", envelope.ErrInvalid}
	// ErrExpired is returned for an authentic token past its expiry.
	// errors.Is(err, envelope.ErrExpired) also holds.
	ErrExpired error = &tokenError{"token: expired", envelope.ErrExpired}
	// ErrUnknownKey is returned for a token issued under a secret that is
	// not configured. errors.Is(err, envelope.ErrUnknownKey) also holds.
	ErrUnknownKey error = &tokenError{"token: unknown key", envelope.ErrUnknownKey}
	// ErrReplayed is returned by Consume for a token that was consumed
	// before.
	ErrReplayed error = &tokenError{msg: "token: replayed"}
	// ErrInProgress is returned by Consume for a token another consumer
	// claimed and has neither used up nor given back yet: it is free
	// again if that consumer fails, at the latest when its claim's lease
	// (WithClaimLease) ends. It also matches ErrReplayed: only one of the
	// concurrent consumers gets the claims.
	ErrInProgress error = &tokenError{"token: being used by another request; try again shortly", ErrReplayed}
	// ErrStoreReset is returned for a token issued in an earlier epoch of
	// the store: the store has lost its data since (a restart without
	// persistence, a flush), and with it the one-shot markers that told
	// whether the token was used. It also matches ErrReplayed: the token
	// is refused for good, and the user starts again.
	ErrStoreReset error = &tokenError{"token: issued before the store lost its data; start again", ErrReplayed}
	// ErrNoStore is returned by Consume on a Service without a store.
	ErrNoStore = errors.New("token: no store configured for one-shot use")
)

// ClaimsError is returned by Issue for claims it refuses. Field names the
// claim; the value is never included.
type ClaimsError struct {
	Field  string
	Reason string
}

func (e *ClaimsError) Error() string { return "token: claim " + e.Field + ": " + e.Reason }

// Service issues and verifies tokens under a keyring. It is safe for
// concurrent use.
type Service struct {
	keys   *ring.Keyring
	sealer *envelope.Sealer
	store  store.Store
	grace  time.Duration
	lease  time.Duration
	jwe    map[keyschedule.KeyID][]byte // "token/jwe" purpose keys
	epochs *epoch.Watcher               // nil: tokens carry no epoch

	encOnce sync.Once // the JWE encrypter under the primary's key
	enc     jose.Encrypter
	encErr  error
}

// Option configures a Service.
type Option func(*Service)

// WithMarkerGrace keeps one-shot markers for d past the expiry of their
// token (default 1 minute), so that a node whose clock runs behind the
// store's still finds the marker while it considers the token live.
func WithMarkerGrace(d time.Duration) Option {
	return func(s *Service) {
		if d >= 0 {
			s.grace = d
		}
	}
}

// WithClaimLease sets how long a consumer holds a token's marker before
// it is used up for good (default DefaultClaimLease): a consumer that fails
// in between (store unreachable, process killed) leaves a claim that a
// resend of the token takes over once the lease ends.
func WithClaimLease(d time.Duration) Option {
	return func(s *Service) {
		if d > 0 {
			s.lease = d
		}
	}
}

// DefaultClaimLease is the default of WithClaimLease.
const DefaultClaimLease = 10 * time.Second

// DefaultMarkerGrace is the default of WithMarkerGrace.
const DefaultMarkerGrace = time.Minute

// NewService returns a Service that issues under k's primary secret and
// verifies under all of k's secrets. st holds one-shot markers for Consume
// and may be nil if Consume is not used. The Service's clock is the
// keyring's (envelope.WithClock).
func NewService(k *ring.Keyring, st store.Store, opts ...Option) (*Service, error) {
	if k == nil {
		return nil, errors.New("token: nil keyring")
	}
	s := &Service{
		keys:   k,
		sealer: k.Sealer(),
		store:  st,
		grace:  DefaultMarkerGrace,
		lease:  DefaultClaimLease,
		jwe:    make(map[keyschedule.KeyID][]byte),
	}
	for _, id := range k.KeyIDs() {
		secret, _ := k.Secret(id)
		key, err := secret.Key(jwePurpose)
		if err != nil {
			return nil, fmt.Errorf("token: %w", err)
		}
		s.jwe[id] = key
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// now returns the current time on the keyring's clock.
func (s *Service) now() time.Time { return s.sealer.Now() }

// Issue returns a new token for c in format f, valid for ttl (the kind's
// DefaultTTL when zero; whole seconds, at most MaxTTL). It fills in c.ID,
// c.KeyID, c.IssuedAt and c.Expiry.
func (s *Service) Issue(c *Claims, ttl time.Duration, f Format) (string, error) {
	if ttl == 0 {
		ttl = c.Kind.DefaultTTL()
	}
	if ttl < time.Second || ttl > MaxTTL {
		return "", &ClaimsError{"ttl", "must be between 1s and 24h"}
	}
	err := c.check()
	if err != nil {
		return "", err
	}
	if f != Compact && f != JWE {
		return "", errors.New("token: unknown format")
	}
	rand.Read(c.ID[:]) // never fails (crypto/rand)
	// Whole seconds: now.Truncate(time.Second) and the expiry after it, the
	// same values (no monotonic reading, now's location) built directly.
	now := s.now()
	sec, loc := now.Unix(), now.Location()
	c.IssuedAt = time.Unix(sec, 0).In(loc)
	c.Expiry = time.Unix(sec+int64(ttl/time.Second), 0).In(loc)
	c.KeyID = s.keys.PrimaryKeyID()
	c.Epoch = epoch.ID{}
	if s.epochs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), epochTimeout)
		c.Epoch, err = s.epochs.Current(ctx)
		cancel()
		if err != nil {
			return "", fmt.Errorf("token: store epoch unknown: %w", err)
		}
	}
	if f == JWE {
		return s.issueJWE(c)
	}
	return s.issueCompact(c)
}

func (c *Claims) check() error {
	if !c.Kind.Valid() {
		return &ClaimsError{"kind", "unknown kind"}
	}
	if c.Kind != OAuthState && c.CodeVerifier != "" {
		return &ClaimsError{"code verifier", "only an oauth-state token carries one"}
	}
	if c.Kind != OAuthState && c.Provider != "" {
		return &ClaimsError{"provider", "only an oauth-state token carries one"}
	}
	if c.Kind != RequestState && (c.Tool != "" || c.ArgsHash != [sha256.Size]byte{} || len(c.State) > 0) {
		return &ClaimsError{"tool", "only a request-state token carries tool, arguments or state"}
	}
	return c.checkFields()
}

// checkFields is check for claims whose kind is valid and whose claims of
// other kinds are empty: the rest of Issue's checks, and all that a
// decoder must check again when its format carries only the kind's claims
// (the compact format).
func (c *Claims) checkFields() error {
	if err := checkID("session ID", c.SessionID, true); err != nil {
		return err
	}
	if err := checkID("subject", c.Subject, false); err != nil {
		return err
	}
	if err := checkID("elicitation ID", c.ElicitationID, true); err != nil {
		return err
	}
	switch c.Kind {
	case OAuthState:
		if err := checkID("provider", c.Provider, false); err != nil {
			return err
		}
		if c.CodeVerifier != "" && !validVerifier(c.CodeVerifier) {
			return &ClaimsError{"code verifier", "is not an RFC 7636 code verifier"}
		}
	case RequestState:
		if err := checkID("tool", c.Tool, true); err != nil {
			return err
		}
		if c.ArgsHash == [sha256.Size]byte{} {
			return &ClaimsError{"arguments hash", "is required for a request-state token"}
		}
		if len(c.State) > MaxStateSize {
			return &ClaimsError{"state", "is too long"}
		}
	}
	return nil
}

// checkID checks a claim that is an ID: at most MaxIDSize bytes, and not
// empty when required.
func checkID(name, v string, required bool) error {
	if required && v == "" {
		return &ClaimsError{name, "is empty"}
	}
	if len(v) > MaxIDSize {
		return &ClaimsError{name, "is too long"}
	}
	return nil
}

func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for _, c := range []byte(v) {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}

// PeekKeyID returns the key ID a token says it was issued under, and its
// format, without any key: for inspection and error messages. Nothing it
// returns is authenticated.
func PeekKeyID(tok string) (keyschedule.KeyID, Format, bool) {
	if len(tok) > MaxTokenSize {
		return keyschedule.KeyID{}, 0, false
	}
	if strings.HasPrefix(tok, compactPrefix) || strings.HasPrefix(tok, compactPrefixV2) {
		sealed, ok := decodeB64(tok[len(compactPrefix):])
		if !ok {
			return keyschedule.KeyID{}, 0, false
		}
		h, err := envelope.ParseHeader(sealed)
		return h.KeyID, Compact, err == nil
	}
	header, _, _ := strings.Cut(tok, ".")
	kid, ok := parseJWEHeader(header)
	return kid, JWE, ok && strings.Count(tok, ".") == 4
}

// Verify checks tok and returns its claims. It accepts both formats. The
// checks run in this order: format and size (ErrInvalid), key ID
// (ErrUnknownKey), tag and kind (ErrInvalid), expiry (ErrExpired), then
// the binding want asks for (ErrInvalid).
func (s *Service) Verify(tok string, want Expect) (*Claims, error) {
	if !want.Kind.Valid() {
		return nil, errors.New("token: Expect.Kind is not a known kind")
	}
	var (
		c   *Claims
		err error
	)
	switch {
	case len(tok) > MaxTokenSize:
		return nil, ErrInvalid
	case strings.HasPrefix(tok, compactPrefix):
		c, err = s.verifyCompact(tok, want.Kind, false)
	case strings.HasPrefix(tok, compactPrefixV2):
		c, err = s.verifyCompact(tok, want.Kind, true)
	default:
		c, err = s.verifyJWE(tok, want.Kind)
	}
	if err != nil {
		return nil, err
	}
	if !want.matches(c) {
		return nil, ErrInvalid
	}
	if want.AnyEpoch {
		return c, nil
	}
	if err := s.CheckEpoch(c); err != nil {
		return nil, err
	}
	return c, nil
}

func (want *Expect) matches(c *Claims) bool {
	if want.SessionID != "" && c.SessionID != want.SessionID {
		return false
	}
	if (want.SessionID != "" || want.Subject != "") && c.Subject != want.Subject {
		return false
	}
	if want.ElicitationID != "" && c.ElicitationID != want.ElicitationID {
		return false
	}
	if want.Tool != "" && c.Tool != want.Tool {
		return false
	}
	if want.Provider != "" && c.Provider != want.Provider {
		return false
	}
	if want.ArgsHash != [sha256.Size]byte{} && c.ArgsHash != want.ArgsHash {
		return false
	}
	return true
}
