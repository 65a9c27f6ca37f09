package mcpgo

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// mayNameStateByte is mayNameState as a byte-by-byte scan, the reference
// the faster one must agree with.
func mayNameStateByte(msg []byte) bool {
	for _, b := range msg {
		if b == '\\' || b >= utf8.RuneSelf {
			return true
		}
	}
	const name = "requeststate"
	for i := 0; i+len(name) <= len(msg); i++ {
		if bytes.EqualFold(msg[i:i+len(name)], []byte(name)) {
			return true
		}
	}
	return false
}

// TestMayNameState: every spelling that JSON may read as the requestState
// key is caught, wherever it stands; a body without one is let through.
func TestMayNameState(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"params":{"requestState":"ev2.x"}}`, true},
		{`requestState`, true},
		{`REQUESTSTATE`, true},
		{`xrEqUeStStAtE`, true},
		{`requestStat`, false},
		{`equestState`, false},
		{`{"request\u0053tate":"x"}`, true}, // an escape
		{`{"requeſtState":"x"}`, true},      // a long s, which JSON folds to s
		{`{"q":"Q","requests":"tate"}`, false},
		{"\x80", true},
		{"0123456\x80", true},
		{"01234567\x80", true},
		{`{"qqqqqqqqqqqqqqqqqqqq":"QQQQQQQQQQQQQ"}`, false},
		{``, false},
	} {
		if got := mayNameState([]byte(c.msg)); got != c.want {
			t.Errorf("mayNameState(%q) = %v, want %v", c.msg, got, c.want)
		}
		if got := mayNameStateByte([]byte(c.msg)); got != c.want {
			t.Errorf("reference(%q) = %v, want %v", c.msg, got, c.want)
		}
	}
	// Random bodies over an alphabet dense in the name's letters, with
	// the name planted at every offset and case.
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = `rReEqQuUsStTaA"{}:,x \`
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet)-1)] // no backslash
		}
		if r.IntN(4) == 0 && len(b) >= 12 {
			at := r.IntN(len(b) - 11)
			for i, c := range []byte("requeststate") {
				if r.IntN(2) == 0 {
					c -= 'a' - 'A'
				}
				b[at+i] = c
			}
		}
		if r.IntN(50) == 0 && len(b) > 0 {
			b[r.IntN(len(b))] = byte(0x80 + r.IntN(0x80))
		}
		if got, want := mayNameState(b), mayNameStateByte(b); got != want {
			t.Fatalf("mayNameState(%q) = %v, the byte scan says %v", b, got, want)
		}
	}
}

func FuzzMayNameState(f *testing.F) {
	f.Add([]byte(`{"params":{"requestState":"ev2.x"}}`))
	f.Add([]byte(`{"params":{"ReQuEsTsTaTe":1}}`))
	f.Add([]byte(`{"params":{"name":"x"}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		if got, want := mayNameState(msg), mayNameStateByte(msg); got != want {
			t.Fatalf("mayNameState(%q) = %v, the byte scan says %v", msg, got, want)
		}
	})
}
