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
