package browserform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestChromium fills the form in a real headless Chromium, driven through
// chromedriver's WebDriver endpoint: it checks the verification code, fills
// every field kind, submits, and the waiting side receives validated
// content. It skips without chromium and chromedriver unless
// ELICITVAULT_REQUIRE_BROWSER=1.
func TestChromium(t *testing.T) {
	wd := startWebDriver(t)
	s := listen(t)
	p := open(t, s, nil)

	wd.navigate(p.URL)
	if code := wd.text("#code"); code != p.Code {
		t.Fatalf("page shows code %q, the client was told %q", code, p.Code)
	}
	wd.typeInto("#f-name", "Ada Lovelace")
	wd.typeInto("#f-email", "ada@example.com")
	wd.typeInto("#f-website", "https://example.com/ada")
	wd.setValue("#f-birthday", "1815-12-10")
	wd.typeInto("#f-meeting", "2026-12-01T09:30:00Z")
	wd.typeInto("#f-age", "36")
	wd.clear("#f-ratio")
	wd.typeInto("#f-ratio", "0.75")
	wd.click("#f-subscribe") // checked by default: this unchecks it
	wd.click(`#f-warehouse option[value="lisbon"]`)
	wd.click(`#f-plan option[value="pro"]`)
	wd.click(`#f-size option[value="l"]`)
	wd.click(`#f-tags input[value="red"]`)
	wd.click(`#f-tags input[value="blue"]`)
	wd.click("#accept")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.Wait(ctx)
	if err != nil {
		t.Fatalf("%v; invalid fields in the page: %v; page: %v", err, wd.exec(`return Array.from(document.querySelectorAll(":invalid")).map(e => e.id + " " + e.validationMessage).join("; ")`), wd.exec(`return document.body.innerText`))
	}
	want := map[string]any{
		"name": "Ada Lovelace", "email": "ada@example.com", "website": "https://example.com/ada",
		"birthday": "1815-12-10", "meeting": "2026-12-01T09:30:00Z", "age": int64(36), "ratio": 0.75,
		"subscribe": false, "warehouse": "lisbon", "plan": "pro", "size": "l", "tags": []any{"red", "blue"},
	}
	if res.Action != Accept || fmt.Sprint(res.Content) != fmt.Sprint(want) {
		t.Fatalf("result %v %v\nwant %v", res.Action, res.Content, want)
	}
	if got := wd.text("#ended"); got != "Thank you" {
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
	wd := startWebDriver(t)
	s := listen(t)
	p := open(t, s, nil)
	wd.navigate(p.URL)
	wd.typeInto("#f-name", "Ada")
	wd.typeInto("#f-email", "ada@example.com")
	wd.typeInto("#f-age", "12") // below the minimum 18
	wd.click(`#f-warehouse option[value="berlin"]`)
	wd.click("#accept")
	if valid := wd.exec(`return document.getElementById("f-age").validity.valid`); valid != false {
		t.Fatalf("age 12 is valid in the page: %v", valid)
	}
	select {
	case <-p.f.done:
		t.Fatal("the page sent an invalid form")
	case <-time.After(300 * time.Millisecond):
	}
	p.Cancel()
	deadline := time.Now().Add(8 * time.Second)
	for !strings.Contains(wd.exec(`return document.body.textContent`).(string), "This request has ended") {
		if time.Now().After(deadline) {
			t.Fatal("the page did not notice that the form ended")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type webDriver struct {
	t       *testing.T
	base    string
	session string
}

func startWebDriver(t *testing.T) *webDriver {
	t.Helper()
	chromium, err1 := exec.LookPath("chromium")
	driver, err2 := exec.LookPath("chromedriver")
	if err1 != nil || err2 != nil {
		if os.Getenv("ELICITVAULT_REQUIRE_BROWSER") == "1" {
			t.Fatal("chromium and chromedriver are required (ELICITVAULT_REQUIRE_BROWSER=1): apt-get install chromium chromium-driver")
		}
		t.Skip("chromium or chromedriver not installed (apt-get install chromium chromium-driver); set ELICITVAULT_REQUIRE_BROWSER=1 to fail instead")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(driver, fmt.Sprintf("--port=%d", port), "--allowed-ips=127.0.0.1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	wd := &webDriver{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(wd.base + "/status")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("chromedriver did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": chromium,
			"args": []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
				"--disable-background-networking", "--disable-component-update", "--disable-sync",
				"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir()},
		},
	}}}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	wd.call("POST", "/session", caps, &created)
	wd.session = created.SessionID
	t.Cleanup(func() { wd.call("DELETE", "/session/"+wd.session, nil, nil) })
	return wd
}

func (wd *webDriver) call(method, path string, body, out any) {
	wd.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, wd.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		wd.t.Fatal(err)
	}
	defer resp.Body.Close()
	var envelope struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&envelope); err != nil {
		wd.t.Fatalf("webdriver %s %s: %v", method, path, err)
	}
	if resp.StatusCode != 200 {
		wd.t.Fatalf("webdriver %s %s: %d %s", method, path, resp.StatusCode, envelope.Value)
	}
	if out != nil {
		if err := json.Unmarshal(envelope.Value, out); err != nil {
			wd.t.Fatal(err)
		}
	}
}

func (wd *webDriver) s(path string) string { return "/session/" + wd.session + path }

func (wd *webDriver) navigate(u string) {
	wd.call("POST", wd.s("/url"), map[string]string{"url": u}, nil)
}

func (wd *webDriver) find(css string) string {
	var el map[string]string
	wd.call("POST", wd.s("/element"), map[string]string{"using": "css selector", "value": css}, &el)
	for _, id := range el {
		return id
	}
	wd.t.Fatalf("no element %s", css)
	return ""
}

func (wd *webDriver) text(css string) string {
	var s string
	wd.call("GET", wd.s("/element/"+wd.find(css)+"/text"), nil, &s)
	return s
}

func (wd *webDriver) typeInto(css, text string) {
	wd.call("POST", wd.s("/element/"+wd.find(css)+"/value"), map[string]string{"text": text}, nil)
}

func (wd *webDriver) clear(css string) {
	wd.call("POST", wd.s("/element/"+wd.find(css)+"/clear"), map[string]string{}, nil)
}

func (wd *webDriver) click(css string) {
	wd.call("POST", wd.s("/element/"+wd.find(css)+"/click"), map[string]string{}, nil)
}

// setValue sets an input's value directly, for date inputs whose typed
// form depends on the browser's locale.
func (wd *webDriver) setValue(css, value string) {
	wd.exec(`document.querySelector(arguments[0]).value = arguments[1]`, css, value)
}

func (wd *webDriver) exec(script string, args ...any) any {
	if args == nil {
		args = []any{}
	}
	var out any
	wd.call("POST", wd.s("/execute/sync"), map[string]any{"script": script, "args": args}, &out)
	return out
}
