package engine

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// bigSchema returns a form schema of n boolean fields.
func bigSchema(n int) json.RawMessage {
	var props []string
	for i := range n {
		props = append(props, fmt.Sprintf(`"field%d":{"type":"boolean","title":"Field number %d"}`, i, i))
	}
	return json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`)
}

// The requestState of a form carries no schema: the retry validates the
// answer against the schema the handler asks with again (the fingerprint
// binds the two), so a large schema does not make the requestState, sent
// to the client and back every round, larger.
func TestRequestStateWithoutSchema(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, Limits{})
	info := &CallInfo{Who: Identity{Subject: "alice", Session: Sessionless}, Tool: "book", Arguments: []byte(`{}`)}
	var lengths []int
	for _, n := range []int{1, 100} {
		rd := &round{e: e}
		q := &Ask{ID: "ELICITATIONID0123456789ABC", Mode: ModeForm, Message: "Book it?", Schema: bigSchema(n), TTL: time.Minute}
		if _, err := (inputPath{e}).inputRequest(ctx, rd, q); err == nil {
			t.Fatal("inputRequest did not stop the run")
		}
		tok, err := issueState(e, info, &requestState{Answers: rd.answers, Asked: rd.ask}, rd.ttl)
		if err != nil {
			t.Fatal(err)
		}
		lengths = append(lengths, len(tok))
	}
	if lengths[0] != lengths[1] {
		t.Errorf("requestState of 1 field: %d characters, of 100 fields: %d: the schema is in it", lengths[0], lengths[1])
	}
}

// A requestState issued by an earlier version, whose asked carries the
// schema, still continues its call.
func TestRequestStateWithSchemaStillRead(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, Limits{})
	info := &CallInfo{Who: Identity{Subject: "alice", Session: Sessionless}, Tool: "book", Arguments: []byte(`{}`)}
	b, err := BindState(info.Who, info.Tool, info.Arguments)
	if err != nil {
		t.Fatal(err)
	}
	old := `{"asked":{"key":"confirm","fp":"abc","mode":"form","id":"e1","schema":{"type":"object","properties":{"confirm":{"type":"boolean"}}}}}`
	tok, err := e.IssueState(b, "e1", []byte(old), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	answers, _, _, use, err := (inputPath{e}).continueRound(ctx, info, tok,
		map[string]json.RawMessage{"confirm": json.RawMessage(`{"action":"accept","content":{"confirm":true}}`)})
	if err != nil || use == nil || len(answers) != 1 || answers[0].Action != "accept" || answers[0].Content["confirm"] != true || answers[0].FP != "abc" {
		t.Fatalf("continueRound = %+v, %v", answers, err)
	}
}

// The fingerprint of an elicitation is what requestStates and pending
// records of every version carry: it must stay the same bytes.
func TestFingerprintStable(t *testing.T) {
	old := func(q *Ask) string { // the first version's, with fmt
		h := sha256.New()
		for _, f := range []string{q.Mode, q.Message} {
			fmt.Fprintf(h, "%d:%s", len(f), f)
		}
		h.Write(q.Schema)
		return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
	}
	for _, q := range []*Ask{
		{Mode: ModeForm, Message: "Delete 47 contacts? This cannot be undone.", Schema: bigSchema(1)},
		{Mode: ModeURL, Message: "Sign in"},
		{Mode: ModeForm, Message: "", Schema: nil},
		{Mode: ModeForm, Message: strings.Repeat("long message ", 100), Schema: bigSchema(50)},
		{Mode: "x:1", Message: "1:x"},
	} {
		if got, want := computeFingerprint(q), old(q); got != want {
			t.Errorf("%q: fingerprint %s, want %s", q.Message, got, want)
		}
	}
}

// FuzzPlainString holds plainString to encoding/json: what it reads, the
// decoder reads the same.
func FuzzPlainString(f *testing.F) {
	for _, s := range []string{`"accept"`, `"dec\u006cine"`, `"a"b"`, `""`, `"`, `"é"`, "\"\x01\"", `5`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := plainString(raw)
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal(raw, &want); err != nil || got != want {
			t.Fatalf("%q: plainString %q, encoding/json %q %v", raw, got, want, err)
		}
	})
}
