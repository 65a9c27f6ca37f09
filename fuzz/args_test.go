package fuzz

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/elicitvault/elicitvault/internal/token"
)

// FuzzHashArgs hashes arbitrary bytes as a tool call's arguments (what a
// client sends, and what a request-state token is bound to). It must never
// panic; it accepts only a JSON object (or nothing, or null); and the hash
// is a function of the arguments' meaning: the same object encoded again
// by encoding/json (keys reordered, escapes and number spellings changed)
// hashes the same.
func FuzzHashArgs(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, ` {"a":1} `, `{"b":2,"a":1}`, `{"a":[1,2,{"c":"d"}],"b":null}`,
		`{"n":1e21,"m":-0,"f":0.1,"i":9007199254740993}`, `{"s":"\u00e9\ud83d\ude00<>&\n"}`,
		`{"a":1,"a":2}`, `[1]`, `"x"`, `{"a":1`, `{"\ud800":1}`, `{"big":1e400}`,
		`{"deep":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		"{\"bad\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		h, err := token.HashArgs(args)
		if err != nil {
			if !errors.Is(err, token.ErrArgs) {
				t.Fatalf("error %v is not ErrArgs", err)
			}
			return
		}
		var v any
		if len(args) == 0 {
			return
		}
		if err := json.Unmarshal(args, &v); err != nil {
			t.Fatalf("HashArgs accepted what encoding/json refuses: %v", err)
		}
		if v == nil {
			return // null
		}
		if _, ok := v.(map[string]any); !ok {
			t.Fatalf("HashArgs accepted a %T", v)
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		h2, err := token.HashArgs(again)
		if err != nil {
			t.Fatalf("the re-encoded arguments were refused: %v", err)
		}
		if h != h2 {
			t.Fatalf("the same arguments hash differently:\n%q\n%q", args, again)
		}
	})
}
