package form

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// schema wraps properties (a JSON object's members) in a form schema.
func schema(props string, required ...string) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{` + props + `}`)
	if len(required) > 0 {
		r, _ := json.Marshal(required)
		b.WriteString(`,"required":` + string(r))
	}
	b.WriteString("}")
	return []byte(b.String())
}

func TestParseAccepts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		raw   []byte
		check func(t *testing.T, s *Schema)
	}{
		{"string with every keyword", schema(`"s":{"type":"string","title":"S","description":"d","minLength":1,"maxLength":5,"format":"email","default":"a@b.c"}`, "s"),
			func(t *testing.T, s *Schema) {
				f := &s.Fields[0]
				if f.Kind != String || f.Title != "S" || f.Description != "d" || *f.MinLength != 1 || *f.MaxLength != 5 ||
					f.Format != "email" || f.Default != "a@b.c" || !f.Required {
					t.Errorf("field = %+v", f)
				}
			}},
		{"number bounds", schema(`"n":{"type":"number","minimum":-1.5,"maximum":2e3,"default":0}`),
			func(t *testing.T, s *Schema) {
				f := &s.Fields[0]
				if f.Kind != Number || *f.Minimum != -1.5 || *f.Maximum != 2000 || f.Default != 0.0 || f.Required {
					t.Errorf("field = %+v", f)
				}
			}},
		{"integer", schema(`"i":{"type":"integer","default":3}`),
			func(t *testing.T, s *Schema) {
				if f := &s.Fields[0]; f.Kind != Integer || f.Default != 3.0 {
					t.Errorf("field = %+v", f)
				}
			}},
		{"boolean", schema(`"b":{"type":"boolean","default":true}`),
			func(t *testing.T, s *Schema) {
				if f := &s.Fields[0]; f.Kind != Boolean || f.Default != true {
					t.Errorf("field = %+v", f)
				}
			}},
		{"untitled enum", schema(`"e":{"type":"string","enum":["a","b"],"default":"b"}`),
			func(t *testing.T, s *Schema) {
				f := &s.Fields[0]
				if f.Kind != Enum || f.style != untitled || !reflect.DeepEqual(f.Options, []Option{{Value: "a"}, {Value: "b"}}) || f.Default != "b" {
					t.Errorf("field = %+v", f)
				}
			}},
		{"titled enum", schema(`"e":{"type":"string","oneOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}`),
			func(t *testing.T, s *Schema) {
				f := &s.Fields[0]
				if f.Kind != Enum || f.style != titled || !reflect.DeepEqual(f.Options, []Option{{"a", "A"}, {"b", "B"}}) {
					t.Errorf("field = %+v", f)
				}
			}},
		{"legacy enumNames", schema(`"e":{"type":"string","enum":["a","b"],"enumNames":["A","B"]}`),
			func(t *testing.T, s *Schema) {
				f := &s.Fields[0]
				if f.Kind != Enum || f.style != legacy || !reflect.DeepEqual(f.Options, []Option{{"a", "A"}, {"b", "B"}}) {
					t.Errorf("field = %+v", f)
				}
			}},
		{"multi-select, untitled", schema(`"m":{"type":"array","items":{"type":"string","enum":["x","y"]},"minItems":1,"maxItems":2,"default":["y"]}`),
			func(t *testing.T, s *Schema) {
				f := &s.Fields[0]
				if f.Kind != MultiSelect || f.style != untitled || *f.MinItems != 1 || *f.MaxItems != 2 || !reflect.DeepEqual(f.Default, []string{"y"}) {
					t.Errorf("field = %+v", f)
				}
			}},
		{"multi-select, titled", schema(`"m":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"}]}}`),
			func(t *testing.T, s *Schema) {
				if f := &s.Fields[0]; f.Kind != MultiSelect || f.style != titled || f.Options[0] != (Option{"x", "X"}) {
					t.Errorf("field = %+v", f)
				}
			}},
		{"property order kept", schema(`"z":{"type":"string"},"a":{"type":"string"},"m":{"type":"string"}`),
			func(t *testing.T, s *Schema) {
				var names []string
				for _, f := range s.Fields {
					names = append(names, f.Name)
				}
				if !reflect.DeepEqual(names, []string{"z", "a", "m"}) {
					t.Errorf("order = %v", names)
				}
			}},
		{"$schema, title, additionalProperties false", []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","title":"T","description":"D","additionalProperties":false,"properties":{"s":{"type":"string"}}}`),
			func(t *testing.T, s *Schema) {
				if len(s.Fields) != 1 {
					t.Errorf("fields = %+v", s.Fields)
				}
			}},
		{"empty properties", []byte(`{"type":"object","properties":{}}`),
			func(t *testing.T, s *Schema) {
				if len(s.Fields) != 0 {
					t.Errorf("fields = %+v", s.Fields)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.raw)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tc.check(t, s)
		})
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		raw   string
		field string // the field the error names; "" for the schema
	}{
		{"not JSON", `{`, ""},
		{"not an object", `[]`, ""},
		{"trailing data", `{"type":"object","properties":{}} {}`, ""},
		{"duplicate key", `{"type":"object","type":"object","properties":{}}`, ""},
		{"no type", `{"properties":{}}`, ""},
		{"other type", `{"type":"array","properties":{}}`, ""},
		{"no properties", `{"type":"object"}`, ""},
		{"unknown keyword", `{"type":"object","properties":{},"allOf":[]}`, ""},
		{"additionalProperties true", `{"type":"object","properties":{},"additionalProperties":true}`, ""},
		{"required not a list", `{"type":"object","properties":{},"required":"a"}`, ""},
		{"required unknown", string(schema(`"a":{"type":"string"}`, "b")), "b"},
		{"nested object", string(schema(`"o":{"type":"object","properties":{}}`)), "o"},
		{"no type on field", string(schema(`"f":{"title":"F"}`)), "f"},
		{"empty name", string(schema(`"":{"type":"string"}`)), ""},
		{"property not an object", string(schema(`"f":"string"`)), "f"},
		{"pattern", string(schema(`"f":{"type":"string","pattern":"^a$"}`)), "f"},
		{"unknown format", string(schema(`"f":{"type":"string","format":"ipv4"}`)), "f"},
		{"maxLength < minLength", string(schema(`"f":{"type":"string","minLength":3,"maxLength":2}`)), "f"},
		{"negative minLength", string(schema(`"f":{"type":"string","minLength":-1}`)), "f"},
		{"fractional maxLength", string(schema(`"f":{"type":"string","maxLength":1.5}`)), "f"},
		{"huge maxLength", string(schema(`"f":{"type":"string","maxLength":99999999999}`)), "f"},
		{"maximum < minimum", string(schema(`"f":{"type":"number","minimum":3,"maximum":2}`)), "f"},
		{"minimum out of range", string(schema(`"f":{"type":"number","minimum":1e999}`)), "f"},
		{"non-numeric minimum", string(schema(`"f":{"type":"number","minimum":"1"}`)), "f"},
		{"empty enum", string(schema(`"f":{"type":"string","enum":[]}`)), "f"},
		{"repeated enum value", string(schema(`"f":{"type":"string","enum":["a","a"]}`)), "f"},
		{"non-string enum value", string(schema(`"f":{"type":"string","enum":[1]}`)), "f"},
		{"enumNames mismatch", string(schema(`"f":{"type":"string","enum":["a","b"],"enumNames":["A"]}`)), "f"},
		{"oneOf extra key", string(schema(`"f":{"type":"string","oneOf":[{"const":"a","title":"A","x":1}]}`)), "f"},
		{"oneOf empty title", string(schema(`"f":{"type":"string","oneOf":[{"const":"a","title":""}]}`)), "f"},
		{"oneOf repeated const", string(schema(`"f":{"type":"string","oneOf":[{"const":"a","title":"A"},{"const":"a","title":"B"}]}`)), "f"},
		{"array without items", string(schema(`"f":{"type":"array"}`)), "f"},
		{"array of numbers", string(schema(`"f":{"type":"array","items":{"type":"number","enum":[1]}}`)), "f"},
		{"items with extra keyword", string(schema(`"f":{"type":"array","items":{"type":"string","enum":["a"],"minLength":1}}`)), "f"},
		{"maxItems < minItems", string(schema(`"f":{"type":"array","items":{"type":"string","enum":["a"]},"minItems":2,"maxItems":1}`)), "f"},
		{"default of the wrong kind", string(schema(`"f":{"type":"boolean","default":"yes"}`)), "f"},
		{"default outside the enum", string(schema(`"f":{"type":"string","enum":["a"],"default":"b"}`)), "f"},
		{"default breaks maxLength", string(schema(`"f":{"type":"string","maxLength":1,"default":"ab"}`)), "f"},
		{"non-string title", string(schema(`"f":{"type":"string","title":1}`)), "f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.raw))
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", s)
			}
			var se *SchemaError
			if !errors.As(err, &se) || !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("error %v (%T) is not a *SchemaError matching ErrInvalidSchema", err, err)
			}
			if se.Field != tc.field {
				t.Errorf("error names field %q, want %q (%v)", se.Field, tc.field, err)
			}
		})
	}
}

