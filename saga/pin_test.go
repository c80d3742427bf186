package saga_test

// pinnedKey is DeriveStepKey(nil, "", "order-1", "charge", false),
// computed by a separate implementation of the construction PROTOCOL.md
// writes down (Python's hmac and hashlib).
const pinnedKey = "a43fb59b-f99a-8432-832a-615ec15511ec"
