package server_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

func TestInvalidUTF8InJSONBodyIsRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	handler := &countingHandler{}
	h := r.idem.Wrap(paymentsRoute, handler)

	rec := serve(h, post("k-utf8", "{\"name\":\"caf\xe9\"}").withToken("tok"))
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Equal(t, server.ProblemInvalidRequest, problemType(t, rec))
	require.Contains(t, rec.Body.String(), "UTF-8")
	require.Zero(t, handler.runs())

	// Refused, the key stays free: the corrected body runs.
	rec = serve(h, post("k-utf8", `{"name":"café"}`).withToken("tok"))
	require.Equal(t, http.StatusCreated, rec.Code)
}

func TestFingerprintNeverRewritesInvalidUTF8(t *testing.T) {
	t.Parallel()
	// A decoder would turn both into "\uFFFD": one fingerprint for two
	// bodies. Hashed raw they stay apart, and apart from the U+FFFD body.
	a := fp("{\"name\":\"\xe9\"}")
	b := fp("{\"name\":\"\xff\"}")
	c := fp(`{"name":"` + "\uFFFD" + `"}`)
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, a, c)
	assert.NotEqual(t, b, c)
}

func nested(depth int) string {
	return strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
}

func TestJSONNestingIsBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := r.idem.Wrap(paymentsRoute, &countingHandler{})

	rec := serve(h, post("k-deep-ok", nested(server.MaxJSONDepth)).withToken("tok"))
	require.Equal(t, http.StatusCreated, rec.Code)

	rec = serve(h, post("k-too-deep", nested(server.MaxJSONDepth+1)).withToken("tok"))
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Equal(t, server.ProblemInvalidRequest, problemType(t, rec))

	// Brackets inside strings are not nesting.
	rec = serve(h, post("k-string", `{"s":"`+strings.Repeat("[", 200)+`"}`).withToken("tok"))
	require.Equal(t, http.StatusCreated, rec.Code)
}

func TestJSONValueCountIsBoundedCheaply(t *testing.T) {
	// Not parallel: the bound is on the bytes this one request allocates,
	// read from the process-wide allocation counter.
	r := newRig(t)
	handler := &countingHandler{}
	h := r.idem.Wrap(paymentsRoute, handler)
	body := string(floatArray(server.DefaultMaxBody))
	req := post("k-floats", body).withToken("tok")

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec := serve(h, req)
	runtime.ReadMemStats(&after)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	require.Equal(t, server.ProblemBodyTooLarge, problemType(t, rec))
	require.Zero(t, handler.runs())
	// Decoding every value of this body allocates ~30 bytes per body byte;
	// a refusal at the value budget costs about the buffered body itself.
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(4*len(body)), "refused before decoding the whole body: %d bytes allocated for a %d-byte body", allocated, len(body))

	// Within the budget it runs.
	small := string(floatArray(server.MaxJSONTokens * 2))
	rec = serve(h, post("k-small", small).withToken("tok"))
	require.Equal(t, http.StatusCreated, rec.Code)
}

func TestNonJSONContentTypeSkipsJSONChecks(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := r.idem.Wrap(paymentsRoute, &countingHandler{})
	req := post("k-bin", "\xff\xfe"+nested(100)).withToken("tok").request()
	req.Header.Set("Content-Type", "application/octet-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code, "a binary body is hashed raw, never decoded")
}

// intArray is a dense JSON array of small integers of about size bytes:
// about one value per two bytes, the most a body can hold.
func intArray(size int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; b.Len() < size-2; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('0' + byte(i%10))
	}
	b.WriteByte(']')
	return b.String()
}

func TestJSONValueLimitFollowsMaxBody(t *testing.T) {
	t.Parallel()
	batch := intArray(40 << 10) // a 40 KB batch: about 20,000 values
	large := intArray(400 << 10)

	r := newRig(t) // the default max body, 1 MiB
	h := r.idem.Wrap(paymentsRoute, &countingHandler{})
	rec := serve(h, post("k-batch", batch).withToken("tok"))
	require.Equal(t, http.StatusCreated, rec.Code, "a 40 KB JSON batch is far within a 1 MiB max body: %s", rec.Body)
	rec = serve(h, post("k-large", large).withToken("tok"))
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, "200,000 values are more than 1 MiB pays for")
	require.Contains(t, rec.Body.String(), "max body")

	big := newRig(t, server.WithMaxBody(16<<20))
	h = big.idem.Wrap(paymentsRoute, &countingHandler{})
	rec = serve(h, post("k-large", large).withToken("tok"))
	require.Equal(t, http.StatusCreated, rec.Code, "a 16 MiB max body pays for 200,000 values: %s", rec.Body)

	small := newRig(t, server.WithMaxBody(32<<10))
	h = small.idem.Wrap(paymentsRoute, &countingHandler{})
	rec = serve(h, post("k-over", batch).withToken("tok"))
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, "over the max body")
	require.Equal(t, server.ProblemBodyTooLarge, problemType(t, rec))
}

func TestJSONTokenLimit(t *testing.T) {
	t.Parallel()
	assert.Equal(t, server.MaxJSONTokens, server.JSONTokenLimit(server.DefaultMaxBody))
	assert.Equal(t, server.MaxJSONTokens, server.JSONTokenLimit(1<<10), "never below the default")
	assert.Equal(t, 1<<19, server.JSONTokenLimit(16<<20))
}
