package envelope_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/envelope"
	"github.com/elicitvault/elicitvault/hkdf"
)

func Example() {
	secret, err := hkdf.New([]byte("an example secret of 32+ bytes!!"))
	if err != nil {
		panic(err)
	}
	sealer, err := envelope.New(secret, nil)
	if err != nil {
		panic(err)
	}
	b := envelope.Binding{Purpose: "pending", Subject: "user-1", SessionID: "session-1", RecordID: "elicitation-1"}
	sealed, err := sealer.Seal(b, []byte(`{"confirm":true}`), time.Now().Add(5*time.Minute))
	if err != nil {
		panic(err)
	}
	plaintext, err := sealer.Open(b, sealed)
	fmt.Println(string(plaintext), err)

	b.SessionID = "session-2"
	_, err = sealer.Open(b, sealed)
	fmt.Println(errors.Is(err, envelope.ErrInvalid))
	// Output:
	// {"confirm":true} <nil>
	// true
}
