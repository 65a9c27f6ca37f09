package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/elicitvault/elicitvault/internal/envelope"
)

// Exit statuses.
const (
	exitOK       = 0
	exitRejected = 1 // rejected input, or a run-time failure
	exitUsage    = 2 // usage or configuration error
)

// A rejection maps an error to the word stderr names it by. Error messages
// are the rejection's detail, never the error's text: no plaintext, key or
// binding value ever reaches stderr through them.
type rejection struct {
	err    error
	word   string
	detail string
}

// rejections are tried in order with errors.Is; the first match wins.
// token.go adds its own (replayed) with addRejection.
var rejections = []rejection{
	{envelope.ErrInvalid, "invalid", "tampered with, truncated, or opened with another --purpose, --subject, --session or --record"},
	{envelope.ErrExpired, "expired", "the record is authentic but past its expiry"},
	{envelope.ErrUnknownKey, "unknown key", "sealed under a secret that is neither " +
		"MCP_ELICITATION_SECRET nor in MCP_ELICITATION_SECRET_PREVIOUS"},
}

// addRejection puts r before the existing rejections, so that a more
// specific sentinel wins over one it may wrap.
func addRejection(r rejection) { rejections = append([]rejection{r}, rejections...) }

// classify returns the rejection err matches, if any.
func classify(err error) (rejection, bool) {
	for _, r := range rejections {
		if errors.Is(err, r.err) {
			return r, true
		}
	}
	return rejection{}, false
}

// rejectedError is a rejection with a detail of the command's own, such as
// the key ID of an unknown key.
type rejectedError struct {
	word   string
	detail string
	err    error
}

func (e *rejectedError) Error() string { return e.word + ": " + e.detail }
func (e *rejectedError) Unwrap() error { return e.err }

// reject wraps err, which classify must recognise, with a detail that
// replaces the default one. The detail must not carry secrets, plaintext or
// binding values.
func reject(err error, detail string) error {
	r, ok := classify(err)
	if !ok {
		return err
	}
	return &rejectedError{word: r.word, detail: detail, err: err}
}

// usageError is a command line that cannot run: exit 2, with the usage.
type usageError struct {
	msg string
	fs  *flag.FlagSet // the command's flags, for the usage text
}

func (e *usageError) Error() string { return e.msg }

func usagef(fs *flag.FlagSet, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), fs: fs}
}

// configError is a configuration that cannot work (a missing, short or
// duplicated secret; a store that cannot serve the command): exit 2.
// msg, when set, replaces err's text.
type configError struct {
	msg string
	err error
}

func (e *configError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.err.Error()
}

func (e *configError) Unwrap() error { return e.err }

func configErr(err error) error { return &configError{err: err} }

func configErrorf(format string, args ...any) error {
	return &configError{err: fmt.Errorf(format, args...)}
}

// errHelpShown reports that -h printed the usage: exit 0.
var errHelpShown = errors.New("help shown")

// report writes err to stderr and returns the exit status for it.
func report(e *env, c *command, err error) int {
	if err == nil || errors.Is(err, errHelpShown) {
		return exitOK
	}
	prefix := "elicitvault: " + c.name + ": "
	var rej *rejectedError
	var use *usageError
	var cfg *configError
	switch {
	case errors.As(err, &rej):
		fmt.Fprintf(e.stderr, "%s%s: %s\n", prefix, rej.word, rej.detail)
		return exitRejected
	case errors.As(err, &use):
		fmt.Fprintf(e.stderr, "%s%s\nUsage: elicitvault %s %s\nRun \"elicitvault %s -h\" for details.\n",
			prefix, use.msg, c.name, c.synopsis, c.name)
		return exitUsage
	case errors.As(err, &cfg):
		fmt.Fprintf(e.stderr, "%s%s\n", prefix, cfg.Error())
		return exitUsage
	}
	if r, ok := classify(err); ok {
		fmt.Fprintf(e.stderr, "%s%s: %s\n", prefix, r.word, r.detail)
		return exitRejected
	}
	fmt.Fprintf(e.stderr, "%s%v\n", prefix, err)
	return exitRejected
}
