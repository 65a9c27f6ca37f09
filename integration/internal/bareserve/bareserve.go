// Package bareserve serves the MCP endpoint of the bare servers
// (internal/bare, internal/baremcpgo) as the tests that start them expect.
package bareserve

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"
)

// Serve listens on addr, says on stderr "bare: MCP at" and the endpoint's
// URL (the line the tests wait for), and serves h; it exits the process
// when the listener or the server fails.
func Serve(addr string, h http.Handler) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "bare: MCP at http://%s/mcp\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}
