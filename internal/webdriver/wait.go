package webdriver

import "time"

// WaitFor waits until css selects an element of the page; it fails the
// test, naming the page, after 20 seconds.
func (wd *Driver) WaitFor(css string) {
	wd.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for wd.Exec(`return document.querySelector(arguments[0]) !== null`, css) != true {
		if time.Now().After(deadline) {
			wd.t.Fatalf("no %s at %v", css, wd.Exec(`return location.href`))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
