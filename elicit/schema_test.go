package elicit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func TestParseSchemaAccepts(t *testing.T) {
	for _, raw := range []string{
		`{"type":"object","properties":{"name":{"type":"string"}}}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"string","title":"A","description":"d","minLength":1,"maxLength":5,"default":"abc"}},"required":["a"]}`,
		`{"type":"object","properties":{"e":{"type":"string","format":"email"},"u":{"type":"string","format":"uri"},"d":{"type":"string","format":"date"},"t":{"type":"string","format":"date-time"}}}`,
		`{"type":"object","properties":{"n":{"type":"number","minimum":-1.5,"maximum":2.5,"default":0.5},"i":{"type":"integer","minimum":0,"maximum":10,"default":3}}}`,
		`{"type":"object","properties":{"b":{"type":"boolean","default":true}}}`,
		`{"type":"object","properties":{"c":{"type":"string","enum":["red","green"],"default":"red"}}}`,
		`{"type":"object","properties":{"c":{"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}],"default":"g"}}}`,
		`{"type":"object","properties":{"c":{"type":"string","enum":["r","g"],"enumNames":["Red","Green"]}}}`,
		`{"type":"object","properties":{"m":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b","c"]},"default":["a"]}}}`,
		`{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]},"default":["b"]}}}`,
		`{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}`,
	} {
		s, err := ParseSchema([]byte(raw))
		if err != nil {
			t.Errorf("ParseSchema(%s): %v", raw, err)
			continue
		}
		// The canonical encoding parses to the same canonical encoding.
		enc, _ := s.MarshalJSON()
		s2, err := ParseSchema(enc)
		if err != nil {
			t.Errorf("re-parse of %s: %v", enc, err)
			continue
		}
		enc2, _ := s2.MarshalJSON()
		if string(enc) != string(enc2) {
			t.Errorf("canonical encoding not stable:\n%s\n%s", enc, enc2)
		}
	}
}

