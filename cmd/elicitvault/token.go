package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/epoch"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
)

func init() {
	register(&command{
		name:     "token",
		synopsis: "issue|verify [flags]",
		summary:  "issue and verify URL callback tokens, OAuth state and requestState",
		help: `Subcommands:
  elicitvault token issue --kind K --session S --elicitation E [--subject U]
                          [--ttl D] [--format compact|jwe]
                          [--code-verifier V] [--tool T --args JSON [--state S]]
      prints a new token on stdout.
  elicitvault token verify [--kind K] [--session S] [--subject U]
                           [--elicitation E] [--tool T] [--args JSON]
                           [--consume --store URL] TOKEN|-
      prints the token's claims as JSON on stdout ("-" reads the token
      from stdin, which keeps it out of process listings).

Kinds: url, oauth-state, request-state. Run "elicitvault token issue -h" or
"elicitvault token verify -h" for the flags.`,
		run: runToken,
	})
	addRejection(rejection{token.ErrReplayed, "replayed", "the token was consumed before"})
}

// Subcommands of token, for their usage text.
var (
	tokenIssueCmd = &command{
		name:     "token issue",
		synopsis: "--kind K --session S --elicitation E [--subject U] [--ttl D] [--format compact|jwe]",
		summary:  "issue a token; it is printed on stdout",
		help: `The token is encrypted and authenticated under MCP_ELICITATION_SECRET; the
session ID, subject and elicitation ID are inside it. --ttl defaults to 10m
for url and oauth-state tokens and 5m for request-state tokens (at most 24h).
An oauth-state token may carry --code-verifier (a PKCE code verifier); a
request-state token needs --tool and --args (the tool call's arguments as a
JSON object, bound by the SHA-256 of their canonical JSON) and may carry an
opaque --state.`,
	}
	tokenVerifyCmd = &command{
		name:     "token verify",
		synopsis: "[--kind K] [--session S] [--subject U] [--elicitation E] [--tool T] [--args JSON] [--at TIME | --consume --store URL] TOKEN|-",
		summary:  "verify a token and print its claims as JSON on stdout",
		help: `Checks the key, the tag, the kind (any kind when --kind is not given), the
expiry and each of --session, --subject, --elicitation, --tool and --args
that is given (with --session, the subject is always compared: an empty
--subject then means a token without subject). Secrets listed in
MCP_ELICITATION_SECRET_PREVIOUS verify too.

With --at, the token is verified as of that time (RFC 3339) instead of
now: was the token seen in a log at that time good then?

With --consume, the token is also used up in the --store: the first verify
--consume of a token succeeds, every later one, from any process sharing
the store, exits 1 with "replayed".

Rejected tokens exit 1, and stderr says "invalid", "expired", "unknown key"
or "replayed". TOKEN "-" reads the token from stdin.`,
	}
)

func runToken(ctx context.Context, e *env, args []string) error {
	c := commands["token"]
	if len(args) == 0 {
		return usagef(nil, "missing subcommand: issue or verify")
	}
	switch args[0] {
	case "issue":
		return runTokenIssue(e, args[1:])
	case "verify":
		return runTokenVerify(ctx, e, args[1:])
	case "-h", "-help", "--help", "help":
		commandUsage(e.stdout, c, nil)
		return errHelpShown
	}
	return usagef(nil, "unknown subcommand %q: use issue or verify", args[0])
}

func kindFlag(fs *flag.FlagSet, k *string) {
	fs.StringVar(k, "kind", "", "the token's `kind`: url, oauth-state or request-state")
}

func parseKind(fs *flag.FlagSet, s string) (token.Kind, error) {
	k := token.Kind(s)
	if !k.Valid() {
		return "", usagef(fs, "--kind must be url, oauth-state or request-state")
	}
	return k, nil
}

