package fronttest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// URLRequired returns the one elicitation of a -32042 (URL elicitation
// required) error that a go-sdk client's call returned; it fails the test
// when err is anything else.
func URLRequired(t testing.TB, err error) *mcp.ElicitParams {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("got %v, want -32042", err)
	}
	var data struct {
		Elicitations []*mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(we.Data, &data); err != nil || len(data.Elicitations) != 1 {
		t.Fatalf("-32042 data %s: %v, want one elicitation", we.Data, err)
	}
	return data.Elicitations[0]
}
