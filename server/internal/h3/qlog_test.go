package h3_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"clientlab/server/internal/h3"
	"clientlab/server/internal/record"
	"clientlab/server/internal/server"
	"clientlab/server/internal/servertest"
)

// qlogServer starts a second HTTP/3 side whose HTTP/3 connections are traced into a fresh
// directory; it returns the h3 base URL and the directory.
func qlogServer(t *testing.T) (string, string) {
	dir := t.TempDir()
	prevDir, prevAltSvc := h3.SetQlogDir(dir), record.AltSvc()
	t.Cleanup(func() { h3.SetQlogDir(prevDir); record.SetAltSvc(prevAltSvc) })
	cert, _ := servertest.Certificate()
	port, err := h3.NewSide(server.TLSConfigFor(cert), record.NewConnLimit(0)).Rebind(servertest.Loopback)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("https://127.0.0.1:%d", port), dir
}

// tracedGet fetches path over HTTP/3 without checking the certificate (the second side has a
// certificate of its own); the transport is returned so the caller decides when to close it.
func tracedGet(t *testing.T, url string) *http3.Transport {
	t.Helper()
	tr := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	t.Cleanup(func() { tr.Close() })
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if n, err := body.ReadFrom(resp.Body); err != nil || n != 300_000 || resp.ProtoMajor != 3 {
		t.Fatalf("GET %s over HTTP/3: %d bytes, %s, %v", url, n, resp.Proto, err)
	}
	return tr
}

// traceWith waits (bounded) until one .sqlog file in dir holds every one of the events, calling
// flush first each time; it returns the file's text.
func traceWith(t *testing.T, dir string, flush func(), events ...string) string {
	t.Helper()
	var text string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		flush()
		files, _ := filepath.Glob(filepath.Join(dir, "*_server.sqlog"))
		for _, f := range files {
			data, _ := os.ReadFile(f)
			text = string(data)
			all := true
			for _, e := range events {
				all = all && strings.Contains(text, e)
			}
			if all {
				return text
			}
		}
	}
	t.Fatalf("no server trace in %s with %v; last read:\n%.2000s", dir, events, text)
	return ""
}

func TestQlogDirGetsATraceOfEachH3ConnectionWithItsRecoveryMetrics(t *testing.T) {
	url, dir := qlogServer(t)
	tr := tracedGet(t, url+"/bytes/300000")
	tr.Close()
	text := traceWith(t, dir, func() {}, `"recovery:metrics_updated"`, `"congestion_window"`,
		`"smoothed_rtt"`, `"transport:connection_closed"`)
	if !strings.Contains(text, `"vantage_point":{"type":"server"}`) {
		t.Fatalf("trace does not say it is the server's:\n%.500s", text)
	}
}

func TestQlogOfAConnectionStillOpenIsWrittenOutByFlushQlogs(t *testing.T) {
	url, dir := qlogServer(t)
	tracedGet(t, url+"/bytes/300000") // the connection stays open: only flushQlogs writes it out
	traceWith(t, dir, h3.FlushQlogs, `"recovery:metrics_updated"`, `"congestion_window"`)
}
