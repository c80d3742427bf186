package bodyread

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestSized(t *testing.T) {
	body := strings.Repeat("x", 1000)
	for _, tt := range []struct {
		name     string
		declared int64
		limit    int64
	}{
		{"declared exactly", 1000, 4096},
		{"declared short", 10, 4096},
		{"declared long", 5000, 8192},
		{"unknown", -1, 4096},
		{"declared beyond the limit", 1 << 40, 4096},
		{"empty declared", 0, 4096},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Sized(iotest.OneByteReader(strings.NewReader(body)), tt.declared, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != body {
				t.Fatalf("read %d bytes, want %d", len(got), len(body))
			}
			if tt.declared > tt.limit && cap(got) > 1<<20 {
				t.Fatalf("a declared length beyond the limit was allocated: cap %d", cap(got))
			}
		})
	}
}

func TestSizedKeepsTheError(t *testing.T) {
	boom := errors.New("boom")
	got, err := Sized(io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(boom)), 10, 100)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if string(got) != "abc" {
		t.Fatalf("got %q, want what was read before the error", got)
	}
}
