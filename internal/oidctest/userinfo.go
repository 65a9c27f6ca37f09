package oidctest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Subject asks the provider's userinfo endpoint, with c (a client that
// sends an access token), for the subject the token is for.
func (p *Provider) Subject(ctx context.Context, c *http.Client) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Metadata.UserinfoEndpoint, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("userinfo: HTTP %d", resp.StatusCode)
	}
	var v struct {
		Sub string `json:"sub"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	return v.Sub, err
}
