package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/token"

	"github.com/elicitvault/elicitvault/elicit/internal/page"
)

// browserPurpose derives the key of the browser binding: the cookie's MAC
// and the PKCE verifier.
const browserPurpose = "oauth/browser"

var b64 = base64.RawURLEncoding

// Handler returns the http.Handler of the start page (at StartURL's path)
// and of every provider's callback (at its RedirectURL's path). Mount it
// at those paths, on every node. The start page answers only a request
// for StartURL's host, and a callback only one for its RedirectURL's host
// (DNS rebinding); anything else is 421 Misdirected Request.
func (c *Connector) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host, ok := c.hosts[r.URL.Path]; ok && !strings.EqualFold(host, r.Host) {
			writePage(w, http.StatusMisdirectedRequest, pageInvalid)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writePage(w, http.StatusMethodNotAllowed, pageInvalid)
			return
		}
		if r.URL.Path == c.start.Path {
			c.serveStart(w, r)
			return
		}
		if p, ok := c.callbacks[r.URL.Path]; ok {
			if r.Method != http.MethodGet {
				// A HEAD would use the state up without showing a page.
				w.Header().Set("Allow", "GET")
				writePage(w, http.StatusMethodNotAllowed, pageInvalid)
				return
			}
			c.serveCallback(w, r, p)
			return
		}
		http.NotFound(w, r)
	})
}

// browserKey is the key of the browser binding under the secret that
// issued the state.
func (c *Connector) browserKey(cl *token.Claims) ([]byte, bool) {
	s, ok := c.keys.Secret(cl.KeyID)
	if !ok {
		return nil, false
	}
	k, err := s.Key(browserPurpose)
	return k, err == nil
}

func mac(key []byte, label string, id [16]byte, nonce []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(label))
	h.Write(id[:])
	h.Write(nonce)
	return h.Sum(nil)
}

// cookieName is the flow's cookie: one per state, so that two flows in one
// browser do not overwrite each other. It is a hash of the token ID.
func cookieName(cl *token.Claims) string {
	sum := sha256.Sum256(append([]byte("elicitvault oauth cookie "), cl.ID[:]...))
	return "ev_oauth_" + b64.EncodeToString(sum[:12])
}

// browserBinding returns the cookie value for a fresh nonce and the PKCE
// verifier it implies. The cookie is nonce || MAC(nonce)[:16]; the
// verifier is base64url(HMAC(key, "pkce" || token ID || nonce)): only the
// browser that holds the cookie lets the callback redeem the code.
func browserBinding(key []byte, cl *token.Claims, nonce []byte) (cookie, verifier string) {
	v := append(append([]byte{}, nonce...), mac(key, "cookie", cl.ID, nonce)[:16]...)
	return b64.EncodeToString(v), b64.EncodeToString(mac(key, "pkce", cl.ID, nonce))
}

// checkCookie verifies the flow's cookie in constant time and returns the
// verifier.
func checkCookie(key []byte, cl *token.Claims, value string) (string, bool) {
	raw, err := b64.DecodeString(value)
	if err != nil || len(raw) != 32 {
		return "", false
	}
	nonce, tag := raw[:16], raw[16:]
	if !hmac.Equal(tag, mac(key, "cookie", cl.ID, nonce)[:16]) {
		return "", false
	}
	return b64.EncodeToString(mac(key, "pkce", cl.ID, nonce)), true
}

// verifyState checks a state token's format, key, expiry and provider,
// and the browser's user when the server authenticates users.
func (c *Connector) verifyState(r *http.Request, state string) (*token.Claims, *Provider, *pageData) {
	cl, err := c.tokens.Verify(state, token.Expect{Kind: token.OAuthState})
	if errors.Is(err, token.ErrExpired) {
		return nil, nil, pageExpired
	}
	if errors.Is(err, token.ErrStoreReset) {
		return nil, nil, pageRestart
	}
	if err != nil {
		return nil, nil, pageInvalid
	}
	p, ok := c.providers[cl.Provider]
	if !ok {
		return nil, nil, pageInvalid
	}
	if c.user != nil {
		if u, ok := c.user(r); !ok || u != cl.Subject {
			return nil, nil, pageWrongUser
		}
	}
	return cl, p, nil
}

