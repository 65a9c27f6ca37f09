package otelelicit_test

import (
	"fmt"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/otelelicit"
)

// The hooks go into the Elicitor's configuration; with nil options they
// use the global providers, which the program sets up (for instance from
// the OTEL_* environment with the OTLP exporters).
func ExampleHooks() {
	h, err := otelelicit.Hooks(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := &elicit.Config{Hooks: []elicit.Hooks{h}}
	fmt.Println(len(cfg.Hooks))
	// Output: 1
}
