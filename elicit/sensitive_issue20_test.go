package elicit

import (
	"encoding/json"
	"errors"
	"testing"
)

// issue20Secrets are fields that plainly ask for a secret, each a property
// (name → schema): refused by the server's form-mode check.
var issue20Secrets = map[string]map[string]any{
	"passcode":               {"type": "string"},
	"otp":                    {"type": "string"},
	"code":                   {"type": "string", "title": "2FA code"},
	"cvv2":                   {"type": "string"},
	"card":                   {"type": "string", "title": "Card no."},
	"social_security_number": {"type": "string"},
	"phrase":                 {"type": "string", "title": "Recovery phrase"},
	"aws":                    {"type": "string", "title": "AWS access key"},
	"pincode":                {"type": "string"},
	"c":                      {"type": "string", "title": "Contraseña"},
	"mot_de_passe":           {"type": "string"},
	"login":                  {"type": "string", "description": "Type your GitHub password here"},
	"p\u0430ssword":          {"type": "string"},
}

func TestSensitiveIssue20(t *testing.T) {
	for name, prop := range issue20Secrets {
		raw, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{name: prop}})
		s, err := ParseSchema(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.checkFormMode(false); !errors.Is(err, errSensitiveField) {
			t.Errorf("%q %v: %v, want errSensitiveField", name, prop, err)
		}
	}
}
