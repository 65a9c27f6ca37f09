package elicit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/internal/elicitlink"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of Config.
const (
	defaultTTL              = 5 * time.Minute
	defaultMaxPendingSize   = 256 << 10
	defaultMaxContentSize   = 64 << 10
	defaultProgressInterval = 10 * time.Second
	defaultURLRoundWait     = 20 * time.Second
)

// Config configures an Elicitor. The zero value is usable.
type Config struct {
	// TTL is how long an elicitation waits for its answer (5 minutes when
	// zero). A call may shorten or lengthen it with [WithTTL].
	TTL time.Duration

	// MaxContentSize bounds the JSON encoding of the content of an answer,
	// in bytes (64 KiB when zero). Larger content is refused with
	// [ErrTooLarge] before it is decoded further.
	MaxContentSize int

	// Hooks wrap the request and result flows of every elicitation. The
	// first is the outermost.
	Hooks []Hooks

	// BaseURL is the address browsers reach the server's pages by, such
	// as "https://mcp.example.com": [URL] sends users to the consent page
	// under BaseURL + [PagesPrefix], and the pages accept only this host.
	// Set it to use URL without [WithLink].
	BaseURL string

	// ServerName is how the consent page names the server that asks,
	// above the elicitation's message: "Example Mail asks you to
	// confirm". Use the name of your mcp.Implementation (the go-sdk does
	// not let the Elicitor read it). When empty, the page names the host
	// of BaseURL.
	ServerName string

	// Fallbacks enables, in order of preference, the ways to reach a user
	// whose client cannot receive an elicitation in the mode it needs
	// (see Fallback): LLMMediated, BrowserForm. Each is tried only where it
	// applies; a call may narrow the list with [WithFallbacks]. When none
	// applies, the call fails with an error matching [ErrUnsupported].
	Fallbacks []Fallback

	// OpenBrowser, when set, is called with the page of a [BrowserForm]
	// fallback, for a local server to open it in the user's browser (the
	// page is also announced to the client; see BrowserForm). The URL is a
	// bearer capability for the form: give it to the local user only.
	OpenBrowser func(ctx context.Context, url string) error

	// MaxPending bounds the elicitations pending on this Elicitor at once
	// (10000 when zero), and MaxPendingPerSubject those of one client (100
	// when zero): an authenticated
	// user; without authentication, a session (a stateful Streamable HTTP
	// session, a stdio or in-memory connection); on a stateless server
	// (2026-07-28), its address as [Elicitor.Handler] sees it
	// ([HandlerOptions.TrustedProxies]). MaxPendingBytes and
	// MaxPendingBytesPerSubject bound the same in bytes of the pending
	// records (64 MiB and 2 MiB when zero). A call beyond any of them
	// fails with [ErrTooManyPending]
	// before anything is written. An elicitation counts on the Elicitor
	// that asked it, from its pending record until it ends or expires, or
	// until its record is found gone from the store (answered on another
	// node), which is checked before a call is refused.
	MaxPending, MaxPendingPerSubject           int
	MaxPendingBytes, MaxPendingBytesPerSubject int

	// MaxPendingSize bounds the JSON encoding of a pending record, in bytes
	// (256 KiB when zero): an LLM-mediated elicitation keeps the tool's
	// arguments, the earlier answers and the handler's state there until
	// it is answered. A larger one fails with [ErrTooLarge]
	// before anything is written.
	MaxPendingSize int

	// ClaimLease is how long a node's claim on an answer or a token holds
	// it before another node may take it over: the time a resend waits
	// when the node that claimed it died or lost the store between claim
	// and commit (10 seconds when zero). It must cover a few store round
	// trips.
	ClaimLease time.Duration

	// ProgressInterval is how often a waiting elicitation sends a progress
	// notification, when the tool call carries a progress token, so that
	// a client which resets its request timeout on progress keeps waiting
	// while the user reads (10 seconds when zero; negative disables it).
	ProgressInterval time.Duration

	// URLRoundWait bounds how long, on 2026-07-28, the retry of a
	// URL-mode round waits for the user to finish on the page before it
	// answers "still waiting": an input-required result with no input
	// request and a new requestState, which the client sends back at once
	// (20 seconds when zero; negative: wait until the TTL). It
	// keeps each request well under the clients' timeouts (a minute in
	// the TypeScript SDK). A call answers "still waiting" at most twice,
	// the go-sdk client's limit, and then waits until the TTL.
	URLRoundWait time.Duration

	// Clock, when set, is the time every expiry the Elicitor seals or
	// checks is judged by: pending records, answers, tokens and their
	// claims' leases, on this Elicitor and on what is built on it
	// (elicit/oauth's Connector). For tests that reach an expiry without
	// waiting for it; nil is the wall clock. Timers still run on the wall
	// clock: a call that waits ends a TTL after it began.
	Clock func() time.Time

	// Logger receives the Elicitor's warnings: a handler that hid the
	// stop of an elicitation in a result of its own, a page request that
	// failed. Nothing it logs carries an answer, a token, a session ID or
	// a subject. slog.Default() when nil.
	Logger *slog.Logger
}

