package shape_test

import (
	"testing"

	"clientlab/server/internal/servertest"
)

// TestMain starts one whole server for this package's tests.
func TestMain(m *testing.M) { servertest.Main(m) }
