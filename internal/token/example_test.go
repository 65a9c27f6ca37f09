package token_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store/memory"
)

func Example() {
	keys, err := ring.New([]byte("an example secret of 32+ bytes!!"), nil)
	if err != nil {
		panic(err)
	}
	st := memory.New(nil)
	defer st.Close()
	tokens, err := token.NewService(keys, st)
	if err != nil {
		panic(err)
	}

	// Issue a URL-mode callback token for one elicitation.
	c := &token.Claims{Kind: token.URL, SessionID: "session-1", Subject: "user-1", ElicitationID: "elicitation-1"}
	tok, err := tokens.Issue(c, 0, token.Compact) // 0: the kind's default TTL
	if err != nil {
		panic(err)
	}
	fmt.Println(tok[:4], len(tok) <= 160)

	// Verify checks kind, expiry and the binding the caller asks for.
	got, err := tokens.Verify(tok, token.Expect{Kind: token.URL, SessionID: "session-1", Subject: "user-1"})
	fmt.Println(got.ElicitationID, err)
	_, err = tokens.Verify(tok, token.Expect{Kind: token.URL, SessionID: "session-1", Subject: "user-2"})
	fmt.Println(errors.Is(err, token.ErrInvalid))

	// Consume uses it up, once, across every process sharing the store.
	_, err = tokens.Consume(context.Background(), tok, token.Expect{Kind: token.URL})
	fmt.Println(err)
	_, err = tokens.Consume(context.Background(), tok, token.Expect{Kind: token.URL})
	fmt.Println(err)
	// Output:
	// ev1. true
	// elicitation-1 <nil>
	// true
	// <nil>
	// token: replayed
}

func ExampleHashArgs() {
	// The same arguments, serialised differently, bind the same way.
	a, _ := token.HashArgs([]byte(`{"ids":[1,2],"confirm":true}`))
	b, _ := token.HashArgs([]byte(`{ "confirm": true, "ids": [1.0, 2e0] }`))
	fmt.Println(a == b)
	// Output: true
}
