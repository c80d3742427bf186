package redact

import (
	"strings"
	"testing"
)

// secret is the credential every shape below carries.
const secret = "s3cr3tPW"

// shapes are the ways a store location carries a credential.
var shapes = map[string]string{
	"postgres userinfo":          "postgres://app:" + secret + "@db:5432/pay?sslmode=disable",
	"postgresql userinfo":        "postgresql://app:" + secret + "@db/pay",
	"postgres ?password":         "postgres://app@db/pay?password=" + secret + "&sslmode=disable",
	"postgres ?PassWord":         "postgres://app@db/pay?sslmode=disable&PassWord=" + secret,
	"postgres ?sslpassword":      "postgres://app@db/pay?sslpassword=" + secret,
	"postgres ?pass":             "postgres://app@db/pay?pass=" + secret,
	"postgres unparsable":        "postgres://app:" + secret + "@db:notaport/pay",
	"postgres slash in password": "postgres://app:ab/" + secret + "@db/pay",
	"key=value":                  "host=db port=5432 user=app password=" + secret + " dbname=pay",
	"key=value spaced":           "host=db password = " + secret + " dbname=pay",
	"key=value quoted":           "host=db password='a b " + secret + "' dbname=pay",
	"key=value quoted escape":    `host=db password='it\'s ` + secret + `' dbname=pay`,
	"key=value sslpassword":      "host=db sslpassword=" + secret,
	"key=value upper":            "host=db PASSWORD=" + secret,
	"redis userinfo":             "redis://:" + secret + "@cache:6379/0",
	"redis user and password":    "redis://default:" + secret + "@cache:6379/0",
	"rediss":                     "rediss://u:" + secret + "@cache:6380/0",
	"redis ?password":            "redis://cache:6379/0?password=" + secret,
	"redis cluster form":         "redis://:" + secret + "@h:7000?addr=h:7001&addr=h:7002",
	"redis sentinel_password":    "redis://cache:6379/0?sentinel_password=" + secret,
}

func TestLocation_HidesEveryShape(t *testing.T) {
	for name, loc := range shapes {
		got := Location(loc)
		if strings.Contains(got, secret) {
			t.Errorf("%s: Location(%q) = %q shows the secret", name, loc, got)
		}
		if !strings.Contains(got, Value) && !strings.Contains(got, PasswordValue) {
			t.Errorf("%s: Location(%q) = %q marks nothing", name, loc, got)
		}
	}
}

func TestText_HidesEveryShapeInMessages(t *testing.T) {
	for name, loc := range shapes {
		if name == "postgres slash in password" {
			continue // only Location (one whole value) and Scrub can tell
		}
		for _, msg := range []string{
			"cannot open the store at " + loc + ": connection refused",
			`level=ERROR msg="open failed" store="` + loc + `"`,
			"keystore " + loc,
			loc,
		} {
			if got := Text(msg); strings.Contains(got, secret) {
				t.Errorf("%s: Text(%q) = %q shows the secret", name, msg, got)
			}
		}
	}
}

func TestSecrets_FindsEveryShapesValue(t *testing.T) {
	for name, loc := range shapes {
		found := false
		for _, s := range Secrets(loc) {
			if strings.Contains(s, secret) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: Secrets(%q) = %q misses the secret", name, loc, Secrets(loc))
		}
		if got := Scrub("echo: "+loc, Secrets(loc)); strings.Contains(got, secret) {
			t.Errorf("%s: Scrub left the secret: %q", name, got)
		}
	}
}

func TestText_LeavesOrdinaryTextAlone(t *testing.T) {
	for _, s := range []string{
		"listening addr=127.0.0.1:8080 store=memory",
		"postgres://app@db:5432/pay?sslmode=disable",
		"user@example.com wrote passwords=are-not-a-key",
		"redis://cache:6379/0?addr=h:7001",
		"a path /var/lib/password=x/idem.db",
		"postgres://app:xxxxx@db/pay",
		"password=" + Value,
	} {
		if got := Text(s); got != s {
			t.Errorf("Text(%q) = %q, want it unchanged", s, got)
		}
	}
}

func TestText_QuotedValueKeepsTheRest(t *testing.T) {
	got := Text("host=db password='a b c' dbname=pay")
	if want := "host=db password=" + Value + " dbname=pay"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestScrub_SkipsShortValues(t *testing.T) {
	if got := Scrub("a cat", []string{"a"}); got != "a cat" {
		t.Errorf("got %q", got)
	}
}

func TestText_KeepsTheMessagesColon(t *testing.T) {
	for in, want := range map[string]string{
		"at postgres://h/db?password=" + secret + ": refused": "at postgres://h/db?password=" + Value + ": refused",
		"at host=h password=" + secret + ": refused":          "at host=h password=" + Value + ": refused",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}
