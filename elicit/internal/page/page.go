// Package page is the one kit of every HTML response elicitvault serves:
// the consent page, the browser form, the OAuth start and callback pages.
// It sets the security headers, with the Content-Security-Policy computed
// once from the one stylesheet and a page's inline script, chooses the
// Referrer-Policy per page for a reason written once below, and has one
// template error policy.
package page

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"strconv"
)

// Style is the one stylesheet of every page. A template puts it in its
// <style> element (template.CSS(Style)); the policy admits it by hash.
const Style = `body{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:2em auto;padding:0 1em;color:#1c2330;background:#f6f7f9}` +
	`main{padding:2em;background:#fff;border-radius:12px;box-shadow:0 1px 4px #0002}h1{font-size:1.25em;margin:0 0 .5em}` +
	`.code{font:bold 1.4em monospace;letter-spacing:.05em;padding:.3em .6em;border:2px solid #444;display:inline-block}` +
	`label{display:block;margin-top:1em;font-weight:600}.desc{font-weight:normal;color:#5a6272;font-size:.9em}` +
	`input[type=text],input[type=email],input[type=url],input[type=date],input[type=number],select{width:100%;padding:.4em;box-sizing:border-box}` +
	`.choice{font-weight:normal;display:block}.problem{color:#b00020}.actions{margin-top:1.5em}` +
	`button{margin:1.25em .75em 0 0;font:inherit;padding:.5em 1.25em;border:0;border-radius:8px;background:#2456d6;color:#fff;cursor:pointer}` +
	`button.secondary{background:#e4e7ec;color:#1c2330}small{display:block;margin-top:1em;color:#5a6272}` +
	`blockquote{margin:1em 0;padding:.75em 1em;border-left:4px solid #2456d6;background:#f6f7f9;white-space:pre-wrap;overflow-wrap:anywhere}`

// Referrer is a page's Referrer-Policy.
type Referrer string

const (
	// SameOrigin is the policy of a page that posts a form to itself.
	// Not no-referrer: under it a browser sends the page's own POST with
	// "Origin: null", which the page's Origin check must refuse (sandboxed
	// frames send it too). No referrer leaves the origin either way.
	SameOrigin Referrer = "same-origin"
	// NoReferrer is the policy of a page that posts nothing, reached with
	// a secret in its URL (an OAuth code and state): the URL goes nowhere.
	NoReferrer Referrer = "no-referrer"
)

// Kind is the policy of a set of pages: the referrer policy, and the
// Content-Security-Policy that admits the one stylesheet and the kind's
// inline script, by hash, and nothing else.
type Kind struct {
	referrer Referrer
	csp      string
}

// New returns the Kind of pages with referrer policy ref and the inline
// script script ("" for none). Pages of a kind post only to their origin
// and cannot be framed.
func New(ref Referrer, script string) *Kind {
	csp := "default-src 'none'; style-src " + hash(Style)
	if script != "" {
		csp += "; script-src " + hash(script) + "; connect-src 'self'"
	}
	csp += "; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	return &Kind{referrer: ref, csp: csp}
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// SetHeaders sets the security headers of k's pages on h: for a response
// that is not a page (a redirect, a status poll) as for one.
func (k *Kind) SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", k.csp)
	h.Set("Referrer-Policy", string(k.referrer))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// Write renders t with data and writes it as the page, with status and
// k's headers. The templates and their data are ours, so a template error
// is a bug; it is answered alike everywhere: 500 with a fixed text and
// nothing of the page.
func (k *Kind) Write(w http.ResponseWriter, status int, t *template.Template, data any) {
	h := w.Header()
	k.SetHeaders(h)
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte("internal error\n"))
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	w.Write(b.Bytes())
}
