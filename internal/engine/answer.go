package engine

import (
	"bytes"
	"encoding/json"

	"github.com/elicitvault/elicitvault/internal/form"
)

// ErrTooLarge is an answer, a pending record or a state larger than its
// limit. It also matches form.ErrInvalidContent.
var ErrTooLarge error = &alsoError{"elicit: content larger than the size limit", form.ErrInvalidContent}

// ValidateAnswer checks the content of an accepted answer, as the client
// or the model sent it (JSON), against schema, the encoding of the form
// it was asked with (a pending record's), and returns it decoded. Content
// that is absent or null is {}; content larger than maxSize bytes is
// ErrTooLarge, before it is decoded. A schema that does not parse is
// ErrUnknownElicitation: the record is not one this engine wrote.
func ValidateAnswer(schema []byte, content json.RawMessage, maxSize int) (map[string]any, error) {
	content = bytes.TrimSpace(content)
	if len(content) == 0 || bytes.Equal(content, []byte("null")) {
		content = []byte("{}")
	}
	if len(content) > maxSize {
		return nil, ErrTooLarge
	}
	f, err := form.Parse(schema)
	if err != nil {
		return nil, ErrUnknownElicitation
	}
	return f.ValidateJSON(content)
}
