package elicit

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/token"

	"github.com/elicitvault/elicitvault/elicit/internal/page"
)

// PagesPrefix is where [Elicitor.Handler] mounts the pages of URL mode,
// and what [Config.BaseURL] is completed with; mount [Elicitor.Pages]
// there.
const PagesPrefix = "/elicit/"

// consentPath is the page a URL-mode link opens: it shows what is asked
// with Accept and Decline, and only the user's choice uses the link up (a
// link previewer or mail scanner that fetches it changes nothing).
const consentPath = PagesPrefix + "consent"

// ErrWrongUser is returned by [Elicitor.CompleteURL] for a link issued to
// another user, or to a signed-in user when the browser's user is
// unknown.
var ErrWrongUser = errors.New("elicit: the link belongs to another user")

// Pages returns the handler of the URL-mode pages, for a server that
// serves MCP some other way (stdio, or an HTTP stack of its own);
// [Elicitor.Handler] includes it. Mount it at [PagesPrefix]. user returns the browser's
// authenticated user; it is required when MCP clients are authenticated,
// since a link issued to a user is accepted only from that user (without
// it such links are refused, never accepted from anyone).
//
// The pages verify the Host header (DNS rebinding) against [Config].BaseURL,
// or, without one, accept only loopback names on a loopback listener. They
// are self-contained: no script, one inline style, a Content-Security-Policy
// that allows nothing else, no framing, no referrer to other origins (the
// URL holds a bearer token), no caching; an answer is taken only from the
// page's own origin. No page quotes the token or anything of the user.
func (e *Elicitor) Pages(user func(*http.Request) (subject string, ok bool)) http.Handler {
	return &pages{e: e, user: user}
}

// WithLink makes [URL] send the user to a page of yours instead of the
// built-in consent page: link builds its address around the callback
// token, a bearer capability (put it in the fragment or the query of a
// page of yours, not in a log). Your page calls [Elicitor.CompleteURL]
// with the token when the user is done.
//
//	elicit.URL(ctx, "Enter your API key", elicit.WithLink(func(token string) string {
//		return "https://mcp.example.com/apikey?token=" + url.QueryEscape(token)
//	}))
func WithLink(link func(token string) string) Option {
	return func(o *options) { o.link = link }
}

// callbackURL returns a link builder for WithLink that puts the token in
// the query parameter "token" of base.
func callbackURL(base string) func(string) string {
	return func(tok string) string {
		u, err := url.Parse(base)
		if err != nil {
			return base
		}
		q := u.Query()
		q.Set(token.DefaultParam, tok)
		u.RawQuery = q.Encode()
		return u.String()
	}
}

// CompleteURL completes the URL-mode elicitation that tok, the token of its
// link ([WithLink]), names: [Accept] when the user finished on your page,
// [Decline] when they refused. The elicitation's call continues on
// whichever node asked. subject is the browser's authenticated user (""
// when there is none); a link issued to a user completes only for that
// user ([ErrWrongUser]). The token is used up: a second call returns an
// error matching [ErrUnknownElicitation].
//
// taken reports whether the call took the answer, which CompleteURL waits
// for up to about two seconds: a page says "Done" only then. Otherwise
// the answer is kept until the elicitation expires and used when the
// user's application asks again (a client between two rounds of
// 2026-07-28, or retrying after -32042): the page should say so, as the
// built-in consent page does ("Answer saved").
func (e *Elicitor) CompleteURL(ctx context.Context, tok, subject string, action Action) (taken bool, err error) {
	if action != Accept && action != Decline {
		return false, errMalformed
	}
	c, err := e.tokens.Verify(tok, token.Expect{Kind: token.URL})
	if err != nil {
		return false, pageErr(err)
	}
	if c.Subject != "" && c.Subject != subject {
		return false, ErrWrongUser
	}
	taken, _, err = e.completeTaken(ctx, c, action)
	return taken, pageErr(err)
}

