// Package pages answers elicitvault's consent pages as a person's browser
// would, for the tests that run nodes as processes.
package pages

import (
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Accept answers the consent page of link on base's node (the POST of its
// Accept button), again while it answers 409 or 5xx (the page says to try
// again), at most tries times, wait apart. It returns the URL it answered.
func Accept(link, base string, tries int, wait time.Duration) (string, error) {
	u, err := url.Parse(link)
	if err != nil {
		return "", err
	}
	bu, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Host = bu.Host
	var last error
	for range tries {
		resp, err := http.PostForm(u.String(), url.Values{"action": {"accept"}})
		if err != nil {
			last = err
		} else {
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK:
				return u.String(), nil
			case resp.StatusCode == http.StatusConflict || resp.StatusCode >= 500:
				last = fmt.Errorf("callback %d", resp.StatusCode)
			default:
				return "", fmt.Errorf("callback %d", resp.StatusCode)
			}
		}
		time.Sleep(wait)
	}
	return "", last
}
