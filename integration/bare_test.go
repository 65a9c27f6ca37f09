package integration

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBareServers holds the baselines of the end-to-end benchmark to the
// flow they stand for: each bare server (the go-sdk's, mcp-go's) asks
// delete_contacts' confirmation and acts on the answer, on both protocol
// generations, with the go-sdk client and with the mcp-go client.
func TestBareServers(t *testing.T) {
	for _, name := range []string{"bare", "baremcpgo"} {
		t.Run(name, func(t *testing.T) {
			endpoint, _ := startBare(t, name)
			for _, v := range mcpgoVersions {
				t.Run("go-sdk client "+v, func(t *testing.T) {
					c := newGoClient(t)
					cs := c.connect(endpoint, v)
					if got := cs.InitializeResult().ProtocolVersion; got != v {
						t.Fatalf("negotiated %s, want %s", got, v)
					}
					c.answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}},
						&mcp.ElicitResult{Action: "decline"})
					for _, want := range []string{"Deleted 3 contacts.", "Nothing was deleted."} {
						out, isErr, err := callText(t.Context(), cs, "delete_contacts", map[string]any{"count": 3})
						if err != nil || isErr || out != want {
							t.Errorf("got %q (error %v, %v), want %q", out, isErr, err, want)
						}
					}
					var msgs []string
					for _, p := range c.elicitations() {
						msgs = append(msgs, p.Message)
					}
					checkAsked(t, msgs)
				})
				t.Run("mcp-go client "+v, func(t *testing.T) {
					c := newMCPGoClient(t)
					s := c.connect(endpoint, v)
					if s.version != v {
						t.Fatalf("negotiated %s, want %s", s.version, v)
					}
					c.answer(mgAnswer("accept", map[string]any{"confirm": true}), mgAnswer("decline", nil))
					for _, want := range []string{"Deleted 3 contacts.", "Nothing was deleted."} {
						out, isErr, err := s.call(t.Context(), "delete_contacts", map[string]any{"count": 3})
						if err != nil || isErr || out != want {
							t.Errorf("got %q (error %v, %v), want %q", out, isErr, err, want)
						}
					}
					var msgs []string
					for _, p := range c.elicitations() {
						msgs = append(msgs, p.Message)
					}
					checkAsked(t, msgs)
				})
			}
		})
	}
}

// checkAsked checks that the user was asked twice, with serve's message.
func checkAsked(t *testing.T, msgs []string) {
	t.Helper()
	want := "Delete 3 contacts? This cannot be undone."
	if len(msgs) != 2 || msgs[0] != want || msgs[1] != want {
		t.Errorf("asked %q, want %q twice", msgs, want)
	}
}
