package elicit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type signup struct {
	Email string   `json:"email"`
	Seats int      `json:"seats"`
	Plan  string   `json:"plan"`
	Tags  []string `json:"tags,omitempty"`
	Note  string   `json:"note"`
}

// formError runs Form[signup] with opts in a tool and returns the schema
// the client was sent (nil when none was) and the error of Form.
func formError(t *testing.T, opts ...elicit.Option) (map[string]any, error) {
	t.Helper()
	e := newEnv(t, nil)
	var got error
	e.tool("signup", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		_, got = elicit.Form[signup](ctx, "Sign up", opts...)
		return "", got
	})
	var sent map[string]any
	cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		b, _ := json.Marshal(r.Params.RequestedSchema)
		json.Unmarshal(b, &sent)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}, legacy)
	call(t, cs, "signup")
	return sent, got
}

func TestWithField(t *testing.T) {
	sent, err := formError(t,
		elicit.WithField("email", elicit.Title("Email"), elicit.Format("email")),
		elicit.WithField("seats", elicit.Range(1, 10), elicit.Default(1)),
		elicit.WithField("plan", elicit.Choices(elicit.Choice{Value: "free", Title: "Free"}, elicit.Choice{Value: "pro", Title: "Pro"}), elicit.Default("free")),
		elicit.WithField("tags", elicit.Choices(elicit.Choice{Value: "a"}, elicit.Choice{Value: "b"}), elicit.Count(0, 2)),
		elicit.WithField("note", elicit.Length(0, 200), elicit.Optional()),
	)
	if err != nil {
		t.Fatal(err)
	}
	props := sent["properties"].(map[string]any)
	email := props["email"].(map[string]any)
	if email["title"] != "Email" || email["format"] != "email" {
		t.Errorf("email: %v", email)
	}
	if s := props["seats"].(map[string]any); s["minimum"] != 1.0 || s["maximum"] != 10.0 || s["default"] != 1.0 {
		t.Errorf("seats: %v", s)
	}
	if p := props["plan"].(map[string]any); p["oneOf"] == nil || p["default"] != "free" {
		t.Errorf("plan: %v", p)
	}
	if tg := props["tags"].(map[string]any); tg["maxItems"] != 2.0 || tg["items"].(map[string]any)["enum"] == nil {
		t.Errorf("tags: %v", tg)
	}
	for _, r := range sent["required"].([]any) {
		if r == "note" {
			t.Errorf("note is still required: %v", sent["required"])
		}
	}
}

// A misspelt field, or an option that does not fit the field's type, is a
// *SchemaError naming the field, before anything is sent.
func TestWithFieldChecks(t *testing.T) {
	for _, c := range []struct {
		name  string
		opt   elicit.Option
		field string
		says  string
	}{
		{"typo", elicit.WithField("e-mail", elicit.Format("email")), "e-mail", "not a field"},
		{"format on a number", elicit.WithField("seats", elicit.Format("email")), "seats", "type integer"},
		{"unknown format", elicit.WithField("email", elicit.Format("phone")), "email", "not a format"},
		{"range on a string", elicit.WithField("email", elicit.Range(0, 1)), "email", "type string"},
		{"inverted range", elicit.WithField("seats", elicit.Range(5, 1)), "seats", "not a range"},
		{"default of another type", elicit.WithField("seats", elicit.Default("one")), "seats", "does not fit"},
		{"count on a string", elicit.WithField("plan", elicit.Count(0, 1)), "plan", "type string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sent, err := formError(t, c.opt)
			var se *elicit.SchemaError
			if !errors.As(err, &se) || !errors.Is(err, elicit.ErrInvalidParams) || se.Field != c.field || !strings.Contains(se.Error(), c.says) {
				t.Fatalf("got %v, want a SchemaError for %q saying %q", err, c.field, c.says)
			}
			if sent != nil {
				t.Fatal("the form was sent")
			}
		})
	}
}

// A WithSchema refinement that panics (a nil pointer for a misspelt
// property, the common mistake) is a *SchemaError, not a crashed call.
func TestWithSchemaPanic(t *testing.T) {
	sent, err := formError(t, elicit.WithSchema(func(s *jsonschema.Schema) error {
		s.Properties["e-mail"].Format = "email"
		return nil
	}))
	if !errors.Is(err, elicit.ErrInvalidParams) || !strings.Contains(err.Error(), "WithField") {
		t.Fatalf("got %v", err)
	}
	if sent != nil {
		t.Fatal("the form was sent")
	}
}
