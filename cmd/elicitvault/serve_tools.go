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

// attendeeFields sets titles, formats, bounds, choices and defaults:
// every field kind of the MCP subset, each way an enum can be written.
// Only name, email and arrival must be filled in; the fields with a
// default get it when they are left out.
var attendeeFields = []elicit.Option{
	elicit.WithField("name", elicit.Title("Name"), elicit.Length(1, 80)),
	elicit.WithField("email", elicit.Title("Email"), elicit.Format("email")),
	elicit.WithField("website", elicit.Title("Website"), elicit.Format("uri"), elicit.Optional()),
	elicit.WithField("arrival", elicit.Title("Arrival"), elicit.Format("date")),
	elicit.WithField("session_start", elicit.Title("Session start"), elicit.Format("date-time"), elicit.Optional()),
	elicit.WithField("guests", elicit.Title("Guests"), elicit.Range(0, 4), elicit.Default(0), elicit.Optional()),
	elicit.WithField("budget", elicit.Title("Dinner budget"), elicit.Range(0, 500), elicit.Default(49.5), elicit.Optional()),
	elicit.WithField("newsletter", elicit.Title("Newsletter"), elicit.Default(false), elicit.Optional()),
	// An untitled enum, a titled one (oneOf const/title) and the legacy
	// titled one (enumNames, set below).
	elicit.WithField("room", elicit.Title("Room"), elicit.Optional(), elicit.Default("single"),
		elicit.Choices(elicit.Choice{Value: "single"}, elicit.Choice{Value: "double"}, elicit.Choice{Value: "suite"})),
	elicit.WithField("seating", elicit.Title("Seating"), elicit.Optional(), elicit.Default("aisle"),
		elicit.Choices(elicit.Choice{Value: "aisle", Title: "Aisle"}, elicit.Choice{Value: "window", Title: "Window"}, elicit.Choice{Value: "front", Title: "Front row"})),
	elicit.WithField("diet", elicit.Title("Diet"), elicit.Optional(), elicit.Default("none"),
		elicit.Choices(elicit.Choice{Value: "none"}, elicit.Choice{Value: "vegetarian"}, elicit.Choice{Value: "vegan"})),
	elicit.WithSchema(func(s *jsonschema.Schema) error {
		if d := s.Properties["diet"]; d != nil {
			d.Extra = map[string]any{"enumNames": []string{"No preference", "Vegetarian", "Vegan"}}
		}
		return nil
	}),
	// Multi-select: untitled (items.enum) and titled (items.anyOf).
	elicit.WithField("topics", elicit.Title("Topics"), elicit.Optional(), elicit.Default([]string{"security"}),
		elicit.Choices(elicit.Choice{Value: "security"}, elicit.Choice{Value: "protocols"}, elicit.Choice{Value: "tooling"})),
	elicit.WithField("workshops", elicit.Title("Workshops"), elicit.Optional(), elicit.Count(0, 2),
		elicit.Choices(elicit.Choice{Value: "go", Title: "MCP servers in Go"}, elicit.Choice{Value: "oauth", Title: "OAuth for MCP"}, elicit.Choice{Value: "evals", Title: "Evaluating agents"})),
}

func registerAttendee(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	res, err := elicit.Form[attendee](ctx, "Register for MCP Dev Days", attendeeFields...)
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

func mustSchema(raw string) *elicit.Schema {
	s, err := elicit.ParseSchema([]byte(strings.TrimSpace(raw)))
	if err != nil {
		panic(err)
	}
	return s
}
