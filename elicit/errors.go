package elicit

import "github.com/elicitvault/elicitvault/elicit/internal/form"

var (
	// ErrInvalidParams is matched by every *SchemaError: the form asked for
	// is outside the MCP elicitation subset. It is a bug at the call site,
	// reported before anything is sent.
	ErrInvalidParams = form.ErrInvalidSchema

	// ErrSensitiveField is matched by a *SchemaError for a form field whose
	// name says it holds a secret. Ask for such values with URL, or opt out
	// with AllowSensitiveFieldsInFormMode.
	ErrSensitiveField = form.ErrSensitiveField

	// ErrInvalidContent is matched by every *ContentError: the client
	// accepted with content that does not match the schema.
	ErrInvalidContent = form.ErrInvalidContent
)
