package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/github"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/oauth"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
)

// A tool that needs the user's GitHub account: Connect returns at once
// when the account is connected, and otherwise sends the user to GitHub
// in URL mode first.
func Example() {
	keys, err := keyring.Load(nil) // MCP_ELICITATION_SECRET
	if err != nil {
		log.Fatal(err)
	}
	st := memory.New(nil) // or Redis, PostgreSQL: any node can finish a flow
	ev, err := elicit.New(keys, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	conn, err := oauth.New(&oauth.Config{
		Elicitor: ev,
		StartURL: "https://mcp.example.com/oauth/start",
	}, &oauth.Provider{
		Name: "github",
		Config: &oauth2.Config{
			ClientID:     "Iv1.example",
			ClientSecret: "…",
			Endpoint:     github.Endpoint,
			RedirectURL:  "https://mcp.example.com/oauth/github/callback",
			Scopes:       []string{"repo"},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "repos", Version: "1"}, nil)
	ev.Install(server)
	mcp.AddTool(server, &mcp.Tool{Name: "list_repos"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		c, err := conn.Connect(ctx, "github")
		if errors.Is(err, oauth.ErrDeclined) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Not connected."}}}, nil, nil
		}
		if err != nil {
			return nil, nil, err // elicit's errors are returned as they are
		}
		resp, err := oauth2.NewClient(ctx, c.TokenSource).Get("https://api.github.com/user/repos")
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: resp.Status}}}, nil, nil
	})
	// The start page and the callback, on every node.
	http.Handle("/oauth/", conn.Handler())
}

// Stored gives code outside a tool call the connection of a user.
func ExampleConnector_Stored() {
	keys, _ := keyring.New([]byte("example secret, thirty-two bytes or more"))
	st := memory.New(nil)
	defer st.Close()
	ev, _ := elicit.New(keys, st, nil)
	conn, err := oauth.New(&oauth.Config{Elicitor: ev, StartURL: "https://mcp.example.com/oauth/start"},
		&oauth.Provider{Name: "github", Config: &oauth2.Config{Endpoint: github.Endpoint, RedirectURL: "https://mcp.example.com/oauth/callback"}})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := conn.Save(ctx, "user-1", "github", &oauth2.Token{AccessToken: "gho_example", Expiry: time.Now().Add(time.Hour)}); err != nil {
		log.Fatal(err)
	}
	c, err := conn.Stored(ctx, "user-1", "github")
	if err != nil {
		log.Fatal(err)
	}
	t, _ := c.TokenSource.Token()
	fmt.Println(t.AccessToken)
	_, err = conn.Stored(ctx, "user-2", "github")
	fmt.Println(errors.Is(err, oauth.ErrNotConnected))
	// Output:
	// gho_example
	// true
}
