package form

import (
	"strings"
	"sync"
	"unicode"
)

// Sensitive reports whether a field asks for a secret: a password or
// passcode, a PIN, a one-time or 2FA code, a secret, an API or access
// key, a token, a private key or recovery phrase, a card number or its
// security code, a social security number. Such fields belong in URL
// mode, where the value never passes through the MCP client. The server's
// check and the client's use this one function.
//
// It looks at the name, the title, the description and the format, each
// folded so that spelling does not hide a word: compatibility forms
// (full-width, mathematical and circled letters, ligatures) and the
// Cyrillic and Greek letters that look like Latin ones become the Latin
// letter, accents and invisible characters are dropped, and the text is
// split into words at spaces, punctuation, '_', '-' and camelCase. The
// words are English, Spanish, French, German, Portuguese and Italian.
//
// It errs towards refusing: a description that mentions a password ("we
// never ask for your password") refuses the form too; a false refusal
// costs the server a URL-mode page, a missed one the user's secret. The
// word "token" alone refuses, but not "tokens" nor "token count", "token
// limit", "token budget", "token usage" (counts of model tokens).
func Sensitive(f *Field) bool {
	for _, s := range []string{f.Name, f.Title, f.Description, f.Format} {
		if sensitiveText(s) {
			return true
		}
	}
	return false
}

// Stems are matched anywhere in the words run together ("newPassword",
// "mot de passe", "AWS access key"); they are long or rare enough not to
// occur inside ordinary words. notAfterStem lists what, following a stem,
// makes an ordinary word of it.
var (
	sensitiveStems = []string{
		// password, passcode, PIN
		"password", "passwd", "passphrase", "passcode", "pincode", "passwort", "kennwort",
		"contrasena", "motdepasse", "senha", "palavrapasse", "paroladordine", "geheimzahl",
		"claveacceso", "clavedeacceso", "clavesecreta", "codigopin", "codepin",
		// secrets and keys
		"secret", "segreto", "geheim", "apikey", "accesskey", "secretkey", "privatekey",
		"signingkey", "encryptionkey", "masterkey", "licensekey", "accesstoken", "refreshtoken",
		"authtoken", "bearertoken", "apitoken", "sessiontoken", "idtoken", "authorizationcode",
		"recoveryphrase", "seedphrase", "mnemonic", "recoverycode", "backupcode", "recoverykey",
		// one-time codes
		"onetimepassword", "onetimecode", "onetimepin", "verificationcode", "securitycode",
		"authenticationcode", "authenticatorcode", "authcode", "logincode", "smscode", "mfacode",
		"codigodeseguridad", "codigodeverificacion", "codedeverification", "codedesecurite",
		"sicherheitscode", "bestatigungscode", "codigodeseguranca", "codigodeverificacao",
		"codicedisicurezza", "codicediverifica",
		// cards
		"cardnumber", "creditcard", "debitcard", "ccnumber", "cardverification", "cardsecurity",
		"numerodetarjeta", "tarjetadecredito", "numerodecarte", "cartedecredit", "cartebancaire",
		"cryptogramme", "kartennummer", "kreditkarte", "prufnummer", "numerodocartao",
		"cartaodecredito", "numerodicarta", "numerodellacarta", "cartadicredito",
		// identity numbers
		"socialsecurity", "seguridadsocial", "securitesociale", "sozialversicherung",
	}
	notAfterStem = map[string][]string{"secret": {"ar"}} // secretary, secretaria, secretariat
	// Words that alone ask for a secret, too short to be stems.
	sensitiveWords = map[string]bool{
		"pin": true, "pwd": true, "pw": true, "otp": true, "totp": true, "hotp": true,
		"2fa": true, "mfa": true, "cvv": true, "cvv2": true, "cvc": true, "cvc2": true,
		"csc": true, "cvn": true, "ssn": true, "nip": true, "clave": true, "token": true,
		"tan": true, "pan": true, "cc": true, "ccv": true,
	}
	// Two words that together ask for a secret.
	sensitivePairs = map[[2]string]bool{
		{"card", "no"}: true, {"card", "num"}: true, {"card", "nr"}: true, {"card", "nb"}: true,
		{"cc", "no"}: true, {"cc", "num"}: true, {"one", "time"}: true, {"card", "code"}: true,
		{"security", "number"}: true,
	}
	// A word that, after "token", makes it a count of model tokens.
	tokenCounts = map[string]bool{"count": true, "limit": true, "budget": true, "usage": true}
)

