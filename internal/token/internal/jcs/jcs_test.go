package jcs

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"testing"
)

// The number vectors of RFC 8785, appendix B: IEEE 754 bit pattern →
// canonical text.
var numberVectors = []struct{ bits, want string }{
	{"0000000000000000", "0"},
	{"8000000000000000", "0"},
	{"0000000000000001", "5e-324"},
	{"8000000000000001", "-5e-324"},
	{"7fefffffffffffff", "1.7976931348623157e+308"},
	{"ffefffffffffffff", "-1.7976931348623157e+308"},
	{"4340000000000000", "9007199254740992"},
	{"c340000000000000", "-9007199254740992"},
	{"4430000000000000", "295147905179352830000"},
	{"44b52d02c7e14af5", "9.999999999999997e+22"},
	{"44b52d02c7e14af6", "1e+23"},
	{"44b52d02c7e14af7", "1.0000000000000001e+23"},
	{"444b1ae4d6e2ef4e", "999999999999999700000"},
	{"444b1ae4d6e2ef4f", "999999999999999900000"},
	{"444b1ae4d6e2ef50", "1e+21"},
	{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
	{"3eb0c6f7a0b5ed8d", "0.000001"},
	{"41b3de4355555553", "333333333.3333332"},
	{"41b3de4355555554", "333333333.33333325"},
	{"41b3de4355555555", "333333333.3333333"},
	{"41b3de4355555556", "333333333.3333334"},
	{"41b3de4355555557", "333333333.33333343"},
	{"becbf647612f3696", "-0.0000033333333333333333"},
	{"43143ff3c1cb0959", "1424953923781206.2"},
}

func TestNumbers(t *testing.T) {
	for _, v := range numberVectors {
		b, _ := hex.DecodeString(v.bits)
		f := math.Float64frombits(binary.BigEndian.Uint64(b))
		lit := strconv.FormatFloat(f, 'g', -1, 64)
		got, err := Append(nil, []byte(lit))
		if err != nil || string(got) != v.want {
			t.Errorf("%s (%s): %s %v, want %s", v.bits, lit, got, err, v.want)
		}
	}
}

// The examples of RFC 8785, sections 3.2.2 and 3.2.3.
func TestRFCExamples(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		{`{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`, "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{`[]`, `[]`},
		{` [ {} , [ ] , "" , -0 , 0.0, 1e0 ] `, `[{},[],"",0,0,1]`},
		{`"\u2028<>&"`, "\"\u2028<>&\""},
	} {
		got, err := Append(nil, []byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("%.30q:\n got %s %v\nwant %s", tc.in, got, err, tc.want)
		}
	}
}

func TestRejects(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a":1,"a":2}`, `1 2`, `{"a":1e999}`, "\"\xc3\"", `"\udfff"`, `"\ud800x"`,
		`"\ud800\u0041"`, strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), `NaN`, `01`, `{"a" 1}`} {
		if _, err := Append(nil, []byte(in)); err == nil {
			t.Errorf("%.30q accepted", in)
		}
	}
	if _, err := Append(nil, []byte(strings.Repeat("[", MaxDepth)+strings.Repeat("]", MaxDepth))); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
}

func FuzzAppend(f *testing.F) {
	f.Add([]byte(`{"b":[1,2.5,"x"],"a":{"c":null}}`))
	f.Add([]byte(`"\ud83d\ude00"`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Append(nil, in)
		if err != nil {
			return
		}
		// The canonical form is a fixed point.
		again, err := Append(nil, out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("%q → %q → %q %v", in, out, again, err)
		}
	})
}
