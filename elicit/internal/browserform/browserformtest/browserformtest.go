// Package browserformtest answers, in a real browser, the form of the
// tests' schema that has one field of every kind: for the tests of
// browserform and of elicit's BrowserForm fallback.
package browserformtest

import "github.com/elicitvault/elicitvault/internal/webdriver"

// AcceptEveryField fills every field of the form on wd's page (name, email,
// website, birthday, meeting, age, ratio, subscribe, warehouse, plan, size,
// tags) and submits it with Accept. The answer is Ada Lovelace's:
// ada@example.com, https://example.com/ada, 1815-12-10,
// 2026-12-01T09:30:00Z, 36, 0.75, not subscribed, lisbon, pro, l, and
// the tags red and blue.
func AcceptEveryField(wd *webdriver.Driver) {
	wd.TypeInto("#f-name", "Ada Lovelace")
	wd.TypeInto("#f-email", "ada@example.com")
	wd.TypeInto("#f-website", "https://example.com/ada")
	wd.SetValue("#f-birthday", "1815-12-10")
	wd.TypeInto("#f-meeting", "2026-12-01T09:30:00Z")
	wd.TypeInto("#f-age", "36")
	wd.Clear("#f-ratio")
	wd.TypeInto("#f-ratio", "0.75")
	wd.Click("#f-subscribe") // checked by default: this unchecks it
	wd.Click(`#f-warehouse option[value="lisbon"]`)
	wd.Click(`#f-plan option[value="pro"]`)
	wd.Click(`#f-size option[value="l"]`)
	wd.Click(`#f-tags input[value="red"]`)
	wd.Click(`#f-tags input[value="blue"]`)
	wd.Click("#accept")
}