func (c *Connector) serveStart(w http.ResponseWriter, r *http.Request) {
	cl, p, fail := c.verifyState(r, r.URL.Query().Get("state"))
	if fail != nil {
		writePage(w, fail.status, fail)
		return
	}
	key, ok := c.browserKey(cl)
	if !ok {
		writePage(w, http.StatusBadRequest, pageExpired)
		return
	}
	nonce := make([]byte, 16)
	rand.Read(nonce)
	cookie, verifier := browserBinding(key, cl, nonce)
	cb, _ := url.Parse(p.Config.RedirectURL)
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName(cl),
		Value:    cookie,
		Path:     cb.Path,
		MaxAge:   int(time.Until(cl.Expiry).Seconds()) + 1,
		HttpOnly: true,
		Secure:   cb.Scheme == "https",
		SameSite: http.SameSiteLaxMode,
	})
	opts := append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}, p.AuthOptions...)
	oauthPages.SetHeaders(w.Header())
	http.Redirect(w, r, p.Config.AuthCodeURL(r.URL.Query().Get("state"), opts...), http.StatusFound)
}

// serveCallback handles the authorization response. Whatever cannot be
// attributed to the browser that started the flow (no valid state, the
// wrong user, no cookie) leaves the elicitation alone: the right browser
// can still finish it. The rest claims the state (once across every
// node), acts on the response, and uses the state up once it has an
// outcome: the provider's answer, an error or a token. A provider that
// cannot be reached gives the claim back, so that reloading the callback
// (the code is still unused) tries the exchange again.
func (c *Connector) serveCallback(w http.ResponseWriter, r *http.Request, p *Provider) {
	oauthPages.SetHeaders(w.Header())
	q := r.URL.Query()
	state := q.Get("state")
	cl, sp, fail := c.verifyState(r, state)
	if fail != nil {
		writePage(w, fail.status, fail)
		return
	}
	if sp != p {
		writePage(w, http.StatusBadRequest, pageInvalid) // a state of another provider
		return
	}
	key, ok := c.browserKey(cl)
	ck, err := r.Cookie(cookieName(cl))
	if !ok || err != nil {
		writePage(w, http.StatusForbidden, pageOtherBrowser)
		return
	}
	verifier, ok := checkCookie(key, cl, ck.Value)
	if !ok {
		writePage(w, http.StatusForbidden, pageOtherBrowser)
		return
	}
	// From here on the response is the right browser's.
	ctx := r.Context()
	use, err := c.tokens.Claim(ctx, cl)
	if err != nil {
		switch {
		case errors.Is(err, token.ErrInProgress): // before ErrReplayed, which it also is
			writePage(w, http.StatusConflict, pageInProgress)
		case errors.Is(err, token.ErrStoreReset): // the same
			writePage(w, http.StatusGone, pageRestart)
		case errors.Is(err, token.ErrReplayed):
			writePage(w, http.StatusBadRequest, pageUsed)
		case errors.Is(err, token.ErrExpired):
			writePage(w, http.StatusBadRequest, pageExpired)
		default:
			writePage(w, http.StatusServiceUnavailable, pageUnavailable)
		}
		return
	}
	// commit uses the state up; until then a failure gives it back, and
	// the page says failed.
	commit := func(failed *pageData) bool {
		if err := use.Commit(ctx); err != nil {
			use.Release(context.WithoutCancel(ctx))
			writePage(w, failed.status, failed)
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: cookieName(cl), Path: ck.Path, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
		return true
	}
	id := claimsIdentity(cl)
	// finish ends the elicitation once the state is used up; end uses it
	// up first.
	finish := func(a elicit.Action, code string, pd *pageData) {
		if code != "" {
			c.putOutcome(ctx, id, p, code, cl.Expiry.Add(time.Minute))
		}
		_, _, err := c.eng.ResolveURL(ctx, cl, string(a))
		if errors.Is(err, elicit.ErrUnknownElicitation) {
			pd = pageExpired
		} else if err != nil {
			pd = pageUnavailable
		}
		writePage(w, pd.status, pd)
	}
	end := func(a elicit.Action, code string, pd *pageData) {
		if commit(pageRetry) { // reloading decides the same again
			finish(a, code, pd)
		}
	}
	if iss := q.Get("iss"); p.Issuer != "" && (iss != "" || p.RequireIssuer) && iss != p.Issuer {
		// RFC 9207: a response of another authorization server (mix-up).
		end(elicit.Cancel, "invalid_issuer", pageFailed)
		return
	}
	if e := q.Get("error"); e != "" {
		if e == "access_denied" {
			end(elicit.Decline, e, pageDenied)
			return
		}
		end(elicit.Cancel, safeCode(e), pageFailed)
		return
	}
	code := q.Get("code")
	if code == "" {
		end(elicit.Cancel, "invalid_request", pageFailed)
		return
	}
	xctx, cancel := context.WithTimeout(c.providerContext(ctx), 30*time.Second)
	defer cancel()
	t, err := p.Config.Exchange(xctx, code, oauth2.VerifierOption(verifier))
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500:
		// The provider refused the code.
		ec := "server_error"
		if re.ErrorCode != "" {
			ec = safeCode(re.ErrorCode)
		}
		end(elicit.Cancel, ec, pageFailed)
		return
	case err != nil:
		// No answer, or the provider's own failure: the code may still
		// be good.
		use.Release(context.WithoutCancel(ctx))
		writePage(w, http.StatusServiceUnavailable, pageRetry)
		return
	}
	// The code is spent: a reload could not exchange it again.
	if !commit(pageUnavailable) {
		return
	}
	if err := c.save(ctx, id, p, t); err != nil {
		finish(elicit.Cancel, "server_error", pageUnavailable)
		return
	}
	finish(elicit.Accept, "", pageConnected)
}

