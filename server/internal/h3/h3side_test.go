package h3

import (
	"crypto/tls"
	"testing"

	"clientlab/server/internal/record"
)

func TestNoQlogDirTracesNothing(t *testing.T) {
	if QlogDir() != "" {
		t.Skip("the test server runs with --qlog-dir")
	}
	if NewSide(&tls.Config{}, record.NewConnLimit(0)).quic.Tracer != nil {
		t.Fatal("an HTTP/3 side without --qlog-dir has a tracer")
	}
}
