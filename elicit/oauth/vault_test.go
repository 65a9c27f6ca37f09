package oauth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/oauth"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

func connector(t *testing.T, keys *keyring.Keyring, st store.Store) *oauth.Connector {
	t.Helper()
	ev, err := elicit.New(keys, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := oauth.New(&oauth.Config{Elicitor: ev, StartURL: "https://mcp.example/oauth/start"},
		&oauth.Provider{Name: "github", Config: &oauth2.Config{RedirectURL: "https://mcp.example/oauth/callback",
			Endpoint: oauth2.Endpoint{AuthURL: "https://github.example/authorize", TokenURL: "https://github.example/token"}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRotation: a credential is a record like any other. Inspect counts it
// under its key ID, Rewrap moves it under the new primary, and a node with
// the new primary reads it before and after; a node without the secret
// that sealed it does not.
func TestRotation(t *testing.T) {
	ctx := context.Background()
	st := memory.New(nil)
	defer st.Close()
	oldKeys, _ := keyring.New([]byte("rotation test secret A, thirty-two bytes"))
	newKeys, _ := keyring.New([]byte("rotation test secret B, thirty-two bytes"), []byte("rotation test secret A, thirty-two bytes"))
	onlyNew, _ := keyring.New([]byte("rotation test secret B, thirty-two bytes"))
	tok := &oauth2.Token{AccessToken: "gho_rotation", RefreshToken: "ghr_rotation", Expiry: time.Now().Add(time.Hour)}
	if err := connector(t, oldKeys, st).Save(ctx, "user-1", "github", tok); err != nil {
		t.Fatal(err)
	}
	read := func(keys *keyring.Keyring) error {
		c, err := connector(t, keys, st).Stored(ctx, "user-1", "github")
		if err != nil {
			return err
		}
		got, err := c.TokenSource.Token()
		if err == nil && (got.AccessToken != tok.AccessToken || got.RefreshToken != tok.RefreshToken) {
			t.Fatalf("read %+v", got)
		}
		return err
	}
	if err := read(newKeys); err != nil {
		t.Fatalf("before the rewrap: %v", err)
	}
	if err := read(onlyNew); !errors.Is(err, oauth.ErrNotConnected) {
		t.Fatalf("without the old secret before the rewrap: %v", err)
	}
	rep, err := ring.Inspect(ctx, st, time.Now())
	if err != nil || rep.Entries != 1 || rep.Records[(*ring.Keyring)(oldKeys).KeyIDs()[0]] != 1 {
		t.Fatalf("inspect before: %+v, %v", rep, err)
	}
	if p, err := newKeys.Rewrap(ctx, st, nil); err != nil || p.Rewrapped != 1 {
		t.Fatalf("rewrap: %+v, %v", p, err)
	}
	rep, err = ring.Inspect(ctx, st, time.Now())
	if err != nil || rep.Entries != 1 || rep.Records[(*ring.Keyring)(newKeys).KeyIDs()[0]] != 1 {
		t.Fatalf("inspect after: %+v, %v", rep, err)
	}
	for _, k := range []*keyring.Keyring{newKeys, onlyNew} {
		if err := read(k); err != nil {
			t.Fatalf("after the rewrap: %v", err)
		}
	}
	if err := read(oldKeys); !errors.Is(err, oauth.ErrNotConnected) {
		t.Fatalf("the old secret alone after the rewrap: %v", err)
	}
	// Another user, another provider's name: nothing.
	if _, err := connector(t, newKeys, st).Stored(ctx, "user-2", "github"); !errors.Is(err, oauth.ErrNotConnected) {
		t.Fatalf("another user: %v", err)
	}
	if _, err := connector(t, newKeys, st).Stored(ctx, "user-1", "gitlab"); !errors.Is(err, oauth.ErrUnknownProvider) {
		t.Fatalf("another provider: %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	keys, _ := keyring.New([]byte("new test secret, thirty-two bytes long"))
	st := memory.New(nil)
	defer st.Close()
	ev, _ := elicit.New(keys, st, nil)
	cfg := &oauth.Config{Elicitor: ev, StartURL: "https://mcp.example/oauth/start"}
	prov := func(name, redirect string) *oauth.Provider {
		return &oauth.Provider{Name: name, Config: &oauth2.Config{RedirectURL: redirect}}
	}
	for name, tc := range map[string]struct {
		cfg *oauth.Config
		ps  []*oauth.Provider
	}{
		"no config":        {nil, nil},
		"no elicitor":      {&oauth.Config{StartURL: cfg.StartURL}, nil},
		"zero elicitor":    {&oauth.Config{Elicitor: &elicit.Elicitor{}, StartURL: cfg.StartURL}, nil},
		"relative start":   {&oauth.Config{Elicitor: ev, StartURL: "/oauth/start"}, nil},
		"bad name":         {cfg, []*oauth.Provider{prov("Git Hub", "https://mcp.example/cb")}},
		"no oauth2 config": {cfg, []*oauth.Provider{{Name: "github"}}},
		"twice":            {cfg, []*oauth.Provider{prov("github", "https://mcp.example/a"), prov("github", "https://mcp.example/b")}},
		"shared callback":  {cfg, []*oauth.Provider{prov("github", "https://mcp.example/cb"), prov("gitlab", "https://mcp.example/cb")}},
		"callback = start": {cfg, []*oauth.Provider{prov("github", "https://mcp.example/oauth/start")}},
		"another host":     {cfg, []*oauth.Provider{prov("github", "https://other.example/cb")}},
	} {
		if _, err := oauth.New(tc.cfg, tc.ps...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := oauth.New(cfg, prov("github", "https://mcp.example/oauth/github/callback"), prov("gitlab", "https://mcp.example/oauth/gitlab/callback")); err != nil {
		t.Fatal(err)
	}
}
