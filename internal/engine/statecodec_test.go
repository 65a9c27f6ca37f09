package engine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

const testStateID = "JQ6N5XKXZ2VLPS4ZMZ4YVQW2EA" // a RandomID

func testStates() []*requestState {
	fp := "q83vEjRWeJCrze8SNFZ4kA" // 16 bytes, base64url
	return []*requestState{
		{Asked: &asked{Key: defaultInputKey(testStateID), FP: fp, Mode: ModeForm, ID: testStateID}},
		{Asked: &asked{Key: "confirm", FP: fp, Mode: ModeForm, ID: testStateID}, State: []byte("saved"), Waits: 0},
		{
			Asked: &asked{Key: "login", FP: fp, Mode: ModeURL, ID: testStateID},
			Answers: []answered{
				{FP: fp, ID: "A", Action: Accept, Content: map[string]any{"n": 1.5, "s": "x"}},
				{FP: fp, ID: testStateID, Action: Accept, Wait: true},
			},
			Waits: 3,
		},
	}
}

// Every state the engine writes reads back as it was, in the compact
// encoding, which is smaller than the JSON one.
func TestStateEncoding(t *testing.T) {
	for i, st := range testStates() {
		b, err := encodeState(st)
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != stateCompact {
			t.Fatalf("state %d: not compact: %q", i, b)
		}
		js, _ := json.Marshal(st)
		if len(b) >= len(js) {
			t.Errorf("state %d: %d bytes compact, %d in JSON", i, len(b), len(js))
		}
		got, err := decodeState(b, testStateID)
		if err != nil {
			t.Fatalf("state %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, st) {
			t.Errorf("state %d:\n got %+v %+v\nwant %+v %+v", i, got, got.Asked, st, st.Asked)
		}
		// The ID is the token's: under another, the default key differs
		// and a state does not match its question.
		if other, err := decodeState(b, "ZZZZZZZZZZZZZZZZZZZZZZZZZZ"); err == nil && reflect.DeepEqual(other, st) {
			t.Errorf("state %d read the same under another ID", i)
		}
	}
	// The default key takes no bytes.
	def, _ := encodeState(testStates()[0])
	named := *testStates()[0]
	a := *named.Asked
	a.Key = "elicit-other"
	named.Asked = &a
	custom, _ := encodeState(&named)
	if len(custom) != len(def)+len("elicit-other") {
		t.Errorf("default key: %d bytes, custom key: %d", len(def), len(custom))
	}
}

// A state of an earlier release (JSON) still reads, and what the compact
// form cannot hold is written as JSON.
func TestStateEncodingJSON(t *testing.T) {
	old := []byte(`{"asked":{"key":"elicit-JQ6N5XKX","fp":"q83vEjRWeJCrze8SNFZ4kA","mode":"form","id":"JQ6N5XKXZ2VLPS4ZMZ4YVQW2EA","schema":{"type":"object"}},"waits":1}`)
	st, err := decodeState(old, testStateID)
	if err != nil || st.Asked.Key != "elicit-JQ6N5XKX" || st.Waits != 1 || st.Asked.Mode != ModeForm {
		t.Fatalf("an earlier release's state: %+v %v", st, err)
	}
	if _, err := decodeState(old, "ZZZZZZZZZZZZZZZZZZZZZZZZZZ"); err == nil {
		t.Error("a JSON state read under another elicitation ID")
	}
	odd := &requestState{Asked: &asked{Key: "k", FP: "not a fingerprint", Mode: ModeForm, ID: testStateID}}
	b, err := encodeState(odd)
	if err != nil || b[0] != '{' {
		t.Fatalf("a state with an unusual fingerprint: %q %v, want JSON", b, err)
	}
	if got, err := decodeState(b, testStateID); err != nil || !reflect.DeepEqual(got, odd) {
		t.Fatalf("read back: %+v %v", got, err)
	}
}

func TestStateEncodingRejects(t *testing.T) {
	good, _ := encodeState(testStates()[2])
	bad := [][]byte{
		nil, {}, {stateCompact}, {0x03, 'f'}, {stateCompact, 'x'},
		append(bytes.Clone(good), 0),          // trailing byte
		good[:len(good)-1],                    // truncated
		[]byte(`{"asked":null}`),              // JSON without a question
		[]byte(`{"asked":{"id":"other"}}`),    // JSON of another elicitation
		{stateCompact, 'f', 0x80, 0x00},       // a length that is not minimal
		{stateCompact, 'f', 0xff, 0xff, 0xff}, // a length past the end
	}
	for _, b := range bad {
		if st, err := decodeState(b, testStateID); err == nil {
			t.Errorf("%q read as %+v", b, st)
		}
	}
}

func FuzzDecodeState(f *testing.F) {
	for _, st := range testStates() {
		b, _ := encodeState(st)
		f.Add(b)
		js, _ := json.Marshal(st)
		f.Add(js)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeState(b, testStateID)
		if err != nil {
			return
		}
		again, err := encodeState(st)
		if err != nil {
			t.Fatalf("%q read, but does not encode: %v", b, err)
		}
		// The same state: the same JSON (which does not tell an empty
		// slice or map from none, as no reader of a state does).
		st2, err := decodeState(again, testStateID)
		j1, _ := json.Marshal(st)
		j2, _ := json.Marshal(st2)
		if err != nil || !bytes.Equal(j1, j2) {
			t.Fatalf("%q: %+v, then %q: %+v %v", b, st, again, st2, err)
		}
	})
}

// The requestState of a one-question round (delete_contacts asking to
// confirm, on a stateless call) stays short: every JSON layer between the
// server and the client reads it twice per round trip.
func TestStateSize(t *testing.T) {
	e := newTestEngine(t, Limits{})
	id := RandomID()
	info := &CallInfo{Who: Identity{Session: Sessionless}, Tool: "delete_contacts", Arguments: json.RawMessage(`{"count":3}`)}
	st := &requestState{Asked: &asked{Key: defaultInputKey(id), FP: "q83vEjRWeJCrze8SNFZ4kA", Mode: ModeForm, ID: id}}
	tok, err := issueState(e, info, st, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d characters", len(tok))
	if len(tok) > 220 {
		t.Errorf("a one-question requestState is %d characters, want at most 220", len(tok))
	}
}
