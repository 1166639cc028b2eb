package main

import (
	"crypto/tls"
	"testing"
)

func TestNoQlogDirTracesNothing(t *testing.T) {
	if qlogDir != "" {
		t.Skip("the test server runs with --qlog-dir")
	}
	if newH3Side(&tls.Config{}, newConnLimit(0)).quic.Tracer != nil {
		t.Fatal("an HTTP/3 side without --qlog-dir has a tracer")
	}
}
