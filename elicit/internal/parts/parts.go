// Package parts lets elicit/oauth use the keyring and the store of the
// Elicitor it is given, so that it cannot be given others, without that
// door being part of elicit's public API: package elicit sets Of when it
// is initialised.
package parts

import (
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store"
)

// Of returns the keyring and the store of elicitor, an *elicit.Elicitor;
// ok is false for anything else.
var Of func(elicitor any) (keys *ring.Keyring, st store.Store, ok bool)
