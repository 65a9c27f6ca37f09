// Package form is the MCP elicitation schema subset: a strict parser that
// refuses anything the subset does not allow, a canonical encoding, and the
// validation of accepted content.
//
// The subset (MCP 2025-06-18, 2025-11-25 and 2026-07-28) is a flat object
// whose properties are each one of
//
//	string   title, description, minLength, maxLength, format (email, uri, date, date-time), default
//	number   (or integer) title, description, minimum, maximum, default
//	boolean  title, description, default
//	enum     type string with enum (untitled), oneOf of {const, title} (titled),
//	         or enum with enumNames (legacy titled); default
//	multi    type array with items {type string, enum} or items {anyOf of {const, title}},
//	         minItems, maxItems, default
//
// and an optional required list.
//
// Errors never carry content: a SchemaError names the offending field, a
// ContentError the JSON pointer of the offending value, and neither quotes a
// value.
package form

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

var (
	// ErrInvalidSchema is the sentinel of every SchemaError.
	ErrInvalidSchema = errors.New("elicit: invalid params: schema outside the MCP elicitation subset")
	// ErrSensitiveField is the sentinel of a SchemaError for a field whose
	// name says it holds a secret, in form mode.
	ErrSensitiveField = errors.New("elicit: field names a secret: use URL mode")
	// ErrInvalidContent is the sentinel of every ContentError.
	ErrInvalidContent = errors.New("elicit: content does not match the schema")
)

// SchemaError reports a schema the subset refuses. Field is the property
// name ("" for the schema as a whole).
type SchemaError struct {
	Field  string
	Reason string
	// Sensitive is set when the field was refused because its name says it
	// holds a secret.
	Sensitive bool
}

func (e *SchemaError) Error() string {
	if e.Field == "" {
		return "elicit: invalid params: schema " + e.Reason
	}
	return fmt.Sprintf("elicit: invalid params: field %q %s", clip(e.Field), e.Reason)
}

// Unwrap returns ErrInvalidSchema, and ErrSensitiveField when Sensitive.
func (e *SchemaError) Unwrap() []error {
	if e.Sensitive {
		return []error{ErrInvalidSchema, ErrSensitiveField}
	}
	return []error{ErrInvalidSchema}
}

// ContentError reports accepted content that does not match the schema.
// Path is a JSON pointer (RFC 6901) to the offending value, "" for the
// content as a whole. Reason never quotes the value.
type ContentError struct {
	Path   string
	Reason string
}

func (e *ContentError) Error() string {
	if e.Path == "" {
		return "elicit: content " + e.Reason
	}
	return fmt.Sprintf("elicit: content at %s %s", e.Path, e.Reason)
}

// Unwrap returns ErrInvalidContent.
func (e *ContentError) Unwrap() error { return ErrInvalidContent }

func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	i := 64
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// Kind is the kind of a field.
type Kind int

const (
	String Kind = iota + 1
	Number
	Integer
	Boolean
	Enum        // one of Options
	MultiSelect // an array of distinct Options
)

// enumStyle records how an enum was written, so that the canonical encoding
// keeps it.
type enumStyle int

const (
	untitled enumStyle = iota // enum / items.enum
	titled                    // oneOf / items.anyOf of {const, title}
	legacy                    // enum + enumNames
)

// Option is one value of an enum field.
type Option struct {
	Value string
	Title string
}

// Field is one property of a form.
type Field struct {
	Name        string
	Kind        Kind
	Title       string
	Description string
	Required    bool

	MinLength, MaxLength *int     // String
	Format               string   // String: email, uri, date, date-time
	Minimum, Maximum     *float64 // Number, Integer
	Options              []Option // Enum, MultiSelect
	MinItems, MaxItems   *int     // MultiSelect
	Default              any      // string, float64, bool or []string; nil when absent

	style enumStyle
}

// Schema is a parsed form schema.
type Schema struct {
	Fields []Field
	byName map[string]int
}

// Field returns the field called name.
func (s *Schema) Field(name string) (*Field, bool) {
	i, ok := s.byName[name]
	if !ok {
		return nil, false
	}
	return &s.Fields[i], true
}

// MaxFields bounds the number of properties of a form, and MaxOptions the
// number of options of an enum: a form is something a person fills in.
const (
	MaxFields  = 256
	MaxOptions = 1024
)

var formats = []string{"email", "uri", "date", "date-time"}

