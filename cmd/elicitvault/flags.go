package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/keyschedule"
	"github.com/elicitvault/elicitvault/internal/ring"
)

// newFlagSet returns an empty flag set for c. Flags are written -name or
// --name, as the flag package accepts both.
func newFlagSet(c *command) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs. -h prints the usage of c to stdout and
// returns errHelpShown; any other problem is a usage error. Positional
// arguments are refused unless maxArgs allows them.
func parseFlags(e *env, c *command, fs *flag.FlagSet, args []string, maxArgs int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(e.stdout, c, fs)
			return errHelpShown
		}
		return usagef(fs, "%v", err)
	}
	if fs.NArg() > maxArgs {
		return usagef(fs, "unexpected argument %q", fs.Arg(maxArgs))
	}
	return nil
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// requireFlags returns a usage error naming the first of names that was not
// given on the command line.
func requireFlags(fs *flag.FlagSet, names ...string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, n := range names {
		if !set[n] {
			return usagef(fs, "missing required flag --%s", n)
		}
	}
	return nil
}

// bindingFlags are the flags that name a record's slot: seal, open.
type bindingFlags struct {
	fs      *flag.FlagSet
	purpose string
	session string
	subject string
	record  string
}

func addBindingFlags(fs *flag.FlagSet) *bindingFlags {
	b := &bindingFlags{fs: fs}
	fs.StringVar(&b.purpose, "purpose", "", "the record's `purpose`: 1 to 64 characters of a-z 0-9 / . _ - (required)")
	fs.StringVar(&b.session, "session", "", "the MCP session `ID` the record is bound to (required)")
	fs.StringVar(&b.subject, "subject", "", "the authenticated `user` the record is bound to")
	fs.StringVar(&b.record, "record", "", "the record `ID` (the slot) the record is bound to")
	return b
}

// binding checks the flags after parsing and returns the binding. Error
// messages name flags, never their values.
func (b *bindingFlags) binding() (envelope.Binding, error) {
	if err := requireFlags(b.fs, "purpose", "session"); err != nil {
		return envelope.Binding{}, err
	}
	if !keyschedule.ValidPurpose(b.purpose) {
		return envelope.Binding{}, usagef(b.fs, "--purpose must be 1 to 64 characters of a-z 0-9 / . _ -")
	}
	if b.session == "" {
		return envelope.Binding{}, usagef(b.fs, "--session must not be empty")
	}
	return envelope.Binding{Purpose: b.purpose, Subject: b.subject, SessionID: b.session, RecordID: b.record}, nil
}

// positiveDuration checks a duration flag after parsing.
func positiveDuration(fs *flag.FlagSet, name string, d time.Duration) error {
	if d <= 0 {
		return usagef(fs, "--%s must be a positive duration such as 90s, 5m or 1h", name)
	}
	return nil
}

// loadKeyring loads the secrets from the environment. There is no
// ephemeral secret here: what the CLI seals must open in another process.
func loadKeyring(e *env) (*ring.Keyring, error) {
	return loadKeyringWith(e, ring.LoadOptions{})
}

// loadKeyringWith is loadKeyring with options (serve allows the ephemeral
// development secret). The environment is always e's.
func loadKeyringWith(e *env, opts ring.LoadOptions, sealerOpts ...envelope.Option) (*ring.Keyring, error) {
	opts.Getenv = e.getenv
	k, err := ring.Load(opts, sealerOpts...)
	switch {
	case err == nil:
		return k, nil
	case errors.Is(err, ring.ErrNoSecret):
		return nil, &configError{err: err, msg: ring.EnvSecret + " is not set (generate a secret with: elicitvault keygen)"}
	case errors.Is(err, ring.ErrDuplicateKeyID):
		return nil, &configError{err: err, msg: fmt.Sprintf("%s: the same secret is given twice, in %s and %s or twice in %s",
			withoutPackages(err), ring.EnvSecret, ring.EnvPrevious, ring.EnvPrevious)}
	default:
		// The keyring's errors name the variable and the entry, never a secret.
		return nil, &configError{err: err, msg: withoutPackages(err)}
	}
}

// withoutPackages returns the text of a keyring error without the package
// prefixes ("keyring: ", "keyschedule: ") that a library's errors carry and an
// operator does not need.
func withoutPackages(err error) string {
	msg := err.Error()
	for _, p := range []string{"keyring: ", "envelope: ", "keyschedule: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

// configuredKeyIDs returns the key IDs of the configured secrets for
// commands that need none (inspect): nil when MCP_ELICITATION_SECRET is
// unset.
func configuredKeyIDs(e *env) ([]keyschedule.KeyID, error) {
	if e.getenv(ring.EnvSecret) == "" {
		return nil, nil
	}
	k, err := loadKeyring(e)
	if err != nil {
		return nil, err
	}
	return k.KeyIDs(), nil
}

// intFlagAtLeast checks an integer flag after parsing.
func intFlagAtLeast(fs *flag.FlagSet, name string, v, min int) error {
	if v < min {
		return usagef(fs, "--%s must be at least %d", name, min)
	}
	return nil
}
