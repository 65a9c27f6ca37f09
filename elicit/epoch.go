package elicit

import (
	"context"
	"time"

	"github.com/elicitvault/elicitvault/internal/epoch"
)

// newEpochWatcher returns the watcher of st's epoch, which reports a loss
// of the store's data in e's log and hooks. It is made before e's engine,
// so it reads the keyring's clock itself.
func (e *Elicitor) newEpochWatcher() *epoch.Watcher {
	now := func() time.Time { return e.keys.Sealer().Now() }
	return epoch.NewWatcher(e.store, epoch.Options{Now: now, OnChange: e.storeLost})
}

// storeLost reports that the store lost its data. The epochs are random
// IDs of the store's contents: no secret, session or subject.
func (e *Elicitor) storeLost(c epoch.Change) {
	e.log.Warn("elicitvault: the store lost its data (its epoch changed); state issued before is refused and its users must start again",
		"old_epoch", c.Old.ID.String(), "new_epoch", c.New.ID.String(), "new_epoch_created", c.New.Created.UTC())
	for _, h := range e.hooks {
		if h.StoreReset != nil {
			h.StoreReset(context.Background())
		}
	}
}
