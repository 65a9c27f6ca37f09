package client

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/elicitvault/elicitvault/internal/form"
	"github.com/elicitvault/elicitvault/internal/termtext"
)

// Kind is the kind of a form field.
type Kind string

// The field kinds of the MCP elicitation subset.
const (
	String      Kind = "string"      // Format may be email, uri, date or date-time
	Number      Kind = "number"      // within Minimum and Maximum
	Integer     Kind = "integer"     // within Minimum and Maximum
	Boolean     Kind = "boolean"     //
	Enum        Kind = "enum"        // one of Options
	MultiSelect Kind = "multiselect" // distinct Options, between MinItems and MaxItems
)

var kinds = map[form.Kind]Kind{
	form.String: String, form.Number: Number, form.Integer: Integer,
	form.Boolean: Boolean, form.Enum: Enum, form.MultiSelect: MultiSelect,
}

// Option is one choice of an Enum or MultiSelect field: Value is what is
// sent, Title what to show (the server's title, or Value when it gave
// none).
type Option struct {
	Value, Title string
}

func options(in []form.Option) []Option {
	out := make([]Option, len(in))
	for i, o := range in {
		out[i] = Option{Value: o.Value, Title: cmp.Or(o.Title, o.Value)}
	}
	return out
}

// Field is one field of a form, as the server described it. Title is
// what to show: the server's title, or Name when it gave none.
type Field struct {
	Name        string
	Kind        Kind
	Title       string
	Description string
	Required    bool

	MinLength, MaxLength *int     // String
	Format               string   // String
	Minimum, Maximum     *float64 // Number, Integer
	Options              []Option // Enum, MultiSelect
	MinItems, MaxItems   *int     // MultiSelect
	// Default is the server's default (string, float64, bool or []string),
	// nil when it has none: a UI pre-fills it.
	Default any

	f *form.Field
}

// Check checks one value of the field (string, float64, bool or
// []string) and returns it normalized.
func (f *Field) Check(v any) (any, error) { return f.f.Check(v) }

// Hint describes the constraints of the field in a few words, for a
// prompt: "email address", "integer from 0 to 4", "at most 2".
func (f *Field) Hint() string {
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	var parts []string
	switch f.Kind {
	case String:
		switch f.Format {
		case "email":
			parts = append(parts, "email address")
		case "uri":
			parts = append(parts, "URI")
		case "date":
			parts = append(parts, "date YYYY-MM-DD")
		case "date-time":
			parts = append(parts, "date-time, e.g. 2026-05-04T10:00:00Z")
		}
		if f.MinLength != nil && f.MaxLength != nil {
			parts = append(parts, fmt.Sprintf("%d to %d characters", *f.MinLength, *f.MaxLength))
		} else if f.MaxLength != nil {
			parts = append(parts, fmt.Sprintf("at most %d characters", *f.MaxLength))
		} else if f.MinLength != nil {
			parts = append(parts, fmt.Sprintf("at least %d characters", *f.MinLength))
		}
	case Number, Integer:
		s := "number"
		if f.Kind == Integer {
			s = "integer"
		}
		switch {
		case f.Minimum != nil && f.Maximum != nil:
			s += " from " + num(*f.Minimum) + " to " + num(*f.Maximum)
		case f.Minimum != nil:
			s += " ≥ " + num(*f.Minimum)
		case f.Maximum != nil:
			s += " ≤ " + num(*f.Maximum)
		}
		parts = append(parts, s)
	case Boolean:
		parts = append(parts, "yes or no")
	case MultiSelect:
		if f.MinItems != nil && *f.MinItems > 0 {
			parts = append(parts, fmt.Sprintf("at least %d", *f.MinItems))
		}
		if f.MaxItems != nil {
			parts = append(parts, fmt.Sprintf("at most %d", *f.MaxItems))
		}
	}
	return strings.Join(parts, ", ")
}

// Parse reads a value of the field typed as text, for a line prompt: a
// number, yes/no (y, n, true, false), an option by its value, its title
// or its number in the list (from 1), a multi-selection as a
// comma-separated list of those. The value is checked. An empty input
// (but for a multi-selection: none ticked) returns nil and no error: the
// field is left out, and gets its default if it has one.
func (f *Field) Parse(s string) (any, error) {
	s = strings.TrimSpace(s)
	if s == "" && f.Kind != MultiSelect {
		return nil, nil
	}
	var v any
	switch f.Kind {
	case String:
		v = s
	case Number, Integer:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: not a number", f.Title)
		}
		v = x
	case Boolean:
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			v = true
		case "n", "no", "false":
			v = false
		default:
			return nil, fmt.Errorf("%s: answer yes or no", f.Title)
		}
	case Enum:
		o, ok := f.option(s)
		if !ok {
			return nil, fmt.Errorf("%s: not one of the choices", f.Title)
		}
		v = o
	case MultiSelect:
		list := []string{}
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			o, ok := f.option(part)
			if !ok {
				return nil, fmt.Errorf("%s: %q is not one of the choices", f.Title, part)
			}
			list = append(list, o)
		}
		v = list
	}
	out, err := f.Check(v)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (f *Field) option(s string) (string, bool) {
	for _, o := range f.Options {
		if o.Value == s {
			return o.Value, true
		}
	}
	for _, o := range f.f.Options { // the server's titles: none stands for Value
		if o.Title != "" && strings.EqualFold(o.Title, s) {
			return o.Value, true
		}
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.Options) {
		return f.Options[n-1].Value, true
	}
	return "", false
}

// Printable returns s fit to show on a terminal: escape sequences (which
// could move the cursor, rewrite what is on screen, set the window title,
// write the clipboard or draw a hyperlink), control characters, format
// characters (bidirectional overrides, zero-width characters) and
// invisible letters are each replaced with U+FFFD; newlines and tabs are
// kept. Every text of a request (message, titles, descriptions, options)
// comes from the server as is: a UI that writes to a terminal passes it
// through Printable.
func Printable(s string) string { return termtext.Clean(s) }
