package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	register(&command{
		name:     "serve",
		synopsis: "[--addr HOST:PORT] [--stdio] [--store URL] [--base-url URL] [--ttl D] [--fallback LIST]",
		summary:  "run the reference MCP server, whose tools show every elicitation flow",
		help: `Serves MCP over Streamable HTTP at /mcp on --addr, or over stdin and
stdout with --stdio. Either way it serves, on --addr, the pages a browser
opens in URL mode: the consent page of connect_account (/elicit/connect)
and the callback that completes the elicitation (/elicit/callback).

Its tools show each flow of the elicit package:

  delete_contacts      a confirmation (elicit.Confirm) only the user may give:
                       no LLM-mediated fallback
  subscribe_newsletter a confirmation the model may relay when the client
                       cannot elicit (LLM-mediated fallback)
  register_attendee    a form with every field kind, bounds and defaults
  connect_account      URL mode with the built-in consent page; with
                       {"url_required_error": true} it answers -32042 and
                       the client retries once the account is connected
  test_elicitation, test_elicitation_sep1034_defaults,
  test_elicitation_sep1330_enums
                       the elicitation tools of the MCP conformance suite

Without MCP_ELICITATION_SECRET it generates an ephemeral development
secret and says so on stderr: state then lives as long as the process,
and no other process can open it. Servers that share a --store must
share the secret too. serve is the only command that does this.

The links sent in URL mode start with --base-url, by default the address
it listens on; set it when clients reach the server by another name.

SIGINT or SIGTERM stops it gracefully: sessions are closed (waiting
elicitations end), then the HTTP server drains for up to 5 seconds; a
second signal stops it at once.` + "\n\n" + fallbackHelp + "\n\n" + storeURLHelp,
		run: runServe,
	})
}

// shutdownGrace is how long a graceful stop waits for requests to finish.
const shutdownGrace = 5 * time.Second

func runServe(ctx context.Context, e *env, args []string) error {
	c := commands["serve"]
	fs := newFlagSet(c)
	addr := fs.String("addr", "127.0.0.1:8080", "listen on `host:port` (port 0 picks a free one)")
	stdio := fs.Bool("stdio", false, "serve MCP over stdin and stdout instead of HTTP at /mcp")
	storeURL := fs.String("store", "memory", storeFlagHelp)
	baseURL := fs.String("base-url", "", "the `URL` browsers reach --addr by, for the links of URL mode")
	ttl := fs.Duration("ttl", elicit.DefaultTTL, "how long an elicitation waits for its answer")
	fallback := fs.String("fallback", "llm", "for clients that cannot elicit: `llm,browser`, either, or none")
	if err := parseFlags(e, c, fs, args, 0); err != nil {
		return err
	}
	fallbacks, err := fallbackFlag(fs, *fallback)
	if err != nil {
		return err
	}
	if err := positiveDuration(fs, "ttl", *ttl); err != nil {
		return err
	}
	if *baseURL != "" {
		if u, err := url.Parse(*baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef(fs, "--base-url must be an absolute http:// or https:// URL")
		}
	}
	keys, err := loadKeyringWith(e, ring.LoadOptions{
		AllowEphemeral: true,
		Warn:           func(msg string) { fmt.Fprintln(e.stderr, msg) },
	})
	if err != nil {
		return err
	}
	st, err := openStore(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer st.Close()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listening on --addr: %w", err)
	}
	defer ln.Close()
	base := *baseURL
	if base == "" {
		base = "http://" + advertised(ln.Addr())
	}
	ref, err := newReference(keys, st, &referenceOptions{BaseURL: base, TTL: *ttl, Fallbacks: fallbacks})
	if err != nil {
		return err
	}
	defer ref.ev.Close() // the browser form's server

	stop := watchInterrupts(ctx, e)
	defer stop.release()

	mux := http.NewServeMux()
	ref.mountPages(mux)
	if !*stdio {
		mux.Handle("/mcp", ref.mcpHandler())
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          discardLog,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	// MCP over stdio ends when the client closes stdin.
	stdioDone := make(chan error, 1)
	if *stdio {
		fmt.Fprintf(e.stderr, "elicitvault: serve: MCP on stdio; pages for URL mode at %s/elicit/\n", base)
		t := &mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopWriteCloser{e.stdout}}
		go func() { stdioDone <- ref.server.Run(stop.soft, t) }()
	} else {
		fmt.Fprintf(e.stderr, "elicitvault: serve: MCP at %s/mcp\n", base)
	}

	var runErr error
	select {
	case <-stop.soft.Done():
		fmt.Fprintln(e.stderr, "elicitvault: serve: stopping")
	case err := <-stdioDone:
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			runErr = fmt.Errorf("stdio: %w", err)
		}
	case err := <-served:
		return fmt.Errorf("serving HTTP: %w", err)
	}

	// Ending the requests in progress ends their waiting elicitations
	// (each cleans up its state in the store); closing the sessions ends
	// their open streams, so that Shutdown does not wait for them.
	sctx, cancel := context.WithTimeout(stop.hard, shutdownGrace)
	defer cancel()
	ref.shutdown(sctx)
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return runErr
}

// advertised returns the host:port a browser on this machine reaches a
// listener by: an unspecified address (0.0.0.0, ::) becomes 127.0.0.1.
func advertised(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// discardLog silences net/http's own error log, whose messages may quote
// what a client sent.
var discardLog = log.New(io.Discard, "", 0)
