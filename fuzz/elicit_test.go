package fuzz

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/form"
	"github.com/elicitvault/elicitvault/internal/form/formtest"
)

const fuzzSchema = formtest.EveryKind

// FuzzElicitContent validates arbitrary content against a schema with every
// field kind: it never panics, errors are ContentErrors, and what it accepts
// validates again to the same value.
func FuzzElicitContent(f *testing.F) {
	s, err := form.Parse([]byte(fuzzSchema))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{"name":"Ann"}`,
		`{"name":"Ann","email":"a@b.c","site":"https://x.y","born":"2000-01-02","at":"2000-01-02T03:04:05Z","age":30,"score":0.5,"ok":true,"color":"r","size":"m","tags":["a","b"]}`,
		`{"name":""}`, `{"name":"Ann","age":1e400}`, `{"name":"Ann","age":-0}`, `{"name":"Ann","tags":["a","a"]}`,
		`{"name":"Ann","x":1}`, `[]`, `null`, `{"name":"Ann"}{}`, `{"name":"\ud800"}`, `{"name":"Ann","age":1.0}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := s.ValidateJSON(raw)
		if err != nil {
			var ce *elicit.ContentError
			if !errors.As(err, &ce) || !errors.Is(err, elicit.ErrInvalidContent) {
				t.Fatalf("error %v is not a ContentError", err)
			}
			return
		}
		again, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("accepted content does not encode: %v", err)
		}
		if _, err := s.ValidateJSON(again); err != nil {
			t.Fatalf("accepted content %s fails validation again: %v", again, err)
		}
	})
}

// FuzzElicitSchema parses arbitrary schemas: it never panics, refusals are
// SchemaErrors, and an accepted schema's canonical encoding is a fixed point.
func FuzzElicitSchema(f *testing.F) {
	f.Add([]byte(fuzzSchema))
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string","default":"x"}},"required":["a"]}`))
	f.Add([]byte(`{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}}}`))
	f.Add([]byte(`{"type":"object","properties":{"n":{"type":"object"}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := elicit.ParseSchema(raw)
		if err != nil {
			var se *elicit.SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a SchemaError", err)
			}
			return
		}
		enc, _ := s.MarshalJSON()
		s2, err := elicit.ParseSchema(enc)
		if err != nil {
			t.Fatalf("canonical encoding %s does not parse: %v", enc, err)
		}
		enc2, _ := s2.MarshalJSON()
		if string(enc) != string(enc2) {
			t.Fatalf("canonical encoding is not a fixed point:\n%s\n%s", enc, enc2)
		}
	})
}
