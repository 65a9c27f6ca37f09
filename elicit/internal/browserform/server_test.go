package browserform

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	schema "github.com/elicitvault/elicitvault/internal/form"
)

func ptr[T any](v T) *T { return &v }

// everyKind is a schema with every field kind of the MCP subset.
func everyKind() *jsonschema.Schema {
	var warehouse, plan any = "berlin", "pro"
	return &jsonschema.Schema{
		Type:          "object",
		PropertyOrder: []string{"name", "email", "website", "birthday", "meeting", "age", "ratio", "subscribe", "warehouse", "plan", "size", "tags"},
		Required:      []string{"name", "email", "age", "warehouse"},
		Properties: map[string]*jsonschema.Schema{
			"name":      {Type: "string", Title: "Name", MinLength: ptr(2), MaxLength: ptr(20)},
			"email":     {Type: "string", Format: "email"},
			"website":   {Type: "string", Format: "uri"},
			"birthday":  {Type: "string", Format: "date"},
			"meeting":   {Type: "string", Format: "date-time"},
			"age":       {Type: "integer", Minimum: ptr(18.0), Maximum: ptr(130.0)},
			"ratio":     {Type: "number", Minimum: ptr(0.0), Maximum: ptr(1.0), Default: json.RawMessage(`0.5`)},
			"subscribe": {Type: "boolean", Default: json.RawMessage(`true`)},
			"warehouse": {Type: "string", Enum: []any{"berlin", "lisbon"}},
			"plan": {Type: "string", OneOf: []*jsonschema.Schema{
				{Const: &plan, Title: "Professional"},
				{Const: &warehouse, Title: "Berlin plan"},
			}},
			"size": {Type: "string", Enum: []any{"s", "m", "l"}, Extra: map[string]any{"enumNames": []any{"Small", "Medium", "Large"}}, Default: json.RawMessage(`"m"`)},
			"tags": {Type: "array", MinItems: ptr(1), MaxItems: ptr(2), Items: &jsonschema.Schema{Type: "string", Enum: []any{"red", "green", "blue"}}},
		},
	}
}