// Parse parses a requested schema, refusing anything outside the subset.
// Property order is kept as written.
func Parse(raw []byte) (*Schema, error) {
	root, keys, err := decodeObject(raw)
	if err != nil {
		return nil, &SchemaError{Reason: "is not a JSON object"}
	}
	s := &Schema{byName: map[string]int{}}
	var required []string
	haveProps := false
	for _, k := range keys {
		v := root[k]
		switch k {
		case "$schema":
			if _, ok := v.(string); !ok {
				return nil, &SchemaError{Reason: "has a non-string $schema"}
			}
		case "type":
			if v != "object" {
				return nil, &SchemaError{Reason: `must have type "object"`}
			}
		case "title", "description":
			if _, ok := v.(string); !ok {
				return nil, &SchemaError{Reason: "has a non-string " + k}
			}
		case "additionalProperties":
			// Only "false" is meaningful for a flat form, and it is what
			// validation does anyway.
			if v != false {
				return nil, &SchemaError{Reason: "allows additional properties"}
			}
		case "required":
			list, ok := v.([]any)
			if !ok {
				return nil, &SchemaError{Reason: "has a required that is not a list of names"}
			}
			for _, r := range list {
				name, ok := r.(string)
				if !ok {
					return nil, &SchemaError{Reason: "has a required that is not a list of names"}
				}
				required = append(required, name)
			}
		case "properties":
			haveProps = true
			raw, ok := v.(json.RawMessage)
			if !ok {
				return nil, &SchemaError{Reason: "has properties that are not an object"}
			}
			props, names, err := decodeObject(raw)
			if err != nil {
				return nil, &SchemaError{Reason: "has properties that are not an object"}
			}
			if len(names) > MaxFields {
				return nil, &SchemaError{Reason: fmt.Sprintf("has more than %d properties", MaxFields)}
			}
			for _, name := range names {
				praw, ok := props[name].(json.RawMessage)
				if !ok {
					return nil, &SchemaError{Field: name, Reason: "is not a schema object"}
				}
				f, err := parseField(name, praw)
				if err != nil {
					return nil, err
				}
				s.byName[name] = len(s.Fields)
				s.Fields = append(s.Fields, *f)
			}
		default:
			return nil, &SchemaError{Reason: fmt.Sprintf("uses %q, which the subset does not allow", clip(k))}
		}
	}
	if _, ok := root["type"]; !ok {
		return nil, &SchemaError{Reason: `must have type "object"`}
	}
	if !haveProps {
		return nil, &SchemaError{Reason: "has no properties"}
	}
	for _, r := range required {
		i, ok := s.byName[r]
		if !ok {
			return nil, &SchemaError{Field: r, Reason: "is required but not a property"}
		}
		s.Fields[i].Required = true
	}
	return s, nil
}

// decodeObject decodes a JSON object, keeping key order. Nested objects and
// arrays of objects are left raw; numbers are json.Number.
func decodeObject(raw []byte) (map[string]any, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("not an object")
	}
	m := map[string]any{}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k := tok.(string)
		if _, dup := m[k]; dup {
			return nil, nil, errors.New("duplicate key")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		var val any = v
		if len(v) > 0 && v[0] != '{' {
			d := json.NewDecoder(bytes.NewReader(v))
			d.UseNumber()
			if err := d.Decode(&val); err != nil {
				return nil, nil, err
			}
		}
		m[k] = val
		keys = append(keys, k)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, nil, errors.New("not an object")
	}
	if _, err := dec.Token(); err == nil {
		return nil, nil, errors.New("trailing data")
	}
	return m, keys, nil
}

