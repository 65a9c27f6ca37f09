package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"time"
)

// maxInput bounds what seal and open read from stdin.
const maxInput = 64 << 20

const bindingHelp = `The record is bound to --purpose, --session, --subject and --record: it
opens only with the same four values, and only until its expiry. The
secret comes from MCP_ELICITATION_SECRET.`

func init() {
	register(&command{
		name:     "seal",
		synopsis: "--purpose P --session S [--subject U] [--record R] [--ttl D]",
		summary:  "seal stdin into one line of base64url on stdout",
		help:     bindingHelp,
		run:      runSeal,
	})
}

func runSeal(ctx context.Context, e *env, args []string) error {
	c := commands["seal"]
	fs := newFlagSet(c)
	bf := addBindingFlags(fs)
	ttl := fs.Duration("ttl", 5*time.Minute, "how long the record opens, as a Go `duration` (90s, 5m, 1h)")
	if err := parseFlags(e, c, fs, args, 0); err != nil {
		return err
	}
	b, err := bf.binding()
	if err != nil {
		return err
	}
	if err := positiveDuration(fs, "ttl", *ttl); err != nil {
		return err
	}
	k, err := loadKeyring(e)
	if err != nil {
		return err
	}
	plaintext, err := readInput(e.stdin)
	if err != nil {
		return err
	}
	sealed, err := k.Sealer().Seal(b, plaintext, time.Now().Add(*ttl))
	clear(plaintext)
	if err != nil {
		return fmt.Errorf("cannot seal: %w", err)
	}
	_, err = fmt.Fprintln(e.stdout, base64.RawURLEncoding.EncodeToString(sealed))
	return err
}

// readInput reads all of stdin, up to maxInput bytes.
func readInput(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("reading stdin: %w", err)
	}
	if len(data) > maxInput {
		clear(data)
		return nil, errors.New("stdin is larger than 64 MiB")
	}
	return data, nil
}
