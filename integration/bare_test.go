package integration

import "testing"

// TestBareServers holds the baselines of the end-to-end benchmark to the
// flow they stand for: each bare server (the go-sdk's, mcp-go's) asks
// delete_contacts' confirmation and acts on the answer, on both protocol
// generations, with the go-sdk client and with the mcp-go client.
func TestBareServers(t *testing.T) {
	clients := []struct {
		name    string
		connect func(t *testing.T, endpoint, version string) flowClient
	}{
		{"go-sdk client", func(t *testing.T, endpoint, version string) flowClient {
			c := newGoClient(t)
			cs := c.connect(endpoint, version)
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s, want %s", got, version)
			}
			return goFlow{t.Context(), c, cs}
		}},
		{"mcp-go client", func(t *testing.T, endpoint, version string) flowClient {
			c := newMCPGoClient(t)
			s := c.connect(endpoint, version)
			if s.version != version {
				t.Fatalf("negotiated %s, want %s", s.version, version)
			}
			return mcpgoFlow{t.Context(), c, s}
		}},
	}
	for _, name := range []string{"bare", "baremcpgo"} {
		t.Run(name, func(t *testing.T) {
			endpoint, _ := startBare(t, name)
			for _, v := range mcpgoVersions {
				for _, cl := range clients {
					t.Run(cl.name+" "+v, func(t *testing.T) {
						f := cl.connect(t, endpoint, v)
						for _, step := range []struct {
							action  string
							content map[string]any
							want    string
						}{
							{"accept", map[string]any{"confirm": true}, "Deleted 3 contacts."},
							{"decline", nil, "Nothing was deleted."},
						} {
							f.reply(step.action, step.content)
							if out, isErr := f.call(t, "delete_contacts", map[string]any{"count": 3}); isErr || out != step.want {
								t.Errorf("%s: got %q (error %v), want %q", step.action, out, isErr, step.want)
							}
							if msg := f.last().message; msg != "Delete 3 contacts? This cannot be undone." {
								t.Errorf("asked %q", msg)
							}
						}
					})
				}
			}
		})
	}
}