func parseField(name string, raw json.RawMessage) (*Field, error) {
	bad := func(format string, args ...any) error {
		return &SchemaError{Field: name, Reason: fmt.Sprintf(format, args...)}
	}
	if name == "" {
		return nil, bad("has an empty name")
	}
	p, keys, err := decodeObject(raw)
	if err != nil {
		return nil, bad("is not a schema object")
	}
	f := &Field{Name: name}
	typ, _ := p["type"].(string)
	if _, ok := p["type"]; !ok {
		return nil, bad("has no type")
	}
	var allowed []string
	switch typ {
	case "string":
		switch {
		case p["oneOf"] != nil:
			f.Kind, f.style = Enum, titled
			allowed = []string{"oneOf", "default"}
		case p["enum"] != nil && p["enumNames"] != nil:
			f.Kind, f.style = Enum, legacy
			allowed = []string{"enum", "enumNames", "default"}
		case p["enum"] != nil:
			f.Kind, f.style = Enum, untitled
			allowed = []string{"enum", "default"}
		default:
			f.Kind = String
			allowed = []string{"minLength", "maxLength", "format", "default"}
		}
	case "number":
		f.Kind = Number
		allowed = []string{"minimum", "maximum", "default"}
	case "integer":
		f.Kind = Integer
		allowed = []string{"minimum", "maximum", "default"}
	case "boolean":
		f.Kind = Boolean
		allowed = []string{"default"}
	case "array":
		f.Kind = MultiSelect
		allowed = []string{"items", "minItems", "maxItems", "default"}
	default:
		return nil, bad("has a type the subset does not allow (string, number, integer, boolean, array of enum)")
	}
	for _, k := range keys {
		if k == "type" || k == "title" || k == "description" || slices.Contains(allowed, k) {
			continue
		}
		return nil, bad("uses %q, which the subset does not allow here", clip(k))
	}
	for _, k := range []string{"title", "description"} {
		if v, ok := p[k]; ok {
			sv, ok := v.(string)
			if !ok {
				return nil, bad("has a non-string %s", k)
			}
			if k == "title" {
				f.Title = sv
			} else {
				f.Description = sv
			}
		}
	}
	switch f.Kind {
	case String:
		if f.MinLength, err = count(p, "minLength"); err != nil {
			return nil, bad("%v", err)
		}
		if f.MaxLength, err = count(p, "maxLength"); err != nil {
			return nil, bad("%v", err)
		}
		if f.MinLength != nil && f.MaxLength != nil && *f.MaxLength < *f.MinLength {
			return nil, bad("has maxLength less than minLength")
		}
		if v, ok := p["format"]; ok {
			sv, _ := v.(string)
			if !slices.Contains(formats, sv) {
				return nil, bad("has a format the subset does not allow (email, uri, date, date-time)")
			}
			f.Format = sv
		}
	case Number, Integer:
		if f.Minimum, err = number(p, "minimum"); err != nil {
			return nil, bad("%v", err)
		}
		if f.Maximum, err = number(p, "maximum"); err != nil {
			return nil, bad("%v", err)
		}
		if f.Minimum != nil && f.Maximum != nil && *f.Maximum < *f.Minimum {
			return nil, bad("has maximum less than minimum")
		}
	case Enum:
		switch f.style {
		case titled:
			if f.Options, err = titledOptions(p["oneOf"]); err != nil {
				return nil, bad("has oneOf %v", err)
			}
		case untitled, legacy:
			if f.Options, err = untitledOptions(p["enum"]); err != nil {
				return nil, bad("has enum %v", err)
			}
			if f.style == legacy {
				names, ok := p["enumNames"].([]any)
				if !ok || len(names) != len(f.Options) {
					return nil, bad("has enumNames that do not match enum one to one")
				}
				for i, n := range names {
					sv, ok := n.(string)
					if !ok {
						return nil, bad("has a non-string in enumNames")
					}
					f.Options[i].Title = sv
				}
			}
		}
	case MultiSelect:
		if f.MinItems, err = count(p, "minItems"); err != nil {
			return nil, bad("%v", err)
		}
		if f.MaxItems, err = count(p, "maxItems"); err != nil {
			return nil, bad("%v", err)
		}
		if f.MinItems != nil && f.MaxItems != nil && *f.MaxItems < *f.MinItems {
			return nil, bad("has maxItems less than minItems")
		}
		items, ok := p["items"].(json.RawMessage)
		if !ok {
			return nil, bad("is an array without items of enum (arrays are only for multi-select)")
		}
		ip, ikeys, err := decodeObject(items)
		if err != nil {
			return nil, bad("has items that are not a schema object")
		}
		switch {
		case ip["anyOf"] != nil:
			for _, k := range ikeys {
				if k != "anyOf" && !(k == "type" && ip["type"] == "string") {
					return nil, bad("has items using %q, which the subset does not allow", clip(k))
				}
			}
			f.style = titled
			if f.Options, err = titledOptions(ip["anyOf"]); err != nil {
				return nil, bad("has items.anyOf %v", err)
			}
		case ip["enum"] != nil:
			for _, k := range ikeys {
				if k != "enum" && k != "type" {
					return nil, bad("has items using %q, which the subset does not allow", clip(k))
				}
			}
			if ip["type"] != "string" {
				return nil, bad(`has items that are not of type "string"`)
			}
			f.style = untitled
			if f.Options, err = untitledOptions(ip["enum"]); err != nil {
				return nil, bad("has items.enum %v", err)
			}
		default:
			return nil, bad("is an array without items of enum (arrays are only for multi-select)")
		}
	}
	if v, ok := p["default"]; ok {
		d, err := f.validate(v, "")
		if err != nil {
			return nil, bad("has a default that does not match the field")
		}
		f.Default = d
	}
	return f, nil
}

