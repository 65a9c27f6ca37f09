package client

import "testing"

func TestPunycodeDecode(t *testing.T) {
	for in, want := range map[string]string{
		"exmple-cua":                       "exämple",
		"mnchen-3ya":                       "münchen",
		"bcher-kva":                        "bücher",
		"ihqwcrb4cv8a8dqg056pqjye":         "他们为什么不说中文",
		"b1abfaaepdrnnbgefbaDotcwatmq2g4l": "почемужеонинеговорятпорусски",
		"ls8h":                             "\U0001F4A9",
	} {
		got, ok := punycodeDecode(in)
		if !ok || string(got) != want {
			t.Errorf("punycodeDecode(%q) = %q, %v; want %q", in, string(got), ok, want)
		}
	}
	for _, in := range []string{"!", "a-é", "99999999999", "zzzzzzzzzzzzzzzzzzzzzzzz"} {
		if got, ok := punycodeDecode(in); ok && validPunycodeLabel(in) {
			t.Errorf("punycodeDecode(%q) = %q, valid", in, string(got))
		}
	}
	if validPunycodeLabel("ls8h") || !validPunycodeLabel("exmple-cua") || validPunycodeLabel("a-") {
		t.Error("validPunycodeLabel: a symbol, a letter, nothing non-ASCII")
	}
}
