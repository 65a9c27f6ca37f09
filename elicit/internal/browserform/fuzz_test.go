package browserform

import (
	"net/url"
	"testing"
)

// FuzzParseContent parses arbitrary posted form bodies against the schema
// with every field kind. It must never panic, and content it accepts
// without a problem must pass the schema's own check (lengths, formats,
// bounds, choices, item counts, required fields), which the page could
// have skipped.
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
	rules := everyRule(f)
	f.Fuzz(func(t *testing.T, body string) {
		form, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		content, problems := parseContent(fields, form)
		if len(problems) > 0 {
			return
		}
		if _, err := rules.Check(content); err != nil {
			t.Fatalf("accepted content breaks a rule of the schema: %v", err)
		}
	})
}