func TestParseTooMany(t *testing.T) {
	t.Parallel()
	var props []string
	for i := range MaxFields + 1 {
		props = append(props, `"f`+strings.Repeat("x", i%7)+string(rune('a'+i%26))+`_`+jsonInt(i)+`":{"type":"boolean"}`)
	}
	if _, err := Parse(schema(strings.Join(props, ","))); !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("%d properties: err = %v", MaxFields+1, err)
	}
	var opts []string
	for i := range MaxOptions + 1 {
		opts = append(opts, `"`+jsonInt(i)+`"`)
	}
	if _, err := Parse(schema(`"e":{"type":"string","enum":[` + strings.Join(opts, ",") + `]}`)); !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("%d options: err = %v", MaxOptions+1, err)
	}
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }

// every is a schema with one field of each kind and style.
var every = schema(`"name":{"type":"string","title":"Name","minLength":2,"maxLength":8},`+
	`"email":{"type":"string","format":"email"},`+
	`"site":{"type":"string","format":"uri"},`+
	`"day":{"type":"string","format":"date"},`+
	`"at":{"type":"string","format":"date-time"},`+
	`"age":{"type":"integer","minimum":0,"maximum":150},`+
	`"score":{"type":"number","minimum":0.5},`+
	`"ok":{"type":"boolean"},`+
	`"plan":{"type":"string","enum":["free","pro"]},`+
	`"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]},`+
	`"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"maxItems":2}`, "name")