func sensitiveText(s string) bool {
	if s == "" {
		return false
	}
	words := foldWords(s)
	for i, w := range words {
		if sensitiveWords[w] {
			if w == "token" && i+1 < len(words) && tokenCounts[words[i+1]] {
				continue
			}
			if w == "pan" || w == "tan" || w == "nip" {
				// Ordinary words too ("pan", "tan"): only as a field
				// name on their own.
				if len(words) != 1 {
					continue
				}
			}
			return true
		}
		if i+1 < len(words) && sensitivePairs[[2]string{w, words[i+1]}] {
			return true
		}
	}
	joined := strings.Join(words, "")
	for _, stem := range sensitiveStems {
		for off := 0; ; {
			i := strings.Index(joined[off:], stem)
			if i < 0 {
				break
			}
			after := joined[off+i+len(stem):]
			ordinary := false
			for _, n := range notAfterStem[stem] {
				if strings.HasPrefix(after, n) {
					ordinary = true
				}
			}
			if !ordinary {
				return true
			}
			off += i + 1
		}
	}
	return false
}

// foldWords splits s into lower-case ASCII-folded words: at anything not
// a letter or digit, at a lower-to-upper case change ("newPassword"), at
// and at the last capital of a run before a lower-case letter ("APIKey");
// letters and digits stay together ("cvv2", "2FA").
func foldWords(s string) []string {
	var rs []rune
	for _, r := range s {
		rs = append(rs, foldRune(r)...)
	}
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i, r := range rs {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r)) {
			flush()
			continue
		}
		if len(cur) > 0 && unicode.IsUpper(r) {
			prev := cur[len(cur)-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// foldRune maps r to the Latin letters it looks like or stands for, keeping
// its case; nothing for an invisible or combining character.
func foldRune(r rune) []rune {
	switch {
	case r < 0x80:
		return []rune{r}
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || unicode.Is(unicode.Cf, r) ||
		r == '\u115F' || r == '\u1160' || r == '\u3164' || r == '\uFFA0':
		return nil
	case 0xFF01 <= r && r <= 0xFF5E: // full-width ASCII
		return []rune{r - 0xFEE0}
	case 0x1D400 <= r && r <= 0x1D6A3: // mathematical letters, 13 styles of A-Z a-z
		k := (r - 0x1D400) % 52
		if k < 26 {
			return []rune{'A' + k}
		}
		return []rune{'a' + k - 26}
	case 0x1D7CE <= r && r <= 0x1D7FF: // mathematical digits
		return []rune{'0' + (r-0x1D7CE)%10}
	case 0x24B6 <= r && r <= 0x24CF: // circled capitals
		return []rune{'A' + r - 0x24B6}
	case 0x24D0 <= r && r <= 0x24E9:
		return []rune{'a' + r - 0x24D0}
	}
	if s, ok := foldTable()[r]; ok {
		return []rune(s)
	}
	return []rune{r}
}

// foldTable: Latin letters with diacritics and ligatures, and the
// Cyrillic and Greek letters that look like Latin ones. It is built when
// a name first has such a letter: a map the process holds is marked by
// the GC on every cycle, and most processes never need it.
var foldTable = sync.OnceValue(func() map[rune]string {
	m := map[rune]string{
		'ß': "ss", 'ẞ': "SS", 'æ': "ae", 'Æ': "AE", 'œ': "oe", 'Œ': "OE", 'ø': "o", 'Ø': "O",
		'ł': "l", 'Ł': "L", 'đ': "d", 'Đ': "D", 'ð': "d", 'þ': "th", 'ı': "i", 'ſ': "s",
		'ﬀ': "ff", 'ﬁ': "fi", 'ﬂ': "fl", 'ﬃ': "ffi", 'ﬄ': "ffl", 'ﬅ': "st", 'ﬆ': "st",
		'²': "2", '³': "3", '¹': "1", 'ª': "a", 'º': "o",
	}
	for _, f := range []struct {
		base     rune
		accented string
	}{
		{'a', "àáâãäåāăąǎȁȃȧạảấầẩẫậắằẳẵặ"}, {'A', "ÀÁÂÃÄÅĀĂĄǍȀȂȦẠẢẤẦẨẪẬẮẰẲẴẶ"},
		{'c', "çćĉċč"}, {'C', "ÇĆĈĊČ"}, {'d', "ď"}, {'D', "Ď"},
		{'e', "èéêëēĕėęěȅȇȩẹẻẽếềểễệ"}, {'E', "ÈÉÊËĒĔĖĘĚȄȆȨẸẺẼẾỀỂỄỆ"},
		{'g', "ĝğġģǧ"}, {'G', "ĜĞĠĢǦ"}, {'h', "ĥħ"}, {'H', "ĤĦ"},
		{'i', "ìíîïĩīĭįǐȉȋịỉ"}, {'I', "ÌÍÎÏĨĪĬĮİǏȈȊỊỈ"}, {'j', "ĵ"}, {'J', "Ĵ"}, {'k', "ķǩ"}, {'K', "ĶǨ"},
		{'l', "ĺļľŀ"}, {'L', "ĹĻĽĿ"}, {'n', "ñńņňǹ"}, {'N', "ÑŃŅŇǸ"},
		{'o', "òóôõöōŏőǒȍȏȯọỏốồổỗộớờởỡợơ"}, {'O', "ÒÓÔÕÖŌŎŐǑȌȎȮỌỎỐỒỔỖỘỚỜỞỠỢƠ"},
		{'r', "ŕŗřȑȓ"}, {'R', "ŔŖŘȐȒ"}, {'s', "śŝşšș"}, {'S', "ŚŜŞŠȘ"}, {'t', "ţťŧț"}, {'T', "ŢŤŦȚ"},
		{'u', "ùúûüũūŭůűųǔȕȗụủứừửữựư"}, {'U', "ÙÚÛÜŨŪŬŮŰŲǓȔȖỤỦỨỪỬỮỰƯ"},
		{'w', "ŵ"}, {'W', "Ŵ"}, {'y', "ýÿŷỳỹỷỵ"}, {'Y', "ÝŸŶỲỸỶỴ"}, {'z', "źżž"}, {'Z', "ŹŻŽ"},
		// Cyrillic look-alikes
		{'a', "аӑӓ"}, {'A', "АӐӒ"}, {'b', "Ьь"}, {'B', "ВБ"},
		{'c', "сҫ"}, {'C', "СҪ"}, {'e', "еёѐ"}, {'E', "ЕЁЀЄ"},
		{'h', "һ"}, {'H', "НҢ"}, {'i', "іїɩ"}, {'I', "ІЇӀ"},
		{'j', "ј"}, {'J', "Ј"}, {'K', "КҚ"}, {'k', "к"},
		{'M', "М"}, {'m', "м"}, {'o', "оӧ"}, {'O', "ОӦ"},
		{'p', "р"}, {'P', "Р"}, {'q', "ԛ"}, {'s', "ѕ"},
		{'S', "Ѕ"}, {'T', "Т"}, {'t', "т"}, {'y', "уӯ"},
		{'Y', "УҮ"}, {'x', "хҳ"}, {'X', "ХҲ"}, {'w', "ԝ"},
		{'d', "ԁ"}, {'v', "ѵ"}, {'V', "Ѵ"}, {'n', "п"},
		// Greek look-alikes
		{'a', "αά"}, {'A', "ΑΆ"}, {'B', "Β"}, {'b', "β"},
		{'e', "εέ"}, {'E', "ΕΈ"}, {'H', "ΗΉ"}, {'i', "ιίϊ"},
		{'I', "ΙΊΪ"}, {'k', "κ"}, {'K', "Κ"}, {'M', "Μ"},
		{'v', "ν"}, {'N', "Ν"}, {'o', "οό"}, {'O', "ΟΌ"},
		{'p', "ρ"}, {'P', "Ρ"}, {'t', "τ"}, {'T', "Τ"},
		{'u', "υύϋ"}, {'Y', "ΥΎ"}, {'x', "χ"}, {'X', "Χ"},
		{'Z', "Ζ"}, {'w', "ω"},
	} {
		for _, r := range f.accented {
			m[r] = string(f.base)
		}
	}
	return m
})
