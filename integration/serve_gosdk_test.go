package integration

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goVersions are the protocol versions the go-sdk client is tested on
// against serve: its default (2026-07-28, where elicitations become input
// requests and the tool call is retried with the answers) and 2025-11-25
// (elicitation/create in the middle of the call).
var goVersions = []struct{ name, version, want string }{
	{"default", "", "2026-07-28"},
	{"2025-11-25", "2025-11-25", "2025-11-25"},
}

// TestServeGoSDK drives every flow of serve's tools with the go-sdk client
// over Streamable HTTP: accept, decline, cancel and invalid content in form
// mode, URL mode with its completion notification, and -32042.
func TestServeGoSDK(t *testing.T) {
	serveGoSDK(t, startServe(t, nil), goVersions)
}

func serveGoSDK(t *testing.T, srv *serveProc, versions []struct{ name, version, want string }) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			c := newGoClient(t)
			cs := c.connect(srv.mcpURL(), v.version)
			if got := cs.InitializeResult().ProtocolVersion; got != v.want {
				t.Fatalf("negotiated %s, want %s", got, v.want)
			}
			ctx := t.Context()
			f := goFlow{ctx, c, cs}
			call := f.call
			formFlows(t, f)
			t.Run("invalid", func(t *testing.T) {
				// Content the go-sdk client lets through (it checks types,
				// not formats) and elicitvault refuses, naming the path.
				c.answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{
					"name": "Ada", "email": "not an address", "arrival": "2026-05-04"}})
				out, isErr := call(t, "register_attendee", nil)
				if !isErr || !strings.Contains(out, "/email") || strings.Contains(out, "not an address") {
					t.Errorf("got %q (error %v), want an error naming /email without the value", out, isErr)
				}
				// Content the client itself refuses to send.
				c.answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": "yes"}})
				out, isErr, err := callText(ctx, cs, "delete_contacts", nil)
				switch {
				case v.version == "":
					// On 2026-07-28 the client fails the call itself.
					if err == nil {
						t.Errorf("got %q, want the client's error", out)
					}
				case !isErr || !strings.Contains(out, "-32602") || strings.Contains(out, "yes"):
					t.Errorf("got %q (error %v, %v), want a tool error with the client's code -32602", out, isErr, err)
				}
			})
			urlFlows(t, f, srv.base, v.version != "")
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