func TestValidate(t *testing.T) {
	t.Parallel()
	s, err := Parse(every)
	if err != nil {
		t.Fatal(err)
	}
	good := `{"name":"Ann","email":"ann@example.com","site":"https://example.com/x","day":"2026-11-26","at":"2026-11-26T10:00:00Z",` +
		`"age":30,"score":0.5,"ok":false,"plan":"pro","size":"l","tags":["c","a"]}`
	got, err := s.ValidateJSON([]byte(good))
	if err != nil {
		t.Fatalf("valid content refused: %v", err)
	}
	if got["age"] != 30.0 || !reflect.DeepEqual(got["tags"], []string{"c", "a"}) || got["ok"] != false {
		t.Errorf("normalized content = %v", got)
	}

	for _, tc := range []struct {
		name, content, path string
	}{
		{"not an object", `[]`, ""},
		{"two objects", `{"name":"Ann"} {}`, ""},
		{"unknown field", `{"name":"Ann","x":1}`, "/x"},
		{"required missing", `{"email":"ann@example.com"}`, "/name"},
		{"too short", `{"name":"A"}`, "/name"},
		{"too long (runes)", `{"name":"ééééééééé"}`, "/name"},
		{"string of a number", `{"name":12}`, "/name"},
		{"email with a display name", `{"name":"Ann","email":"Ann <ann@example.com>"}`, "/email"},
		{"email with a space", `{"name":"Ann","email":"ann @example.com"}`, "/email"},
		{"relative uri", `{"name":"Ann","site":"/x"}`, "/site"},
		{"bad date", `{"name":"Ann","day":"2026-13-01"}`, "/day"},
		{"date-time without zone", `{"name":"Ann","at":"2026-11-26T10:00:00"}`, "/at"},
		{"fractional integer", `{"name":"Ann","age":1.5}`, "/age"},
		{"over maximum", `{"name":"Ann","age":151}`, "/age"},
		{"under minimum", `{"name":"Ann","score":0.25}`, "/score"},
		{"number as string", `{"name":"Ann","score":"1"}`, "/score"},
		{"boolean as string", `{"name":"Ann","ok":"true"}`, "/ok"},
		{"not an option", `{"name":"Ann","plan":"team"}`, "/plan"},
		{"title instead of const", `{"name":"Ann","size":"Large"}`, "/size"},
		{"multi not an array", `{"name":"Ann","tags":"a"}`, "/tags"},
		{"multi unknown item", `{"name":"Ann","tags":["d"]}`, "/tags/0"},
		{"multi repeated item", `{"name":"Ann","tags":["a","a"]}`, "/tags/1"},
		{"multi too many", `{"name":"Ann","tags":["a","b","c"]}`, "/tags"},
		{"multi non-string item", `{"name":"Ann","tags":[1]}`, "/tags/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.ValidateJSON([]byte(tc.content))
			var ce *ContentError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidContent) {
				t.Fatalf("err = %v (%T), want a *ContentError", err, err)
			}
			if ce.Path != tc.path {
				t.Errorf("path = %q, want %q (%v)", ce.Path, tc.path, err)
			}
		})
	}
}

