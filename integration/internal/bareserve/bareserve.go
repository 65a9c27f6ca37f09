// Package bareserve serves the MCP endpoint of the baseline servers of the
// benchmarks (internal/bare, internal/baremcpgo, internal/evlib) as the
// tests that start them expect.
package bareserve

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"
)

// Serve listens on addr, says on stderr name, ": MCP at" and the
// endpoint's URL (the line the tests wait for), and serves h; it exits the
// process when the listener or the server fails.
func Serve(name, addr string, h http.Handler) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "%s: MCP at http://%s/mcp\n", name, ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}
