package elicit

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaElicitation reads the capabilities of a request's _meta from the
// go-sdk's maps as decoding their JSON would, or declines: for every
// shape, clientCapabilities gives what the JSON decoding alone gives.
func TestMetaElicitationAsJSON(t *testing.T) {
	viaJSON := func(raw any) (*mcp.ClientCapabilities, bool) {
		var mc struct {
			Elicitation *mcp.ElicitationCapabilities `json:"elicitation"`
		}
		b, err := json.Marshal(raw)
		if err != nil || json.Unmarshal(b, &mc) != nil {
			return nil, false
		}
		return &mcp.ClientCapabilities{Elicitation: mc.Elicitation}, true
	}
	for _, in := range []string{
		`{"elicitation":{"form":{},"url":{}}}`,
		`{"elicitation":{"form":{}}}`,
		`{"elicitation":{"url":{"x":1}}}`,
		`{"elicitation":{}}`,
		`{"elicitation":null}`,
		`{"elicitation":{"form":null,"url":{}}}`,
		`{"sampling":{},"roots":{"listChanged":true}}`,
		`{}`,
		`null`,
		`"elicitation"`,
		`[1,2]`,
		`{"elicitation":true}`,
		`{"elicitation":{"form":true}}`,
		`{"elicitation":{"url":[]}}`,
		`{"Elicitation":{"form":{}}}`,
		`{"elicitation":{"Form":{}}}`,
		`{"elicitation":{"URL":{}},"ELICITATION":null}`,
	} {
		var raw any
		if err := json.Unmarshal([]byte(in), &raw); err != nil {
			t.Fatal(err)
		}
		session := &mcp.ClientCapabilities{Experimental: map[string]any{"session": true}} // stands for the session's
		want, ok := viaJSON(raw)
		if !ok {
			want = session
		}
		got := session
		if el, ok := metaElicitation(raw); ok {
			got = &mcp.ClientCapabilities{Elicitation: el}
		} else if c, ok := viaJSON(raw); ok {
			got = c
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", in, got, want)
		}
		if f, u := modes(got); func() bool { wf, wu := modes(want); return f != wf || u != wu }() {
			t.Errorf("%s: modes %v %v", in, f, u)
		}
	}
}