// safeCode keeps an error code to the RFC 6749 alphabet and a short length.
func safeCode(s string) string {
	if len(s) > 64 {
		return "server_error"
	}
	for _, c := range []byte(s) {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "server_error"
		}
	}
	return s
}

type pageData struct {
	status      int
	Title, Text string
}

var (
	pageConnected    = &pageData{http.StatusOK, "Account connected", "Your account is connected. You can close this tab and return to your assistant."}
	pageDenied       = &pageData{http.StatusOK, "Not connected", "You declined the request, so nothing was connected. You can close this tab; your assistant has been told."}
	pageFailed       = &pageData{http.StatusBadGateway, "Connection failed", "The service did not complete the sign-in, so nothing was connected. You can close this tab and ask your assistant to try again."}
	pageInvalid      = &pageData{http.StatusBadRequest, "Invalid link", "This link is not valid. Ask your assistant for a new one."}
	pageExpired      = &pageData{http.StatusBadRequest, "Link expired", "This link has expired or was already answered. Ask your assistant for a new one."}
	pageUsed         = &pageData{http.StatusBadRequest, "Link already used", "This sign-in was already completed or abandoned. Ask your assistant for a new link if you still need one."}
	pageWrongUser    = &pageData{http.StatusForbidden, "Wrong account", "This link was made for another user. Sign in to this site as the user who asked, then open the link again. Nothing was changed."}
	pageOtherBrowser = &pageData{http.StatusForbidden, "Wrong browser", "This sign-in was started in another browser (or its cookie has expired). Finish it in the browser where you opened the link. Nothing was changed."}
	pageUnavailable  = &pageData{http.StatusServiceUnavailable, "Try again", "The server could not record the result. Ask your assistant for a new link."}
	pageRetry        = &pageData{http.StatusServiceUnavailable, "Try again", "The server could not finish connecting your account just now. Reload this page in a moment; nothing was lost."}
	pageRestart      = &pageData{http.StatusGone, "Start again", "The server lost track of this sign-in, and nothing was connected. Ask your assistant to connect your account again."}
	pageInProgress   = &pageData{http.StatusConflict, "In progress", "This sign-in is being completed in another tab or request. Reload this page in a moment to see how it ended."}
)

// oauthPages is the policy of the start and callback pages, which post
// nothing and are reached with a state and a code in their URL
// (page.NoReferrer).
var oauthPages = page.New(page.NoReferrer, "")

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{{.Title}}</title><style>` + page.Style + `</style></head>
<body><main><h1 id="title">{{.Title}}</h1><p id="text">{{.Text}}</p></main></body></html>
`))

func writePage(w http.ResponseWriter, status int, pd *pageData) {
	oauthPages.Write(w, status, pageTmpl, pd)
}