func TestParseSchemaRefuses(t *testing.T) {
	for _, tc := range []struct{ raw, field string }{
		{`[]`, ""},
		{`{"type":"array","properties":{}}`, ""},
		{`{"properties":{"a":{"type":"string"}}}`, ""},
		{`{"type":"object"}`, ""},
		{`{"type":"object","properties":{"a":{"type":"string"}},"allOf":[]}`, ""},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`, "b"},
		{`{"type":"object","properties":{"nested":{"type":"object","properties":{"x":{"type":"string"}}}}}`, "nested"},
		{`{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`, "a"},
		{`{"type":"object","properties":{"a":{"type":"string","format":"ipv4"}}}`, "a"},
		{`{"type":"object","properties":{"a":{"type":"string","minLength":-1}}}`, "a"},
		{`{"type":"object","properties":{"a":{"type":"string","minLength":1.5}}}`, "a"},
		{`{"type":"object","properties":{"a":{"type":"string","minLength":5,"maxLength":2}}}`, "a"},
		{`{"type":"object","properties":{"a":{"type":"string","default":3}}}`, "a"},
		{`{"type":"object","properties":{"a":{"type":"string","maxLength":2,"default":"abc"}}}`, "a"},
		{`{"type":"object","properties":{"n":{"type":"number","minimum":3,"maximum":1}}}`, "n"},
		{`{"type":"object","properties":{"n":{"type":"integer","default":1.5}}}`, "n"},
		{`{"type":"object","properties":{"n":{"type":"number","multipleOf":2}}}`, "n"},
		{`{"type":"object","properties":{"b":{"type":"boolean","default":"yes"}}}`, "b"},
		{`{"type":"object","properties":{"e":{"type":"string","enum":[]}}}`, "e"},
		{`{"type":"object","properties":{"e":{"type":"string","enum":[1,2]}}}`, "e"},
		{`{"type":"object","properties":{"e":{"type":"string","enum":["a","a"]}}}`, "e"},
		{`{"type":"object","properties":{"e":{"type":"string","enum":["a"],"default":"b"}}}`, "e"},
		{`{"type":"object","properties":{"e":{"type":"string","enum":["a","b"],"enumNames":["A"]}}}`, "e"},
		{`{"type":"object","properties":{"e":{"type":"string","oneOf":[{"const":"a"}]}}}`, "e"},
		{`{"type":"object","properties":{"e":{"type":"string","oneOf":[{"const":"a","title":"A","x":1}]}}}`, "e"},
		{`{"type":"object","properties":{"m":{"type":"array","items":{"type":"string"}}}}`, "m"},
		{`{"type":"object","properties":{"m":{"type":"array","items":{"type":"object","properties":{}}}}}`, "m"},
		{`{"type":"object","properties":{"m":{"type":"array"}}}`, "m"},
		{`{"type":"object","properties":{"m":{"type":"array","items":{"type":"integer","enum":[1]}}}}`, "m"},
		{`{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a"]},"default":["z"]}}}`, "m"},
		{`{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a"]},"uniqueItems":true}}}`, "m"},
		{`{"type":"object","properties":{"x":{"type":["string","null"]}}}`, "x"},
		{`{"type":"object","properties":{"x":{"$ref":"#/x"}}}`, "x"},
		{`{"type":"object","properties":{"x":{"type":"null"}}}`, "x"},
		{`{"type":"object","properties":{"x":true}}`, "x"},
		{`{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":true}`, ""},
		{`{"type":"object","properties":{"x":{"type":"string"},"x":{"type":"string"}}}`, ""},
	} {
		_, err := ParseSchema([]byte(tc.raw))
		var se *SchemaError
		if !errors.As(err, &se) {
			t.Errorf("ParseSchema(%s) = %v, want a *SchemaError", tc.raw, err)
			continue
		}
		if !errors.Is(err, errInvalidSchema) {
			t.Errorf("ParseSchema(%s): %v is not errInvalidSchema", tc.raw, err)
		}
		if se.Field != tc.field {
			t.Errorf("ParseSchema(%s): field %q, want %q (%v)", tc.raw, se.Field, tc.field, err)
		}
		if tc.field != "" && !strings.Contains(err.Error(), `"`+tc.field+`"`) {
			t.Errorf("ParseSchema(%s): error %q does not name the field", tc.raw, err)
		}
	}
}

type signup struct {
	Name       string   `json:"name" jsonschema:"your name"`
	Email      string   `json:"email"`
	Age        int      `json:"age,omitempty"`
	Score      float64  `json:"score,omitempty"`
	Newsletter bool     `json:"newsletter,omitempty"`
	Plan       string   `json:"plan,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Nick       *string  `json:"nick,omitempty"`
}

func signupSchema() (*Schema, error) {
	return SchemaFor[signup](func(s *jsonschema.Schema) error {
		s.Properties["email"].Format = "email"
		s.Properties["name"].MinLength = jsonschema.Ptr(1)
		s.Properties["name"].MaxLength = jsonschema.Ptr(10)
		s.Properties["age"].Minimum = jsonschema.Ptr(0.0)
		s.Properties["age"].Maximum = jsonschema.Ptr(150.0)
		s.Properties["plan"].Enum = []any{"free", "pro"}
		s.Properties["plan"].Default = json.RawMessage(`"free"`)
		s.Properties["tags"].Items.Enum = []any{"a", "b", "c"}
		s.Properties["tags"].MaxItems = jsonschema.Ptr(2)
		return nil
	})
}

func TestSchemaForType(t *testing.T) {
	s, err := signupSchema()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Fields(), []string{"name", "email", "age", "score", "newsletter", "plan", "tags", "nick"}; !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	enc, _ := s.MarshalJSON()
	if !strings.Contains(string(enc), `"required":["name","email"]`) {
		t.Errorf("schema %s: want name and email required", enc)
	}
	if !strings.Contains(string(enc), `"description":"your name"`) {
		t.Errorf("schema %s: want the jsonschema tag as description", enc)
	}

	// A struct field the subset cannot hold is refused, naming the field.
	type nested struct {
		Addr struct{ Street string } `json:"addr"`
	}
	_, err = SchemaFor[nested]()
	var se *SchemaError
	if !errors.As(err, &se) || se.Field != "addr" {
		t.Errorf("SchemaFor[nested] = %v, want a SchemaError for addr", err)
	}
	type withMap struct {
		M map[string]string `json:"m"`
	}
	if _, err := SchemaFor[withMap](); !errors.Is(err, errInvalidSchema) {
		t.Errorf("SchemaFor[withMap] = %v, want errInvalidSchema", err)
	}
}

func TestValidate(t *testing.T) {
	s, err := signupSchema()
	if err != nil {
		t.Fatal(err)
	}
	ok := map[string]any{"name": "Ann", "email": "ann@example.com"}
	got, err := s.Validate(ok)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if got["plan"] != "free" {
		t.Errorf("default not applied: %v", got)
	}
	v, err := decodeInto[signup](got)
	if err != nil || v.Name != "Ann" || v.Plan != "free" {
		t.Errorf("decodeInto = %+v, %v", v, err)
	}

	for _, tc := range []struct {
		content string
		path    string
	}{
		{`{"email":"ann@example.com"}`, "/name"},
		{`{"name":"","email":"ann@example.com"}`, "/name"},
		{`{"name":"abcdefghijk","email":"ann@example.com"}`, "/name"},
		{`{"name":"Ann","email":"not an email"}`, "/email"},
		{`{"name":"Ann","email":"Ann <ann@example.com>"}`, "/email"},
		{`{"name":"Ann","email":5}`, "/email"},
		{`{"name":"Ann","email":"a@b.c","age":1.5}`, "/age"},
		{`{"name":"Ann","email":"a@b.c","age":-1}`, "/age"},
		{`{"name":"Ann","email":"a@b.c","age":151}`, "/age"},
		{`{"name":"Ann","email":"a@b.c","age":"3"}`, "/age"},
		{`{"name":"Ann","email":"a@b.c","score":true}`, "/score"},
		{`{"name":"Ann","email":"a@b.c","newsletter":"yes"}`, "/newsletter"},
		{`{"name":"Ann","email":"a@b.c","plan":"gold"}`, "/plan"},
		{`{"name":"Ann","email":"a@b.c","tags":"a"}`, "/tags"},
		{`{"name":"Ann","email":"a@b.c","tags":["a","z"]}`, "/tags/1"},
		{`{"name":"Ann","email":"a@b.c","tags":["a",1]}`, "/tags/1"},
		{`{"name":"Ann","email":"a@b.c","tags":["a","a"]}`, "/tags/1"},
		{`{"name":"Ann","email":"a@b.c","tags":["a","b","c"]}`, "/tags"},
		{`{"name":"Ann","email":"a@b.c","admin":true}`, "/admin"},
		{`{"name":"Ann","email":"a@b.c","a/b~":true}`, "/a~1b~0"},
		{`[1]`, ""},
		{`{"name":"Ann"} {}`, ""},
	} {
		_, err := s.validateJSON([]byte(tc.content))
		var ce *ContentError
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidContent) {
			t.Errorf("ValidateJSON(%s) = %v, want a ContentError", tc.content, err)
			continue
		}
		if ce.Path != tc.path {
			t.Errorf("ValidateJSON(%s): path %q, want %q", tc.content, ce.Path, tc.path)
		}
		// The error never quotes a value.
		for _, secret := range []string{"not an email", "gold", "yes", "abcdefghijk"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("ValidateJSON(%s): error %q quotes content", tc.content, err)
			}
		}
	}
}

func TestFormats(t *testing.T) {
	s, err := ParseSchema([]byte(`{"type":"object","properties":{"u":{"type":"string","format":"uri"},"d":{"type":"string","format":"date"},"t":{"type":"string","format":"date-time"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		content string
		ok      bool
	}{
		{`{"u":"https://example.com/x?y=1"}`, true},
		{`{"u":"mailto:a@b.c"}`, true},
		{`{"u":"/relative/path"}`, false},
		{`{"u":"http://exa mple.com"}`, false},
		{`{"d":"2026-02-28"}`, true},
		{`{"d":"2026-02-30"}`, false},
		{`{"d":"28/02/2026"}`, false},
		{`{"t":"2026-02-28T10:00:00Z"}`, true},
		{`{"t":"2026-02-28T10:00:00.5+02:00"}`, true},
		{`{"t":"2026-02-28 10:00"}`, false},
	} {
		_, err := s.validateJSON([]byte(tc.content))
		if (err == nil) != tc.ok {
			t.Errorf("ValidateJSON(%s) = %v, want ok=%v", tc.content, err, tc.ok)
		}
	}
}

func TestSensitiveFields(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sensitive bool
	}{
		{"password", true}, {"newPassword", true}, {"passwd", true}, {"client_secret", true},
		{"api key", true}, {"apiKey", true}, {"api_key", true}, {"APIKey", true},
		{"accessToken", true}, {"card number", true}, {"cardNumber", true}, {"cc", true},
		{"cc_exp", true}, {"cvv", true}, {"ssn", true}, {"private_key", true}, {"privateKey", true},
		{"name", false}, {"email", false}, {"account", false}, {"accept", false},
		{"description", false}, {"lesson", false}, {"cardholder", false},
	} {
		raw, _ := json.Marshal(map[string]any{
			"type":       "object",
			"properties": map[string]any{tc.name: map[string]any{"type": "string"}},
		})
		s, err := ParseSchema(raw)
		if err != nil {
			t.Fatal(err)
		}
		err = s.checkFormMode(false)
		if got := errors.Is(err, errSensitiveField); got != tc.sensitive {
			t.Errorf("%q: sensitive %v, want %v", tc.name, got, tc.sensitive)
		}
		if tc.sensitive {
			var se *SchemaError
			if !errors.As(err, &se) || se.Field != tc.name || !errors.Is(err, errInvalidSchema) || !strings.Contains(err.Error(), "URL mode") {
				t.Errorf("%q: error %v should name the field, be errInvalidSchema and point to URL mode", tc.name, err)
			}
			if err := s.checkFormMode(true); err != nil {
				t.Errorf("%q: opted out, still %v", tc.name, err)
			}
		}
	}
	// A title that says secret counts too.
	s, _ := ParseSchema([]byte(`{"type":"object","properties":{"p":{"type":"string","title":"Your password"}}}`))
	if !errors.Is(s.checkFormMode(false), errSensitiveField) {
		t.Error("a title naming a password was not refused")
	}
}
