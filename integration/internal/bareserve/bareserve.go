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
	"runtime/pprof"
	"strconv"
	"time"
)

// Serve listens on addr, says on stderr name, ": MCP at" and the
// endpoint's URL (the line the tests wait for), and serves h; it exits the
// process when the listener or the server fails.
//
// With ELICITVAULT_BARE_CPU_PROFILE set to a file path it writes the
// process's CPU profile there, with "." and name appended, over its first
// ELICITVAULT_BARE_CPU_PROFILE_SECONDS (default 30), as serve does with
// ELICITVAULT_CPU_PROFILE.
func Serve(name, addr string, h http.Handler) {
	if path := os.Getenv("ELICITVAULT_BARE_CPU_PROFILE"); path != "" {
		profile(path + "." + name)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "%s: MCP at http://%s/mcp\n", name, ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// profile writes the CPU profile of the process's first seconds to path.
func profile(path string) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	seconds, err := strconv.Atoi(os.Getenv("ELICITVAULT_BARE_CPU_PROFILE_SECONDS"))
	if err != nil || seconds <= 0 {
		seconds = 30
	}
	time.AfterFunc(time.Duration(seconds)*time.Second, func() {
		pprof.StopCPUProfile()
		f.Close()
	})
}
