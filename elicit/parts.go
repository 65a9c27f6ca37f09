package elicit

import (
	"github.com/elicitvault/elicitvault/elicit/internal/parts"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store"
)

func init() {
	parts.Of = func(elicitor any) (*ring.Keyring, store.Store, bool) {
		e, ok := elicitor.(*Elicitor)
		if !ok || e == nil || e.keys == nil || e.store == nil {
			return nil, nil, false
		}
		return e.keys, e.store, true
	}
}
