package redis

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/elicitvault/elicitvault/store"
	"github.com/redis/go-redis/v9"
)

// topology is the kind of deployment a URL names.
type topology int

const (
	standalone topology = iota // one server: redis://, rediss://, unix://
	cluster                    // Redis Cluster: redis+cluster://
	sentinel                   // Sentinel-managed: redis+sentinel://
)

// durability is what the store asks of replication after each write.
type durability struct {
	replicas int           // WAIT for this many replicas; 0: no WAIT
	timeout  time.Duration // WAIT's timeout
}

// defaultWaitTimeout is WAIT's timeout when the URL sets wait_replicas but
// not wait_timeout.
const defaultWaitTimeout = time.Second

// parsedURL is what New needs from a URL.
type parsedURL struct {
	topology   topology
	standalone *redis.Options
	cluster    *redis.ClusterOptions
	sentinel   *redis.FailoverOptions
	durability durability
}

// errURL is the error of a malformed URL. It never quotes the URL, which
// may hold a password.
var errURL = fmt.Errorf("redis: invalid URL, want redis://[[user]:password@]host[:port][/db], rediss://…, unix://…, redis+cluster://host:port,host:port… or redis+sentinel://host:port,…?master=name: %w", store.ErrInvalidArgument)

// parseURL parses the URL forms New documents. Our own parameters
// (wait_replicas, wait_timeout, master) are removed before the rest of the
// URL goes to go-redis's parser of its kind.
func parseURL(raw string) (*parsedURL, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, errURL
	}
	p := &parsedURL{}
	switch scheme {
	case "redis", "rediss", "unix":
		p.topology = standalone
	case "redis+cluster", "rediss+cluster":
		p.topology = cluster
		scheme = strings.TrimSuffix(scheme, "+cluster")
	case "redis+sentinel", "rediss+sentinel":
		p.topology = sentinel
		scheme = strings.TrimSuffix(scheme, "+sentinel")
	default:
		return nil, errURL
	}
	u, err := url.Parse(scheme + "://" + hostsPlaceholder(rest))
	if err != nil {
		return nil, errURL
	}
	hosts := extractHosts(rest)
	q := u.Query()
	if v := q.Get("wait_replicas"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("redis: invalid URL: wait_replicas must be a number of replicas: %w", store.ErrInvalidArgument)
		}
		p.durability = durability{replicas: n, timeout: defaultWaitTimeout}
	}
	if v := q.Get("wait_timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("redis: invalid URL: wait_timeout must be a positive duration such as 500ms: %w", store.ErrInvalidArgument)
		}
		if p.durability.replicas == 0 {
			return nil, fmt.Errorf("redis: invalid URL: wait_timeout without wait_replicas: %w", store.ErrInvalidArgument)
		}
		p.durability.timeout = d
	}
	q.Del("wait_replicas")
	q.Del("wait_timeout")

	if p.topology == standalone {
		if scheme != "unix" && len(hosts) > 1 {
			return nil, fmt.Errorf("redis: invalid URL: several hosts need redis+cluster:// or redis+sentinel://: %w", store.ErrInvalidArgument)
		}
		u.RawQuery = q.Encode()
		u.Host = strings.Join(hosts, "")
		if scheme == "unix" {
			// unix://path: the placeholder kept the path.
			u.Host = ""
		}
		o, err := redis.ParseURL(restore(u, scheme, rest))
		if err != nil {
			return nil, errURL
		}
		p.standalone = o
		return p, nil
	}

	if len(hosts) == 0 || hosts[0] == "" {
		return nil, errURL
	}
	for _, h := range hosts {
		if _, _, err := net.SplitHostPort(h); err != nil {
			return nil, fmt.Errorf("redis: invalid URL: each host needs a port: %w", store.ErrInvalidArgument)
		}
	}
	u.Host = hosts[0]
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	switch p.topology {
	case cluster:
		if u.Path != "" && u.Path != "/" && u.Path != "/0" {
			return nil, fmt.Errorf("redis: invalid URL: a cluster has only database 0: %w", store.ErrInvalidArgument)
		}
		u.Path = ""
		u.RawQuery = q.Encode()
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, errURL
		}
		p.cluster = o
	case sentinel:
		master := q.Get("master")
		if master == "" {
			return nil, fmt.Errorf("redis: invalid URL: redis+sentinel:// needs ?master=name: %w", store.ErrInvalidArgument)
		}
		q.Del("master")
		q.Set("master_name", master)
		u.RawQuery = q.Encode()
		o, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, errURL
		}
		p.sentinel = o
	}
	return p, nil
}

// extractHosts returns the comma-separated hosts of the authority of rest
// (what follows "scheme://"), without the user information.
func extractHosts(rest string) []string {
	auth := rest
	if i := strings.IndexAny(auth, "/?#"); i >= 0 {
		auth = auth[:i]
	}
	if i := strings.LastIndex(auth, "@"); i >= 0 {
		auth = auth[i+1:]
	}
	if auth == "" {
		return nil
	}
	return strings.Split(auth, ",")
}

// hostsPlaceholder replaces the hosts of rest with one placeholder host, so
// that net/url parses the rest of the URL.
func hostsPlaceholder(rest string) string {
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	auth, tail := rest[:end], rest[end:]
	user := ""
	if i := strings.LastIndex(auth, "@"); i >= 0 {
		user = auth[:i+1]
	}
	return user + "placeholder" + tail
}

// restore rebuilds a standalone URL from u, the parsed URL with our own
// parameters removed.
func restore(u *url.URL, scheme, rest string) string {
	if scheme == "unix" {
		// A unix URL has no host: rebuild it from rest, with the query
		// that u now holds.
		path := rest
		if i := strings.IndexAny(path, "?#"); i >= 0 {
			path = path[:i]
		}
		s := "unix://" + path
		if u.RawQuery != "" {
			s += "?" + u.RawQuery
		}
		return s
	}
	return u.String()
}
