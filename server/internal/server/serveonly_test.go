package server_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"clientlab/server/internal/servertest"
	"clientlab/server/internal/sockets"
)

// getFrom sends one GET to the plain port from a chosen local address and returns the status
// line, or "" when the server closed the connection without answering.
func getFrom(t *testing.T, local string) string {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", strings.TrimPrefix(servertest.PlainURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("GET /bytes/10 HTTP/1.1\r\nHost: lab\r\n\r\n")); err != nil {
		return "" // closed before the request was written
	}
	buf := make([]byte, 64)
	n, _ := c.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\r\n")
	return line
}

func TestServeOnlyClosesConnectionsFromOtherClients(t *testing.T) {
	defer sockets.SetServeOnly(sockets.SetServeOnly(netip.MustParseAddr("127.0.0.2")))
	if line := getFrom(t, "127.0.0.1"); line != "" {
		t.Fatalf("a client at 127.0.0.1 was served (%q) though only 127.0.0.2 may be", line)
	}
	if line := getFrom(t, "127.0.0.2"); line != "HTTP/1.1 200 OK" {
		t.Fatalf("the one client allowed got %q", line)
	}
}

func TestWithoutServeOnlyEveryLoopbackClientIsServed(t *testing.T) {
	if line := getFrom(t, "127.0.0.3"); line != "HTTP/1.1 200 OK" {
		t.Fatalf("got %q", line)
	}
}

func TestServeOnlyListenMustBeOneAddress(t *testing.T) {
	for _, bad := range []string{"", "0.0.0.0", "::", "bench1.example", "224.0.0.1"} {
		if _, err := sockets.AnyOneAddr("--listen", bad); err == nil {
			t.Errorf("--listen %q was accepted with --serve-only", bad)
		}
	}
	if a, err := sockets.AnyOneAddr("--listen", "192.0.2.10"); err != nil || a.String() != "192.0.2.10" {
		t.Errorf("one specific address refused: %v %v", a, err)
	}
}

func TestCPUGrowsWithWork(t *testing.T) {
	read := func() int64 {
		resp, body := servertest.Control(t, "GET", "/cpu", "")
		var v map[string]int64
		if err := json.Unmarshal(body, &v); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("cpu: %d %v %s", resp.StatusCode, err, body)
		}
		return v["cpu_ns"]
	}
	before := read()
	c := &http.Client{}
	for i := 0; i < 200; i++ {
		servertest.Get(t, c, servertest.PlainURL+"/bytes/65536")
	}
	if after := read(); after <= before {
		t.Fatalf("the server's CPU did not grow over 200 requests: %d then %d", before, after)
	}
}
