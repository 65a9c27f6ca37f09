package elicit_test

import (
	"context"
	"sync"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
)

// Confirm must not write into the caller's option slice: a slice of
// options with spare capacity, shared by concurrent calls (a package-level
// default, say), would otherwise be a data race, and one call's option
// would end up in another's. The calls here fail early (no Elicitor in the
// context), after Confirm has added its own option.
func TestConfirmLeavesCallersOptionsAlone(t *testing.T) {
	backing := make([]elicit.Option, 1, 4)
	backing[0] = elicit.WithInputKey("shared")
	shared := backing[:1]

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := elicit.Confirm(context.Background(), "Proceed?", shared...); err == nil {
				t.Error("Confirm without an Elicitor succeeded")
			}
		})
	}
	wg.Wait()
	for i, o := range backing[1:cap(backing)] {
		if o != nil {
			t.Errorf("Confirm wrote an option into the caller's backing array at index %d", i+1)
		}
	}
}
