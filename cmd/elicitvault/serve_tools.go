package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools of the reference server. Each returns the error of an
// elicitation unchanged, as the elicit package asks: on 2026-07-28 it is
// how the call turns into input requests, and with -32042 how it turns
// into the protocol error. Any other such error becomes a tool error
// whose text never holds an answer.

func (r *reference) addTools() {
	mcp.AddTool(r.server, &mcp.Tool{
		Name:        "delete_contacts",
		Title:       "Delete contacts",
		Description: "Deletes contacts from the address book after the user confirms. (A demo: nothing is deleted.)",
	}, deleteContacts)
	mcp.AddTool(r.server, &mcp.Tool{
		Name:        "subscribe_newsletter",
		Title:       "Subscribe to the newsletter",
		Description: "Subscribes the user to the newsletter after the user confirms. (A demo: nothing is sent.)",
	}, subscribeNewsletter)
	mcp.AddTool(r.server, &mcp.Tool{
		Name:        "register_attendee",
		Title:       "Register an attendee",
		Description: "Asks the user for their conference registration with a form that has every field kind of MCP elicitation.",
	}, registerAttendee)
	mcp.AddTool(r.server, &mcp.Tool{
		Name:        "connect_account",
		Title:       "Connect an account",
		Description: "Connects the user's Example account: the user opens a consent page of this server in the browser (URL mode).",
	}, r.connectAccount)
	r.addConformanceTools()
}

func text(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

type deleteArgs struct {
	Count int `json:"count,omitempty" jsonschema:"how many contacts to delete (default 47)"`
}

func deleteContacts(ctx context.Context, req *mcp.CallToolRequest, in deleteArgs) (*mcp.CallToolResult, any, error) {
	n := in.Count
	if n <= 0 {
		n = 47
	}
	// A destructive action is confirmed by the user, never by the model: of
	// the fallbacks for clients that cannot elicit, only the browser form
	// (which the user answers) may stand in; the LLM-mediated one may not.
	ok, err := elicit.Confirm(ctx, req, fmt.Sprintf("Delete %d contacts? This cannot be undone.", n),
		elicit.WithFallbacks(elicit.BrowserForm))
	if errors.Is(err, elicit.ErrUnsupported) {
		return text("Nothing was deleted: deleting contacts needs a confirmation from the user, and this client cannot ask for one."), nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return text("Nothing was deleted."), nil, nil
	}
	return text("Deleted %d contacts.", n), nil, nil
}

// subscribeNewsletter is a confirmation whose stakes are low: the model
// may relay the user's answer when the client cannot elicit.
func subscribeNewsletter(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	ok, err := elicit.Confirm(ctx, req, "Subscribe to the monthly newsletter?")
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return text("Not subscribed."), nil, nil
	}
	return text("Subscribed."), nil, nil
}

// attendee is the form of register_attendee. The Go type gives the fields
// and their JSON types; attendeeSchema adds what a Go type cannot say.
type attendee struct {
	Name         string   `json:"name" jsonschema:"as it should appear on your badge"`
	Email        string   `json:"email" jsonschema:"where the confirmation goes"`
	Website      string   `json:"website" jsonschema:"printed under your name, if you like"`
	Arrival      string   `json:"arrival" jsonschema:"the day you arrive"`
	SessionStart string   `json:"session_start" jsonschema:"when you would like your one-to-one session"`
	Guests       int      `json:"guests" jsonschema:"people coming with you"`
	Budget       float64  `json:"budget" jsonschema:"for the dinner, in euros"`
	Newsletter   bool     `json:"newsletter" jsonschema:"news about next year's conference"`
	Room         string   `json:"room" jsonschema:"hotel room"`
	Seating      string   `json:"seating" jsonschema:"where you sit in the talks"`
	Diet         string   `json:"diet" jsonschema:"for the dinner"`
	Topics       []string `json:"topics" jsonschema:"what you want to hear about"`
	Workshops    []string `json:"workshops" jsonschema:"at most two"`
}

// attendeeSchema sets titles, formats, bounds, enums and defaults: every
// field kind of the MCP subset, each way an enum can be written.
func attendeeSchema(s *jsonschema.Schema) error {
	// Only these must be filled in; the others are optional, and those
	// with a default get it when they are left out.
	s.Required = []string{"name", "email", "arrival"}
	p := s.Properties
	set := func(name, title string) *jsonschema.Schema {
		p[name].Title = title
		return p[name]
	}
	n := set("name", "Name")
	n.MinLength, n.MaxLength = ptr(1), ptr(80)
	set("email", "Email").Format = "email"
	set("website", "Website").Format = "uri"
	set("arrival", "Arrival").Format = "date"
	set("session_start", "Session start").Format = "date-time"

	g := set("guests", "Guests")
	g.Minimum, g.Maximum, g.Default = ptr(0.0), ptr(4.0), raw(0)
	b := set("budget", "Dinner budget")
	b.Minimum, b.Maximum, b.Default = ptr(0.0), ptr(500.0), raw(49.5)
	set("newsletter", "Newsletter").Default = raw(false)

	// An untitled enum, a titled one (oneOf const/title) and the legacy
	// titled one (enumNames).
	rm := set("room", "Room")
	rm.Enum, rm.Default = []any{"single", "double", "suite"}, raw("single")
	st := set("seating", "Seating")
	st.OneOf, st.Default = []*jsonschema.Schema{
		{Const: ptr[any]("aisle"), Title: "Aisle"},
		{Const: ptr[any]("window"), Title: "Window"},
		{Const: ptr[any]("front"), Title: "Front row"},
	}, raw("aisle")
	d := set("diet", "Diet")
	d.Enum, d.Default = []any{"none", "vegetarian", "vegan"}, raw("none")
	d.Extra = map[string]any{"enumNames": []string{"No preference", "Vegetarian", "Vegan"}}

	// Multi-select: untitled (items.enum) and titled (items.anyOf).
	tp := set("topics", "Topics")
	tp.Items = &jsonschema.Schema{Type: "string", Enum: []any{"security", "protocols", "tooling"}}
	tp.Default = raw([]string{"security"})
	ws := set("workshops", "Workshops")
	ws.Items = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Const: ptr[any]("go"), Title: "MCP servers in Go"},
		{Const: ptr[any]("oauth"), Title: "OAuth for MCP"},
		{Const: ptr[any]("evals"), Title: "Evaluating agents"},
	}}
	ws.MinItems, ws.MaxItems = ptr(0), ptr(2)
	return nil
}