func open(t *testing.T, s *Server, validate func(map[string]any) error) *Pending {
	t.Helper()
	p, err := s.Open(context.Background(), Form{Message: "Which warehouse?", Schema: everyKind(), Validate: validate, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func listen(t *testing.T) *Server {
	t.Helper()
	s, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func formURL(p *Pending) (action, nonce string) {
	u, _ := url.Parse(p.URL)
	return u.Scheme + "://" + u.Host + u.Path, u.Query().Get("n")
}

func post(t *testing.T, p *Pending, v url.Values, header map[string]string) (int, string) {
	t.Helper()
	action, _ := formURL(p)
	req, _ := http.NewRequest("POST", action, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, x := range header {
		req.Header.Set(k, x)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func validAnswer(nonce string) url.Values {
	return url.Values{
		"_nonce": {nonce}, "_action": {"accept"},
		"name": {"Ada"}, "email": {"ada@example.com"}, "age": {"36"}, "warehouse": {"lisbon"},
		"subscribe": {"true"}, "tags": {"red", "blue"}, "ratio": {"0.25"}, "plan": {"pro"}, "size": {"l"},
	}
}

func TestPageRendersEveryKindWithDefaults(t *testing.T) {
	s := listen(t)
	p := open(t, s, nil)
	resp, err := http.Get(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for _, want := range []string{
		p.Code, "Which warehouse?",
		`type="email" name="email"`, `type="url" name="website"`, `type="date" name="birthday"`, `name="meeting"`,
		`type="number" name="age"`, `min="18"`, `max="130"`, `step="1"`,
		`name="ratio" id="f-ratio" value="0.5"`,
		`name="subscribe" id="f-subscribe" value="true" checked`,
		`<option value="lisbon">lisbon</option>`, `<option value="pro">Professional</option>`,
		`<option value="m" selected>Medium</option>`,
		`name="tags" value="green"`, `minlength="2"`, `maxlength="20"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "form-action 'self'", "script-src 'sha256-"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if regexp.MustCompile(`(src|href)="https?:`).MatchString(page) {
		t.Error("page loads an external asset")
	}
}

func TestSubmitOnceAndValidated(t *testing.T) {
	s := listen(t)
	p := open(t, s, nil)
	_, nonce := formURL(p)

	// Invalid content: the form comes back with the problem, nothing ends.
	bad := validAnswer(nonce)
	bad.Set("age", "12")
	bad["tags"] = []string{"red", "green", "blue"}
	code, body := post(t, p, bad, nil)
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "is less than the minimum 18") || !strings.Contains(body, "has more than 2 items") {
		t.Fatalf("invalid answer: %d\n%s", code, body)
	}
	code, _ = post(t, p, validAnswer(nonce), nil)
	if code != http.StatusOK {
		t.Fatalf("valid answer: %d", code)
	}
	res, err := p.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != Accept || res.Content["age"] != 36.0 || res.Content["warehouse"] != "lisbon" ||
		res.Content["subscribe"] != true || res.Content["ratio"] != 0.25 || len(res.Content["tags"].([]string)) != 2 {
		t.Fatalf("result = %+v", res)
	}
	if code, _ := post(t, p, validAnswer(nonce), nil); code != http.StatusConflict {
		t.Fatalf("second submission: %d, want 409", code)
	}
	// The page of an answered form says it ended.
	resp, err := http.Get(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone {
		t.Fatalf("page after the answer: %d, want 410", resp.StatusCode)
	}
}

func TestServerValidationIsAuthoritative(t *testing.T) {
	s := listen(t)
	p := open(t, s, func(c map[string]any) error {
		if c["name"] == "Mallory" {
			return errors.New("name: not allowed")
		}
		return nil
	})
	_, nonce := formURL(p)
	v := validAnswer(nonce)
	v.Set("name", "Mallory")
	if code, body := post(t, p, v, nil); code != http.StatusUnprocessableEntity || !strings.Contains(body, "name: not allowed") {
		t.Fatalf("%d %s", code, body)
	}
	v.Set("warehouse", "atlantis") // not a choice: no page check can be trusted
	v.Set("name", "Ada")
	if code, _ := post(t, p, v, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("unknown choice accepted: %d", code)
	}
}

func TestNonceOriginHost(t *testing.T) {
	s := listen(t)
	p := open(t, s, nil)
	action, nonce := formURL(p)
	for name, u := range map[string]string{
		"no nonce":    action,
		"wrong nonce": action + "?n=" + strings.Repeat("A", len(nonce)),
		"unknown id":  strings.TrimSuffix(action, action[strings.LastIndex(action, "/")+1:]) + "nosuchform?n=" + nonce,
		"status":      action + "/status",
	} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, resp.StatusCode)
		}
	}
	v := validAnswer(nonce)
	v.Del("_nonce")
	if code, _ := post(t, p, v, nil); code != http.StatusForbidden {
		t.Errorf("POST without nonce: %d, want 403", code)
	}
	if code, _ := post(t, p, validAnswer(nonce), map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Errorf("cross-origin POST: %d, want 403", code)
	}
	if code, _ := post(t, p, validAnswer(nonce), map[string]string{"Origin": "null"}); code != http.StatusForbidden {
		t.Errorf("POST from an opaque origin: %d, want 403", code)
	}
	if code, _ := post(t, p, validAnswer(nonce), map[string]string{"Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
		t.Errorf("cross-site POST: %d, want 403", code)
	}
	// DNS rebinding: the right address under another name.
	req, _ := http.NewRequest("GET", p.URL, nil)
	req.Host = "attacker.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %d, want 403", resp.StatusCode)
	}
	// None of that ended the form.
	if code, _ := post(t, p, validAnswer(nonce), map[string]string{"Origin": strings.TrimSuffix(action, action[strings.Index(action[7:], "/")+7:])}); code != http.StatusOK {
		t.Errorf("same-origin POST after the refusals: %d", code)
	}
}

func TestConcurrentSubmissionsOneWins(t *testing.T) {
	s := listen(t)
	p := open(t, s, nil)
	_, nonce := formURL(p)
	var wg sync.WaitGroup
	codes := make(chan int, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _ := post(t, p, validAnswer(nonce), nil)
			codes <- c
		}()
	}
	wg.Wait()
	close(codes)
	ok := 0
	for c := range codes {
		switch c {
		case 200:
			ok++
		case 409:
		default:
			t.Errorf("status %d", c)
		}
	}
	if ok != 1 {
		t.Fatalf("%d submissions succeeded, want 1", ok)
	}
}

func TestDeclineAndStatus(t *testing.T) {
	s := listen(t)
	p := open(t, s, nil)
	action, nonce := formURL(p)
	state := func() string {
		resp, err := http.Get(action + "/status?n=" + nonce)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var j map[string]string
		json.NewDecoder(resp.Body).Decode(&j)
		return j["state"]
	}
	if st := state(); st != "pending" {
		t.Fatalf("state %q", st)
	}
	if code, _ := post(t, p, url.Values{"_nonce": {nonce}, "_action": {"decline"}}, nil); code != 200 {
		t.Fatalf("decline: %d", code)
	}
	res, err := p.Wait(context.Background())
	if err != nil || res.Action != Decline || res.Content != nil {
		t.Fatalf("%+v %v", res, err)
	}
	if st := state(); st != "answered" {
		t.Fatalf("state %q", st)
	}
}

func TestTimeoutAndContext(t *testing.T) {
	s := listen(t)
	p, err := s.Open(context.Background(), Form{Schema: everyKind(), TTL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(context.Background()); !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	_, nonce := formURL(p)
	if code, _ := post(t, p, validAnswer(nonce), nil); code != http.StatusConflict {
		t.Fatalf("answer after timeout: %d", code)
	}

	ctx, cancel := context.WithCancel(context.Background())
	p, _ = s.Open(ctx, Form{Schema: everyKind(), TTL: time.Minute})
	cancel()
	res, err := p.Wait(context.Background())
	if err != nil || res.Action != Cancel {
		t.Fatalf("cancelled context: %+v %v", res, err)
	}
}

func TestVerificationCodeShape(t *testing.T) {
	re := regexp.MustCompile(`^[A-Z]+-[A-Z]+-\d{2}$`)
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		c := verificationCode()
		if !re.MatchString(c) {
			t.Fatalf("code %q", c)
		}
		seen[c] = true
	}
	if len(seen) < 40 {
		t.Fatalf("only %d distinct codes in 50", len(seen))
	}
}

func TestRefusesSchemasOutsideTheSubset(t *testing.T) {
	s := listen(t)
	for _, sch := range []*jsonschema.Schema{
		{Type: "string"},
		{Type: "object", Properties: map[string]*jsonschema.Schema{"nested": {Type: "object"}}},
		{Type: "object", Properties: map[string]*jsonschema.Schema{"list": {Type: "array", Items: &jsonschema.Schema{Type: "string"}}}},
	} {
		if _, err := s.Open(context.Background(), Form{Schema: sch}); err == nil {
			t.Errorf("schema %v accepted", sch)
		}
	}
}

// TestOptionalFieldsLeftEmpty: an optional multi-select with minItems that
// the user leaves empty is absent, not a too-short list (JSON Schema's
// minItems applies to a value that is there); a number that is not finite
// is refused.
func TestOptionalFieldsLeftEmpty(t *testing.T) {
	t.Parallel()
	fields, err := fieldsOf(everyKind())
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"name": {"Ada"}, "email": {"ada@example.com"}, "age": {"36"}, "warehouse": {"berlin"}}
	content, problems := parseContent(fields, form)
	if len(problems) != 0 {
		t.Fatalf("problems %v", problems)
	}
	if _, ok := content["tags"]; ok {
		t.Fatalf("an empty optional multi-select is present: %v", content["tags"])
	}
	for _, bad := range []string{"NaN", "+Inf", "-Inf"} {
		form.Set("ratio", bad)
		if _, problems := parseContent(fields, form); problems["ratio"] != "is not a number" {
			t.Errorf("ratio %s: problems %v", bad, problems)
		}
	}
}

// everyRule is everyKind as the rest of elicit parses it, for checking
// what the page accepts.
func everyRule(tb testing.TB) *schema.Schema {
	raw, err := json.Marshal(everyKind())
	if err != nil {
		tb.Fatal(err)
	}
	s, err := schema.Parse(raw)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestPageChecksEveryRule: what the page's own checks cover (formats,
// integers) is checked again on the server, by the field model elicit
// validates with: a page that skipped them is refused the same way.
func TestPageChecksEveryRule(t *testing.T) {
	t.Parallel()
	fields, err := fieldsOf(everyKind())
	if err != nil {
		t.Fatal(err)
	}
	ok := url.Values{"name": {"Ada"}, "email": {"ada@example.com"}, "age": {"36"}, "warehouse": {"berlin"}}
	for _, c := range []struct{ field, value, problem string }{
		{"email", "not an address", "is not a valid email address"},
		{"website", "no scheme", "is not a valid URI"},
		{"birthday", "2026-02-30", "is not a valid date (YYYY-MM-DD)"},
		{"meeting", "tomorrow", "is not a valid date-time (RFC 3339)"},
		{"age", "36.5", "is not an integer"},
		{"tags", "red", ""},
	} {
		form := url.Values{}
		for k, v := range ok {
			form[k] = v
		}
		form.Set(c.field, c.value)
		content, problems := parseContent(fields, form)
		if problems[c.field] != c.problem {
			t.Errorf("%s=%q: problem %q, want %q", c.field, c.value, problems[c.field], c.problem)
		}
		if c.problem == "" {
			if _, err := everyRule(t).Check(content); err != nil {
				t.Errorf("%s=%q accepted, but the schema refuses it: %v", c.field, c.value, err)
			}
		}
	}
}