// completeOnce resolves the elicitation of verified claims c and uses the
// token up only once that is done: a resolution that fails (a store fault)
// gives the token back, or leaves its claim to end with its lease, so
// that the user can open the link again; a claim whose commit fails is
// harmless to resolve again (the same answer is written, or the
// elicitation is gone).
//
// It returns the elicitation's expiry, and whether a call may take the
// answer now (see engine.Engine.ResolveURL).
func (e *Elicitor) completeOnce(ctx context.Context, c *token.Claims, action Action) (expiry time.Time, waited bool, err error) {
	use, err := e.tokens.Claim(ctx, c)
	if err != nil {
		return time.Time{}, false, err
	}
	expiry, waited, err = e.engine.ResolveURL(ctx, c, string(action))
	if err != nil {
		if errors.Is(err, ErrUnknownElicitation) {
			use.Commit(ctx) // nothing left to resolve
		} else {
			use.Release(context.WithoutCancel(ctx))
		}
		return time.Time{}, false, err
	}
	use.Commit(ctx)
	return expiry, waited, nil
}

// takenWait is how long the consent page waits for the call to take the
// answer it wrote (engine.Slot.Taken) before it tells the user that the
// answer waits for their application instead of "Done".
const takenWait = 2 * time.Second

// completeTaken is completeOnce for the consent page: taken reports
// whether the elicitation's call took the answer within e.takenWait. A
// call that waits takes it at once; one between two rounds of 2026-07-28,
// or that ended, does not.
func (e *Elicitor) completeTaken(ctx context.Context, c *token.Claims, action Action) (taken bool, expiry time.Time, err error) {
	s := e.engine.Slot(engine.ClaimsIdentity(c), c.ElicitationID, time.Time{})
	// Subscribed before the answer is written, so that the news cannot
	// come before; without a subscription the page cannot know.
	sub, serr := e.store.Subscribe(ctx, s.Channel())
	if serr == nil {
		defer sub.Close()
	}
	expiry, waited, err := e.completeOnce(ctx, c, action)
	if err != nil || serr != nil || !waited {
		return false, expiry, err
	}
	t := time.NewTimer(e.takenWait)
	defer t.Stop()
	for {
		select {
		case m, ok := <-sub.Messages():
			if !ok {
				return false, expiry, nil
			}
			if engine.IsTaken(m) {
				return true, expiry, nil
			}
		case <-t.C:
			return false, expiry, nil
		case <-ctx.Done():
			return false, expiry, nil
		}
	}
}

// pageErr maps token errors to the package's: a token that expired or was
// used is an unknown elicitation, a forged one malformed.
func pageErr(err error) error {
	switch {
	case errors.Is(err, token.ErrInProgress):
		return engine.ErrAnswerInProgress
	case errors.Is(err, token.ErrExpired), errors.Is(err, token.ErrReplayed):
		return engine.ErrGone
	case errors.Is(err, token.ErrInvalid), errors.Is(err, token.ErrUnknownKey):
		return errMalformed
	}
	return err
}

// defaultLink is the link of the built-in consent page under base.
func defaultLink(base string) func(string) string {
	return callbackURL(strings.TrimRight(base, "/") + consentPath)
}

type pages struct {
	e    *Elicitor
	user func(*http.Request) (string, bool)
}

func (p *pages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	consentPages.SetHeaders(w.Header())
	if !p.hostAllowed(r) {
		writePage(w, http.StatusMisdirectedRequest, pageView{Title: "Wrong address", Text: "Open the link exactly as your application gave it."})
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		p.show(w, r)
	case http.MethodPost:
		p.answer(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		writePage(w, http.StatusMethodNotAllowed, pageView{Title: "Not allowed", Text: "Open this link in your browser."})
	}
}

// show verifies the link and offers Accept and Decline; it uses nothing up.
func (p *pages) show(w http.ResponseWriter, r *http.Request) {
	tok, c, ok := p.verify(w, r)
	if !ok {
		return
	}
	used, err := p.e.tokens.Used(r.Context(), c)
	if errors.Is(err, token.ErrStoreReset) {
		writePage(w, http.StatusGone, pageRestart)
		return
	}
	if err != nil {
		p.e.log.WarnContext(r.Context(), "elicit: consent page: the store failed")
		writePage(w, http.StatusInternalServerError, pageFailed)
		return
	}
	if used {
		writePage(w, http.StatusGone, pageUsed)
		return
	}
	// What the person accepts: the elicitation's message, from its sealed
	// pending record (the link carries none of it), and who asks.
	consent, err := engine.URLConsent(r.Context(), p.e.engine, c)
	switch {
	case errors.Is(err, ErrUnknownElicitation):
		writePage(w, http.StatusGone, pageExpired)
		return
	case err != nil:
		p.e.log.WarnContext(r.Context(), "elicit: consent page: the store failed")
		writePage(w, http.StatusInternalServerError, pageFailed)
		return
	}
	server := consent.Server
	if server == "" {
		server = p.serverName(r)
	}
	writePage(w, http.StatusOK, pageView{
		Title:   server + " asks you to confirm",
		Message: consent.Message,
		Text:    "Accept to continue, or Decline to refuse. Your choice goes to " + server + ", not into the chat.",
		Token:   tok,
	})
}

// serverName is how the consent page names the server: [Config].ServerName,
// else the host the browser sees in its address bar.
func (p *pages) serverName(r *http.Request) string {
	if p.e.serverName != "" {
		return p.e.serverName
	}
	if u, err := url.Parse(p.e.baseURL); err == nil && u.Host != "" {
		return u.Hostname()
	}
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		return h
	}
	return r.Host
}