func count(p map[string]any, k string) (*int, error) {
	v, ok := p[k]
	if !ok {
		return nil, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return nil, fmt.Errorf("has a non-integer %s", k)
	}
	i, err := strconv.ParseInt(string(n), 10, 32)
	if err != nil || i < 0 {
		return nil, fmt.Errorf("has %s that is not a non-negative integer", k)
	}
	c := int(i)
	return &c, nil
}

func number(p map[string]any, k string) (*float64, error) {
	v, ok := p[k]
	if !ok {
		return nil, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return nil, fmt.Errorf("has a non-numeric %s", k)
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return nil, fmt.Errorf("has %s out of range", k)
	}
	return &f, nil
}

func untitledOptions(v any) ([]Option, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, errors.New("that is not a non-empty list of strings")
	}
	if len(list) > MaxOptions {
		return nil, fmt.Errorf("with more than %d values", MaxOptions)
	}
	opts := make([]Option, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, errors.New("with a value that is not a string")
		}
		if slices.ContainsFunc(opts, func(o Option) bool { return o.Value == s }) {
			return nil, errors.New("with a repeated value")
		}
		opts = append(opts, Option{Value: s})
	}
	return opts, nil
}

func titledOptions(v any) ([]Option, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, errors.New("that is not a non-empty list of {const, title}")
	}
	if len(list) > MaxOptions {
		return nil, fmt.Errorf("with more than %d values", MaxOptions)
	}
	opts := make([]Option, 0, len(list))
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, errors.New("with an entry that is not {const, title}")
		}
		if len(m) != 2 {
			return nil, errors.New("with an entry that is not exactly {const, title}")
		}
		c, ok1 := m["const"].(string)
		t, ok2 := m["title"].(string)
		if !ok1 || !ok2 || c == "" || t == "" {
			return nil, errors.New("with an entry whose const or title is not a non-empty string")
		}
		if slices.ContainsFunc(opts, func(o Option) bool { return o.Value == c }) {
			return nil, errors.New("with a repeated const")
		}
		opts = append(opts, Option{Value: c, Title: t})
	}
	return opts, nil
}

