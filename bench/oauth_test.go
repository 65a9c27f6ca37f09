package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/oauth"
	"github.com/elicitvault/elicitvault/keyring"
	evredis "github.com/elicitvault/elicitvault/store/redis"
)

// vaultOp measures a vault read on Redis — the sealed credential read,
// opened and turned into a token source that returns its access token —
// beside a raw store Get of the same record.
func vaultOp(tb testing.TB, url string) storeOp {
	prefix := benchPrefix(tb, url)
	client := newRedisClient(tb, url)
	tb.Cleanup(func() { client.Close() })
	st, err := evredis.NewFromClient(client, &evredis.Options{Prefix: prefix})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	keys, err := keyring.New([]byte("bench secret, thirty-two bytes or more"))
	if err != nil {
		tb.Fatal(err)
	}
	ev, err := elicit.New(keys, st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := oauth.New(&oauth.Config{Elicitor: ev, StartURL: "https://mcp.example/oauth/start"},
		&oauth.Provider{Name: "github", Config: &oauth2.Config{ClientID: "c", RedirectURL: "https://mcp.example/oauth/callback",
			Endpoint: oauth2.Endpoint{AuthURL: "https://github.example/authorize", TokenURL: "https://github.example/token"}}})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	// A GitHub-sized credential: 40-character tokens.
	tok := &oauth2.Token{AccessToken: "gho_" + storeKey()[:36], RefreshToken: "ghr_" + storeKey()[:36], TokenType: "bearer",
		Expiry: time.Now().Add(8 * time.Hour)}
	if err := conn.Save(ctx, "0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c44", "github", tok); err != nil {
		tb.Fatal(err)
	}
	entries, _, err := st.Scan(ctx, "", 10)
	if err != nil || len(entries) != 1 {
		tb.Fatalf("the vault holds %d entries (%v), want 1", len(entries), err)
	}
	key := entries[0].Key
	return storeOp{
		name: "VaultRead",
		viaStore: func(ctx context.Context, _ int) error {
			c, err := conn.Stored(ctx, "0b9f3c2e-8d41-4a6e-9f0c-3d2b1a7e5c44", "github")
			if err != nil {
				return err
			}
			t, err := c.TokenSource.Token()
			if err != nil {
				return err
			}
			if t.AccessToken != tok.AccessToken {
				return errors.New("wrong token")
			}
			return nil
		},
		raw: func(ctx context.Context, _ int) error {
			_, err := st.Get(ctx, key)
			return err
		},
	}
}

// BenchmarkVaultRead: go test -run XXX -bench VaultRead ./bench
func BenchmarkVaultRead(b *testing.B) {
	op := vaultOp(b, backendURL(b, redisURLEnv, false))
	benchOps(b, []storeOp{op})
}
