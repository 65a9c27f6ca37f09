package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/elicitvault/elicitvault/elicit/client"
	"github.com/elicitvault/elicitvault/internal/termtext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/term"
)

func init() {
	register(&command{
		name:     "connect",
		synopsis: "[--tool NAME [--args JSON]] [--allow-host HOST]... [--protocol V] (URL | COMMAND [ARG...])",
		summary:  "connect to an MCP server, list its tools or call one, and answer its elicitations in the terminal",
		help: `The server is a Streamable HTTP endpoint (an http:// or https:// URL) or
a command that speaks MCP over stdio (put "--" before a command whose
arguments start with "-"). Without --tool, the server's tools are listed.
With --tool, the tool is called with the JSON object of --args and its
result printed; a tool error exits 1.

When the server asks for input (elicitation), the question is shown in
the terminal: a form with each field's kind, bounds and default filled
in, checked before it is sent; or a link, with its host, that is opened
in the browser ($BROWSER, else the system's) only if you agree. Ctrl-C in
a question cancels it. Forms that ask for a password or another secret,
links that are not https (http only to this machine), that carry a user
name, or whose host is outside --allow-host, are refused. When stdin is
not a terminal, questions are plain line prompts read from stdin (EOF
cancels; Enter takes the default shown, "-" leaves an optional field
empty). What you leave empty is sent empty: no default is added behind
your back. Nothing the server sends reaches the terminal with escape
sequences, control or invisible characters.`,
		run: runConnect,
	})
}

type hostList []string

func (h *hostList) String() string     { return strings.Join(*h, ",") }
func (h *hostList) Set(s string) error { *h = append(*h, s); return nil }

// runConnect runs connect with every byte it writes to stdout and stderr,
// and the text of the error it returns, passed through termtext.Clean:
// what the server sends (messages, errors, results, HTTP error bodies
// quoted by the transport) cannot act on the terminal. The forms draw on
// the terminal themselves, with the server's texts cleaned by show.
func runConnect(ctx context.Context, e *env, args []string) error {
	ce := *e
	ce.stdout, ce.stderr = termtext.Writer(e.stdout), termtext.Writer(e.stderr)
	if err := connect(ctx, &ce, args); err != nil {
		return cleanError{err}
	}
	return nil
}

// cleanError is an error whose text is fit for a terminal; errors.Is and
// errors.As see the error it wraps.
type cleanError struct{ err error }

func (c cleanError) Error() string { return termtext.Clean(c.err.Error()) }
func (c cleanError) Unwrap() error { return c.err }

func connect(ctx context.Context, e *env, args []string) error {
	c := commands["connect"]
	fs := newFlagSet(c)
	tool := fs.String("tool", "", "the tool to call (without it, list the tools)")
	argsJSON := fs.String("args", "{}", "the tool's arguments, a JSON object")
	protocol := fs.String("protocol", "", "the protocol version to ask for (default: the newest the client knows)")
	var hosts hostList
	fs.Var(&hosts, "allow-host", "a host links may open (example.com, or *.example.com for any under it); repeat for more; none: any host")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(e.stdout, c, fs)
			return errHelpShown
		}
		return usagef(fs, "%v", err)
	}
	if fs.NArg() == 0 {
		return usagef(fs, "a server URL or command is required")
	}
	var arguments map[string]any
	if *tool != "" {
		if err := json.Unmarshal([]byte(*argsJSON), &arguments); err != nil || arguments == nil {
			return usagef(fs, "--args is not a JSON object")
		}
	}

	var transport mcp.Transport
	target := fs.Args()
	if len(target) == 1 && (strings.HasPrefix(target[0], "http://") || strings.HasPrefix(target[0], "https://")) {
		transport = &mcp.StreamableClientTransport{Endpoint: target[0]}
	} else {
		cmd := exec.Command(target[0], target[1:]...)
		cmd.Stderr = e.stderr
		transport = &mcp.CommandTransport{Command: cmd}
	}

	// Ctrl-C in a question cancels the question (the terminal form reads
	// it as a key); anywhere else it cancels the call, which the client
	// tells the server.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if e.signals != nil {
		sig, stop := e.signals()
		defer stop()
		go func() {
			select {
			case <-sig:
				fmt.Fprintln(e.stderr, "Interrupted.")
				cancel()
			case <-ctx.Done():
			}
		}()
	}

	ui := newTerminalUI(e)
	h := client.New(&client.Options{Form: ui, URL: ui, AllowedHosts: hosts, Open: ui.open})
	// The rounds of protocol 2026-07-28 are answered by h.CallTool and
	// elicitation/create by h (Attach): the go-sdk's own paths would add
	// the schema's defaults to what the user submitted.
	opts := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
	h.Install(opts)
	// What the client refuses goes to the server as an error; the user
	// sees why here.
	answer := opts.ElicitationHandler
	opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		res, err := answer(ctx, req)
		if err != nil {
			fmt.Fprintf(e.stderr, "Refused the server's request: %s\n", client.Printable(err.Error()))
		}
		return res, err
	}
	mc := mcp.NewClient(&mcp.Implementation{Name: "elicitvault-connect", Version: moduleVersion()}, opts)
	mc.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			er, ok := req.(*mcp.ElicitRequest)
			if !ok || method != "elicitation/create" {
				return next(ctx, method, req)
			}
			res, err := opts.ElicitationHandler(ctx, er)
			if err != nil {
				return nil, err
			}
			return res, nil
		}
	})
	cs, err := mc.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: *protocol})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		fmt.Fprintf(e.stderr, "Connected to %s %s (protocol %s).\n", client.Printable(ir.ServerInfo.Name), client.Printable(ir.ServerInfo.Version), client.Printable(ir.ProtocolVersion))
	}

	if *tool == "" {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return fmt.Errorf("connect: listing tools: %w", err)
			}
			desc := t.Title
			if desc == "" {
				desc = t.Description
			}
			fmt.Fprintf(e.stdout, "%-28s %s\n", client.Printable(t.Name), client.Printable(oneLine(desc)))
		}
		return nil
	}
	res, err := h.CallTool(ctx, cs, &mcp.CallToolParams{Name: *tool, Arguments: arguments})
	if err != nil {
		return fmt.Errorf("connect: %s: %w", *tool, err)
	}
	out := e.stdout
	if res.IsError {
		out = e.stderr
	}
	printResult(out, res)
	if res.IsError {
		return errToolFailed
	}
	return nil
}

// errToolFailed exits 1 after the tool's error was printed.
var errToolFailed = errors.New("the tool returned an error")

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 100 {
		s = string(r[:99]) + "…"
	}
	return s
}

func printResult(w io.Writer, res *mcp.CallToolResult) {
	// w cleans what it is given; Printable here too, so that no text of
	// the server reaches a terminal even if w changes.
	printed := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Fprintln(w, client.Printable(c.Text))
			printed = true
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "Resource: %s <%s>\n", client.Printable(oneLine(c.Name)), client.Printable(c.URI))
			printed = true
		}
	}
	if res.StructuredContent != nil && !printed {
		b, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		fmt.Fprintln(w, client.Printable(string(b)))
		printed = true
	}
	if !printed {
		b, _ := json.Marshal(res.Content)
		fmt.Fprintln(w, client.Printable(string(b)))
	}
}

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
