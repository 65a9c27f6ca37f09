package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// requireNodeEnv, set to 1, turns a missing node or npm install into a
// failure of the interop test instead of a skip.
const requireNodeEnv = "ELICITVAULT_REQUIRE_NODE"

// runCLI runs the CLI in process with the given environment and returns
// its exit status, stdout and stderr.
func runCLI(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := &env{
		stdin:  strings.NewReader(""),
		stdout: &stdout,
		stderr: &stderr,
		getenv: func(name string) string { return vars[name] },
	}
	code := run(context.Background(), e, args)
	return code, stdout.String(), stderr.String()
}

// TestTokenJWEInteropNode: a JWE token issued by the CLI is decrypted by
// the jose npm package in interop/verify-jwe.mjs, which derives the key
// itself from the documented key schedule; its claims are the ones the
// CLI's token verify prints. It skips without node or without
// interop/node_modules (npm ci in interop/), unless
// ELICITVAULT_REQUIRE_NODE=1.
func TestTokenJWEInteropNode(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", "interop", "verify-jwe.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	case !exists(filepath.Join(filepath.Dir(script), "node_modules", "jose", "package.json")):
		missing = "interop/node_modules is missing (run npm ci in interop/)"
	}
	if missing != "" {
		if os.Getenv(requireNodeEnv) == "1" {
			t.Fatalf("%s, and %s=1 requires the interop test", missing, requireNodeEnv)
		}
		t.Skipf("%s: skipping the JWE interop test", missing)
	}

	primary := map[string]string{"MCP_ELICITATION_SECRET": testSecrets["A"]}
	rotated := map[string]string{"MCP_ELICITATION_SECRET": testSecrets["B"], "MCP_ELICITATION_SECRET_PREVIOUS": testSecrets["A"]}
	nodeVerify := func(vars map[string]string, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(node, append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "MCP_ELICITATION_SECRET=", "MCP_ELICITATION_SECRET_PREVIOUS=")
		for k, v := range vars {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stdout.String(), stderr.String()
	}

	for _, tc := range [][]string{
		{"--kind", "url", "--session", "5UO7Q7XMRZ3S6F4BMWIQQ7ZL4E", "--elicitation", "R4NXKQ2VHD7JW3LMZPB6TCYE5A", "--subject", "0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c44"},
		{"--kind", "oauth-state", "--session", "s é 1", "--elicitation", "e-1", "--code-verifier", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"},
		{"--kind", "request-state", "--session", "s-1", "--elicitation", "e-1", "--subject", "ada@example.com",
			"--tool", "delete_contacts", "--args", `{"ids":[1,2,3]}`, "--state", "round 2 \u2603"},
	} {
		code, tok, stderr := runCLI(t, primary, append([]string{"token", "issue", "--format", "jwe"}, tc...)...)
		if code != 0 {
			t.Fatalf("token issue %v: %d %s", tc, code, stderr)
		}
		tok = strings.TrimSpace(tok)
		code, goOut, stderr := runCLI(t, primary, "token", "verify", tok)
		if code != 0 {
			t.Fatalf("token verify: %d %s", code, stderr)
		}
		for _, vars := range []map[string]string{primary, rotated} {
			code, nodeOut, stderr := nodeVerify(vars, "--kind", tc[1], tok)
			if code != 0 {
				t.Fatalf("%s: node: exit %d: %s", tc[1], code, stderr)
			}
			var fromGo, fromNode map[string]any
			if err := json.Unmarshal([]byte(goOut), &fromGo); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(nodeOut), &fromNode); err != nil {
				t.Fatalf("node printed %q: %v", nodeOut, err)
			}
			if !reflect.DeepEqual(fromGo, fromNode) {
				t.Errorf("%s: claims differ:\n  go: %s\nnode: %s", tc[1], goOut, nodeOut)
			}
		}
		t.Logf("%s: node verified %d characters", tc[1], len(tok))

		// The Node side rejects what it must.
		if code, _, stderr := nodeVerify(map[string]string{"MCP_ELICITATION_SECRET": testSecrets["C"]}, tok); code != 1 || !strings.Contains(stderr, "unknown key") {
			t.Errorf("node, another secret: %d %s", code, stderr)
		}
		other := "oauth-state"
		if tc[1] == other {
			other = "url"
		}
		if code, _, stderr := nodeVerify(primary, "--kind", other, tok); code != 1 || !strings.Contains(stderr, "invalid") {
			t.Errorf("node, wrong kind: %d %s", code, stderr)
		}
		segs := strings.Split(tok, ".")
		segs[3] = flipChar(segs[3], 5)
		if code, _, stderr := nodeVerify(primary, strings.Join(segs, ".")); code != 1 || !strings.Contains(stderr, "invalid") {
			t.Errorf("node, changed ciphertext: %d %s", code, stderr)
		}
	}
}

func flipChar(s string, i int) string {
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
