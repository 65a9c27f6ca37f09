package main

import (
	"flag"
	"slices"
	"strings"

	"github.com/elicitvault/elicitvault/elicit"
)

// The fallbacks of serve, for clients that cannot elicit (issue 6): the
// --fallback flag and its help. newReference puts them in the Elicitor's
// Config; the tools need no change.

const fallbackHelp = `For clients that cannot elicit in form mode, --fallback lists what serve
tries, in order (comma-separated; "none" for nothing, the default "llm"):

  llm       the tool result asks the model to ask the user, and the
            sendElicitationResult tool (listed to these clients only)
            takes the answer and continues the tool
  browser   a form on 127.0.0.1 at a random port, announced to the client
            in a log message (level notice) or a progress notification,
            with a verification code; for a server on the user's machine

Both also stand in for URL mode (connect_account) for clients without
it: llm gives the model the link, and the model's sendElicitationResult
with the elicitation's ID then returns the page's answer; browser
announces the link the same way as a form, and the call waits.

As llm applies to every call, a browser after it is never reached by the
tools of serve: use --fallback browser to try the form. When none
applies, the tool fails with "client does not support form elicitation".`

// fallbackFlag parses the value of --fallback.
func fallbackFlag(fs *flag.FlagSet, v string) ([]elicit.Fallback, error) {
	if v == "none" {
		return nil, nil
	}
	var out []elicit.Fallback
	for name := range strings.SplitSeq(v, ",") {
		var f elicit.Fallback
		switch strings.TrimSpace(name) {
		case "llm":
			f = elicit.LLMMediated
		case "browser":
			f = elicit.BrowserForm
		default:
			return nil, usagef(fs, "--fallback takes llm, browser, both comma-separated, or none")
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}
