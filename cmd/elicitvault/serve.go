package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	register(&command{
		name:     "serve",
		synopsis: "[--addr HOST:PORT] [--stdio] [--sdk go-sdk|mcp-go] [--store URL] [--migrate=false] [--base-url URL] [--ttl D] [--fallback LIST] [--session-timeout D] [--max-sessions N] [--max-sessions-per-client N] [--trusted-proxies CIDRS] [--read-timeout D] [--write-timeout D] [--idle-timeout D] [--oauth-issuer URL | --oauth-auth-url URL --oauth-token-url URL] [--oauth-scopes S] [--conformance]",
		summary:  "run the reference MCP server, whose tools show every elicitation flow",
		help: `Serves MCP over Streamable HTTP at /mcp on --addr, or over stdin and
stdout with --stdio. Either way it serves, on --addr, the pages a browser
opens in URL mode: the consent page of connect_account (/elicit/consent),
with Accept and Decline. With --stdio they listen on a free loopback port
unless --addr names one.

Its tools show each flow of the elicit package:

  delete_contacts      a confirmation (elicit.Confirm) only the user may give:
                       no LLM-mediated fallback
  subscribe_newsletter a confirmation the model may relay when the client
                       cannot elicit (LLM-mediated fallback)
  register_attendee    a form with every field kind, bounds and defaults
  connect_account      URL mode: an OAuth 2.0 connection to the configured
                       provider, or without one a demonstration consent
                       page; with {"url_required_error": true} it answers
                       -32042 and the client retries once the account is
                       connected
  disconnect_account   with a provider: deletes and revokes the credential

With --sdk mcp-go the same tools are served by a mark3labs/mcp-go server
through elicitvault's mcp-go front-end (module mcpgo) instead of the
go-sdk: the same elicitations, records and pages, so that nodes of either
SDK may share a --store and a secret. --max-sessions and
--max-sessions-per-client bound the go-sdk's sessions only.

With --conformance it also serves the fixtures of the MCP conformance
suite (scripts/conformance sets it): the test_* tools of its elicitation,
SEP-2322 (input-required results) and stateless scenarios, and its prompt
test_input_required_result_prompt. They ask a client only for what it
declared (elicitation, sampling, roots), and answer -32021 otherwise.

Without MCP_ELICITATION_SECRET it generates an ephemeral development
secret and says so on stderr: state then lives as long as the process,
and no other process can open it. Servers that share a --store must
share the secret too. serve is the only command that does this.

With a postgres:// --store, it first creates the store's tables, or
upgrades them, as "elicitvault migrate" does: under an advisory lock, so
that replicas starting together take turns, and refusing a database that
a newer elicitvault migrated. With --migrate=false it only checks them:
for operators who run "elicitvault migrate" at deployment and serve with
a role that may not create tables.

The links sent in URL mode start with --base-url, by default the address
it listens on; set it when clients reach the server by another name. On
2026-07-28 the client's retry of a URL-mode round waits at most
--url-round-wait (20s) for the person to finish on the page, then answers
"still waiting" with a new requestState, which the client sends back at
once, so that each request stays well under the clients' timeouts (a
minute in the TypeScript SDK). A call answers "still waiting" twice at
most (the go-sdk client's limit), and then waits until --ttl; so does
every retry with --url-round-wait 0.

Over HTTP, a request's headers must arrive within 10 seconds and its
body within --read-timeout, each write of a response must go through
within --write-timeout (a blocking elicitation or a stream stays open
while its writes do), and a keep-alive connection closes after
--idle-timeout without a request. A 2025-11-25 (or older) session closes
after --session-timeout without a request or stream; one node keeps at
most --max-sessions sessions, and --max-sessions-per-client per client
(the address a request comes from; behind a proxy, list it in
--trusted-proxies so that its X-Forwarded-For names the client). A new
session beyond either closes the oldest idle one, or is refused (HTTP 429
or 503) when none is idle.

SIGINT or SIGTERM stops it gracefully: sessions are closed (waiting
elicitations end), then the HTTP server drains for up to 5 seconds; a
second signal stops it at once.` + "\n\n" + oauthHelp + "\n\n" + fallbackHelp + "\n\n" + storeURLHelp + "\n\n" + otelHelp,
		run: runServe,
	})
}

// shutdownGrace is how long a graceful stop waits for requests to finish.
const shutdownGrace = 5 * time.Second

