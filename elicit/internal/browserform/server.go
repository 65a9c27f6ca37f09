// Package browserform serves an elicitation as an HTML form on 127.0.0.1,
// for local MCP servers whose client cannot elicit.
//
// Each form has its own unguessable ID and nonce in its URL (403 without
// them) and a human verification code, shown on the page and sent to the
// MCP client, so the user can tell that the page is the one the tool asked
// for. A form accepts one submission (409 after), is validated on the server
// whatever the page checked, and ends on submission, timeout or
// cancellation; the page polls /status and closes itself when it ends.
//
// Pages load nothing from elsewhere and are served with a strict
// Content-Security-Policy. Requests must name the server's own host
// (defeating DNS rebinding) and POSTs from another origin are refused.
package browserform

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	schema "github.com/elicitvault/elicitvault/internal/form"
)

var (
	// ErrTimeout is returned by Wait when the form expired unanswered.
	ErrTimeout = errors.New("browserform: the form expired before it was answered")
	// ErrClosed is returned when the server was closed.
	ErrClosed = errors.New("browserform: server closed")
)

// Action is how the user ended the form.
type Action string

// The actions of an MCP elicitation result.
const (
	Accept  Action = "accept"
	Decline Action = "decline"
	Cancel  Action = "cancel"
)

// Form is what to ask.
type Form struct {
	// Message is shown above the fields.
	Message string
	// Schema is the requested schema: a flat object in the MCP subset.
	Schema *jsonschema.Schema
	// Validate checks accepted content; its error is shown to the user, who
	// may correct the answer. It is the authority: the page's checks are a
	// convenience only. Nil accepts any content that fits the field types.
	Validate func(content map[string]any) error
	// TTL bounds the wait; the default is 5 minutes.
	TTL time.Duration
}

// Result is the user's answer.
type Result struct {
	Action  Action
	Content map[string]any // for Accept only
}

// Server serves forms on a random port of 127.0.0.1. It is safe for
// concurrent use.
type Server struct {
	ln     net.Listener
	srv    *http.Server
	origin string // http://127.0.0.1:port
	host   string // 127.0.0.1:port

	mu     sync.Mutex
	forms  map[string]*form
	closed bool
}

// Listen starts a Server on 127.0.0.1 and a random port.
func Listen() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("browserform: %w", err)
	}
	s := &Server{
		ln:    ln,
		host:  ln.Addr().String(),
		forms: map[string]*form{},
	}
	s.origin = "http://" + s.host
	mux := http.NewServeMux()
	mux.HandleFunc("GET /f/{id}", s.page)
	mux.HandleFunc("POST /f/{id}", s.submit)
	mux.HandleFunc("GET /f/{id}/status", s.status)
	s.srv = &http.Server{
		Handler:           s.guard(mux),
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server and cancels every open form.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	forms := s.forms
	s.forms = map[string]*form{}
	s.mu.Unlock()
	for _, f := range forms {
		f.end(stateCancelled, Result{Action: Cancel})
	}
	return s.srv.Close()
}

// Pending is an open form.
type Pending struct {
	// URL is the page to open in the browser. It carries the form's ID and
	// nonce: give it only to the user.
	URL string
	// Code is the verification code shown on the page, like BLUE-TIGER-42.
	Code string

	f *form
	s *Server
}

// Open registers a form and returns its URL and verification code. The
// form ends when it is answered, when its TTL passes or when ctx is done.
func (s *Server) Open(ctx context.Context, f Form) (*Pending, error) {
	if f.Schema == nil {
		return nil, errors.New("browserform: form without schema")
	}
	fields, err := fieldsOf(f.Schema)
	if err != nil {
		return nil, err
	}
	ttl := f.TTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	fm := &form{
		id:       randomText(16),
		nonce:    randomText(24),
		code:     verificationCode(),
		message:  f.Message,
		fields:   fields,
		validate: f.Validate,
		state:    statePending,
		done:     make(chan struct{}),
		expires:  time.Now().Add(ttl),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.forms[fm.id] = fm
	s.mu.Unlock()

	go func() {
		t := time.NewTimer(ttl)
		defer t.Stop()
		select {
		case <-t.C:
			fm.end(stateExpired, Result{})
		case <-ctx.Done():
			fm.end(stateCancelled, Result{Action: Cancel})
		case <-fm.done:
		}
		// Keep the ended form a little, so that its page learns it ended.
		time.AfterFunc(time.Minute, func() { s.forget(fm.id) })
	}()
	return &Pending{
		URL:  s.origin + "/f/" + fm.id + "?n=" + fm.nonce,
		Code: fm.code,
		f:    fm,
		s:    s,
	}, nil
}

func (s *Server) forget(id string) {
	s.mu.Lock()
	delete(s.forms, id)
	s.mu.Unlock()
}

// Wait blocks until the form ends and returns the answer. An expired form
// returns ErrTimeout; a form ended by its context or by Close returns a
// Cancel result.
func (p *Pending) Wait(ctx context.Context) (Result, error) {
	select {
	case <-p.f.done:
	case <-ctx.Done():
		p.f.end(stateCancelled, Result{Action: Cancel})
		return Result{}, ctx.Err()
	}
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	if p.f.state == stateExpired {
		return Result{}, ErrTimeout
	}
	return p.f.result, nil
}

// Cancel ends the form without an answer.
func (p *Pending) Cancel() { p.f.end(stateCancelled, Result{Action: Cancel}) }

type formState string

const (
	statePending   formState = "pending"
	stateAnswered  formState = "answered"
	stateExpired   formState = "expired"
	stateCancelled formState = "cancelled"
)

type form struct {
	id, nonce, code string
	message         string
	fields          []schema.Field
	validate        func(map[string]any) error
	expires         time.Time

	mu     sync.Mutex
	state  formState
	result Result
	done   chan struct{}
}

// current is the form's state.
func (f *form) current() formState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// end moves a pending form to its final state, once.
func (f *form) end(st formState, r Result) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != statePending {
		return false
	}
	f.state, f.result = st, r
	close(f.done)
	return true
}

