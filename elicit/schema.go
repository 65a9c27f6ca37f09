package elicit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/elicitvault/elicitvault/internal/form"
	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaError reports a form schema outside the MCP elicitation subset, at
// the call site, before anything is sent: a bug of the caller's, never of
// the user's. Field names the offending property ("" for the schema as a
// whole); Sensitive is set when a field was refused because its name says
// it holds a secret (ask for it with [URL], or opt out with
// [AllowSensitiveFieldsInFormMode]). Match it with errors.As.
type SchemaError = form.SchemaError

// ContentError reports accepted content that does not match the schema it
// was asked with. Path is the JSON pointer of the offending value (for
// example "/email" or "/tags/2"). The error never quotes the value. It
// matches [ErrInvalidContent] with errors.Is.
type ContentError = form.ContentError

// Schema is a form schema within the MCP elicitation subset: a flat object
// of strings (minLength, maxLength, format email, uri, date or date-time),
// numbers and integers (minimum, maximum), booleans, single-select enums
// (untitled enum, titled oneOf of const/title, legacy enumNames) and
// multi-select arrays of enum or anyOf, each with an optional default.
//
// A Schema is immutable and safe for concurrent use. Its JSON encoding is
// canonical: what is sent to the client is exactly what the answer is
// validated against.
type Schema struct {
	f   *form.Schema
	raw []byte
	// sensitive are the fields whose name or title says they hold a
	// secret (password, passwd, secret, API key, token, card number, CVV,
	// SSN, private key, and the like), found once: a Schema does not
	// change, and a form checks them each time it asks.
	sensitive []string
}

// ParseSchema parses a form schema written as JSON, for [WithSchema],
// refusing anything outside the subset with a [*SchemaError]:
//
//	var colorForm, err = elicit.ParseSchema([]byte(`{"type": "object",
//		"properties": {"color": {"type": "string", "enum": ["red", "green"]}},
//		"required": ["color"]}`))
func ParseSchema(raw []byte) (*Schema, error) {
	f, err := form.Parse(raw)
	if err != nil {
		return nil, err
	}
	enc, _ := f.MarshalJSON()
	s := &Schema{f: f, raw: enc}
	for i := range f.Fields {
		if form.Sensitive(&f.Fields[i]) {
			s.sensitive = append(s.sensitive, f.Fields[i].Name)
		}
	}
	return s, nil
}

// SchemaFor derives the schema of a form from the Go type T, a struct, as
// [Form] does, with jsonschema.For: fields named by their json tags,
// required unless omitempty or omitzero, the jsonschema tag as
// description. The adjust functions then set what a Go type cannot say
// (titles, formats, bounds, choices, defaults); the result is checked
// against the subset, and a panic in adjust (a misspelt field) is a
// [*SchemaError], not a crash. Pass the result to [WithSchema]:
//
//	signupForm, err := elicit.SchemaFor[Signup](func(s *jsonschema.Schema) error {
//		s.Properties["email"].Format = "email"
//		s.Properties["seats"].Minimum = jsonschema.Ptr(1.0)
//		return nil
//	})
//	...
//	res, err := elicit.Form[Signup](ctx, "Sign up", elicit.WithSchema(signupForm))
func SchemaFor[T any](adjust ...func(*jsonschema.Schema) error) (*Schema, error) {
	js, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, &SchemaError{Reason: "cannot be derived from the Go type: " + err.Error()}
	}
	return fromJSONSchema(js, adjust)
}

func fromJSONSchema(js *jsonschema.Schema, adjust []func(*jsonschema.Schema) error) (*Schema, error) {
	// jsonschema.For writes nullable pointers and slices as type lists;
	// a form field is absent rather than null, so keep the non-null type.
	for _, p := range js.Properties {
		if p == nil || len(p.Types) != 2 || !slices.Contains(p.Types, "null") {
			continue
		}
		for _, t := range p.Types {
			if t != "null" {
				p.Type, p.Types = t, nil
			}
		}
	}
	for _, fn := range adjust {
		if err := adjustSafely(fn, js); err != nil {
			return nil, err
		}
	}
	raw, err := json.Marshal(js)
	if err != nil {
		return nil, &SchemaError{Reason: "cannot be encoded: " + err.Error()}
	}
	return ParseSchema(raw)
}

// adjustSafely runs a SchemaFor function: a panic in it (a nil pointer for
// a misspelt field, the usual one) becomes a *SchemaError, not a crash of
// the tool call.
func adjustSafely(fn func(*jsonschema.Schema) error, js *jsonschema.Schema) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &SchemaError{Reason: fmt.Sprintf("refinement failed: %v (check the field names against the json tags)", r)}
		}
	}()
	if err := fn(js); err != nil {
		var se *SchemaError
		if errors.As(err, &se) {
			return err
		}
		return &SchemaError{Reason: "refinement failed: " + err.Error()}
	}
	return nil
}

// MarshalJSON returns the canonical encoding of s: what the client is
// sent.
func (s *Schema) MarshalJSON() ([]byte, error) { return bytes.Clone(s.raw), nil }

// Fields returns the names of the form's fields, in order: what a hook
// may log of a form without its content.
func (s *Schema) Fields() []string {
	names := make([]string, len(s.f.Fields))
	for i, f := range s.f.Fields {
		names[i] = f.Name
	}
	return names
}

// checkFormMode refuses a form with sensitive fields unless allowed.
func (s *Schema) checkFormMode(allowSensitive bool) error {
	if allowSensitive {
		return nil
	}
	if len(s.sensitive) > 0 {
		return &SchemaError{Field: s.sensitive[0], Sensitive: true,
			Reason: "looks like a secret, which must not pass through the MCP client: ask for it in URL mode (elicit.URL), or opt out with AllowSensitiveFieldsInFormMode"}
	}
	return nil
}

// Validate checks content against s, as an answer is checked before the
// tool sees it, and returns it normalized: numbers as float64,
// multi-selections as []string, absent optional fields with a default
// filled in. An error is a [*ContentError].
func (s *Schema) Validate(content map[string]any) (map[string]any, error) {
	return s.f.Validate(content)
}

// decodeInto decodes validated content into a T.
func decodeInto[T any](content map[string]any) (T, error) {
	var v T
	raw, err := json.Marshal(content)
	if err != nil {
		return v, fmt.Errorf("elicit: encoding content: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		// The schema came from T, so this is a T whose decoding disagrees
		// with its schema (a custom UnmarshalJSON, say). Never quote it.
		return v, &ContentError{Reason: fmt.Sprintf("does not decode into %T", v)}
	}
	return v, nil
}

// validateJSON is Validate for content as a JSON object.
func (s *Schema) validateJSON(raw []byte) (map[string]any, error) {
	return s.f.ValidateJSON(raw)
}