// Elicitor holds what every elicitation of a server shares: the keyring,
// the store, the token service, the TTL, the content limit and the hooks.
// Create one per server with New and install it with [Elicitor.Install]. It is safe
// for concurrent use.
type Elicitor struct {
	engine   *engine.Engine
	keys     *ring.Keyring
	store    store.Store
	tokens   *token.Service
	ttl      time.Duration
	maxSize  int
	hooks    []Hooks
	sessions sessions

	fallbacks []Fallback
	browser   browserServer

	baseURL    string
	serverName string        // Config.ServerName
	takenWait  time.Duration // how long the consent page waits for the call to take an answer
	log        *slog.Logger

	mu   sync.Mutex
	caps []*sessionCap // the session tables of its Handlers

	tasks taskTable // the tools that run as tasks (RunAsTask)

	// The tasks extension, and the go-sdk front-end. The delivery paths
	// are the engine's.
	task *taskPath
	sdk  *goSDK
}

// New returns an Elicitor that seals its state with keys into st.
func New(keys *keyring.Keyring, st store.Store, cfg *Config) (*Elicitor, error) {
	if keys == nil || st == nil {
		return nil, errors.New("elicit: New needs a keyring and a store")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	rk := (*ring.Keyring)(keys)
	if cfg.Clock != nil {
		rk = rk.WithClock(cfg.Clock)
	}
	e := &Elicitor{
		keys:    rk,
		store:   st,
		ttl:     cfg.TTL,
		maxSize: cfg.MaxContentSize,
		hooks:   append([]Hooks(nil), cfg.Hooks...),

		baseURL:    strings.TrimRight(cfg.BaseURL, "/"),
		serverName: cfg.ServerName,
		log:        cfg.Logger,
	}
	e.task, e.sdk = &taskPath{e}, &goSDK{e}
	ecfg := engine.Config{
		Limits:           limits(cfg),
		MaxPendingSize:   cfg.MaxPendingSize,
		ClaimLease:       cfg.ClaimLease,
		ProgressInterval: cfg.ProgressInterval,
		OpenBrowser:      cfg.OpenBrowser,
		ServerName:       cfg.ServerName,
		Forms:            e.browser.forms,
		Prepare:          e.prepare,
		Carry:            func(ctx context.Context) map[string]string { return carry(ctx, e.hooks) },
		Resume: func(ctx context.Context, m string, carried map[string]string) (context.Context, func(error)) {
			return resume(ctx, e.hooks, Mode(m), carried)
		},
	}
	if ecfg.ProgressInterval == 0 {
		ecfg.ProgressInterval = defaultProgressInterval
	}
	switch {
	case cfg.URLRoundWait == 0:
		ecfg.URLRoundWait = defaultURLRoundWait
	case cfg.URLRoundWait > 0:
		ecfg.URLRoundWait = cfg.URLRoundWait
	}
	e.takenWait = takenWait
	if e.log == nil {
		e.log = slog.Default()
	}
	for _, f := range cfg.Fallbacks {
		if f != LLMMediated && f != BrowserForm {
			return nil, fmt.Errorf("elicit: unknown fallback %q", string(f))
		}
		if !slices.Contains(e.fallbacks, f) {
			e.fallbacks = append(e.fallbacks, f)
			ecfg.Fallbacks = append(ecfg.Fallbacks, string(f))
		}
	}
	if e.ttl <= 0 {
		e.ttl = defaultTTL
	}
	if ecfg.MaxPendingSize <= 0 {
		ecfg.MaxPendingSize = defaultMaxPendingSize
	}
	if e.maxSize <= 0 {
		e.maxSize = defaultMaxContentSize
	}
	ecfg.MaxContentSize, ecfg.Logger = e.maxSize, e.log
	if cfg.BaseURL != "" {
		if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, errors.New("elicit: Config.BaseURL must be an absolute http:// or https:// URL")
		}
	}
	topts := []token.Option{token.WithEpoch(e.newEpochWatcher())}
	if cfg.ClaimLease > 0 {
		topts = append(topts, token.WithClaimLease(cfg.ClaimLease))
	}
	eng, err := engine.New(e.keys, st, ecfg, topts...)
	if err != nil {
		return nil, err
	}
	e.engine, e.tokens = eng, eng.Tokens()
	return e, nil
}

