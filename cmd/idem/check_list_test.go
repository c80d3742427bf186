package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

// TestCheck_ListPrintsEveryQuote: --list sends nothing and prints, for
// each check the profile and dialect grade, its level, source and the
// sentence it grades, word for word.
func TestCheck_ListPrintsEveryQuote(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ profile, dialect string }{
		{"draft", "draft"}, {"idem", "draft"}, {"draft", "stripe"}, {"draft", "paypal"}, {"draft", "adyen"}, {"draft", "square"},
	} {
		t.Run(tt.profile+"/"+tt.dialect, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, err := runCheckCLI(t, "--list", "--profile", tt.profile, "--dialect", tt.dialect)
			require.NoError(t, err, stderr)
			specs, err := idemtest.ListConformanceChecks(tt.profile, tt.dialect)
			require.NoError(t, err)
			require.NotEmpty(t, specs)
			for _, s := range specs {
				assert.Contains(t, stdout, s.ID+"  "+s.Level+"  "+s.Name+"\n  source: "+s.Ref+"\n  \""+s.Quote+"\"\n")
			}

			stdout, _, err = runCheckCLI(t, "--list", "--json", "--profile", tt.profile, "--dialect", tt.dialect)
			require.NoError(t, err)
			var list checkList
			require.NoError(t, json.Unmarshal([]byte(stdout), &list), stdout)
			assert.Equal(t, specs, list.Checks)
		})
	}
}

// TestCheck_ListRefusesWhatARunRefuses: a URL, an unknown dialect and the
// idem profile with a provider dialect are refused with exit status 2.
func TestCheck_ListRefusesWhatARunRefuses(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--list", "http://127.0.0.1:8080"},
		{"--list", "--dialect", "nosuch"},
		{"--list", "--dialect", "stripe", "--profile", "idem"},
		{"--list", "--profile", "strictest"},
	} {
		stdout, stderr, err := runCheckCLI(t, args...)
		require.Error(t, err, "%q", args)
		assert.Equal(t, 2, exitCode(err), "%q", args)
		assert.Empty(t, stdout, "%q", args)
		assertOneLine(t, stderr)
		assert.True(t, strings.HasPrefix(err.Error(), "check: "), err.Error())
	}
}

// TestCheck_ReadmeShowsWhatListPrints: the idem check section of
// docs/CONTRACT-TESTING.md shows `idem check --list --dialect paypal` exactly as it prints.
func TestCheck_ReadmeShowsWhatListPrints(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/CONTRACT-TESTING.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Checking any server: `idem check`\n")
	require.True(t, ok)
	require.Contains(t, section, "idem check --list --dialect paypal\n")
	stdout, _, err := runCheckCLI(t, "--list", "--dialect", "paypal")
	require.NoError(t, err)
	assert.Contains(t, section, stdout+"```\n", "the page's output block ends with the list as printed")
}
