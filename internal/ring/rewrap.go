package ring

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/store"
)

// RewrapOptions configures Rewrap.
type RewrapOptions struct {
	// BatchSize is the number of entries read per Scan (default 500).
	BatchSize int
	// Cursor resumes an interrupted rewrap from Progress.Cursor.
	Cursor string
	// Progress, when set, is called after every batch.
	Progress func(Progress)
}

// Progress counts what a rewrap has done so far.
type Progress struct {
	Scanned   int    // entries read
	Rewrapped int    // records now under the primary secret, its index and the current format
	Current   int    // records that already were
	Changed   int    // records left alone because they changed (or went) while being rewrapped
	Skipped   int    // entries that are not records (one-shot markers)
	InTransit int    // answers on their way to a waiter, left where they were written
	Failed    int    // records that did not open: invalid, unknown key, or misplaced
	Cursor    string // where to resume; "" once done
}

// Rewrap re-seals every record of s under the primary secret and moves it to
// its primary store key, keeping binding and expiry, batch by batch.
//
// It is safe beside live traffic: it never overwrites an entry that changed
// since it read it. A record is moved by first writing the new copy (only
// where no entry exists) and then deleting the old one only if it is still
// the value that was read; if it is not, the new copy is withdrawn the same
// way. A crash between the two steps leaves both copies, never neither, and
// the next run removes the old one. Records in transit (InTransit) stay
// where they are. One-shot markers are not records and are
// left where they are: their keys are derived under the secret that issued
// the token, which is what every node looks them up by.
//
// Records that are expired are left to expire. Records that fail to open are
// counted in Failed and left alone; Rewrap does not stop for them.
func (k *Keyring) Rewrap(ctx context.Context, s store.Store, opts RewrapOptions) (Progress, error) {
	batch := opts.BatchSize
	if batch <= 0 {
		batch = 500
	}
	p := Progress{Cursor: opts.Cursor}
	for {
		entries, next, err := s.Scan(ctx, p.Cursor, batch)
		if err != nil {
			return p, fmt.Errorf("keyring: rewrap: %w", err)
		}
		for _, e := range entries {
			p.Scanned++
			if err := k.rewrapOne(ctx, s, e, &p); err != nil {
				return p, err
			}
		}
		p.Cursor = next
		if opts.Progress != nil {
			opts.Progress(p)
		}
		if next == "" {
			return p, nil
		}
	}
}

func (k *Keyring) rewrapOne(ctx context.Context, s store.Store, e store.Entry, p *Progress) error {
	if _, _, err := splitRecord(e.Value); err != nil {
		p.Skipped++
		return nil
	}
	b, err := k.recordBinding(e.Value)
	if errors.Is(err, envelope.ErrExpired) {
		return nil
	}
	if err != nil {
		p.Failed++
		return nil
	}
	if InTransit(b.Purpose) {
		p.InTransit++
		return nil
	}
	keys := k.StoreKeys(b)
	if !contains(keys, e.Key) {
		// The binding names another slot: the record was moved by someone
		// who cannot seal. Leave it; nothing will ever open it here.
		p.Failed++
		return nil
	}
	h, err := RecordHeader(e.Value)
	if err != nil {
		p.Failed++
		return nil
	}
	box, _, _ := splitRecord(e.Value)
	boxHeader, _ := envelope.ParseHeader(box)
	primary := k.PrimaryKeyID()
	if e.Key == keys[0] && h.KeyID == primary && boxHeader.KeyID == primary &&
		h.Version == envelope.Version && boxHeader.Version == envelope.Version {
		p.Current++
		return nil
	}
	plaintext, err := k.OpenRecord(b, e.Value)
	if errors.Is(err, envelope.ErrExpired) {
		return nil
	}
	if err != nil {
		p.Failed++
		return nil
	}
	fresh, err := k.SealRecord(b, plaintext, h.Expiry)
	clear(plaintext)
	if err != nil {
		return fmt.Errorf("keyring: rewrap: %w", err)
	}

	if e.Key == keys[0] {
		ok, err := s.CompareAndSwap(ctx, e.Key, e.Value, fresh, h.Expiry)
		if err != nil {
			return fmt.Errorf("keyring: rewrap: %w", err)
		}
		if ok {
			p.Rewrapped++
		} else {
			p.Changed++
		}
		return nil
	}

	// Move: new copy first, then the old one away, each conditionally.
	if _, err := s.PutIfAbsent(ctx, keys[0], fresh, h.Expiry); err != nil {
		if errors.Is(err, store.ErrInvalidArgument) { // expired meanwhile
			return nil
		}
		return fmt.Errorf("keyring: rewrap: %w", err)
	}
	deleted, err := s.CompareAndSwap(ctx, e.Key, e.Value, nil, h.Expiry)
	if err != nil {
		return fmt.Errorf("keyring: rewrap: %w", err)
	}
	if deleted {
		p.Rewrapped++
		return nil
	}
	// The old entry changed or went while we copied it: withdraw our copy
	// unless something newer has replaced it already.
	if _, err := s.CompareAndSwap(ctx, keys[0], fresh, nil, h.Expiry); err != nil {
		return fmt.Errorf("keyring: rewrap: %w", err)
	}
	p.Changed++
	return nil
}

// TransitSuffix ends the purpose of records in transit: an answer written
// for a waiter that takes it at once. Rewrap leaves them where they were
// written: a waiter that looks for one under each secret's key while it
// moves could miss it in both places. They live no longer than the
// elicitation's TTL, for which the rotation steps keep the old secret.
const TransitSuffix = "/result"

// InTransit reports whether records of purpose are in transit.
func InTransit(purpose string) bool { return strings.HasSuffix(purpose, TransitSuffix) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Take is Lookup that also deletes what it finds, atomically per key.
//
// While a rewrap moves a record, two copies can exist for an instant: Take
// is exactly-once for a single consumer, not among competing consumers.
// Whatever must be consumed once among many (tokens, submitted answers) is
// guarded by a one-shot marker (store.PutIfAbsent), which rewrap never moves.
func (k *Keyring) Take(ctx context.Context, s store.Store, b envelope.Binding) ([]byte, error) {
	return k.chain(b, func(key string) ([]byte, error) { return s.Take(ctx, key) })
}

// Lookup reads the record for b trying the primary store key, then the
// previous ones, then the primary again (a record a rewrap moved between
// the two reads is found there). It returns store.ErrNotFound when none
// holds it.
func (k *Keyring) Lookup(ctx context.Context, s store.Store, b envelope.Binding) ([]byte, error) {
	return k.chain(b, func(key string) ([]byte, error) { return s.Get(ctx, key) })
}

func (k *Keyring) chain(b envelope.Binding, read func(key string) ([]byte, error)) ([]byte, error) {
	keys := k.StoreKeys(b)
	if len(keys) > 1 {
		keys = append(keys, keys[0])
	}
	for _, key := range keys {
		v, err := read(key)
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	return nil, store.ErrNotFound
}
