package browserform

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit/internal/browserform/browserformtest"
	"github.com/elicitvault/elicitvault/internal/webdriver"
)

// TestChromium fills the form in a real headless Chromium, driven through
// chromedriver's WebDriver endpoint: it checks the verification code, fills
// every field kind, submits, and the waiting side receives validated
// content. It skips without chromium and chromedriver unless
// ELICITVAULT_REQUIRE_BROWSER=1.
func TestChromium(t *testing.T) {
	wd := webdriver.Start(t)
	s := listen(t)
	p := open(t, s, nil)

	wd.Navigate(p.URL)
	if code := wd.Text("#code"); code != p.Code {
		t.Fatalf("page shows code %q, the client was told %q", code, p.Code)
	}
	browserformtest.AcceptEveryField(wd)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.Wait(ctx)
	if err != nil {
		t.Fatalf("%v; invalid fields in the page: %v; page: %v", err, wd.Exec(`return Array.from(document.querySelectorAll(":invalid")).map(e => e.id + " " + e.validationMessage).join("; ")`), wd.Exec(`return document.body.innerText`))
	}
	want := map[string]any{
		"name": "Ada Lovelace", "email": "ada@example.com", "website": "https://example.com/ada",
		"birthday": "1815-12-10", "meeting": "2026-12-01T09:30:00Z", "age": int64(36), "ratio": 0.75,
		"subscribe": false, "warehouse": "lisbon", "plan": "pro", "size": "l", "tags": []any{"red", "blue"},
	}
	if res.Action != Accept || fmt.Sprint(res.Content) != fmt.Sprint(want) {
		t.Fatalf("result %v %v\nwant %v", res.Action, res.Content, want)
	}
	if got := wd.Text("#ended"); got != "Thank you" {
		t.Fatalf("page after submit: %q", got)
	}

	_, nonce := formURL(p)
	if code, _ := post(t, p, validAnswer(nonce), nil); code != http.StatusConflict {
		t.Fatalf("second submission: %d, want 409", code)
	}
	v := validAnswer(nonce)
	v.Del("_nonce")
	if code, _ := post(t, p, v, nil); code != http.StatusForbidden {
		t.Fatalf("submission without nonce: %d, want 403", code)
	}
}

// TestChromiumClientSideValidation checks that the page itself refuses an
// out-of-range number before it is sent, and that the page closes itself
// (reports the end) when the form is cancelled from the server side.
func TestChromiumClientSideValidation(t *testing.T) {
	wd := webdriver.Start(t)
	s := listen(t)
	p := open(t, s, nil)
	wd.Navigate(p.URL)
	wd.TypeInto("#f-name", "Ada")
	wd.TypeInto("#f-email", "ada@example.com")
	wd.TypeInto("#f-age", "12") // below the minimum 18
	wd.Click(`#f-warehouse option[value="berlin"]`)
	wd.Click("#accept")
	if valid := wd.Exec(`return document.getElementById("f-age").validity.valid`); valid != false {
		t.Fatalf("age 12 is valid in the page: %v", valid)
	}
	select {
	case <-p.f.done:
		t.Fatal("the page sent an invalid form")
	case <-time.After(300 * time.Millisecond):
	}
	p.Cancel()
	deadline := time.Now().Add(8 * time.Second)
	for !strings.Contains(wd.Exec(`return document.body.textContent`).(string), "This request has ended") {
		if time.Now().After(deadline) {
			t.Fatal("the page did not notice that the form ended")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
