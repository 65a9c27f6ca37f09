package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// connectLines runs `elicitvault connect` with stdin not a terminal (plain
// line prompts) against `elicitvault serve --stdio`, typing input.
func connectLines(t *testing.T, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return connectLinesTo(t, input, append(args, binary(t), "serve", "--stdio", "--addr", "127.0.0.1:0")...)
}

// connectLinesTo is connectLines with the server given in args.
func connectLinesTo(t *testing.T, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin := binary(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"connect"}, args...)...)
	cmd.Env = append(os.Environ(), "MCP_ELICITATION_SECRET="+testSecrets["A"], "MCP_ELICITATION_SECRET_PREVIOUS=",
		"BROWSER="+self, browserEnv+"="+filepath.Join(t.TempDir(), "visits"))
	cmd.Stdin = strings.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestConnectLines(t *testing.T) {
	buildBinary(t)
	t.Run("list", func(t *testing.T) {
		out, _, code := connectLines(t, "")
		if code != 0 || !strings.Contains(out, "register_attendee") || !strings.Contains(out, "connect_account") {
			t.Errorf("exit %d, tools:\n%s", code, out)
		}
	})
	t.Run("register corrected", func(t *testing.T) {
		// Fields in name order: arrival, budget, diet, email, guests, name,
		// newsletter, room, seating, session_start, topics, website,
		// workshops. Each wrong answer is asked again.
		in := strings.Join([]string{"y",
			"tomorrow", "2026-05-04", // arrival
			"", // budget: default
			"Vegan",
			"ada", "ada@example.com",
			"5", "2", // guests, at most 4
			"Ada",
			"maybe", "yes",
			"3",      // room: suite
			"window", // seating by value
			"",       // session_start
			"security, tooling",
			"",
			"go,oauth,evals", "go, oauth", // workshops, at most 2
			"y"}, "\n") + "\n"
		out, errs, code := connectLines(t, in, "--tool", "register_attendee")
		want := `Registered: {"name":"Ada","email":"ada@example.com","website":"","arrival":"2026-05-04","session_start":"","guests":2,"budget":49.5,"newsletter":true,"room":"suite","seating":"window","diet":"vegan","topics":["security","tooling"],"workshops":["go","oauth"]}`
		if code != 0 || strings.TrimSpace(out) != want {
			t.Errorf("exit %d, got %s\nwant %s\nstderr:\n%s", code, out, want, errs)
		}
		for _, msg := range []string{"is not a valid date", "is not a valid email address", "is greater than the maximum 4", "answer yes or no", "has more than 2 items"} {
			if !strings.Contains(errs, msg) {
				t.Errorf("no %q shown:\n%s", msg, errs)
			}
		}
	})
	t.Run("decline", func(t *testing.T) {
		out, _, code := connectLines(t, "d\n", "--tool", "subscribe_newsletter")
		if code != 0 || strings.TrimSpace(out) != "Not subscribed." {
			t.Errorf("exit %d, %q", code, out)
		}
	})
	t.Run("EOF cancels", func(t *testing.T) {
		out, _, code := connectLines(t, "y\n2026-05-04\n", "--tool", "register_attendee")
		if code != 0 || strings.TrimSpace(out) != "Registration cancelled." {
			t.Errorf("exit %d, %q", code, out)
		}
	})
	t.Run("url declined", func(t *testing.T) {
		out, errs, code := connectLines(t, "n\n", "--tool", "connect_account")
		if code != 0 || strings.TrimSpace(out) != "Not connected: you declined." || !regexp.MustCompile(`Host: 127\.0\.0\.1:[1-9][0-9]*\n`).MatchString(errs) {
			t.Errorf("exit %d, %q\n%s", code, out, errs)
		}
	})
	t.Run("escape sequences", func(t *testing.T) {
		// The texts of a server that is not ours never reach the terminal
		// with their escape sequences.
		out, errs, code := connectLinesTo(t, "y\n\ny\n", "--protocol", "2025-11-25", "--tool", "trick", bareServer(t))
		if code != 0 || strings.ContainsAny(errs, "\x1b\x07\u009b\u202e") || !strings.Contains(errs, "Hi\uFFFD\uFFFDHost: bank.example") {
			t.Errorf("exit %d, stderr %q", code, errs)
		}
		// The result (the server's default, sent back) is escaped too.
		if !strings.Contains(out, `"ok":"\u001b[1mbold"`) || strings.Contains(out, "\x1b") {
			t.Errorf("stdout %q", out)
		}
	})
	t.Run("bad args", func(t *testing.T) {
		_, errs, code := connectLines(t, "", "--tool", "delete_contacts", "--args", "[1]")
		if code != 2 || !strings.Contains(errs, "--args is not a JSON object") {
			t.Errorf("exit %d\n%s", code, errs)
		}
	})
}
