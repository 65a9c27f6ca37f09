package envelope_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/keyschedule"
)

func Example() {
	secret, err := keyschedule.New([]byte("an example secret of 32+ bytes!!"))
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

// Small records on a hot path can be sealed and opened in the caller's
// buffers, here arrays on the stack, without any allocation.
func ExampleSealer_AppendSeal() {
	secret, err := keyschedule.New([]byte("an example secret of 32+ bytes!!"))
	if err != nil {
		panic(err)
	}
	sealer, err := envelope.New(secret, nil)
	if err != nil {
		panic(err)
	}
	b := envelope.Binding{Purpose: "token/url", Unbound: true}
	var buf [128]byte
	record := append(buf[:0], "claims"...)
	record, err = sealer.AppendSeal(record[:0], b, record, time.Now().Add(time.Minute)) // in place
	if err != nil {
		panic(err)
	}
	fmt.Println(len(record) == len("claims")+envelope.Overhead)

	plaintext, _, err := sealer.AppendOpen(record[:0], b, record) // in place again
	fmt.Println(string(plaintext), err)
	// Output:
	// true
	// claims <nil>
}
