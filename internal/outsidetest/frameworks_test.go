package outsidetest

import (
	"testing"
	"time"
)

// TestFrameworkMatrix runs internal/frameworks, which mounts the server
// layer in ServeMux, chi, echo and gin with compression on either side of
// it and http.TimeoutHandler above it, and SIGKILLs the service mid-load;
// its pgstore cells skip without IDEM_TEST_POSTGRES. The bound covers the
// first build of chi, echo and gin.
func TestFrameworkMatrix(t *testing.T) {
	runNestedModule(t, "frameworks", "the framework matrix", 9*time.Minute)
}