// answer uses the link up with the user's choice and completes the
// elicitation.
func (p *pages) answer(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writePage(w, http.StatusForbidden, pageView{Title: "Not allowed", Text: "Answer on the page your application opened."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
	if err := r.ParseForm(); err != nil {
		writePage(w, http.StatusBadRequest, pageInvalid)
		return
	}
	action := Accept
	switch r.PostForm.Get("action") {
	case "", "accept":
	case "decline":
		action = Decline
	default:
		writePage(w, http.StatusBadRequest, pageInvalid)
		return
	}
	_, c, ok := p.verifyAnyEpoch(w, r)
	if !ok {
		return
	}
	var taken bool
	var expiry time.Time
	err := p.e.tokens.CheckEpoch(c)
	switch {
	case err == nil && action == Decline:
		_, _, err = p.e.completeOnce(r.Context(), c, action)
	case err == nil:
		taken, expiry, err = p.e.completeTaken(r.Context(), c, action)
	}
	if errors.Is(err, token.ErrStoreReset) && p.e.engine.Handoff(r.Context(), c, string(action), p.e.takenWait) {
		// The store lost the records, but the call is still waiting, here
		// or on another node, which took the answer handed over through
		// the store's channel and used it.
		err, taken = nil, true
	}
	if err != nil {
		p.fail(w, r, err)
		return
	}
	switch {
	case action == Decline:
		writePage(w, http.StatusOK, pageView{Title: "Declined", Text: "Nothing was done. You can close this window."})
	case taken:
		writePage(w, http.StatusOK, pageView{Title: "Done", Text: "You can close this window and return to your application."})
	default:
		writePage(w, http.StatusOK, pageSaved(expiry.Sub(p.e.engine.Now())))
	}
}

// pageSaved is the page of an accepted answer that no call has taken yet:
// it waits in the store until the elicitation expires, in left.
func pageSaved(left time.Duration) pageView {
	when := "within a minute"
	if m := int(left / time.Minute); m > 1 {
		when = fmt.Sprintf("within %d minutes", m)
	}
	return pageView{Title: "Answer saved", Text: "Your application has not picked up your answer yet. It will be used if your application continues " + when + "; after that, return to your application and start again."}
}

// sameOrigin reports whether a POST may come from the consent page
// itself, as the browser form requires: an Origin, if sent, of this host
// (not "null", which a sandboxed cross-site frame sends), and a
// Sec-Fetch-Site, if sent, of same-origin. The page's referrer policy
// (same-origin) makes browsers send its real Origin.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); o == "null" || err != nil || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	site := r.Header.Get("Sec-Fetch-Site")
	return site == "" || site == "same-origin"
}

// verify checks the link's token and the browser's user; on failure it
// has written the page.
func (p *pages) verify(w http.ResponseWriter, r *http.Request) (string, *token.Claims, bool) {
	return p.verifyExpect(w, r, token.Expect{Kind: token.URL})
}

// verifyAnyEpoch is verify without the check of the store's epoch, which
// the caller makes (Service.CheckEpoch).
func (p *pages) verifyAnyEpoch(w http.ResponseWriter, r *http.Request) (string, *token.Claims, bool) {
	return p.verifyExpect(w, r, token.Expect{Kind: token.URL, AnyEpoch: true})
}

func (p *pages) verifyExpect(w http.ResponseWriter, r *http.Request, want token.Expect) (string, *token.Claims, bool) {
	toks := r.URL.Query()[token.DefaultParam]
	if len(toks) != 1 {
		writePage(w, http.StatusBadRequest, pageInvalid)
		return "", nil, false
	}
	c, err := p.e.tokens.Verify(toks[0], want)
	if err != nil {
		p.fail(w, r, err)
		return "", nil, false
	}
	if c.Subject != "" {
		// A link issued to a signed-in user opens only for that user; a
		// server that cannot tell the browser's user refuses it.
		sub, ok := "", false
		if p.user != nil {
			sub, ok = p.user(r)
		}
		if !ok || sub != c.Subject {
			writePage(w, http.StatusForbidden, pageWrongUser)
			return "", nil, false
		}
	}
	return toks[0], c, true
}

func (p *pages) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, token.ErrInProgress):
		writePage(w, http.StatusConflict, pageBusy)
	case errors.Is(err, token.ErrStoreReset): // before ErrReplayed, which it also is
		writePage(w, http.StatusGone, pageRestart)
	case errors.Is(err, token.ErrReplayed):
		writePage(w, http.StatusGone, pageUsed)
	case errors.Is(err, token.ErrExpired), errors.Is(err, ErrUnknownElicitation):
		writePage(w, http.StatusGone, pageExpired)
	case errors.Is(err, token.ErrInvalid), errors.Is(err, token.ErrUnknownKey):
		writePage(w, http.StatusBadRequest, pageInvalid)
	default:
		p.e.log.WarnContext(r.Context(), "elicit: consent page: completing the elicitation failed")
		writePage(w, http.StatusInternalServerError, pageFailed)
	}
}