// validate checks one value against f and returns it normalized (numbers as
// float64, multi-select as []string). path is only used for errors.
func (f *Field) validate(v any, path string) (any, error) {
	bad := func(format string, args ...any) error {
		return &ContentError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	switch f.Kind {
	case String:
		s, ok := v.(string)
		if !ok {
			return nil, bad("is not a string")
		}
		n := utf8.RuneCountInString(s)
		if f.MinLength != nil && n < *f.MinLength {
			return nil, bad("is shorter than %d characters", *f.MinLength)
		}
		if f.MaxLength != nil && n > *f.MaxLength {
			return nil, bad("is longer than %d characters", *f.MaxLength)
		}
		if !validFormat(f.Format, s) {
			return nil, bad("is not a valid %s", formatName(f.Format))
		}
		return s, nil
	case Number, Integer:
		x, ok := toFloat(v)
		if !ok {
			return nil, bad("is not a number")
		}
		if f.Kind == Integer && x != math.Trunc(x) {
			return nil, bad("is not an integer")
		}
		if f.Minimum != nil && x < *f.Minimum {
			return nil, bad("is less than the minimum %s", strconv.FormatFloat(*f.Minimum, 'g', -1, 64))
		}
		if f.Maximum != nil && x > *f.Maximum {
			return nil, bad("is greater than the maximum %s", strconv.FormatFloat(*f.Maximum, 'g', -1, 64))
		}
		return x, nil
	case Boolean:
		b, ok := v.(bool)
		if !ok {
			return nil, bad("is not a boolean")
		}
		return b, nil
	case Enum:
		s, ok := v.(string)
		if !ok {
			return nil, bad("is not a string")
		}
		if !f.hasOption(s) {
			return nil, bad("is not one of the allowed values")
		}
		return s, nil
	case MultiSelect:
		list, ok := v.([]any)
		if !ok {
			if ss, ok2 := v.([]string); ok2 {
				list = make([]any, len(ss))
				for i, s := range ss {
					list[i] = s
				}
			} else {
				return nil, bad("is not an array")
			}
		}
		if f.MinItems != nil && len(list) < *f.MinItems {
			return nil, bad("has fewer than %d items", *f.MinItems)
		}
		if f.MaxItems != nil && len(list) > *f.MaxItems {
			return nil, bad("has more than %d items", *f.MaxItems)
		}
		out := make([]string, 0, len(list))
		for i, e := range list {
			ipath := path + "/" + strconv.Itoa(i)
			s, ok := e.(string)
			if !ok {
				return nil, &ContentError{Path: ipath, Reason: "is not a string"}
			}
			if !f.hasOption(s) {
				return nil, &ContentError{Path: ipath, Reason: "is not one of the allowed values"}
			}
			if slices.Contains(out, s) {
				return nil, &ContentError{Path: ipath, Reason: "repeats an earlier item"}
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, bad("has an unknown kind")
}

func (f *Field) hasOption(s string) bool {
	return slices.ContainsFunc(f.Options, func(o Option) bool { return o.Value == s })
}

func toFloat(v any) (float64, bool) {
	var x float64
	switch n := v.(type) {
	case float64:
		x = n
	case json.Number:
		var err error
		if x, err = n.Float64(); err != nil {
			return 0, false
		}
	case int:
		x = float64(n)
	case int64:
		x = float64(n)
	default:
		return 0, false
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, false
	}
	return x, true
}

func formatName(f string) string {
	switch f {
	case "email":
		return "email address"
	case "uri":
		return "URI"
	case "date":
		return "date (YYYY-MM-DD)"
	case "date-time":
		return "date-time (RFC 3339)"
	}
	return f
}

func validFormat(format, s string) bool {
	switch format {
	case "":
		return true
	case "email":
		if strings.ContainsAny(s, " \t\r\n<>") {
			return false
		}
		a, err := mail.ParseAddress(s)
		return err == nil && a.Name == "" && a.Address == s
	case "uri":
		u, err := url.Parse(s)
		return err == nil && u.Scheme != "" && !strings.ContainsAny(s, " \t\r\n")
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	case "date-time":
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil
	}
	return false
}

// Validate checks accepted content against s: every property known, of its
// kind and within its bounds, every required property present. It returns
// the content normalized (numbers as float64, multi-select as []string)
// with the defaults of absent optional fields filled in.
func (s *Schema) Validate(content map[string]any) (map[string]any, error) {
	out, err := s.Check(content)
	if err != nil {
		return nil, err
	}
	for i := range s.Fields {
		f := &s.Fields[i]
		if _, ok := out[f.Name]; !ok && f.Default != nil {
			out[f.Name] = f.Default
		}
	}
	return out, nil
}

// Check is Validate without the defaults: it returns the content
// normalized, with exactly the fields content has. A client sends this:
// what the user submitted, and nothing the user did not see.
func (s *Schema) Check(content map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(s.Fields))
	for name, v := range content {
		f, ok := s.Field(name)
		if !ok {
			return nil, &ContentError{Path: pointer(name), Reason: "is not a field of the form"}
		}
		nv, err := f.validate(v, pointer(name))
		if err != nil {
			return nil, err
		}
		out[name] = nv
	}
	for i := range s.Fields {
		f := &s.Fields[i]
		if _, ok := out[f.Name]; ok {
			continue
		}
		if f.Required {
			return nil, &ContentError{Path: pointer(f.Name), Reason: "is required"}
		}
	}
	return out, nil
}

// ValidateJSON decodes content (a JSON object) and validates it.
func (s *Schema) ValidateJSON(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var content map[string]any
	if err := dec.Decode(&content); err != nil || content == nil {
		return nil, &ContentError{Reason: "is not a JSON object"}
	}
	if _, err := dec.Token(); err == nil {
		return nil, &ContentError{Reason: "is not a JSON object"}
	}
	return s.Validate(content)
}

// pointer returns the JSON pointer of a top-level property.
func pointer(name string) string {
	name = strings.ReplaceAll(name, "~", "~0")
	name = strings.ReplaceAll(name, "/", "~1")
	return "/" + clip(name)
}