// defaultIdleTimeout closes keep-alive connections idle this long.
const defaultIdleTimeout = 60 * time.Second

func runServe(ctx context.Context, e *env, args []string) error {
	c := commands["serve"]
	fs := newFlagSet(c)
	addr := fs.String("addr", "127.0.0.1:8080", "listen on `host:port` (port 0 picks a free one)")
	stdio := fs.Bool("stdio", false, "serve MCP over stdin and stdout instead of HTTP at /mcp")
	sdk := fs.String("sdk", sdkGo, "the MCP SDK that serves: `go-sdk` or mcp-go (mark3labs/mcp-go)")
	storeURL := fs.String("store", "memory", storeFlagHelp)
	migrate := fs.Bool("migrate", true, "with a postgres:// --store, create or upgrade its tables first, as \"elicitvault migrate\" does")
	baseURL := fs.String("base-url", "", "the `URL` browsers reach --addr by, for the links of URL mode")
	ttl := fs.Duration("ttl", 5*time.Minute, "how long an elicitation waits for its answer")
	roundWait := fs.Duration("url-round-wait", 20*time.Second, "on 2026-07-28, how long a URL-mode retry waits for the page before it answers \"still waiting\" (0: until --ttl)")
	fallback := fs.String("fallback", "llm", "for clients that cannot elicit: `llm,browser`, either, or none")
	oauthFl := addOAuthFlags(fs)
	conformance := fs.Bool("conformance", false, "also serve the fixtures of the MCP conformance suite (test_* tools, a prompt)")
	unauthenticated := fs.Bool("unauthenticated", false, "allow an --addr other than loopback although serve authenticates no one")
	sessionTimeout := fs.Duration("session-timeout", 30*time.Minute, "close a 2025-11-25 (or older) session idle this long")
	maxSessions := fs.Int("max-sessions", 5000, "the most sessions this node keeps open; beyond, the oldest idle one is closed")
	maxPerClient := fs.Int("max-sessions-per-client", 32, "the most sessions one client (user, or address) keeps open")
	trustedProxies := fs.String("trusted-proxies", "", "`CIDR,...` of proxies whose X-Forwarded-For names the client, for the session caps and the pending quotas")
	readTimeout := fs.Duration("read-timeout", 30*time.Second, "the time a request's body may take to arrive")
	writeTimeout := fs.Duration("write-timeout", 30*time.Second, "the time each write of a response may take (streams stay open)")
	idleTimeout := fs.Duration("idle-timeout", defaultIdleTimeout, "close a keep-alive connection idle this long")
	if err := parseFlags(e, c, fs, args, 0); err != nil {
		return err
	}
	if (!*stdio || flagSet(fs, "addr")) && !loopback(*addr) && !*unauthenticated {
		// Every client that reaches the port could call the tools and
		// answer any elicitation of a sessionless call.
		return usagef(fs, "--addr %s is not a loopback address and serve authenticates no one: pass --unauthenticated to serve it anyway", *addr)
	}
	if *sdk != sdkGo && *sdk != sdkMCPGo {
		return usagef(fs, "--sdk must be go-sdk or mcp-go")
	}
	fallbacks, err := fallbackFlag(fs, *fallback)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"ttl", *ttl}, {"session-timeout", *sessionTimeout}, {"read-timeout", *readTimeout}, {"write-timeout", *writeTimeout}, {"idle-timeout", *idleTimeout}} {
		if err := positiveDuration(fs, f.name, f.d); err != nil {
			return err
		}
	}
	if *roundWait < 0 {
		return usagef(fs, "--url-round-wait must not be negative")
	}
	if *roundWait == 0 {
		*roundWait = -1 // elicit.Config: until the TTL
	}
	if *maxSessions <= 0 || *maxPerClient <= 0 {
		return usagef(fs, "--max-sessions and --max-sessions-per-client must be positive")
	}
	httpOpts := elicit.HandlerOptions{
		SessionTimeout: *sessionTimeout, MaxSessions: *maxSessions, MaxSessionsPerClient: *maxPerClient,
		ReadTimeout: *readTimeout, WriteTimeout: *writeTimeout,
	}
	if *trustedProxies != "" {
		var prefixes []netip.Prefix
		for _, c := range strings.Split(*trustedProxies, ",") {
			p, err := netip.ParsePrefix(strings.TrimSpace(c))
			if err != nil {
				return usagef(fs, "--trusted-proxies: %q is not a CIDR such as 10.0.0.0/8", strings.TrimSpace(c))
			}
			prefixes = append(prefixes, p)
		}
		httpOpts.TrustedProxies = prefixes
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
	if *migrate && isPostgresURL(*storeURL) {
		if err := migrateStore(ctx, *storeURL); err != nil {
			return err
		}
	}
	st, err := openStore(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer st.Close()

	// Over stdio, the pages of URL mode and of the browser form listen on
	// a free loopback port unless --addr names one: two stdio servers, or
	// one beside the HTTP server, must not fight over 8080.
	listenAddr := *addr
	if *stdio && !flagSet(fs, "addr") {
		listenAddr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		if cause := errors.Unwrap(err); cause != nil {
			err = cause // "bind: address already in use", without the op's prefix
		}
		return fmt.Errorf("cannot listen on %s (--addr): %w", listenAddr, err)
	}
	defer ln.Close()
	base := *baseURL
	if base == "" {
		base = "http://" + advertised(ln.Addr())
	}
	ro := &referenceOptions{BaseURL: base, TTL: *ttl, URLRoundWait: *roundWait, Fallbacks: fallbacks, Conformance: *conformance, HTTP: httpOpts, SDK: *sdk}
	tel, err := newTelemetry(ctx, e.getenv)
	if err != nil {
		return err
	}
	if tel != nil {
		ro.Hooks = append(ro.Hooks, tel.hooks)
		defer func() {
			// Flush what is left, within the grace of a shutdown.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
			defer cancel()
			if err := tel.shutdown(fctx); err != nil {
				fmt.Fprintln(e.stderr, "elicitvault: serve: telemetry not flushed:", err)
			}
		}()
	}
	if oauthFl.configured() {
		if ro.OAuth, err = oauthFl.provider(ctx, e, fs, strings.TrimRight(base, "/")); err != nil {
			return err
		}
	}
	ref, err := newReference((*keyring.Keyring)(keys), st, ro)
	if err != nil {
		return err
	}
	if ro.OAuth == nil {
		fmt.Fprintln(e.stderr, "elicitvault: serve: no OAuth provider configured (--oauth-issuer): connect_account shows a demonstration consent page")
	}

	stop := watchInterrupts(ctx, e)
	defer stop.release()
	defer startTrace(e.getenv, e.stderr)()
	defer startCPUProfile(e.getenv, e.stderr)()

	// No ReadTimeout or WriteTimeout here: elicit.Handler sets them per
	// request (--read-timeout, --write-timeout), so that a blocking
	// elicitation or an SSE stream may stay open for minutes.
	srv := &http.Server{
		Handler:           ref.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       *idleTimeout,
		ErrorLog:          discardLog,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	// MCP over stdio ends when the client closes stdin.
	stdioDone := make(chan error, 1)
	if *stdio {
		fmt.Fprintf(e.stderr, "elicitvault: serve: MCP on stdio; pages for URL mode at %s%s\n", base, elicit.PagesPrefix)
		// Malformed inputResponses get -32602 naming the key, quoting
		// nothing else.
		if ref.front != nil {
			go func() { stdioDone <- ref.front.ServeStdio(stop.soft, e.stdin, e.stdout) }()
		} else {
			t := elicit.CheckTransport(&mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopWriteCloser{e.stdout}})
			go func() { stdioDone <- ref.server.Run(stop.soft, t) }()
		}
	} else {
		listening := ""
		if *baseURL != "" { // the balancer's address: say where this node listens
			listening = " (listening on " + ln.Addr().String() + ")"
		}
		fmt.Fprintf(e.stderr, "elicitvault: serve: MCP at %s%s%s\n", base, elicit.MCPPath, listening)
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

	// Closing the Elicitor ends every waiting elicitation (cancelled at the
	// client, its state cleaned up); closing the sessions ends their open
	// streams, so that Shutdown does not wait for them.
	sctx, cancel := context.WithTimeout(stop.hard, shutdownGrace)
	defer cancel()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		ref.ev.Close()
		for ss := range ref.server.Sessions() {
			ss.Close()
		}
	}()
	select {
	case <-closed:
	case <-sctx.Done():
	}
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return runErr
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// loopback reports whether a host:port listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
