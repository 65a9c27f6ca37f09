package jcs

// The implementation before the single-pass parser of jcs.go, on
// encoding/json's Decoder: the reference FuzzReference compares the
// parser with, result for result and error for error (the numbers and
// strings it writes with the package's appendNumber and appendString).

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// refAppend appends the canonical form of the JSON refValue in src to dst.
func refAppend(dst, src []byte) ([]byte, error) {
	if !utf8.Valid(src) || !refValidEscapes(src) {
		return dst, ErrInvalid
	}
	d := json.NewDecoder(bytes.NewReader(src))
	d.UseNumber()
	dst, err := refValue(dst, d, 0)
	if err != nil {
		return dst, ErrInvalid
	}
	if _, err := d.Token(); err != io.EOF { // exactly one refValue
		return dst, ErrInvalid
	}
	return dst, nil
}

func refValue(dst []byte, d *json.Decoder, depth int) ([]byte, error) {
	t, err := d.Token()
	if err != nil {
		return dst, err
	}
	return refAppendToken(dst, d, t, depth)
}

func refAppendToken(dst []byte, d *json.Decoder, t json.Token, depth int) ([]byte, error) {
	switch v := t.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case json.Number:
		return appendNumber(dst, string(v))
	case string:
		return appendString(dst, []byte(v)), nil
	case json.Delim:
		if depth >= MaxDepth {
			return dst, ErrInvalid
		}
		switch v {
		case '[':
			return refArray(dst, d, depth+1)
		case '{':
			return refObject(dst, d, depth+1)
		}
	}
	return dst, ErrInvalid
}

func refArray(dst []byte, d *json.Decoder, depth int) ([]byte, error) {
	dst = append(dst, '[')
	for i := 0; ; i++ {
		t, err := d.Token()
		if err != nil {
			return dst, err
		}
		if t == json.Delim(']') {
			return append(dst, ']'), nil
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = refAppendToken(dst, d, t, depth); err != nil {
			return dst, err
		}
	}
}

type refMember struct {
	key      string
	units    []uint16
	refValue []byte
}

func refObject(dst []byte, d *json.Decoder, depth int) ([]byte, error) {
	var members []refMember
	for {
		t, err := d.Token()
		if err != nil {
			return dst, err
		}
		if t == json.Delim('}') {
			break
		}
		k, ok := t.(string)
		if !ok {
			return dst, ErrInvalid
		}
		v, err := refValue(nil, d, depth)
		if err != nil {
			return dst, err
		}
		members = append(members, refMember{key: k, units: utf16.Encode([]rune(k)), refValue: v})
	}
	slices.SortFunc(members, func(a, b refMember) int { return slices.Compare(a.units, b.units) })
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			if slices.Equal(members[i-1].units, m.units) {
				return dst, ErrInvalid // duplicate refMember name
			}
			dst = append(dst, ',')
		}
		dst = appendString(dst, []byte(m.key))
		dst = append(dst, ':')
		dst = append(dst, m.refValue...)
	}
	return append(dst, '}'), nil
}

// refValidEscapes reports whether every \u escape of a surrogate in src is
// part of a high-low pair. encoding/json would turn a lone surrogate into
// U+FFFD, which I-JSON forbids and other canonicalisers do not do.
func refValidEscapes(src []byte) bool {
	inString := false
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString:
			if i+1 >= len(src) {
				return false
			}
			if src[i+1] != 'u' {
				i++ // skip the escaped character
				continue
			}
			r, ok := refHex4(src[i+2:])
			if !ok {
				return false
			}
			i += 5
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return false // low surrogate without a high one
			case r >= 0xD800 && r <= 0xDBFF:
				if i+6 >= len(src) || src[i+1] != '\\' || src[i+2] != 'u' {
					return false
				}
				lo, ok := refHex4(src[i+3:])
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return false
				}
				i += 6
			}
		}
	}
	return true
}

func refHex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(v), err == nil
}

// FuzzReference holds Append to the reference: the same canonical form
// for every input the reference accepts, an error for every input it
// refuses.
func FuzzReference(f *testing.F) {
	for _, s := range []string{
		`{"b":[1,2.5,"x"],"a":{"c":null}}`, `"\ud83d\ude00"`, `{"count":3}`,
		`{"\uffff":1,"\ud83d\ude00":2,"a":3,"é":4}`, `[-0,0.0,1e0,123456789012345,1234567890123456,-1.5e-7]`,
		`{"a":1,"a":2}`, `{"b":1,"a":2,"b":3}`, `"\u0000\/\b"`, "\"\xc3\"", `"\ud800\u0041"`, `01`, `-`, `1.`, `1e`, `{"a" 1}`,
		` { "z" : [ true , false , null ] , "y" : { } } `, `{"a":1,}`, `[1,]`, `tru`, `nul`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, wantErr := refAppend(nil, in)
		got, err := Append([]byte("prefix"), in)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, reference %v", in, err, wantErr)
		}
		if err != nil {
			if string(got) != "prefix" {
				t.Fatalf("%q: refused, but dst became %q", in, got)
			}
			return
		}
		if string(got) != "prefix"+string(want) {
			t.Fatalf("%q: %q, reference %q", in, got, want)
		}
	})
}

// BenchmarkAppend canonicalises a tool call's arguments with Append and
// with the reference.
func BenchmarkAppend(b *testing.B) {
	for _, in := range []string{`{"count":3}`, `{"to":"a@example.com","subject":"Hi","body":"Dear A,\nsee you.","cc":["b@example.com"],"priority":2.5}`} {
		for name, f := range map[string]func([]byte, []byte) ([]byte, error){"parser": Append, "reference": refAppend} {
			b.Run(name+"/"+strconv.Itoa(len(in)), func(b *testing.B) {
				b.ReportAllocs()
				dst := make([]byte, 0, 256)
				for b.Loop() {
					if _, err := f(dst[:0], []byte(in)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
