package browserform

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	schema "github.com/elicitvault/elicitvault/internal/form"
)

// fieldsOf reads the fields of s, in the schema's property order, with the
// parser the rest of elicit uses: one field model and one set of rules for
// the page, the server and the clients.
func fieldsOf(s *jsonschema.Schema) ([]schema.Field, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("browserform: %w", err)
	}
	parsed, err := schema.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("browserform: %w", err)
	}
	return parsed.Fields, nil
}

// parseContent turns the posted form into typed content. Problems are keyed
// by field name. Each value is typed, then checked by its field
// (schema.Field.Check), so that a page that skipped its own checks gets
// the same answer as one that did not.
func parseContent(fields []schema.Field, form url.Values) (map[string]any, map[string]string) {
	content := map[string]any{}
	problems := map[string]string{}
	for i := range fields {
		f := &fields[i]
		var v any
		switch one := strings.TrimSpace(form.Get(f.Name)); {
		case f.Kind == schema.Boolean:
			v = one == "true"
		case f.Kind == schema.MultiSelect:
			vals := form[f.Name]
			if len(vals) == 0 && !f.Required {
				continue // an optional field left empty: absent, not an empty list
			}
			if vals == nil {
				vals = []string{}
			}
			v = vals
		case one == "":
			if f.Required {
				problems[f.Name] = "is required"
			}
			continue
		case f.Kind == schema.Number || f.Kind == schema.Integer:
			x, err := strconv.ParseFloat(one, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				problems[f.Name] = "is not a number"
				continue
			}
			v = x
		default:
			v = one
		}
		nv, err := f.Check(v)
		if err != nil {
			problems[f.Name] = reason(err)
			continue
		}
		content[f.Name] = nv
	}
	return content, problems
}

// reason is what a check found wrong, without the field's name, which the
// page shows beside it.
func reason(err error) string {
	var ce *schema.ContentError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return "is not valid"
}
