package token

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/elicitvault/elicitvault/internal/keyschedule"
)

// The JWE format is a compact JWE (RFC 7516) with the protected header
//
//	{"alg":"dir","enc":"A256GCM","kid":"<key ID, 8 lowercase hex digits>"}
//
// and no other member, an empty encrypted key, a 96-bit IV and a 128-bit
// tag, under the key HKDF-Expand(prk, "elicitvault/v1 token/jwe", 32). Its
// plaintext is the JSON object of jweClaims.
const jwePurpose = "token/jwe"

// The algorithm lists go-jose parses with: exactly one each.
var (
	jweKeyAlgorithms = []jose.KeyAlgorithm{jose.DIRECT}
	jweContentEncs   = []jose.ContentEncryption{jose.A256GCM}
)

// jweClaims is the JSON plaintext of a JWE token. exp and iat are
// NumericDates (integer seconds); jti, args and state are base64url without
// padding; sub is omitted when empty.
type jweClaims struct {
	Exp   int64  `json:"exp"`
	Iat   int64  `json:"iat"`
	Jti   string `json:"jti"`
	Sub   string `json:"sub,omitempty"`
	Sid   string `json:"sid"`
	Eid   string `json:"eid"`
	Knd   string `json:"knd"`
	PKCE  string `json:"pkce,omitempty"`  // oauth-state: PKCE code verifier
	Prv   string `json:"prv,omitempty"`   // oauth-state: provider
	Tool  string `json:"tool,omitempty"`  // request-state: tool name
	Args  string `json:"args,omitempty"`  // request-state: SHA-256 of the canonical arguments
	State string `json:"state,omitempty"` // request-state: opaque payload
	Epc   string `json:"epc,omitempty"`   // store epoch, 8 bytes; absent in tokens of no epoch
}

func (s *Service) encrypter() (jose.Encrypter, error) {
	s.encOnce.Do(func() {
		id := s.keys.PrimaryKeyID()
		s.enc, s.encErr = jose.NewEncrypter(jose.A256GCM,
			jose.Recipient{Algorithm: jose.DIRECT, Key: s.jwe[id], KeyID: id.String()}, nil)
	})
	return s.enc, s.encErr
}

// MarshalJSON encodes c as the claim set of a JWE token: exp and iat in
// seconds, jti, args and state in base64url, sub and the claims of other
// kinds omitted when empty. KeyID is not part of it (it is the JWE
// header's kid).
func (c *Claims) MarshalJSON() ([]byte, error) {
	return json.Marshal(c.jweClaims())
}

func (c *Claims) jweClaims() *jweClaims {
	jc := &jweClaims{
		Exp:  c.Expiry.Unix(),
		Iat:  c.IssuedAt.Unix(),
		Jti:  b64.EncodeToString(c.ID[:]),
		Sub:  c.Subject,
		Sid:  c.SessionID,
		Eid:  c.ElicitationID,
		Knd:  string(c.Kind),
		PKCE: c.CodeVerifier,
		Prv:  c.Provider,
		Tool: c.Tool,
	}
	if !c.Epoch.IsZero() {
		jc.Epc = b64.EncodeToString(c.Epoch[:])
	}
	if c.Kind == RequestState {
		jc.Args = b64.EncodeToString(c.ArgsHash[:])
		jc.State = b64.EncodeToString(c.State)
	}
	return jc
}

func (s *Service) issueJWE(c *Claims) (string, error) {
	payload, err := json.Marshal(c.jweClaims())
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	enc, err := s.encrypter()
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	obj, err := enc.Encrypt(payload)
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	tok, err := obj.CompactSerialize()
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return tok, nil
}

func (s *Service) verifyJWE(tok string, kind Kind) (*Claims, error) {
	var seg [5]string
	rest := tok
	for i := range 4 {
		var ok bool
		if seg[i], rest, ok = strings.Cut(rest, "."); !ok {
			return nil, ErrInvalid
		}
	}
	seg[4] = rest
	// Everything go-jose would accept loosely is checked strictly first:
	// the header's members, an empty encrypted key, canonical base64url
	// in every segment (go-jose's decoder ignores padding bits, CR and LF),
	// and the sizes of IV and tag.
	kid, ok := parseJWEHeader(seg[0])
	if !ok || seg[1] != "" {
		return nil, ErrInvalid
	}
	sizes := [5]int{2: 12, 3: -1, 4: 16} // IV, ciphertext (any), tag
	for i := 2; i < 5; i++ {
		b, ok := decodeB64(seg[i]) // a sixth part leaves a '.' in seg[4]
		if !ok || len(b) == 0 || (sizes[i] >= 0 && len(b) != sizes[i]) {
			return nil, ErrInvalid
		}
	}
	key, ok := s.jwe[kid]
	if !ok {
		return nil, ErrUnknownKey
	}
	obj, err := jose.ParseEncryptedCompact(tok, jweKeyAlgorithms, jweContentEncs)
	if err != nil {
		return nil, ErrInvalid
	}
	payload, err := obj.Decrypt(key)
	if err != nil {
		return nil, ErrInvalid
	}
	c, err := decodeJWEClaims(payload, kind)
	if err != nil {
		return nil, ErrInvalid
	}
	c.KeyID = kid
	if !s.now().Before(c.Expiry) {
		return nil, ErrExpired
	}
	return c, nil
}

