package form

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// MarshalJSON encodes s canonically: what is sent to the client is exactly
// what content is validated against. Properties keep their order.
func (s *Schema) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	for i := range s.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		f := &s.Fields[i]
		writeString(&b, f.Name)
		b.WriteByte(':')
		f.encode(&b)
	}
	b.WriteByte('}')
	first := true
	for i := range s.Fields {
		if !s.Fields[i].Required {
			continue
		}
		if first {
			b.WriteString(`,"required":[`)
			first = false
		} else {
			b.WriteByte(',')
		}
		writeString(&b, s.Fields[i].Name)
	}
	if !first {
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeString(b *bytes.Buffer, s string) {
	v, _ := json.Marshal(s)
	b.Write(v)
}

func writeKV(b *bytes.Buffer, k string, v any) {
	b.WriteByte(',')
	writeString(b, k)
	b.WriteByte(':')
	switch v := v.(type) {
	case *int:
		b.WriteString(strconv.Itoa(*v))
	case *float64:
		b.WriteString(strconv.FormatFloat(*v, 'g', -1, 64))
	default:
		enc, _ := json.Marshal(v)
		b.Write(enc)
	}
}

func (f *Field) encode(b *bytes.Buffer) {
	b.WriteString(`{"type":`)
	switch f.Kind {
	case String, Enum:
		b.WriteString(`"string"`)
	case Number:
		b.WriteString(`"number"`)
	case Integer:
		b.WriteString(`"integer"`)
	case Boolean:
		b.WriteString(`"boolean"`)
	case MultiSelect:
		b.WriteString(`"array"`)
	}
	if f.Title != "" {
		writeKV(b, "title", f.Title)
	}
	if f.Description != "" {
		writeKV(b, "description", f.Description)
	}
	switch f.Kind {
	case String:
		if f.MinLength != nil {
			writeKV(b, "minLength", f.MinLength)
		}
		if f.MaxLength != nil {
			writeKV(b, "maxLength", f.MaxLength)
		}
		if f.Format != "" {
			writeKV(b, "format", f.Format)
		}
	case Number, Integer:
		if f.Minimum != nil {
			writeKV(b, "minimum", f.Minimum)
		}
		if f.Maximum != nil {
			writeKV(b, "maximum", f.Maximum)
		}
	case Enum:
		switch f.style {
		case titled:
			writeKV(b, "oneOf", titledJSON(f.Options))
		case untitled:
			writeKV(b, "enum", values(f.Options))
		case legacy:
			writeKV(b, "enum", values(f.Options))
			names := make([]string, len(f.Options))
			for i, o := range f.Options {
				names[i] = o.Title
			}
			writeKV(b, "enumNames", names)
		}
	case MultiSelect:
		if f.MinItems != nil {
			writeKV(b, "minItems", f.MinItems)
		}
		if f.MaxItems != nil {
			writeKV(b, "maxItems", f.MaxItems)
		}
		if f.style == titled {
			writeKV(b, "items", map[string]any{"anyOf": titledJSON(f.Options)})
		} else {
			b.WriteString(`,"items":{"type":"string"`)
			writeKV(b, "enum", values(f.Options))
			b.WriteByte('}')
		}
	}
	if f.Default != nil {
		writeKV(b, "default", f.Default)
	}
	b.WriteByte('}')
}

type titledOption struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

func titledJSON(opts []Option) []titledOption {
	out := make([]titledOption, len(opts))
	for i, o := range opts {
		out[i] = titledOption{o.Value, o.Title}
	}
	return out
}

func values(opts []Option) []string {
	out := make([]string, len(opts))
	for i, o := range opts {
		out[i] = o.Value
	}
	return out
}
