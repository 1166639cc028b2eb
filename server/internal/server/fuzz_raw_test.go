package server_test

// Go native fuzzing of the server's request handling. `go test ./...` runs the seed corpus
// (below and testdata/fuzz/); longer runs: go test -run '^$' -fuzz=FuzzHandlers -fuzztime=3m
// (docs/reliability.md keeps the figures of the last ones).

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"clientlab/server/internal/servertest"
	"clientlab/server/internal/sockets"
)

// serverPanics collects net/http's reports of handlers that panicked (it recovers them).
type panicWatch struct {
	mu    sync.Mutex
	lines []string
}

func (p *panicWatch) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("panic")) {
		p.mu.Lock()
		p.lines = append(p.lines, string(b))
		p.mu.Unlock()
	}
	return len(b), nil
}

func (p *panicWatch) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	lines := p.lines
	p.lines = nil
	return lines
}

var serverPanics = &panicWatch{}

func init() { sockets.SetServerErrors(serverPanics) }

// FuzzRawConnection sends arbitrary bytes to the plain or the TLS port, then half-closes: the
// server must answer or close within seconds, never panic, and keep serving.
func FuzzRawConnection(f *testing.F) {
	for _, s := range []string{
		"GET /bytes/10 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /\r\n\r\n",
		"XX",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x01\x05\x00\x00\x00\x01garbage-headers!!",
		"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nbad\r\n0\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nab",
		"GET /bytes/10 HTTP/1.1\r\nHost: x\r\n\r\nGET /json/100 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /redirect/1?to=/%5Cevil HTTP/1.1\r\nHost: x\r\n\r\n",
		"\x16\x03\x01\x00\x05hello",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, secure bool) {
		servertest.FreshTrialSometimes()
		target := servertest.PlainURL
		if secure {
			target = servertest.SecureURL
		}
		addr := target[strings.Index(target, "//")+2:]
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		conn.Write(data)
		conn.(*net.TCPConn).CloseWrite()
		// read what comes (at most 4 MB, then hang up), until the server closes
		n, err := io.Copy(io.Discard, io.LimitReader(conn, 4<<20))
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("%q: the server neither answered nor closed in 10 s (%d bytes)", data, n)
		}
		if lines := serverPanics.take(); len(lines) > 0 {
			t.Fatalf("%q: the server panicked: %s", data, lines[0])
		}
	})
}

// the fuzz targets above need the server to keep serving afterwards
func TestServerServesAfterGarbage(t *testing.T) {
	for _, garbage := range []string{"\x00\x01\x02", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\xff", "GET / HTTP/9.9\r\n\r\n"} {
		c := servertest.DialPlain(t)
		c.Write([]byte(garbage))
		c.Close()
	}
	if c, err := tls.Dial("tcp", strings.TrimPrefix(servertest.SecureURL, "https://"), &tls.Config{RootCAs: servertest.Roots}); err == nil {
		c.Write([]byte("\x00\x00garbage"))
		c.Close()
	}
	if resp, _ := servertest.Get(t, &http.Client{Transport: &http.Transport{}}, servertest.PlainURL+"/bytes/1"); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if lines := serverPanics.take(); len(lines) > 0 {
		t.Fatalf("panics: %v", lines)
	}
}