// parseJWEHeader accepts exactly the members alg "dir", enc "A256GCM" and
// kid, each once, in any order, and returns the key ID.
func parseJWEHeader(seg string) (keyschedule.KeyID, bool) {
	var kid keyschedule.KeyID
	raw, ok := decodeB64(seg)
	if !ok {
		return kid, false
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return kid, false
	}
	seen := map[string]bool{}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return kid, false
		}
		v, err := d.Token()
		if err != nil {
			return kid, false
		}
		name, _ := k.(string)
		value, ok := v.(string)
		if !ok || seen[name] {
			return kid, false
		}
		seen[name] = true
		switch name {
		case "alg":
			ok = value == string(jose.DIRECT)
		case "enc":
			ok = value == string(jose.A256GCM)
		case "kid":
			kid, err = keyschedule.ParseKeyID(value)
			ok = err == nil
		default:
			ok = false // zip, crit, jku, typ, …: nothing else is expected
		}
		if !ok {
			return kid, false
		}
	}
	if t, err := d.Token(); err != nil || t != json.Delim('}') || len(seen) != 3 {
		return kid, false
	}
	if _, err := d.Token(); err != io.EOF {
		return kid, false
	}
	return kid, true
}

func decodeJWEClaims(payload []byte, kind Kind) (*Claims, error) {
	if !strictClaims(payload) {
		return nil, errMalformed
	}
	var jc jweClaims
	d := json.NewDecoder(bytes.NewReader(payload))
	d.DisallowUnknownFields()
	if err := d.Decode(&jc); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errMalformed
	}
	if jc.Knd != string(kind) || jc.Iat <= 0 || jc.Exp <= jc.Iat || jc.Exp-jc.Iat > int64(MaxTTL/time.Second) {
		return nil, errMalformed
	}
	c := &Claims{
		Kind:          kind,
		IssuedAt:      time.Unix(jc.Iat, 0),
		Expiry:        time.Unix(jc.Exp, 0),
		SessionID:     jc.Sid,
		Subject:       jc.Sub,
		ElicitationID: jc.Eid,
		CodeVerifier:  jc.PKCE,
		Provider:      jc.Prv,
		Tool:          jc.Tool,
	}
	id, ok := decodeB64(jc.Jti)
	if !ok || len(id) != len(c.ID) {
		return nil, errMalformed
	}
	copy(c.ID[:], id)
	if jc.Epc != "" {
		e, ok := decodeB64(jc.Epc)
		if !ok || len(e) != len(c.Epoch) {
			return nil, errMalformed
		}
		copy(c.Epoch[:], e)
		if c.Epoch.IsZero() {
			return nil, errMalformed
		}
	}
	if kind == RequestState {
		h, ok := decodeB64(jc.Args)
		if !ok || len(h) != len(c.ArgsHash) {
			return nil, errMalformed
		}
		copy(c.ArgsHash[:], h)
		if c.State, ok = decodeB64(jc.State); !ok {
			return nil, errMalformed
		}
		if len(c.State) == 0 {
			c.State = nil
		}
	} else if jc.Args != "" || jc.State != "" {
		return nil, errMalformed
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// jweClaimNames are the members of a claim set, spelled exactly: the JSON
// names of jweClaims.
var jweClaimNames = func() map[string]bool {
	names := make(map[string]bool)
	t := reflect.TypeFor[jweClaims]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names[name] = true
	}
	return names
}()

// strictClaims accepts a claim set that is one flat JSON object whose
// members are known claims, spelled exactly, each once, each a string or a
// number. encoding/json alone would take the last of repeated members,
// match names in any case, and read null as absent.
func strictClaims(payload []byte) bool {
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	seen := make(map[string]bool, len(jweClaimNames))
	for d.More() {
		t, err := d.Token()
		name, ok := t.(string)
		if err != nil || !ok || !jweClaimNames[name] || seen[name] {
			return false
		}
		seen[name] = true
		v, err := d.Token()
		if err != nil {
			return false
		}
		switch v.(type) {
		case string, json.Number:
		default: // null, true, false, or the start of an object or array
			return false
		}
	}
	t, err := d.Token()
	return err == nil && t == json.Delim('}')
}
