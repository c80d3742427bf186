package redact

import (
	"net/url"
	"strings"
)

// PasswordValue stands in for the password of a URL's user information,
// as net/url's URL.Redacted writes it.
const PasswordValue = "xxxxx"

// IsSecretName reports whether name (any case), the name of a query
// parameter or of a libpq key=value setting, carries a credential: one of
// DefaultParams, or a password by name (password, sslpassword, pass,
// passwd, pwd, and any name ending in "password", such as Redis's
// sentinel_password).
func IsSecretName(name string) bool {
	lower := strings.ToLower(name)
	switch lower {
	case "pass", "passwd", "pwd":
		return true
	}
	return strings.HasSuffix(lower, "password") || IsDefaultParam(lower)
}

// Location returns a store location (a postgres://, redis:// or other
// URL, a libpq key=value connection string, or a file path) as messages
// may show it: a URL's password as PasswordValue, and the values of
// secret query parameters and key=value settings (IsSecretName) as Value.
func Location(location string) string {
	if !strings.Contains(location, "://") {
		return keyValueText(location)
	}
	if u, err := url.Parse(location); err == nil {
		location = u.Redacted()
	} else {
		location = userinfoOf(location)
	}
	return Text(location)
}

// Text hides, in free text such as an error message or a log line, every
// credential shape a connection string can put there: the password of a
// URL's user information (scheme://user:password@host), secret query
// parameters (?password=…, &sslpassword=…), and libpq key=value settings
// (password=… or password='quoted value'). It errs towards hiding more:
// a value that cannot be told apart from a password is hidden too.
func Text(text string) string {
	text = userinfoText(text)
	text = QueryText(text, IsSecretName)
	return keyValueText(text)
}

// Secrets returns the credential values location carries, raw and
// unescaped, so that text showing one of them in another shape can be
// scrubbed (Scrub). A location without any gives nil.
func Secrets(location string) []string {
	var out []string
	add := func(v string) {
		if v == "" || v == Value || v == PasswordValue {
			return
		}
		out = append(out, v)
		if u, err := url.QueryUnescape(v); err == nil && u != v {
			out = append(out, u)
		}
	}
	if strings.Contains(location, "://") {
		if u, err := url.Parse(location); err == nil {
			if p, ok := u.User.Password(); ok {
				add(p)
			}
			for name, values := range u.Query() {
				if IsSecretName(name) {
					for _, v := range values {
						add(v)
					}
				}
			}
		}
		// Also read by hand: an unparsable URL still carries its password.
		if p, ok := rawPassword(location); ok {
			add(p)
		}
		for _, span := range queryValueSpans(location, IsSecretName) {
			add(location[span[0]:span[1]])
		}
		return out
	}
	for _, span := range keyValueSpans(location) {
		v := location[span[0]:span[1]]
		if len(v) >= 2 && v[0] == '\'' {
			add(unquoteLibpq(v))
		}
		add(v)
	}
	return out
}

// Scrub replaces every occurrence in text of each secret at least
// minScrubLen bytes long by Value. Shorter values are too likely to occur
// in ordinary text; Text still hides them where they appear in a known
// shape.
func Scrub(text string, secrets []string) string {
	for _, s := range secrets {
		if len(s) >= minScrubLen && strings.Contains(text, s) {
			text = strings.ReplaceAll(text, s, Value)
		}
	}
	return text
}

// minScrubLen is the shortest secret Scrub replaces wherever it occurs.
const minScrubLen = 4

// rawPassword returns the password of location's user information, read
// by hand: what lies between "://" and the last '@', after the first ':'.
func rawPassword(location string) (string, bool) {
	_, rest, ok := strings.Cut(location, "://")
	if !ok {
		return "", false
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return "", false
	}
	_, pw, ok := strings.Cut(rest[:at], ":")
	return pw, ok
}

// userinfoOf hides the password of a single URL that net/url cannot
// parse: the text is one location, so its last '@' ends the user
// information even past a '/' (a password may hold one).
func userinfoOf(location string) string {
	scheme, rest, ok := strings.Cut(location, "://")
	if !ok {
		return location
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return location
	}
	user, pw, ok := strings.Cut(rest[:at], ":")
	if !ok || pw == "" || pw == PasswordValue {
		return location
	}
	return scheme + "://" + user + ":" + PasswordValue + rest[at:]
}

