package browserform

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

type fieldKind int

const (
	kindText fieldKind = iota
	kindNumber
	kindInteger
	kindBoolean
	kindSelect      // a string with an enum
	kindMultiSelect // an array of enum strings
)

// option is one choice of a select or multi-select field.
type option struct{ value, title string }

// field is one property of the form, read from the schema.
type field struct {
	name, title, description string
	kind                     fieldKind
	required                 bool
	format                   string // email, uri, date, date-time
	minLength, maxLength     *int
	minimum, maximum         *float64
	minItems, maxItems       *int
	options                  []option
	def                      json.RawMessage
}

// fieldsOf reads the fields of a flat object schema, in the schema's
// property order (then by name).
func fieldsOf(s *jsonschema.Schema) ([]field, error) {
	if s.Type != "object" {
		return nil, fmt.Errorf("browserform: schema is not an object")
	}
	names := make([]string, 0, len(s.Properties))
	for _, n := range s.PropertyOrder {
		if _, ok := s.Properties[n]; ok {
			names = append(names, n)
		}
	}
	var rest []string
	for n := range s.Properties {
		if !slices.Contains(names, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	names = append(names, rest...)

	var fields []field
	for _, n := range names {
		p := s.Properties[n]
		f := field{
			name:        n,
			title:       p.Title,
			description: p.Description,
			required:    slices.Contains(s.Required, n),
			format:      p.Format,
			minLength:   p.MinLength,
			maxLength:   p.MaxLength,
			minimum:     p.Minimum,
			maximum:     p.Maximum,
			minItems:    p.MinItems,
			maxItems:    p.MaxItems,
			def:         p.Default,
		}
		if f.title == "" {
			f.title = n
		}
		switch p.Type {
		case "string":
			f.options = optionsOf(p)
			if f.options != nil {
				f.kind = kindSelect
			} else {
				f.kind = kindText
			}
		case "number":
			f.kind = kindNumber
		case "integer":
			f.kind = kindInteger
		case "boolean":
			f.kind = kindBoolean
		case "array":
			if p.Items == nil {
				return nil, fmt.Errorf("browserform: field %q: array without items", n)
			}
			f.options = optionsOf(p.Items)
			if f.options == nil {
				return nil, fmt.Errorf("browserform: field %q: array items without choices", n)
			}
			f.kind = kindMultiSelect
		default:
			return nil, fmt.Errorf("browserform: field %q: unsupported type", n)
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// optionsOf reads the choices of an enum schema: an untitled enum, a titled
// oneOf/anyOf of const+title, or an enum with the legacy enumNames.
func optionsOf(s *jsonschema.Schema) []option {
	consts := s.OneOf
	if consts == nil {
		consts = s.AnyOf
	}
	if consts != nil {
		opts := make([]option, 0, len(consts))
		for _, c := range consts {
			if c.Const == nil {
				return nil
			}
			v := fmt.Sprint(*c.Const)
			t := c.Title
			if t == "" {
				t = v
			}
			opts = append(opts, option{v, t})
		}
		return opts
	}
	if s.Enum == nil {
		return nil
	}
	var names []any
	if n, ok := s.Extra["enumNames"].([]any); ok && len(n) == len(s.Enum) {
		names = n
	}
	opts := make([]option, 0, len(s.Enum))
	for i, e := range s.Enum {
		v := fmt.Sprint(e)
		t := v
		if names != nil {
			t = fmt.Sprint(names[i])
		}
		opts = append(opts, option{v, t})
	}
	return opts
}

// parseContent turns the posted form into typed content. Problems are keyed
// by field name; a problem here means the value cannot even be typed. The
// schema's own rules are checked too, so that a page that skipped its
// checks gets the same answer as one that did not.
func parseContent(fields []field, form url.Values) (map[string]any, map[string]string) {
	content := map[string]any{}
	problems := map[string]string{}
	for _, f := range fields {
		raw := form[f.name]
		one := strings.TrimSpace(form.Get(f.name))
		switch f.kind {
		case kindBoolean:
			content[f.name] = one == "true"
			continue
		case kindMultiSelect:
			var vals []any
			for _, v := range raw {
				if !hasOption(f.options, v) {
					problems[f.name] = "not one of the choices"
					break
				}
				vals = append(vals, v)
			}
			if len(vals) == 0 && !f.required {
				continue // an optional field left empty: absent, not an empty list
			}
			if f.minItems != nil && len(vals) < *f.minItems {
				problems[f.name] = fmt.Sprintf("choose at least %d", *f.minItems)
			}
			if f.maxItems != nil && len(vals) > *f.maxItems {
				problems[f.name] = fmt.Sprintf("choose at most %d", *f.maxItems)
			}
			if vals == nil {
				vals = []any{}
			}
			content[f.name] = vals
			continue
		}
		if one == "" {
			if f.required {
				problems[f.name] = "required"
			}
			continue
		}
		switch f.kind {
		case kindText:
			n := len([]rune(one))
			if f.minLength != nil && n < *f.minLength {
				problems[f.name] = fmt.Sprintf("at least %d characters", *f.minLength)
			} else if f.maxLength != nil && n > *f.maxLength {
				problems[f.name] = fmt.Sprintf("at most %d characters", *f.maxLength)
			}
			content[f.name] = one
		case kindSelect:
			if !hasOption(f.options, one) {
				problems[f.name] = "not one of the choices"
			}
			content[f.name] = one
		case kindNumber, kindInteger:
			var v float64
			var err error
			if f.kind == kindInteger {
				var i int64
				i, err = strconv.ParseInt(one, 10, 64)
				v = float64(i)
				content[f.name] = i
			} else {
				v, err = strconv.ParseFloat(one, 64)
				content[f.name] = v
			}
			switch {
			case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
				problems[f.name] = "not a number"
			case f.minimum != nil && v < *f.minimum:
				problems[f.name] = "below the minimum " + strconv.FormatFloat(*f.minimum, 'g', -1, 64)
			case f.maximum != nil && v > *f.maximum:
				problems[f.name] = "above the maximum " + strconv.FormatFloat(*f.maximum, 'g', -1, 64)
			}
		}
	}
	return content, problems
}

func hasOption(opts []option, v string) bool {
	for _, o := range opts {
		if o.value == v {
			return true
		}
	}
	return false
}