// guard checks what every request must satisfy: the Host is this server's
// (no DNS rebinding), and a POST comes from this server's own page.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		formPages.SetHeaders(w.Header())
		if r.Host != s.host {
			http.Error(w, "wrong host", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPost {
			if o := r.Header.Get("Origin"); o != "" && o != s.origin {
				http.Error(w, "cross-origin request refused", http.StatusForbidden)
				return
			}
			if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
				http.Error(w, "cross-site request refused", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// lookup returns the form named in the path if the request carries its
// nonce, and writes 403 otherwise. An unknown ID also gets 403, so the
// answer does not say which IDs exist.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, nonce string) *form {
	s.mu.Lock()
	f := s.forms[r.PathValue("id")]
	s.mu.Unlock()
	if f == nil || subtle.ConstantTimeCompare([]byte(nonce), []byte(f.nonce)) != 1 {
		http.Error(w, "forbidden", http.StatusForbidden)
		return nil
	}
	return f
}

// pending returns the form of lookup if it still waits for its answer;
// for a form that ended it writes the ended page with the status ended.
func (s *Server) pending(w http.ResponseWriter, r *http.Request, nonce string, ended int) *form {
	f := s.lookup(w, r, nonce)
	if f == nil {
		return nil
	}
	if st := f.current(); st != statePending {
		writePage(w, ended, endedPage(st))
		return nil
	}
	return f
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	f := s.pending(w, r, r.URL.Query().Get("n"), http.StatusGone)
	if f == nil {
		return
	}
	writePage(w, http.StatusOK, formPage(f, nil, nil))
}

const maxFormBytes = 64 << 10

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f := s.pending(w, r, r.PostForm.Get("_nonce"), http.StatusConflict)
	if f == nil {
		return
	}

	var res Result
	switch Action(r.PostForm.Get("_action")) {
	case Decline:
		res = Result{Action: Decline}
	case Cancel:
		res = Result{Action: Cancel}
	case Accept:
		content, problems := parseContent(f.fields, r.PostForm)
		if len(problems) == 0 && f.validate != nil {
			if err := f.validate(content); err != nil {
				problems = map[string]string{"": err.Error()}
			}
		}
		if len(problems) > 0 {
			writePage(w, http.StatusUnprocessableEntity, formPage(f, r.PostForm, problems))
			return
		}
		res = Result{Action: Accept, Content: content}
	default:
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if !f.end(stateAnswered, res) {
		// Another submission won the race.
		writePage(w, http.StatusConflict, endedPage(f.current()))
		return
	}
	writePage(w, http.StatusOK, endedPage(stateAnswered))
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	f := s.lookup(w, r, r.URL.Query().Get("n"))
	if f == nil {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"state": string(f.current())})
}

func randomText(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

var (
	codeColors  = strings.Fields("AMBER BLUE CORAL GOLD GREEN INDIGO JADE LIME OLIVE ONYX PEARL PLUM RUBY SILVER TEAL VIOLET")
	codeAnimals = strings.Fields("BADGER BISON CRANE EAGLE FALCON FOX HERON LYNX MOOSE OTTER PANDA RAVEN SEAL TIGER WOLF ZEBRA")
)

// verificationCode returns a code like BLUE-TIGER-42. It is for a human to
// compare two screens, not a secret: the nonce is what protects the form.
func verificationCode() string {
	pick := func(n int) int {
		v, _ := rand.Int(rand.Reader, big.NewInt(int64(n)))
		return int(v.Int64())
	}
	return fmt.Sprintf("%s-%s-%02d", codeColors[pick(len(codeColors))], codeAnimals[pick(len(codeAnimals))], pick(100))
}
