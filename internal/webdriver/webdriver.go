// Package webdriver drives a headless Chromium through chromedriver's
// WebDriver endpoint, for the browser tests of elicitvault.
//
// Start skips the test when chromium or chromedriver is missing, or fails
// it when ELICITVAULT_REQUIRE_BROWSER=1 (as .ci/run sets). Every method
// fails the test on error.
package webdriver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"
)

// RequireEnv names the variable that, set to 1, turns a missing browser
// into a test failure instead of a skip.
const RequireEnv = "ELICITVAULT_REQUIRE_BROWSER"

// Driver is one browser session.
type Driver struct {
	t       testing.TB
	base    string
	session string
}

// Start starts chromedriver and a headless Chromium session, both ended
// when t ends.
func Start(t testing.TB) *Driver {
	t.Helper()
	chromium, err1 := exec.LookPath("chromium")
	driver, err2 := exec.LookPath("chromedriver")
	if err1 != nil || err2 != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal("chromium and chromedriver are required (" + RequireEnv + "=1): apt-get install chromium chromium-driver")
		}
		t.Skip("chromium or chromedriver not installed (apt-get install chromium chromium-driver); set " + RequireEnv + "=1 to fail instead")
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
	wd := &Driver{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
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

func (wd *Driver) call(method, path string, body, out any) {
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

func (wd *Driver) s(path string) string { return "/session/" + wd.session + path }

// Navigate loads u.
func (wd *Driver) Navigate(u string) {
	wd.t.Helper()
	wd.call("POST", wd.s("/url"), map[string]string{"url": u}, nil)
}

func (wd *Driver) find(css string) string {
	wd.t.Helper()
	var el map[string]string
	wd.call("POST", wd.s("/element"), map[string]string{"using": "css selector", "value": css}, &el)
	for _, id := range el {
		return id
	}
	wd.t.Fatalf("no element %s", css)
	return ""
}

// Text returns the rendered text of the element css selects.
func (wd *Driver) Text(css string) string {
	wd.t.Helper()
	var s string
	wd.call("GET", wd.s("/element/"+wd.find(css)+"/text"), nil, &s)
	return s
}

// TypeInto types text into the element css selects.
func (wd *Driver) TypeInto(css, text string) {
	wd.t.Helper()
	wd.call("POST", wd.s("/element/"+wd.find(css)+"/value"), map[string]string{"text": text}, nil)
}

// Clear empties the input css selects.
func (wd *Driver) Clear(css string) {
	wd.t.Helper()
	wd.call("POST", wd.s("/element/"+wd.find(css)+"/clear"), map[string]string{}, nil)
}

// Click clicks the element css selects.
func (wd *Driver) Click(css string) {
	wd.t.Helper()
	wd.call("POST", wd.s("/element/"+wd.find(css)+"/click"), map[string]string{}, nil)
}

// SetValue sets an input's value directly, for date inputs whose typed
// form depends on the browser's locale.
func (wd *Driver) SetValue(css, value string) {
	wd.t.Helper()
	wd.Exec(`document.querySelector(arguments[0]).value = arguments[1]`, css, value)
}

// Exec runs script in the page with args and returns its result.
func (wd *Driver) Exec(script string, args ...any) any {
	wd.t.Helper()
	if args == nil {
		args = []any{}
	}
	var out any
	wd.call("POST", wd.s("/execute/sync"), map[string]any{"script": script, "args": args}, &out)
	return out
}

// Cookies returns the cookies of the current page's origin, HttpOnly ones
// included, as a request from the browser would carry them.
func (wd *Driver) Cookies() []*http.Cookie {
	wd.t.Helper()
	var cs []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	wd.call("GET", wd.s("/cookie"), nil, &cs)
	out := make([]*http.Cookie, 0, len(cs))
	for _, c := range cs {
		out = append(out, &http.Cookie{Name: c.Name, Value: c.Value})
	}
	return out
}
