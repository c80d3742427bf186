package idemtest

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/dialect"
)

// everyCatalogue lists the checks of every profile and dialect a run can
// grade.
func everyCatalogue(t *testing.T) map[string][]CheckSpec {
	t.Helper()
	out := map[string][]CheckSpec{}
	for _, name := range dialect.Names() {
		profiles := []string{ProfileDraft}
		if name == "draft" {
			profiles = append(profiles, ProfileIdem)
		}
		for _, p := range profiles {
			specs, err := ListConformanceChecks(p, name)
			if errors.Is(err, ErrDialectNotGradable) {
				continue // refused whole, with nothing to quote
			}
			require.NoError(t, err)
			require.NotEmpty(t, specs)
			out[p+"/"+name] = specs
		}
	}
	return out
}

// TestCheckSources_MustAndShouldOnlyWhereTheSentenceSaysSo: every check of
// every profile and dialect quotes a sentence, and is MUST or SHOULD only
// where that sentence uses the word; a provider's check is documented only
// when it quotes the provider's page.
func TestCheckSources_MustAndShouldOnlyWhereTheSentenceSaysSo(t *testing.T) {
	t.Parallel()
	for run, specs := range everyCatalogue(t) {
		provider := !strings.HasSuffix(run, "/draft")
		for _, s := range specs {
			assert.NotEmpty(t, s.Quote, "%s %s", run, s.ID)
			assert.NotEmpty(t, s.Ref, "%s %s", run, s.ID)
			switch s.Level {
			case LevelMust, LevelShould:
				assert.Contains(t, s.Quote, s.Level, "%s %s: level %s, quote %q", run, s.ID, s.Level, s.Quote)
				assert.True(t, strings.HasPrefix(s.Ref, "draft-07 "), "%s %s: %s", run, s.ID, s.Ref)
			case LevelDocumented:
				require.True(t, provider, "%s %s: documented outside a provider dialect", run, s.ID)
				assert.True(t, strings.HasPrefix(s.Ref, strings.TrimPrefix(run, "draft/")+": "), "%s %s: %s", run, s.ID, s.Ref)
			case LevelAdvice:
				assert.NotContains(t, run, ProfileIdem+"/", "%s %s: the idem profile grades advice as a rule", run, s.ID)
			case LevelIdem:
				assert.True(t, strings.HasPrefix(run, ProfileIdem+"/"), "%s %s: idem level outside the idem profile", run, s.ID)
			default:
				t.Errorf("%s %s: unknown level %q", run, s.ID, s.Level)
			}
			if s.Level != LevelMust && s.Level != LevelShould && s.Level != LevelDocumented && s.Level != LevelIdem {
				continue
			}
			if s.ID != CheckFirstRequest && provider {
				assert.Equal(t, LevelDocumented, s.Level, "%s %s: a provider check fails the run only on the provider's word", run, s.ID)
			}
		}
	}
}

// collapse joins every run of white space into one space, so that a
// sentence wrapped across lines still matches.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestCheckSources_EveryQuoteIsInProtocol: docs/PROTOCOL.md's table of
// checks carries every quoted sentence word for word, so the docs and the
// checker cannot drift apart, and PROTOCOL.md's own sentences that the idem
// profile grades are written there.
func TestCheckSources_EveryQuoteIsInProtocol(t *testing.T) {
	t.Parallel()
	protocol, err := os.ReadFile("../docs/PROTOCOL.md")
	require.NoError(t, err)
	text := collapse(string(protocol))
	for run, specs := range everyCatalogue(t) {
		for _, s := range specs {
			assert.True(t, strings.Contains(text, collapse(s.Quote)), "%s %s: quote not in docs/PROTOCOL.md: %q", run, s.ID, s.Quote)
		}
	}
}

// TestListConformanceChecks_MatchesARun: the list is what a run reports,
// check for check, with the same level, source and quote.
func TestListConformanceChecks_MatchesARun(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ profile, dialect string }{{ProfileDraft, "idem"}, {ProfileIdem, "idem"}, {ProfileDraft, "stripe"}} {
		t.Run(tt.profile+"/"+tt.dialect, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(t, WithDialect(tt.dialect))
			opts := srv.ConformanceOptions()
			opts.Profile, opts.Dialect, opts.Bursts = tt.profile, tt.dialect, 1
			results, err := RunConformance(t.Context(), srv.URL, opts)
			require.NoError(t, err)
			specs, err := ListConformanceChecks(tt.profile, tt.dialect)
			require.NoError(t, err)
			require.Len(t, results, len(specs))
			for i, r := range results {
				assert.Equal(t, specs[i], CheckSpec{ID: r.ID, Name: r.Name, Level: r.Level, Ref: r.Ref, Quote: r.Quote, Note: r.Note})
			}
		})
	}
}
