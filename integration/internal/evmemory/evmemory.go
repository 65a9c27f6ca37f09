// Package evmemory gives the servers that measure elicitvault's library
// alone (internal/evlib, internal/evlibmcpgo) their Elicitor: the secret
// of MCP_ELICITATION_SECRET and the memory store.
package evmemory

import (
	"log"
	"os"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
)

// Elicitor returns the Elicitor of the server name, or exits the process
// when the secret is missing or wrong.
func Elicitor(name string) *elicit.Elicitor {
	keys, err := keyring.New([]byte(os.Getenv("MCP_ELICITATION_SECRET")))
	if err != nil {
		log.Fatal(name, ": MCP_ELICITATION_SECRET: ", err)
	}
	ev, err := elicit.New(keys, memory.New(nil), nil)
	if err != nil {
		log.Fatal(name, ": ", err)
	}
	return ev
}
