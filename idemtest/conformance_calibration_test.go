package idemtest

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// skippedIDs returns the IDs of the checks that were skipped.
func skippedIDs(results []CheckResult) []string {
	var ids []string
	for _, r := range results {
		if r.Skipped {
			ids = append(ids, r.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestCalibration_DefectClasses runs the checker, at the idem profile,
// against a server with each known defect class: each must fail exactly
// the checks its defect deserves, every run (go test -count=20 -run
// Calibration). The level of each check says whether the draft profile
// grades it too.
func TestCalibration_DefectClasses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		defect defect
		// hold gives the checker the server's slow-down hook; without it
		// the handler is instant.
		hold bool
		want []string
		// mayBeSkipped may be skipped or passed, depending on timing.
		mayBeSkipped []string
	}{
		{name: "correct", defect: defectNone, hold: true},
		{name: "correct, instant", defect: defectNone, mayBeSkipped: []string{CheckInProgress, CheckRetryAfter}},
		// Nothing is fingerprinted, the request target neither.
		{name: "no fingerprint", defect: defectNoFingerprint, hold: true, want: []string{CheckKeyReuse, CheckRequestTarget}},
		{name: "keys global across tenants", defect: defectGlobalKeys, hold: true, want: []string{CheckPrincipalScope}},
		// It does not parse the draft's quoted form either: "k" and k are
		// two keys, two payments.
		{name: "length-only key validation", defect: defectLengthOnly, hold: true, want: []string{CheckInvalidKey, CheckQuotedKey}},
		// No 409 to judge a Retry-After on: it is skipped.
		{name: "lock-and-wait instead of 409", defect: defectLockWait, hold: true,
			want: []string{CheckInProgress}, mayBeSkipped: []string{CheckRetryAfter}},
		{name: "4xx answers cached", defect: defectCaches4xx, hold: true, want: []string{CheckErrorNotStored}},
		{name: "check-then-insert, instant handler", defect: defectCheckThenInsert,
			want: []string{CheckConcurrent}, mayBeSkipped: []string{CheckInProgress, CheckRetryAfter}},
		{name: "problems of type about:blank", defect: defectAboutBlank, hold: true, want: []string{CheckProblemTypes}},
		{name: "another replay header", defect: defectOtherReplayHeader, hold: true, want: []string{CheckReplayHeader}},
		{name: "UUID-only key validator", defect: defectUUIDOnly, hold: true, want: []string{CheckValidKeys}},
		{name: "request target outside the fingerprint", defect: defectTargetOutsideFingerprint, hold: true, want: []string{CheckRequestTarget}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cal := newCalibrationServer(tt.defect)
			srv := httptest.NewServer(cal)
			t.Cleanup(srv.Close)
			opts := ConformanceOptions{Profile: ProfileIdem}
			if tt.hold {
				opts.Hold = cal.hold
			}

			results, err := RunConformance(t.Context(), srv.URL, opts)
			require.NoError(t, err)

			assert.Equal(t, tt.want, failedIDs(results), "results: %+v", results)
			for _, id := range skippedIDs(results) {
				assert.Contains(t, tt.mayBeSkipped, id, "skipped: %+v", results)
			}
		})
	}
}

// TestCalibration_ReferenceServerPassesEveryLevel: the reference server,
// in each of its dialects, passes every check the checker runs for it (the
// idem profile in the draft dialect, the only one it grades).
func TestCalibration_ReferenceServerPassesEveryLevel(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"idem", "stripe", "stripe-v2", "adyen", "paypal", "square", "checkout"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(t, WithDialect(name))
			opts := srv.ConformanceOptions()
			opts.Dialect = name
			if name == "idem" {
				opts.Profile = ProfileIdem
			}

			results, err := RunConformance(t.Context(), srv.URL, opts)
			require.NoError(t, err)
			for _, r := range results {
				assert.True(t, r.Passed, "%s %s: skipped=%v %s", r.ID, r.Level, r.Skipped, r.Detail)
			}
		})
	}
}

// TestCalibration_DraftProfileGradesOnlyTheDraft: a server that stores its
// validation error and replays it does what draft-07 §2.6 says ("success
// or an error"), and one that takes keys of any shape does what §2.1
// allows: neither fails at the draft profile. The idem profile grades
// this project's rules on both, quoting the draft sentence they go beyond.
func TestCalibration_DraftProfileGradesOnlyTheDraft(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		defect    defect
		draftFail []string
		idemFail  []string
		quoted    string
	}{
		{name: "4xx answers stored and replayed", defect: defectCaches4xx,
			idemFail: []string{CheckErrorNotStored}, quoted: `The resource SHOULD respond with the result of the previously completed operation, success or an error.`},
		// The quoted form is a MUST of §2.1 whatever the key's shape.
		{name: "keys of any shape", defect: defectLengthOnly, draftFail: []string{CheckQuotedKey},
			idemFail: []string{CheckInvalidKey, CheckQuotedKey}, quoted: `Idempotency-Key is an Item Structured Header [RFC8941]. Its value MUST be a String (Section 3.3.3 of [RFC8941]).`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cal := newCalibrationServer(tt.defect)
			srv := httptest.NewServer(cal)
			t.Cleanup(srv.Close)

			draft, err := RunConformance(t.Context(), srv.URL, ConformanceOptions{Hold: cal.hold})
			require.NoError(t, err)
			assert.Equal(t, tt.draftFail, failedIDs(draft), "draft: %+v", draft)
			for _, r := range draft {
				assert.NotContains(t, []string{CheckErrorNotStored, CheckInvalidKey, CheckMissingKey, CheckValidKeys}, r.ID, "graded at the draft profile")
			}

			idem, err := RunConformance(t.Context(), srv.URL, ConformanceOptions{Hold: cal.hold, Profile: ProfileIdem})
			require.NoError(t, err)
			assert.Equal(t, tt.idemFail, failedIDs(idem), "idem: %+v", idem)
			found := false
			for _, r := range idem {
				if r.ID == tt.idemFail[0] {
					found = true
					assert.Equal(t, LevelIdem, r.Level)
					assert.Contains(t, r.Ref, "idem profile")
					assert.Contains(t, r.Quote, tt.quoted)
				}
			}
			assert.True(t, found)
		})
	}
}

// TestRunConformance_IdemProfileRefusedForAProviderDialect: the idem
// profile grades this project's vocabulary, which no provider speaks; with
// a provider dialect it is refused, not silently dropped.
func TestRunConformance_IdemProfileRefusedForAProviderDialect(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, WithDialect("stripe"))
	opts := srv.ConformanceOptions()
	opts.Dialect, opts.Profile = "stripe", ProfileIdem

	_, err := RunConformance(t.Context(), srv.URL, opts)
	require.ErrorIs(t, err, ErrProfileNotForDialect)
	assert.Contains(t, err.Error(), "stripe")
}
