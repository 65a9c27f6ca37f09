package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"strconv"

	"github.com/elicitvault/elicitvault/internal/token"
)

// consentPage is the page connect_account sends the user to: it says what
// connecting means and has one button, Connect, that posts the token to
// the callback handler next to it, which completes the elicitation.
//
// It is self-contained (one inline style, no script, no external asset)
// and served with a Content-Security-Policy that allows nothing else, no
// framing, no referrer (the URL holds a bearer token) and no caching. It
// verifies the token before it offers to connect, but does not use it up:
// only the callback does.
type consentPage struct {
	tokens *token.Service
}

func (p *consentPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", consentCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		writeConsent(w, http.StatusMethodNotAllowed, consentView{Title: "Not allowed", Text: "Open this link in your browser."})
		return
	}
	toks := r.URL.Query()[token.DefaultParam]
	if len(toks) != 1 {
		writeConsent(w, http.StatusBadRequest, invalidLink)
		return
	}
	if _, err := p.tokens.Verify(toks[0], token.Expect{Kind: token.URL}); err != nil {
		if errors.Is(err, token.ErrExpired) {
			writeConsent(w, http.StatusGone, expiredLink)
			return
		}
		writeConsent(w, http.StatusBadRequest, invalidLink)
		return
	}
	writeConsent(w, http.StatusOK, consentView{
		Title: "Connect your Example account",
		Text: "The elicitvault reference server asks to connect your Example account. " +
			"This is a demonstration: select Connect to finish, and nothing leaves this machine.",
		Token: toks[0],
	})
}

var (
	invalidLink = consentView{Title: "This link is not valid", Text: "Return to your application and start again."}
	expiredLink = consentView{Title: "This link has expired", Text: "Return to your application and start again."}
)

// consentView is what the template shows. Token is set only on the page
// that offers to connect.
type consentView struct {
	Title, Text, Token string
}

const consentStyle = `body{font:16px/1.5 system-ui,sans-serif;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center;background:#f6f7f9;color:#1c2330}main{max-width:28em;padding:2em;background:#fff;border-radius:12px;box-shadow:0 1px 4px #0002}h1{font-size:1.25em;margin:0 0 .5em}p{margin:0}button{margin-top:1.25em;font:inherit;padding:.5em 1.25em;border:0;border-radius:8px;background:#2456d6;color:#fff;cursor:pointer}small{display:block;margin-top:1em;color:#5a6272}`

// consentCSP allows the one inline style, by its hash, and a form that
// posts to this origin; nothing else.
var consentCSP = func() string {
	sum := sha256.Sum256([]byte(consentStyle))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}()

// The form posts to the callback, a sibling of the consent page's path,
// with the token in the query where the callback handler reads it.
var consentTemplate = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{.Title}}</title>
<style>` + consentStyle + `</style></head>
<body><main><h1>{{.Title}}</h1><p>{{.Text}}</p>
{{- if .Token}}
<form method="post" action="callback?token={{.Token}}"><button type="submit">Connect</button></form>
<small>If you did not ask for this, close this window.</small>
{{- end}}
</main></body></html>
`))

func writeConsent(w http.ResponseWriter, status int, v consentView) {
	var b bytes.Buffer
	if err := consentTemplate.Execute(&b, v); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	w.Write(b.Bytes())
}
