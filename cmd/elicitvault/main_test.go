package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"elicitvault": main})
}

// The scripts in testdata/script run the CLI as a user would. Each starts
// without MCP_ELICITATION_SECRET; the variables $SECRET_A, $SECRET_B and
// $SECRET_C hold valid secrets of 43 characters, and $KEYID_A, $KEYID_B
// and $KEYID_C their key IDs.
func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams("testdata/script", nil))
}

// scriptParams returns the parameters every script directory shares.
// setup, when not nil, sets more of the environment.
func scriptParams(dir string, setup func(*testscript.Env) error) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			for name, secret := range testSecrets {
				e.Setenv("SECRET_"+name, secret)
				e.Setenv("KEYID_"+name, keyID(secret))
			}
			if setup != nil {
				return setup(e)
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":    cmdExits,
			"flip":     cmdFlip,
			"truncate": cmdTruncate,
			"sleep":    cmdSleep,
		},
	}
}

var testSecrets = map[string]string{
	"A": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	"B": "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
	"C": "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC",
}

// cmdExits runs a program like exec and checks its exit status:
//
//	exits 2 elicitvault seal --purpose p
//
// stdout and stderr are kept for the commands that follow.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits STATUS PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad status %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		got = exit.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// keyID returns the key ID of a secret.
func keyID(secret string) string {
	k, err := loadKeyring(&env{getenv: func(name string) string {
		if name == "MCP_ELICITATION_SECRET" {
			return secret
		}
		return ""
	}})
	if err != nil {
		panic(err)
	}
	return k.PrimaryKeyID().String()
}

// cmdFlip changes one base64url character of a file written by seal to
// another: flip FILE INDEX (a negative index counts from the end, before
// the newline). The last character is avoided by the scripts: it may carry
// only padding bits.
func cmdFlip(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: flip FILE INDEX")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	line := []byte(strings.TrimSuffix(string(data), "\n"))
	i, err := strconv.Atoi(args[1])
	ts.Check(err)
	if i < 0 {
		i += len(line)
	}
	if i < 0 || i >= len(line) {
		ts.Fatalf("flip: index %s out of range", args[1])
	}
	if line[i] == 'A' {
		line[i] = 'B'
	} else {
		line[i] = 'A'
	}
	ts.Check(os.WriteFile(path, append(line, '\n'), 0o666))
}

// cmdTruncate writes the first N characters of a file to another:
// truncate FROM TO N.
func cmdTruncate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: truncate FROM TO N")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	n, err := strconv.Atoi(args[2])
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), data[:min(n, len(data))], 0o666))
}

// cmdSleep waits: sleep DURATION.
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}