// TestErrorsQuoteNoContent checks that a content error never carries the
// value it refuses: content is the user's, and errors reach logs.
func TestErrorsQuoteNoContent(t *testing.T) {
	t.Parallel()
	s, err := Parse(every)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "hunter2-SECRET-VALUE"
	for _, content := range []map[string]any{
		{"name": secret + secret},
		{"name": "Ann", "email": secret},
		{"name": "Ann", "plan": secret},
		{"name": "Ann", "tags": []any{secret}},
		{"name": "Ann", "site": secret},
		{"name": "Ann", "age": secret},
	} {
		_, err := s.Validate(content)
		if err == nil {
			t.Fatalf("%v accepted", content)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error quotes the content: %v", err)
		}
	}
}

func TestPointer(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a":   "/a",
		"a/b": "/a~1b",
		"a~b": "/a~0b",
		"~/":  "/~0~1",
	} {
		if got := pointer(in); got != want {
			t.Errorf("pointer(%q) = %q, want %q", in, got, want)
		}
	}
	if got := pointer(strings.Repeat("é", 100)); !strings.HasSuffix(got, "…") || len(got) > 1+64+len("…") {
		t.Errorf("a long name is not clipped: %q", got)
	}
}

// TestCanonicalEncoding checks that what is sent is what is validated
// against: the encoding of a parsed schema parses to the same schema, and
// encodes to the same bytes again.
func TestCanonicalEncoding(t *testing.T) {
	t.Parallel()
	for _, raw := range [][]byte{
		every,
		schema(`"e":{"type":"string","enum":["a","b"],"enumNames":["A","B"],"default":"a"}`),
		schema(`"m":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"}]},"minItems":0,"default":["x"]}`),
		schema(`"n":{"type":"number","minimum":-1e-7,"maximum":1e21,"default":-1e-8}`),
		schema(`"s":{"type":"string","description":"<b>\u2028</b>","default":"\u00e9"}`, "s"),
	} {
		assertCanonical(t, raw)
	}
}

func assertCanonical(t *testing.T, raw []byte) {
	t.Helper()
	s, err := Parse(raw)
	if err != nil {
		t.Fatalf("Parse(%s): %v", raw, err)
	}
	enc, err := s.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	s2, err := Parse(enc)
	if err != nil {
		t.Fatalf("the encoding %s does not parse: %v", enc, err)
	}
	if !reflect.DeepEqual(s.Fields, s2.Fields) {
		t.Fatalf("the encoding changes the schema:\n%+v\n%+v", s.Fields, s2.Fields)
	}
	enc2, _ := s2.MarshalJSON()
	if !bytes.Equal(enc, enc2) {
		t.Fatalf("the encoding is not canonical:\n%s\n%s", enc, enc2)
	}
	if !json.Valid(enc) {
		t.Fatalf("the encoding is not JSON: %s", enc)
	}
}

// FuzzParse feeds the parser arbitrary schemas: it never panics, what it
// accepts encodes canonically, and content validation against what it
// accepted never panics and never quotes the content.
func FuzzParse(f *testing.F) {
	f.Add(every, []byte(`{"name":"Ann","tags":["a"]}`))
	f.Add(schema(`"e":{"type":"string","enum":["a","b"],"enumNames":["A","B"]}`), []byte(`{"e":"a"}`))
	f.Add(schema(`"m":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"}]}}`), []byte(`{"m":["x","x"]}`))
	f.Add(schema(`"n":{"type":"integer","minimum":-1,"maximum":1,"default":0}`, "n"), []byte(`{"n":1e400}`))
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string","format":"date-time"}}}`), []byte(`{"a":"2026-01-01T00:00:00+01:00"}`))
	f.Add([]byte(`{"type":"object","properties":{}}`), []byte(`{}`))
	f.Add([]byte(`{"type":"object","properties":{"a~/b":{"type":"boolean"}},"required":["a~/b"]}`), []byte(`{"a~/b":"x"}`))
	f.Fuzz(func(t *testing.T, raw, content []byte) {
		s, err := Parse(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("Parse error %v does not match ErrInvalidSchema", err)
			}
			return
		}
		assertCanonical(t, raw)
		if _, err := s.ValidateJSON(content); err != nil && !errors.Is(err, ErrInvalidContent) {
			t.Fatalf("ValidateJSON error %v does not match ErrInvalidContent", err)
		}
	})
}
