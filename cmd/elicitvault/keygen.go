package main

import (
	"context"
	"fmt"

	"github.com/elicitvault/elicitvault/internal/ring"
)

func init() {
	register(&command{
		name:    "keygen",
		summary: "print a new secret for MCP_ELICITATION_SECRET",
		help: `Prints base64url (no padding) of 32 random bytes, 43 characters, and a
newline. Keep it where the server's other secrets are kept; see
SECURITY.md for rolling it out.`,
		run: runKeygen,
	})
}

func runKeygen(ctx context.Context, e *env, args []string) error {
	c := commands["keygen"]
	fs := newFlagSet(c)
	if err := parseFlags(e, c, fs, args, 0); err != nil {
		return err
	}
	_, err := fmt.Fprintln(e.stdout, ring.GenerateSecret())
	return err
}
