package redis

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url      string
		topology topology
		addrs    []string
		wait     durability
	}{
		{"redis://127.0.0.1:6379/0", standalone, []string{"127.0.0.1:6379"}, durability{}},
		{"redis://:pw@127.0.0.1:6379/2?wait_replicas=1", standalone, []string{"127.0.0.1:6379"}, durability{1, time.Second}},
		{"unix:///run/redis.sock?db=1&wait_replicas=2&wait_timeout=250ms", standalone, []string{"/run/redis.sock"}, durability{2, 250 * time.Millisecond}},
		{"redis+cluster://10.0.0.1:7000,10.0.0.2:7001/?client_name=x&wait_replicas=1", cluster, []string{"10.0.0.1:7000", "10.0.0.2:7001"}, durability{1, time.Second}},
		{"rediss+cluster://u:p@n1:7000", cluster, []string{"n1:7000"}, durability{}},
		{"redis+sentinel://s1:26379,s2:26379/0?master=main&password=pw", sentinel, []string{"s1:26379", "s2:26379"}, durability{}},
	} {
		p, err := parseURL(tc.url)
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if p.topology != tc.topology || p.durability != tc.wait {
			t.Errorf("%s: topology %d, durability %+v; want %d, %+v", tc.url, p.topology, p.durability, tc.topology, tc.wait)
		}
		var addrs []string
		switch p.topology {
		case standalone:
			addrs = []string{p.standalone.Addr}
		case cluster:
			addrs = p.cluster.Addrs
		case sentinel:
			addrs = p.sentinel.SentinelAddrs
			if p.sentinel.MasterName != "main" || p.sentinel.Password != "pw" {
				t.Errorf("%s: master %q", tc.url, p.sentinel.MasterName)
			}
		}
		if strings.Join(addrs, " ") != strings.Join(tc.addrs, " ") {
			t.Errorf("%s: addresses %v, want %v", tc.url, addrs, tc.addrs)
		}
	}
	for _, bad := range []string{
		"redis://u:s3cr3t@a:1,b:2/0",
		"redis+cluster://u:s3cr3t@a:1/3",
		"redis+cluster://u:s3cr3t@a,b:2",
		"redis+sentinel://u:s3cr3t@a:1/0",
		"redis://u:s3cr3t@a:1/0?wait_replicas=-1",
		"redis://u:s3cr3t@a:1/0?wait_timeout=1s",
		"redis://u:s3cr3t@a:1/0?wait_replicas=1&wait_timeout=0s",
		"redis+cluster://u:s3cr3t@a:1?nonsense=1",
		"http://u:s3cr3t@a:1",
		"s3cr3t",
	} {
		_, err := parseURL(bad)
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("the error repeats the password: %v", err)
		}
	}
}

// FuzzParseURL checks that parseURL never panics, and that its errors
// never repeat the URL's password.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"redis://127.0.0.1:6379/0",
		"unix://u:p@/run/redis.sock?db=1",
		"redis+cluster://a:1,b:2/?wait_replicas=1&wait_timeout=1s",
		"rediss+sentinel://u:p@s:1,t:2/0?master=m",
		"redis+cluster://@,/?#",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		_, err := parseURL(strings.ReplaceAll(raw, "SECRET", "x") + "")
		if err == nil {
			return
		}
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("error %v is not ErrInvalidArgument", err)
		}
		u := "redis+cluster://user:SECRETPW@" + raw
		if _, err := parseURL(u); err != nil && strings.Contains(err.Error(), "SECRETPW") {
			t.Fatalf("the error repeats the password: %v", err)
		}
	})
}
