// Package server is the server side of the idempotency protocol, for any
// Go API: wrap your own http.Handler and every POST or PATCH that carries
// an Idempotency-Key runs at most once per key, with its answer replayed
// to every retry.
//
// The layer reserves the key in a Store before the handler runs (an
// atomic create-if-absent holding a lease and a random fencing token),
// captures the handler's whole answer, stores it and only then sends it.
// A retry with the same key and payload gets the stored answer, marked
// Idempotent-Replayed; a retry while the first still runs gets 409
// /in-progress with Retry-After; the same key with another payload
// (another body, path value or query: RequestFingerprint) gets 422
// /key-reused. A store that cannot be reached, or has not answered
// within WithStoreTimeout, is 503 with Retry-After and nothing runs (fail
// closed). A JSON body with invalid UTF-8 or nested deeper than
// MaxJSONDepth is 400 /invalid-request, one with more values than
// JSONTokenLimit of the max body (MaxJSONTokens unless WithMaxBody is
// above 1 MiB) 413: refused in one cheap pass before it is decoded for the
// fingerprint. An answer that says the request was refused before it
// ran (most 4xx, and 5xx unless WithStore5xx) releases the key instead.
// A reservation whose owner crashed is taken over after its lease by a
// retry with the same payload; the crashed owner can no longer write,
// since every write is a compare-and-set on its token. RunSweeper deletes
// what is past its retention.
//
// Keys are scoped by principal, method and route, and New requires the
// principal to be chosen (ErrNoPrincipal): the account the app's
// authentication put in the context (AccountFromContext,
// ContextPrincipal), a claim of the verified JWT (JWTClaimPrincipal), or,
// only for credentials that never rotate, the bearer token itself, stored
// as an HMAC (BearerPrincipal). Name the account wherever credentials are
// renewed: a retry under a renewed token is then replayed, not run again.
// A guarded request naming no principal is answered 401 unless
// WithAnonymous allows anonymous callers, all in one scope.
//
// The handler's answer is whatever it writes before it returns: the
// ResponseWriter it gets belongs to that one request and is closed when
// the handler returns, so a later write is dropped (ErrWriteAfterReturn)
// and logged at Warn with the key's hash. A handler that wrote nothing (no
// WriteHeader, no Write) is answered 500 /internal and its key freed, never
// stored as an empty 200. Write errors inside the handler, below the layer:
//
//   - net/http, http.ServeMux, chi: write the error in the handler (or in
//     middleware placed between the layer and the handler).
//   - echo: an error a handler returns is written by echo's
//     HTTPErrorHandler once the whole chain has returned, after the layer
//     (with echo.WrapMiddleware as with any adapter). Answer errors inside
//     the handler (return c.JSON(status, problem)), or put below the layer
//     a native middleware that writes them at once: call next, and on an
//     error call c.Error(err) and return nil.
//   - gin: c.AbortWithStatusJSON inside the handler; a middleware that
//     writes c.Errors after c.Next() must sit below the layer.
//
// A 503 from below the layer frees nothing while the client still waits:
// it may be http.TimeoutHandler's, whose handler goroutine goes on, so
// the key stays reserved until its lease ends and a retry meanwhile gets
// 409. A handler whose 503 ran nothing calls Held.MarkNotExecuted to free
// the key at once. Put http.TimeoutHandler outside (above) the layer: the
// client gets the 503 at the limit, the layer still stores the handler's
// answer when it returns, and retries get 409 and then that answer.
//
// Stores: MemoryStore (one process), pgstore (PostgreSQL) and redisstore
// (Redis), all held to the contract suite in storetest. A handler whose
// effect lives in the same database commits it with the key's completion,
// in its own transaction (see Held); a message consumer uses Once.
package server
