// Command elicitvault is the operator's tool for elicitvault: it generates
// secrets, seals and opens records, rotates a store to a new secret and
// inspects what a store holds, and runs the reference MCP server.
//
// Every subcommand lives in a file of its own and registers itself in that
// file's init function (see register). They share what is in this file and
// in errors.go, flags.go and store.go: the exit-code mapping, the flag
// helpers, the keyring loader and openStore.
//
// Exit status: 0 on success; 1 when the input was rejected (stderr names why
// with one of the words invalid, expired, unknown key or replayed) or the
// operation failed at run time (a store that does not answer, an interrupted
// rotation); 2 when the command could not start as invoked: a usage error or
// a configuration error (a missing, short or duplicated secret).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

// env is what a subcommand may touch of the outside world. Tests replace it.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string

	// signals starts delivering SIGINT and SIGTERM, for subcommands that
	// stop gracefully (rotate), and returns a func that stops it. Other
	// subcommands keep the default: a signal ends the process.
	signals func() (<-chan os.Signal, func())
}

// command is one subcommand.
type command struct {
	name     string
	synopsis string // the flags, after "elicitvault NAME"
	summary  string // one line for the command list
	help     string // the rest of "elicitvault NAME -h"; may be empty
	run      func(ctx context.Context, e *env, args []string) error
}

var commands = map[string]*command{}

// register adds a subcommand; each subcommand's file calls it from init.
func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("elicitvault: subcommand registered twice: " + c.name)
	}
	commands[c.name] = c
}

// commandOrder is the order of the command list in the help text. Commands
// not listed here come after, sorted by name. serve (the reference server)
// and token (issue and verify) live in serve.go and token.go.
var commandOrder = []string{"serve", "keygen", "seal", "open", "token", "rotate", "inspect", "migrate"}

const usageExitHelp = `Environment:
  MCP_ELICITATION_SECRET           the primary secret (at least 32 bytes;
                                   generate one with "elicitvault keygen")
  MCP_ELICITATION_SECRET_PREVIOUS  older secrets, comma-separated, that
                                   still open records during a rotation

Exit status:
  0  success
  1  the input was rejected, and stderr says why with one of the words
     "invalid", "expired", "unknown key" or "replayed"; or the operation
     failed at run time (a store that does not answer, an interruption)
  2  usage or configuration error: an unknown subcommand or flag, a missing
     required flag, a bad duration, a missing, short or duplicated secret,
     a --store elicitvault cannot use for the subcommand

Run "elicitvault COMMAND -h" for the flags of one command.
`

func usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: elicitvault COMMAND [flags]\n\nCommands:\n")
	for _, c := range sortedCommands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\n%s", usageExitHelp)
}

func sortedCommands() []*command {
	var out []*command
	for _, name := range commandOrder {
		if c, ok := commands[name]; ok {
			out = append(out, c)
		}
	}
	var rest []string
	for name := range commands {
		if !slices.Contains(commandOrder, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	for _, name := range rest {
		out = append(out, commands[name])
	}
	return out
}

// commandUsage writes the usage of one subcommand; fs adds its flags.
func commandUsage(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: elicitvault %s", c.name)
	if c.synopsis != "" {
		fmt.Fprintf(w, " %s", c.synopsis)
	}
	fmt.Fprintf(w, "\n\n%s\n", c.summary)
	if c.help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.help, "\n"))
	}
	if fs != nil && hasFlags(fs) {
		fmt.Fprintf(w, "\nFlags:\n")
		printFlags(w, fs)
	}
}

// printFlags is flag.PrintDefaults with the --name spelling the help uses.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if name != "" {
			fmt.Fprintf(w, " %s", name)
		}
		fmt.Fprintf(w, "\n    \t%s", usage)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// run runs the command line args (without the program name) and returns the
// exit status.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return run(ctx, e, []string{c.name, "-h"})
			}
		}
		usage(e.stdout)
		return exitOK
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(e.stderr, "elicitvault: unknown command %q\n\n", name)
		usage(e.stderr)
		return exitUsage
	}
	return report(e, c, c.run(ctx, e, args[1:]))
}

func main() {
	ctx := context.Background()
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	e.signals = func() (<-chan os.Signal, func()) {
		ch := make(chan os.Signal, 2)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		return ch, func() { signal.Stop(ch) }
	}
	os.Exit(run(ctx, e, os.Args[1:]))
}