// userinfoText hides the password of every URL written in text: after
// "://", the user information ends at the last '@' before the URL ends
// (white space, a quote or an angle bracket).
func userinfoText(text string) string {
	if !strings.Contains(text, "://") || strings.IndexByte(text, '@') < 0 {
		return text
	}
	var b strings.Builder
	last := 0
	for i := 0; ; {
		j := strings.Index(text[i:], "://")
		if j < 0 {
			break
		}
		start := i + j + 3
		end := start
		for end < len(text) && !isURLEnd(text[end]) && !strings.HasPrefix(text[end:], "://") {
			end++
		}
		i = end
		at := strings.LastIndexByte(text[start:end], '@')
		if at < 0 {
			continue
		}
		colon := strings.IndexByte(text[start:start+at], ':')
		if colon < 0 {
			continue
		}
		pwStart, pwEnd := start+colon+1, start+at
		if pw := text[pwStart:pwEnd]; pw == "" || pw == PasswordValue {
			continue
		}
		b.WriteString(text[last:pwStart])
		b.WriteString(PasswordValue)
		last = pwEnd
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// isURLEnd reports whether c ends a URL written in free text.
func isURLEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>':
		return true
	}
	return false
}

// keyValueText hides the value of every libpq key=value setting whose
// key IsSecretName says is secret.
func keyValueText(text string) string {
	return replaceSpans(text, keyValueSpans(text))
}

// keyValueSpans returns where the values of secret key=value settings lie
// in text: a key at the start of the text or after white space or
// punctuation, '=' with optional spaces around it, then a value that is
// either single-quoted (libpq's quoting, with \' and \\ escapes; it may
// hold spaces) or runs to the next white space or double quote.
func keyValueSpans(text string) [][2]int {
	if strings.IndexByte(text, '=') < 0 {
		return nil
	}
	var spans [][2]int
	for i := 0; i < len(text); {
		if !isKeyByte(text[i]) || (i > 0 && !isKeyStart(text[i-1])) {
			i++
			continue
		}
		k := i
		for k < len(text) && isKeyByte(text[k]) {
			k++
		}
		name := text[i:k]
		j := skipSpaces(text, k)
		if j == len(text) || text[j] != '=' || !IsSecretName(name) {
			i = k
			continue
		}
		v := skipSpaces(text, j+1)
		end := v
		if v < len(text) && text[v] == '\'' {
			end = v + 1
			for end < len(text) && text[end] != '\'' {
				if text[end] == '\\' && end+1 < len(text) {
					end++
				}
				end++
			}
			if end < len(text) {
				end++ // the closing quote
			}
		} else {
			for end < len(text) && !isKeyValueEnd(text[end]) {
				end++
			}
			end = beforeTrailingColon(text, v, end)
		}
		if end > v && text[v:end] != Value {
			spans = append(spans, [2]int{v, end})
		}
		i = max(end, k)
	}
	return spans
}

// unquoteLibpq returns the value of a single-quoted libpq setting.
func unquoteLibpq(quoted string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(quoted, "'"), "'")
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		if inner[i] == '\\' && i+1 < len(inner) {
			i++
		}
		b.WriteByte(inner[i])
	}
	return b.String()
}

// isKeyByte reports whether c may appear in a key=value setting's key.
func isKeyByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return c == '_' || c == '-'
}

// isKeyStart reports whether a key may follow c: white space or
// punctuation, not another key byte, '?' or '&' (a query, which
// QueryText reads) or a '.' or '/' (a path).
func isKeyStart(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '(', '[', '{', ',', ';', ':':
		return true
	}
	return false
}

// isKeyValueEnd reports whether c ends an unquoted key=value value.
func isKeyValueEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '`':
		return true
	}
	return false
}

// skipSpaces returns the index of the first byte at or after i that is
// not a space or tab.
func skipSpaces(text string, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	return i
}
