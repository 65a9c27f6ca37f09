package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"

	"github.com/elicitvault/elicitvault/internal/envelope"
)

func init() {
	register(&command{
		name:     "open",
		synopsis: "--purpose P --session S [--subject U] [--record R]",
		summary:  "open a line written by seal from stdin; the plaintext goes to stdout",
		help: bindingHelp + `

A record sealed under a secret listed in MCP_ELICITATION_SECRET_PREVIOUS
opens too. Rejected input exits 1, and stderr says "invalid", "expired"
or "unknown key".`,
		run: runOpen,
	})
}

func runOpen(ctx context.Context, e *env, args []string) error {
	c := commands["open"]
	fs := newFlagSet(c)
	bf := addBindingFlags(fs)
	// Accepted so that seal's command line can be reused as is.
	fs.Duration("ttl", 0, "ignored: the expiry is inside the record")
	if err := parseFlags(e, c, fs, args, 0); err != nil {
		return err
	}
	b, err := bf.binding()
	if err != nil {
		return err
	}
	k, err := loadKeyring(e)
	if err != nil {
		return err
	}
	in, err := readInput(e.stdin)
	if err != nil {
		return err
	}
	sealed, err := base64.RawURLEncoding.AppendDecode(nil, bytes.TrimSpace(in))
	if err != nil {
		return reject(envelope.ErrInvalid, "not one line of base64url (without padding) as seal writes it")
	}
	plaintext, err := k.Sealer().Open(b, sealed)
	if errors.Is(err, envelope.ErrUnknownKey) {
		// The key ID names a secret without revealing it: worth showing.
		h, _ := envelope.ParseHeader(sealed)
		return reject(err, "the record was sealed under key ID "+h.KeyID.String()+
			", which is neither MCP_ELICITATION_SECRET nor in MCP_ELICITATION_SECRET_PREVIOUS")
	}
	if err != nil {
		return err
	}
	defer clear(plaintext)
	_, err = e.stdout.Write(plaintext)
	return err
}
