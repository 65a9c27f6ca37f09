package memory_test

import (
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/elicitvault/elicitvault/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memory.New(nil) })
}

// TestConformanceFastSweep runs the suite with a sweeper that runs often,
// so that it races with every operation.
func TestConformanceFastSweep(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return memory.New(&memory.Options{SweepInterval: time.Millisecond})
	})
}