func registerAttendee(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	res, err := elicit.Form[attendee](ctx, req, "Register for MCP Dev Days", elicit.WithSchema(attendeeSchema))
	if err != nil {
		return nil, nil, err
	}
	switch res.Action {
	case elicit.Accept:
		b, err := json.Marshal(res.Content)
		if err != nil {
			return nil, nil, err
		}
		return text("Registered: %s", b), nil, nil
	case elicit.Decline:
		return text("Registration declined."), nil, nil
	default:
		return text("Registration cancelled."), nil, nil
	}
}

type connectArgs struct {
	URLRequiredError bool `json:"url_required_error,omitempty" jsonschema:"answer with the error -32042 (URL elicitation required) instead of waiting; the client retries once the account is connected"`
}

func (r *reference) connectAccount(ctx context.Context, req *mcp.CallToolRequest, in connectArgs) (*mcp.CallToolResult, any, error) {
	var opts []elicit.Option
	if in.URLRequiredError {
		opts = append(opts, elicit.WithURLElicitationRequiredError())
	}
	action, err := elicit.URL(ctx, req, "Connect your Example account to elicitvault", r.connectLink, opts...)
	if err != nil {
		return nil, nil, err
	}
	switch action {
	case elicit.Accept:
		return text("Your Example account is connected."), nil, nil
	case elicit.Decline:
		return text("Not connected: you declined."), nil, nil
	default:
		return text("Not connected: cancelled."), nil, nil
	}
}

// The conformance suite's elicitation tools (server scenarios
// tools-call-elicitation, elicitation-sep1034-defaults and
// elicitation-sep1330-enums of @modelcontextprotocol/conformance), with
// the schemas the scenarios describe and check.

var (
	conformanceSchema = mustSchema(`{"type":"object","properties":{
		"username":{"type":"string","description":"User's response"},
		"email":{"type":"string","description":"User's email address"}},
		"required":["username","email"]}`)

	sep1034Schema = mustSchema(`{"type":"object","properties":{
		"name":{"type":"string","description":"User name","default":"John Doe"},
		"age":{"type":"integer","description":"User age","default":30},
		"score":{"type":"number","description":"User score","default":95.5},
		"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
		"verified":{"type":"boolean","description":"Verification status","default":true}},
		"required":[]}`)

	sep1330Schema = mustSchema(`{"type":"object","properties":{
		"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},
		"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[
			{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
		"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],
			"enumNames":["Option One","Option Two","Option Three"]},
		"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,
			"items":{"type":"string","enum":["option1","option2","option3"]}},
		"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,
			"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},
		"required":[]}`)
)

type conformanceArgs struct {
	Message string `json:"message" jsonschema:"The message to show the user"`
}

func (r *reference) addConformanceTools() {
	mcp.AddTool(r.server, &mcp.Tool{
		Name:        "test_elicitation",
		Description: "Tests server-initiated elicitation (user input request)",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in conformanceArgs) (*mcp.CallToolResult, any, error) {
		return conformanceForm(ctx, req, in.Message, conformanceSchema, "User response")
	})
	mcp.AddTool(r.server, &mcp.Tool{
		Name:        "test_elicitation_sep1034_defaults",
		Description: "Tests elicitation with default values per SEP-1034",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return conformanceForm(ctx, req, "Please review and update the form fields with defaults", sep1034Schema, "Elicitation completed")
	})
	mcp.AddTool(r.server, &mcp.Tool{
		Name:        "test_elicitation_sep1330_enums",
		Description: "Tests elicitation with enum schema improvements per SEP-1330",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return conformanceForm(ctx, req, "Please select options from the enum fields", sep1330Schema, "Elicitation completed")
	})
}

// conformanceForm asks with schema and reports the validated answer the
// way the suite's reference server does.
func conformanceForm(ctx context.Context, req *mcp.CallToolRequest, message string, schema *elicit.Schema, label string) (*mcp.CallToolResult, any, error) {
	res, err := elicit.Form[map[string]any](ctx, req, message, elicit.WithRequestedSchema(schema))
	if err != nil {
		return nil, nil, err
	}
	content := res.Content
	if content == nil {
		content = map[string]any{}
	}
	b, err := json.Marshal(content)
	if err != nil {
		return nil, nil, err
	}
	return text("%s: action=%s, content=%s", label, res.Action, b), nil, nil
}

func mustSchema(raw string) *elicit.Schema {
	s, err := elicit.ParseSchema([]byte(strings.TrimSpace(raw)))
	if err != nil {
		panic(err)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