// hostAllowed is the pages' defence against DNS rebinding: the Host must
// be [Config].BaseURL's, or, without one, a loopback name when the listener
// is on loopback.
func (p *pages) hostAllowed(r *http.Request) bool {
	if p.e.baseURL != "" {
		u, err := url.Parse(p.e.baseURL)
		return err == nil && strings.EqualFold(u.Host, r.Host)
	}
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true
	}
	ta, ok := la.(*net.TCPAddr)
	if !ok || !ta.IP.IsLoopback() {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// pageView is what the page template shows. Token and Message are set
// only on the page that offers a choice; every field is text, escaped by
// html/template (a message with markup in it shows as that markup).
type pageView struct {
	Title, Message, Text, Token string
}

var (
	pageInvalid   = pageView{Title: "This link is not valid", Text: "Return to your application and start again."}
	pageExpired   = pageView{Title: "This link has expired", Text: "Return to your application and start again."}
	pageUsed      = pageView{Title: "This link was already used", Text: "The answer was given already. Return to your application."}
	pageWrongUser = pageView{Title: "Wrong account", Text: "This link was issued to another account. Sign in as the user who asked for it, then open the link again."}
	pageBusy      = pageView{Title: "Almost there", Text: "This link is being processed. Wait a few seconds, then open it again."}
	pageFailed    = pageView{Title: "Something went wrong", Text: "Return to your application and try again."}
	pageRestart   = pageView{Title: "This link can no longer be used", Text: "The server lost track of this request, and your answer was not taken. Return to your application and start again."}
)

// consentPages is the policy of the consent page, which posts to itself
// (page.SameOrigin).
var consentPages = page.New(page.SameOrigin, "")

// pageTemplate is the consent page; its form posts to the page's own
// path with the token in the query. It is parsed when a page is first
// written, not when the program starts: a server that never shows one
// keeps no parse tree, which the GC would mark on every cycle.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="same-origin">
<title>{{.Title}}</title>
<style>` + page.Style + `</style></head>
<body><main><h1>{{.Title}}</h1>
{{- if .Message}}<blockquote>{{.Message}}</blockquote>{{end}}<p>{{.Text}}</p>
{{- if .Token}}
<form method="post" action="?token={{.Token}}"><button type="submit" name="action" value="accept">Accept</button><button type="submit" name="action" value="decline" class="secondary">Decline</button></form>
<small>If you did not ask for this, select Decline or close this window.</small>
{{- end}}
</main></body></html>
`))
})

func writePage(w http.ResponseWriter, status int, v pageView) {
	consentPages.Write(w, status, pageTemplate(), v)
}