func runTokenIssue(e *env, args []string) error {
	c := tokenIssueCmd
	fs := newFlagSet(c)
	var kind, format, argsJSON, state string
	var cl token.Claims
	kindFlag(fs, &kind)
	fs.StringVar(&cl.SessionID, "session", "", "the MCP session `ID` (required)")
	fs.StringVar(&cl.ElicitationID, "elicitation", "", "the elicitation `ID` (required)")
	fs.StringVar(&cl.Subject, "subject", "", "the authenticated `user`, if any")
	ttl := fs.Duration("ttl", 0, "how long the token verifies, as a Go `duration` (default: the kind's)")
	fs.StringVar(&format, "format", "compact", "the token `format`: compact or jwe")
	fs.StringVar(&cl.CodeVerifier, "code-verifier", "", "oauth-state: the PKCE code `verifier` to seal inside")
	fs.StringVar(&cl.Tool, "tool", "", "request-state: the tool `name`")
	fs.StringVar(&argsJSON, "args", "", "request-state: the tool call's arguments, a `JSON` object")
	fs.StringVar(&state, "state", "", "request-state: an opaque `payload` to seal inside")
	if err := parseFlags(e, c, fs, args, 0); err != nil {
		return err
	}
	if err := requireFlags(fs, "kind", "session", "elicitation"); err != nil {
		return err
	}
	var err error
	if cl.Kind, err = parseKind(fs, kind); err != nil {
		return err
	}
	f := token.Compact
	switch format {
	case "compact":
	case "jwe":
		f = token.JWE
	default:
		return usagef(fs, "--format must be compact or jwe")
	}
	if *ttl != 0 {
		if err := positiveDuration(fs, "ttl", *ttl); err != nil {
			return err
		}
	}
	if cl.Kind == token.RequestState {
		if err := requireFlags(fs, "tool", "args"); err != nil {
			return err
		}
		if cl.ArgsHash, err = token.HashArgs([]byte(argsJSON)); err != nil {
			return usagef(fs, "--args must be a JSON object")
		}
		if state != "" {
			cl.State = []byte(state)
		}
	} else if argsJSON != "" || state != "" || cl.Tool != "" {
		return usagef(fs, "--tool, --args and --state are for --kind request-state")
	}
	k, err := loadKeyring(e)
	if err != nil {
		return err
	}
	svc, err := token.NewService(k, nil)
	if err != nil {
		return err
	}
	tok, err := svc.Issue(&cl, *ttl, f)
	var ce *token.ClaimsError
	if errors.As(err, &ce) {
		return usagef(fs, "%s", strings.TrimPrefix(ce.Error(), "token: "))
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(e.stdout, tok)
	return err
}

func runTokenVerify(ctx context.Context, e *env, args []string) error {
	c := tokenVerifyCmd
	fs := newFlagSet(c)
	var kind, argsJSON, storeURL string
	var want token.Expect
	kindFlag(fs, &kind)
	fs.StringVar(&want.SessionID, "session", "", "the session `ID` the token must be for")
	fs.StringVar(&want.Subject, "subject", "", "the `user` the token must be for")
	fs.StringVar(&want.ElicitationID, "elicitation", "", "the elicitation `ID` the token must be for")
	fs.StringVar(&want.Tool, "tool", "", "request-state: the tool `name` the token must be for")
	fs.StringVar(&argsJSON, "args", "", "request-state: the `JSON` arguments the token must be for")
	consume := fs.Bool("consume", false, "use the token up in --store (one-shot)")
	fs.StringVar(&storeURL, "store", "", storeFlagHelp+" (required with --consume)")
	at := fs.String("at", "", "verify as of this `time` (RFC 3339), say when the token appeared in a log; not with --consume")
	if err := parseFlags(e, c, fs, args, 1); err != nil {
		return err
	}
	var sealerOpts []envelope.Option
	if *at != "" {
		t, err := time.Parse(time.RFC3339, *at)
		if err != nil {
			return usagef(fs, "--at must be an RFC 3339 time, like 2026-05-04T10:00:00Z")
		}
		if *consume {
			return usagef(fs, "--at cannot be used with --consume: a token is used up now")
		}
		sealerOpts = append(sealerOpts, envelope.WithClock(func() time.Time { return t }))
	}
	if fs.NArg() != 1 {
		return usagef(fs, "missing TOKEN")
	}
	tok := fs.Arg(0)
	if tok == "-" {
		in, err := readInput(io.LimitReader(e.stdin, token.MaxTokenSize+2))
		if err != nil {
			return err
		}
		tok = string(in)
	}
	tok = strings.TrimSpace(tok)
	kinds := token.Kinds
	if kind != "" {
		k, err := parseKind(fs, kind)
		if err != nil {
			return err
		}
		kinds = []token.Kind{k}
	}
	if argsJSON != "" {
		var err error
		if want.ArgsHash, err = token.HashArgs([]byte(argsJSON)); err != nil {
			return usagef(fs, "--args must be a JSON object")
		}
	}
	if *consume && storeURL == "" {
		return usagef(fs, "--consume needs --store")
	}
	if !*consume && storeURL != "" {
		return usagef(fs, "--store is only used with --consume")
	}
	k, err := loadKeyringWith(e, ring.LoadOptions{}, sealerOpts...)
	if err != nil {
		return err
	}
	svc, err := token.NewService(k, nil)
	if err != nil {
		return err
	}
	claims, err := verifyAnyKind(svc, tok, want, kinds)
	if err != nil {
		return tokenRejection(k, tok, err)
	}
	if *consume {
		st, err := openStore(ctx, storeURL)
		if err != nil {
			return err
		}
		defer st.Close()
		if svc, err = token.NewService(k, st, token.WithEpoch(epoch.NewWatcher(st, epoch.Options{}))); err != nil {
			return err
		}
		want.Kind = claims.Kind
		if claims, err = svc.Consume(ctx, tok, want); err != nil {
			return tokenRejection(k, tok, err)
		}
	}
	return writeClaims(e, claims)
}

// verifyAnyKind tries each kind in turn. A token verifies as at most one
// kind; when none accepts it, the most telling error wins: unknown key and
// expired (both only possible for the token's own kind or key) over
// invalid.
func verifyAnyKind(svc *token.Service, tok string, want token.Expect, kinds []token.Kind) (*token.Claims, error) {
	var last error
	for _, k := range kinds {
		want.Kind = k
		c, err := svc.Verify(tok, want)
		if err == nil {
			return c, nil
		}
		if last == nil || !errors.Is(err, token.ErrInvalid) {
			last = err
		}
	}
	return nil, last
}

func tokenRejection(k *ring.Keyring, tok string, err error) error {
	switch {
	case errors.Is(err, token.ErrUnknownKey):
		id, _, _ := token.PeekKeyID(tok)
		return reject(err, "the token was issued under key ID "+id.String()+
			", which is neither MCP_ELICITATION_SECRET nor in MCP_ELICITATION_SECRET_PREVIOUS")
	case errors.Is(err, token.ErrInvalid):
		return reject(err, "not a token, tampered with, truncated, of another --kind, "+
			"or for another --session, --subject, --elicitation, --tool or --args")
	case errors.Is(err, token.ErrExpired):
		return reject(err, "the token is authentic but past its expiry")
	case errors.Is(err, token.ErrStoreReset): // before ErrReplayed, which it also is
		return reject(err, "the store lost its data since the token was issued (its epoch changed); it cannot tell whether the token was used")
	case errors.Is(err, token.ErrReplayed):
		return reject(err, "the token was consumed before")
	}
	return err
}

// writeClaims prints the claims as the JWE claim set, with the key ID
// first: {"kid":"…","exp":…,…}.
func writeClaims(e *env, c *token.Claims) error {
	js, err := json.Marshal(c)
	if err != nil {
		return err
	}
	out := append([]byte(`{"kid":"`+c.KeyID.String()+`",`), js[1:]...)
	_, err = fmt.Fprintf(e.stdout, "%s\n", out)
	return err
}
