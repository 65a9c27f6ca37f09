package ring_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/ring"
)

// Load reads the secrets with a Getenv func; os.Getenv is the default.
// Here a map stands in for the environment of a node in the middle of a
// rotation: the new secret is the primary, the old one is still listed as
// previous, so records sealed before the switch keep opening.
func ExampleLoad() {
	oldSecret := "an old secret of thirty-two bytes or more"
	newSecret := "the new secret, also thirty-two bytes or more"

	before, err := ring.Load(ring.LoadOptions{Getenv: mapEnv(map[string]string{
		ring.EnvSecret: oldSecret,
	})})
	if err != nil {
		log.Fatal(err)
	}
	b := envelope.Binding{Purpose: "pending", Subject: "user-1", SessionID: "session-1", RecordID: "elicitation-1"}
	record, err := before.SealRecord(b, []byte(`{"confirm":true}`), time.Now().Add(5*time.Minute))
	if err != nil {
		log.Fatal(err)
	}

	after, err := ring.Load(ring.LoadOptions{Getenv: mapEnv(map[string]string{
		ring.EnvSecret:   newSecret,
		ring.EnvPrevious: oldSecret, // comma-separated, newest first
	})})
	if err != nil {
		log.Fatal(err)
	}
	plaintext, err := after.OpenRecord(b, record)
	fmt.Println(string(plaintext), err)
	fmt.Println(len(after.KeyIDs()), "key IDs; the primary is new:", after.PrimaryKeyID() != before.PrimaryKeyID())

	// A missing secret is an error, never silent plaintext.
	_, err = ring.Load(ring.LoadOptions{Getenv: mapEnv(nil)})
	fmt.Println(errors.Is(err, ring.ErrNoSecret))
	// Output:
	// {"confirm":true} <nil>
	// 2 key IDs; the primary is new: true
	// true
}

func mapEnv(m map[string]string) func(string) string {
	return func(name string) string { return m[name] }
}
