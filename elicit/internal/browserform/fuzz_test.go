package browserform

import (
	"net/url"
	"testing"
	"unicode/utf8"
)

// FuzzParseContent parses arbitrary posted form bodies against the schema
// with every field kind. It must never panic, and content it accepts
// without a problem must satisfy every rule of the schema the page could
// have skipped: lengths, bounds, choices, item counts, required fields.
func FuzzParseContent(f *testing.F) {
	for _, s := range []string{
		"", "name=Ada&email=a%40b.c&age=36&warehouse=lisbon",
		"name=A&age=12&warehouse=atlantis&tags=red&tags=red&tags=red",
		"name=Ada&age=1e400&ratio=NaN&warehouse=berlin&tags=blue",
		"name=%ff%fe&age=-0&ratio=-Inf&warehouse=berlin&size=xl&plan=pro&tags=",
		"subscribe=yes&subscribe=true&age=9223372036854775808",
		"name=Ada&email=a%40b.c&age=36&warehouse=lisbon&ratio=NaN",
		"name=Ada&email=a%40b.c&age=36&warehouse=lisbon&ratio=%2BInf",
	} {
		f.Add(s)
	}
	fields, err := fieldsOf(everyKind())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		form, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		content, problems := parseContent(fields, form)
		if len(problems) > 0 {
			return
		}
		for _, fl := range fields {
			v, present := content[fl.name]
			if fl.required && !present {
				t.Fatalf("required field %s missing from accepted content", fl.name)
			}
			if !present {
				continue
			}
			switch fl.kind {
			case kindText:
				n := utf8.RuneCountInString(v.(string))
				if (fl.minLength != nil && n < *fl.minLength) || (fl.maxLength != nil && n > *fl.maxLength) {
					t.Fatalf("%s: length %d accepted", fl.name, n)
				}
			case kindInteger, kindNumber:
				var x float64
				if i, ok := v.(int64); ok {
					x = float64(i)
				} else {
					x = v.(float64)
				}
				if x != x || (fl.minimum != nil && x < *fl.minimum) || (fl.maximum != nil && x > *fl.maximum) {
					t.Fatalf("%s: %v accepted", fl.name, v)
				}
			case kindSelect:
				if !hasOption(fl.options, v.(string)) {
					t.Fatalf("%s: %q is not a choice", fl.name, v)
				}
			case kindMultiSelect:
				items := v.([]any)
				if (fl.minItems != nil && len(items) < *fl.minItems) || (fl.maxItems != nil && len(items) > *fl.maxItems) {
					t.Fatalf("%s: %d items accepted", fl.name, len(items))
				}
				for _, it := range items {
					if !hasOption(fl.options, it.(string)) {
						t.Fatalf("%s: %q is not a choice", fl.name, it)
					}
				}
			}
		}
	})
}
