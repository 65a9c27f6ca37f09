package elicit

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// FieldOption refines one field of a form; see WithField.
type FieldOption struct {
	name  string
	apply func(p *jsonschema.Schema, required *[]string, field string) error
}

// WithField refines the field name of the form derived from T: its title,
// description, format, bounds, choices and default. An unknown field, or
// an option that does not fit the field's type (a format on a number, a
// range on a string), is a *SchemaError naming the field, returned by the
// Form call before anything is sent, never a panic.
//
//	elicit.Form[Signup](ctx, "Sign up",
//		elicit.WithField("email", elicit.Title("Email"), elicit.Format("email")),
//		elicit.WithField("seats", elicit.Range(1, 10), elicit.Default(1)))
func WithField(name string, opts ...FieldOption) Option {
	return WithSchema(func(s *jsonschema.Schema) error {
		p := s.Properties[name]
		if p == nil {
			return &SchemaError{Field: name, Reason: "is not a field of the form (check the json tag)"}
		}
		for _, o := range opts {
			if err := o.apply(p, &s.Required, name); err != nil {
				return &SchemaError{Field: name, Reason: fmt.Sprintf("%s: %v", o.name, err)}
			}
		}
		return nil
	})
}

func fieldOption(name string, kinds []string, f func(p *jsonschema.Schema) error) FieldOption {
	return FieldOption{name: name, apply: func(p *jsonschema.Schema, _ *[]string, _ string) error {
		if kinds != nil && !slices.Contains(kinds, p.Type) {
			return fmt.Errorf("does not apply to a field of type %s", p.Type)
		}
		return f(p)
	}}
}

var (
	stringKinds = []string{"string"}
	numberKinds = []string{"number", "integer"}
	arrayKinds  = []string{"array"}
)

// Title sets the label a client shows for the field.
func Title(title string) FieldOption {
	return fieldOption("Title", nil, func(p *jsonschema.Schema) error { p.Title = title; return nil })
}

// Description sets the help text of the field.
func Description(text string) FieldOption {
	return fieldOption("Description", nil, func(p *jsonschema.Schema) error { p.Description = text; return nil })
}

// Format sets the format of a string field: "email", "uri", "date" or
// "date-time".
func Format(format string) FieldOption {
	return fieldOption("Format", stringKinds, func(p *jsonschema.Schema) error {
		switch format {
		case "email", "uri", "date", "date-time":
			p.Format = format
			return nil
		}
		return fmt.Errorf("%q is not a format of MCP elicitation (email, uri, date, date-time)", format)
	})
}

// Length bounds the length of a string field, in characters.
func Length(minLen, maxLen int) FieldOption {
	return fieldOption("Length", stringKinds, func(p *jsonschema.Schema) error {
		if minLen < 0 || maxLen < minLen {
			return fmt.Errorf("bounds %d..%d are not a range", minLen, maxLen)
		}
		p.MinLength, p.MaxLength = &minLen, &maxLen
		return nil
	})
}

// Range bounds a number or integer field.
func Range(minVal, maxVal float64) FieldOption {
	return fieldOption("Range", numberKinds, func(p *jsonschema.Schema) error {
		if maxVal < minVal {
			return fmt.Errorf("bounds %v..%v are not a range", minVal, maxVal)
		}
		p.Minimum, p.Maximum = &minVal, &maxVal
		return nil
	})
}

// Count bounds how many choices a multi-select field takes.
func Count(minItems, maxItems int) FieldOption {
	return fieldOption("Count", arrayKinds, func(p *jsonschema.Schema) error {
		if minItems < 0 || maxItems < minItems {
			return fmt.Errorf("bounds %d..%d are not a range", minItems, maxItems)
		}
		p.MinItems, p.MaxItems = &minItems, &maxItems
		return nil
	})
}

// Choice is one option of a select field: the value the tool receives and
// the title the user sees ("" shows the value).
type Choice struct {
	Value string
	Title string
}

// Choices makes a string field a single select, or a string-array field a
// multi-select, of the given options. With titles it is written as the
// titled form (oneOf, or items.anyOf, of const and title); without any,
// as a plain enum.
func Choices(choices ...Choice) FieldOption {
	return fieldOption("Choices", []string{"string", "array"}, func(p *jsonschema.Schema) error {
		if len(choices) == 0 {
			return fmt.Errorf("needs at least one choice")
		}
		titled := slices.ContainsFunc(choices, func(c Choice) bool { return c.Title != "" })
		var enum []any
		var consts []*jsonschema.Schema
		for _, c := range choices {
			if titled {
				v := any(c.Value)
				title := c.Title
				if title == "" {
					title = c.Value
				}
				consts = append(consts, &jsonschema.Schema{Const: &v, Title: title})
			} else {
				enum = append(enum, c.Value)
			}
		}
		target := p
		if p.Type == "array" {
			if p.Items == nil || p.Items.Type != "string" {
				return fmt.Errorf("needs an array of strings")
			}
			target = &jsonschema.Schema{Type: "string"}
			if titled {
				target = &jsonschema.Schema{}
			}
			p.Items = target
			if titled {
				target.AnyOf = consts
			} else {
				target.Enum = enum
			}
			return nil
		}
		if titled {
			target.OneOf = consts
		} else {
			target.Enum = enum
		}
		return nil
	})
}

// Default sets the value a client pre-fills: a string, number, bool or
// []string matching the field's type.
func Default(v any) FieldOption {
	return fieldOption("Default", nil, func(p *jsonschema.Schema) error {
		ok := false
		switch v.(type) {
		case string:
			ok = p.Type == "string"
		case int, int32, int64, float32, float64:
			ok = p.Type == "number" || p.Type == "integer"
		case bool:
			ok = p.Type == "boolean"
		case []string:
			ok = p.Type == "array"
		}
		if !ok {
			return fmt.Errorf("a %T does not fit a field of type %s", v, p.Type)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		p.Default = raw
		return nil
	})
}

// Optional lets the user leave the field empty. Fields derived from T are
// required unless their json tag says omitempty or omitzero.
func Optional() FieldOption {
	return FieldOption{name: "Optional", apply: func(_ *jsonschema.Schema, required *[]string, field string) error {
		*required = slices.DeleteFunc(*required, func(n string) bool { return n == field })
		return nil
	}}
}