// Close ends every tool call of the Elicitor's servers that is in progress:
// a waiting elicitation returns [ErrClosed] to its handler, and the request
// to the client is cancelled (notifications/cancelled). It waits until
// those calls have returned, then releases what the Elicitor started on
// its own (the server of the [BrowserForm] fallback). Calls that arrive
// after Close fail with ErrClosed. The keyring and the store are the
// caller's to close.
func (e *Elicitor) Close() error {
	e.engine.Close()
	return e.browser.close()
}

type elicitorKey struct{}

// prepare puts e in ctx, for Form, Confirm and URL (engine.Config.Prepare).
func (e *Elicitor) prepare(ctx context.Context) context.Context {
	return context.WithValue(ctx, elicitorKey{}, e)
}

// Install adds the Elicitor's middleware to s. Every tool handler of s can
// then call [Form], [Confirm] and URL with the context it was given.
//
// The receiving middleware makes the Elicitor available to handlers and,
// on protocol 2026-07-28, turns an elicitation into input requests and
// continues the call when the client sends the answers (the handler runs
// again; see Form). With the LLMMediated fallback it also lists and serves
// sendElicitationResult for the clients that need it, and keeps the logging level
// each client sets, for the BrowserForm fallback. The sending middleware
// keeps the client's raw answer so that it is validated here, with errors
// that name the JSON path.
func (e *Elicitor) Install(s *mcp.Server) {
	s.AddReceivingMiddleware(e.sdk.receiving)
	s.AddSendingMiddleware(e.sdk.sending)
}

// newContext returns ctx carrying e and the tool call req, for code that
// calls Form, Confirm or URL outside a handler of a server e is installed
// on (benchmarks, tests: elicitlink.NewContext). Install does this for
// every request. The call is read from req once, here. Without a session
// in req, ctx carries e alone, and the calls return ErrNotInstalled.
func newContext(ctx context.Context, e *Elicitor, req *mcp.CallToolRequest) context.Context {
	ctx = context.WithValue(ctx, elicitorKey{}, e)
	if p, err := e.sdk.newPeer(ctx, req); err == nil {
		ctx = engine.WithPeer(ctx, p)
	}
	return ctx
}

func init() {
	elicitlink.Engine = func(v any) *engine.Engine {
		if e, ok := v.(*Elicitor); ok && e != nil {
			return e.engine
		}
		return nil
	}
	elicitlink.NewContext = func(ctx context.Context, v any, req *mcp.CallToolRequest) context.Context {
		return newContext(ctx, v.(*Elicitor), req)
	}
	elicitlink.InputKey = func(key string) any { return withInputKey(key) }
}

func fromContext(ctx context.Context) (*Elicitor, error) {
	if e, ok := ctx.Value(elicitorKey{}).(*Elicitor); ok {
		return e, nil
	}
	return nil, ErrNotInstalled
}
