package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

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
	addTool(r, &mcp.Tool{
		Name:        "delete_contacts",
		Title:       "Delete contacts",
		Description: "Deletes contacts from the address book after the user confirms. (A demo: nothing is deleted.)",
	}, deleteContacts)
	addTool(r, &mcp.Tool{
		Name:        "subscribe_newsletter",
		Title:       "Subscribe to the newsletter",
		Description: "Subscribes the user to the newsletter after the user confirms. (A demo: nothing is sent.)",
	}, subscribeNewsletter)
	addTool(r, &mcp.Tool{
		Name:        "register_attendee",
		Title:       "Register an attendee",
		Description: "Asks the user for their conference registration with a form that has every field kind of MCP elicitation.",
	}, registerAttendee)
	if r.oauth != nil {
		addTool(r, &mcp.Tool{
			Name:        "connect_account",
			Title:       "Connect an account",
			Description: "Connects the user's " + r.provider + " account: the user signs in there in the browser (OAuth 2.0 through URL mode); the credential stays on the server.",
		}, r.connectAccount)
		addTool(r, &mcp.Tool{
			Name:        "disconnect_account",
			Title:       "Disconnect an account",
			Description: "Deletes the user's " + r.provider + " credential from the server and revokes it at " + r.provider + ".",
		}, r.disconnectAccount)
	} else {
		addTool(r, &mcp.Tool{
			Name:        "connect_account",
			Title:       "Connect an account",
			Description: "A demonstration of URL mode (no OAuth provider is configured): the user opens a consent page of this server in the browser; nothing is connected.",
		}, r.connectAccount)
	}
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
	ok, err := elicit.Confirm(ctx, fmt.Sprintf("Delete %d contacts? This cannot be undone.", n),
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
	ok, err := elicit.Confirm(ctx, "Subscribe to the monthly newsletter?")
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

// attendeeForm sets titles, formats, bounds, choices and defaults:
// every field kind of the MCP subset, each way an enum can be written.
// Only name, email and arrival must be filled in; the fields with a
// default get it when they are left out. It is built when the tool first
// asks, not when serve starts: what a process holds, the GC marks on
// every cycle.
var attendeeForm = sync.OnceValue(func() *elicit.Schema { return mustSchemaFor[attendee](adjustAttendee) })

func adjustAttendee(s *jsonschema.Schema) error {
	p := s.Properties
	titles := map[string]string{
		"name": "Name", "email": "Email", "website": "Website", "arrival": "Arrival",
		"session_start": "Session start", "guests": "Guests", "budget": "Dinner budget",
		"newsletter": "Newsletter", "room": "Room", "seating": "Seating", "diet": "Diet",
		"topics": "Topics", "workshops": "Workshops",
	}
	for name, title := range titles {
		p[name].Title = title
	}
	s.Required = []string{"name", "email", "arrival"}
	p["name"].MinLength, p["name"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(80)
	p["email"].Format = "email"
	p["website"].Format = "uri"
	p["arrival"].Format = "date"
	p["session_start"].Format = "date-time"
	p["guests"].Minimum, p["guests"].Maximum, p["guests"].Default = jsonschema.Ptr(0.0), jsonschema.Ptr(4.0), json.RawMessage(`0`)
	p["budget"].Minimum, p["budget"].Maximum, p["budget"].Default = jsonschema.Ptr(0.0), jsonschema.Ptr(500.0), json.RawMessage(`49.5`)
	p["newsletter"].Default = json.RawMessage(`false`)
	// An untitled enum, a titled one (oneOf const/title) and the legacy
	// titled one (enumNames).
	p["room"].Enum, p["room"].Default = []any{"single", "double", "suite"}, json.RawMessage(`"single"`)
	p["seating"].OneOf, p["seating"].Default = titled("aisle", "Aisle", "window", "Window", "front", "Front row"), json.RawMessage(`"aisle"`)
	p["diet"].Enum, p["diet"].Default = []any{"none", "vegetarian", "vegan"}, json.RawMessage(`"none"`)
	p["diet"].Extra = map[string]any{"enumNames": []string{"No preference", "Vegetarian", "Vegan"}}
	// Multi-select: untitled (items.enum) and titled (items.anyOf).
	p["topics"].Items = &jsonschema.Schema{Type: "string", Enum: []any{"security", "protocols", "tooling"}}
	p["topics"].Default = json.RawMessage(`["security"]`)
	p["workshops"].Items = &jsonschema.Schema{AnyOf: titled("go", "MCP servers in Go", "oauth", "OAuth for MCP", "evals", "Evaluating agents")}
	p["workshops"].MinItems, p["workshops"].MaxItems = jsonschema.Ptr(0), jsonschema.Ptr(2)
	return nil
}

// titled returns the titled choices of value, title pairs, as const and
// title schemas.
func titled(pairs ...string) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for i := 0; i+1 < len(pairs); i += 2 {
		v := any(pairs[i])
		out = append(out, &jsonschema.Schema{Const: &v, Title: pairs[i+1]})
	}
	return out
}

// mustSchemaFor is elicit.SchemaFor for the reference tools' forms, which
// are fixed: an error is a bug of this file.
func mustSchemaFor[T any](adjust func(*jsonschema.Schema) error) *elicit.Schema {
	s, err := elicit.SchemaFor[T](adjust)
	if err != nil {
		panic(err)
	}
	return s
}

func registerAttendee(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	res, err := elicit.Form[attendee](ctx, "Register for MCP Dev Days", elicit.WithSchema(attendeeForm()))
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
	if r.oauth != nil {
		return r.connectOAuth(ctx, opts)
	}
	action, err := elicit.URL(ctx, "Connect your Example account to elicitvault (a demonstration: no OAuth provider is configured)", opts...)
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

// lazySchema is mustSchema of raw, parsed on first use: a reference tool's
// schema is not held (and marked by every GC cycle) by a server that never
// calls the tool.
func lazySchema(raw string) func() *elicit.Schema {
	return sync.OnceValue(func() *elicit.Schema { return mustSchema(raw) })
}

func mustSchema(raw string) *elicit.Schema {
	s, err := elicit.ParseSchema([]byte(strings.TrimSpace(raw)))
	if err != nil {
		panic(err)
	}
	return s
}
