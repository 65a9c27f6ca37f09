package form

import "testing"

func TestSensitive(t *testing.T) {
	t.Parallel()
	secret := []Field{
		// The fields of issue 20 that passed before.
		{Name: "passcode"},
		{Name: "otp"},
		{Name: "code", Title: "2FA code"},
		{Name: "cvv2"},
		{Name: "card", Title: "Card no."},
		{Name: "social_security_number"},
		{Name: "phrase", Title: "Recovery phrase"},
		{Name: "aws", Title: "AWS access key"},
		{Name: "pincode"},
		{Name: "c", Title: "Contraseña"},
		{Name: "mot_de_passe"},
		{Name: "login", Description: "Type your GitHub password here"},
		{Name: "p\u0430ssword"}, // Cyrillic а
		// Spellings that hide a word.
		{Name: "newPassword"}, {Name: "NEW_PASSWORD"}, {Name: "pass-word"}, {Name: "APIKey"},
		{Name: "ｐａｓｓｗｏｒｄ"}, {Name: "𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝"}, {Name: "pass\u200bword"}, {Name: "pa\u0301ssword"},
		{Name: "\u0440\u0430ssw\u043erd"}, {Name: "p\u03b1ssw\u03bfrd"}, {Name: "Ⓟⓐⓢⓢⓦⓞⓡⓓ"},
		{Name: "x", Title: "Pass\u3164word"},
		// Languages.
		{Name: "clave"}, {Name: "senha"}, {Name: "palavra-passe"}, {Name: "Passwort"}, {Name: "Kennwort"},
		{Name: "x", Title: "Mot de passe"}, {Name: "x", Title: "Parola d'ordine"}, {Name: "geheimzahl"},
		{Name: "x", Title: "Número de tarjeta"}, {Name: "x", Title: "Numéro de carte"}, {Name: "kartennummer"},
		{Name: "x", Title: "Número do cartão"}, {Name: "x", Title: "Código de seguridad"}, {Name: "codice_segreto"},
		{Name: "x", Title: "Code secret"}, {Name: "x", Title: "Cryptogramme visuel"},
		// Others.
		{Name: "pin"}, {Name: "PIN"}, {Name: "token"}, {Name: "access_token"}, {Name: "refreshToken"},
		{Name: "client_secret"}, {Name: "apiKey"}, {Name: "private_key"}, {Name: "seed_phrase"},
		{Name: "mnemonic"}, {Name: "ssn"}, {Name: "cvc"}, {Name: "card_number"}, {Name: "creditCard"},
		{Name: "x", Title: "Verification code"}, {Name: "x", Title: "One-time code"}, {Name: "mfa"},
		{Name: "totp"}, {Name: "pwd"}, {Name: "secret"}, {Name: "x", Description: "Your API token"},
	}
	for _, f := range secret {
		if !Sensitive(&f) {
			t.Errorf("%+v passes, want refused", f)
		}
	}
	ordinary := []Field{
		{Name: "email"}, {Name: "name"}, {Name: "notes"}, {Name: "description"},
		{Name: "full_name", Title: "Full name", Description: "As on your badge"},
		{Name: "tokens"}, {Name: "max_tokens"}, {Name: "token_count"}, {Name: "x", Title: "Token limit"},
		{Name: "secretary"}, {Name: "x", Title: "Secretaria"}, {Name: "company"}, {Name: "compass"},
		{Name: "passenger"}, {Name: "bypass"}, {Name: "spinach"}, {Name: "opinion"}, {Name: "pinned"},
		{Name: "zip_code"}, {Name: "country_code"}, {Name: "promo_code"}, {Name: "x", Title: "Discount code"},
		{Name: "keyword"}, {Name: "monkey"}, {Name: "access_level"}, {Name: "card_game"},
		{Name: "website", Format: "uri"}, {Name: "arrival", Format: "date"},
		{Name: "x", Title: "Dinner budget"}, {Name: "x", Title: "Pan size", Description: "Frying pan diameter"},
		{Name: "topics"}, {Name: "workshops"}, {Name: "guests"}, {Name: "newsletter"}, {Name: "session_start"},
		{Name: "x", Title: "Spanish", Description: "¿Cuál es tu nombre?"}, {Name: "x", Title: "Prénom"},
		{Name: "x", Title: "Straße"}, {Name: "x", Title: "Número de teléfono"}, {Name: "x", Title: "Timeout"},
		{Name: "x", Title: "Options"}, {Name: "x", Title: "Tipo de cuenta"},
	}
	for _, f := range ordinary {
		if Sensitive(&f) {
			t.Errorf("%+v refused, want it to pass", f)
		}
	}
}

func FuzzSensitive(f *testing.F) {
	for _, s := range []string{"password", "p\u0430ssword", "ＡＰＩＫｅｙ", "Card no.", "secretary", "token count", "𝐩"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := Sensitive(&Field{Name: s})
		if b := Sensitive(&Field{Name: "x", Description: s}); a != b {
			t.Fatalf("%q: as a name %v, as a description %v", s, a, b)
		}
	})
}
