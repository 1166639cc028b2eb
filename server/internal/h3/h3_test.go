package h3_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"clientlab/server/internal/h1"
	"clientlab/server/internal/record"
	"clientlab/server/internal/servertest"
	"clientlab/server/internal/sockets"
)

// settled waits (bounded, as waitFor) until ok holds and returns the counters: the handshake
// is recorded when it completes, a close when the server sees it.
func settled(t *testing.T, what string, ok func(record.Snapshot) bool) record.Snapshot {
	t.Helper()
	servertest.WaitFor(t, what, ok)
	return servertest.Counters(t)
}

func TestHTTP3RequestsAreRecordedOnOneQUICConnection(t *testing.T) {
	servertest.Reset(t)
	c, tr := servertest.H3Client(t, nil)
	servertest.H3Get(t, c, "GET", "/bytes/1024")
	servertest.H3Get(t, c, "GET", "/json/2000")
	s := settled(t, "the handshake", func(s record.Snapshot) bool { return s.TLS["full"] == 1 })
	if s.Requests != 2 || s.Versions["HTTP/3.0"] != 2 || s.Connections != 1 || len(s.Conns) != 1 {
		t.Fatalf("want 2 HTTP/3.0 requests on 1 connection, got %d %v on %d", s.Requests, s.Versions, s.Connections)
	}
	conn := s.Conns[0]
	if conn.Proto != "h3" || !conn.TLS || conn.Requests != 2 || conn.BytesOut < 3024 || conn.BytesIn == 0 || conn.Resumed {
		t.Fatalf("connection record %+v", conn)
	}
	for _, e := range s.Log {
		if e.Conn != conn.ID || e.Proto != "HTTP/3.0" || e.Status != 200 {
			t.Fatalf("log entry %+v (connection %d)", e, conn.ID)
		}
	}
	tr.Close()
	s = settled(t, "the close", func(s record.Snapshot) bool { return len(s.Conns) == 1 && s.Conns[0].ClosedNs > 0 })
	if s.Conns[0].ClosedNs == 0 || s.BytesOut < 3024 {
		t.Fatalf("closed connection: %+v, bytes out %d", s.Conns[0], s.BytesOut)
	}
}

// A client that resumes its TLS session sends its first request as 0-RTT data; the server
// records the resumption and the early data.
func TestHTTP3ResumptionAndZeroRTTAreRecorded(t *testing.T) {
	servertest.Reset(t)
	cache := tls.NewLRUClientSessionCache(4)
	for i := 0; i < 2; i++ {
		c, tr := servertest.H3Client(t, cache)
		servertest.H3Get(t, c, http3.MethodGet0RTT, "/bytes/10")
		tr.Close()
	}
	s := settled(t, "two handshakes", func(s record.Snapshot) bool { return s.TLS["full"]+s.TLS["resumed"] == 2 })
	if s.TLS["full"] != 1 || s.TLS["resumed"] != 1 || s.TLS["early_data"] != 1 || s.Connections != 2 {
		t.Fatalf("want 1 full and 1 resumed handshake with 0-RTT on 2 connections, got %v on %d", s.TLS, s.Connections)
	}
	if s.Conns[0].Resumed || s.Conns[0].EarlyData || !s.Conns[1].Resumed || !s.Conns[1].EarlyData {
		t.Fatalf("connections %+v", s.Conns)
	}
}

// Every kind of request is answered over HTTP/3 as net/http answers it over HTTP/1.1, and
// recorded the same way (the reusable handlers).
func TestHTTP3AnswersAndRecordsAsNetHTTP(t *testing.T) {
	http1 := &http.Client{Transport: &http.Transport{DisableCompression: true}, CheckRedirect: servertest.NoRedirect}
	defer http1.CloseIdleConnections()
	servertest.Configure(t, `{"record_digests": true}`)
	defer servertest.Configure(t, `{"record_digests": false}`)
	for _, r := range servertest.H2Requests(t) {
		http1.CloseIdleConnections()
		servertest.Reset(t)
		h1.SetOff(true)
		want, wantBody := r.Do(t, http1, servertest.PlainURL)
		h1.SetOff(false)
		wantLog := servertest.Counters(t).Log
		c, tr := servertest.H3Client(t, nil)
		servertest.Reset(t)
		got, gotBody := r.Do(t, c, servertest.H3URL)
		tr.Close()
		name := fmt.Sprintf("h3 %s %s", r.Method, r.Path)
		if got.StatusCode != want.StatusCode || !bytes.Equal(gotBody, wantBody) && r.Path != "/login" {
			t.Errorf("%s: %d %q, net/http %d %q", name, got.StatusCode, servertest.CutText(gotBody), want.StatusCode, servertest.CutText(wantBody))
		}
		for _, h := range []string{"Content-Type", "Content-Encoding", "Location", "Vary"} {
			if got.Header.Get(h) != want.Header.Get(h) {
				t.Errorf("%s: %s %q, net/http %q", name, h, got.Header.Get(h), want.Header.Get(h))
			}
		}
		s := servertest.Counters(t)
		if len(s.Log) != 1 || len(wantLog) != 1 || s.Versions["HTTP/3.0"] != 1 {
			t.Fatalf("%s: %d log entries (net/http %d), %+v", name, len(s.Log), len(wantLog), s.Versions)
		}
		g, w := s.Log[0], wantLog[0]
		w.Conn, w.Proto, w.Reads, w.HeaderReads, w.FirstByteNs, w.LastByteNs, w.MaxReadGapNs, w.DoneNs =
			g.Conn, g.Proto, g.Reads, g.HeaderReads, g.FirstByteNs, g.LastByteNs, g.MaxReadGapNs, g.DoneNs
		if g.CookieOK != nil && w.CookieOK != nil && *g.CookieOK == *w.CookieOK {
			w.CookieOK = g.CookieOK
		}
		if r.Path == "/login" || r.Method == "HEAD" {
			w.RespSHA256, w.RespBodyBytes = g.RespSHA256, g.RespBodyBytes
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s: log entry\n%+v\nnet/http's\n%+v", name, g, w)
		}
	}
}

// The TLS port's answers (HTTP/1.1 and HTTP/2, hot path or not) advertise the HTTP/3 port,
// and the trial records the offer; the plain port's do not.
func TestAltSvcOnTheTLSPortNamesTheH3Port(t *testing.T) {
	want := fmt.Sprintf(`h3=":%s"; ma=86400`, servertest.H3URL[strings.LastIndex(servertest.H3URL, ":")+1:])
	servertest.Reset(t)
	servertest.Get(t, http.DefaultClient, servertest.PlainURL+"/bytes/10")
	if got := servertest.Counters(t).AltSvc; got != "" {
		t.Errorf("a trial on the plain port recorded Alt-Svc %q", got)
	}
	http1 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots}}}
	h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots}, ForceAttemptHTTP2: true}}
	defer http1.CloseIdleConnections()
	defer h2.CloseIdleConnections()
	for _, path := range []string{"/bytes/10", "/json/2000"} { // the HTTP/2 hot path, then the other
		for _, c := range []*http.Client{http1, h2} {
			resp, _ := servertest.Get(t, c, servertest.SecureURL+path)
			if got := resp.Header.Get("Alt-Svc"); got != want {
				t.Errorf("%s %s: Alt-Svc %q, want %q", resp.Proto, path, got, want)
			}
		}
		if resp, _ := servertest.Get(t, http.DefaultClient, servertest.PlainURL+path); resp.Header.Get("Alt-Svc") != "" {
			t.Errorf("plain %s: Alt-Svc %q", path, resp.Header.Get("Alt-Svc"))
		}
	}
	if got := servertest.Counters(t).AltSvc; got != want {
		t.Errorf("the trial recorded Alt-Svc %q, want %q", got, want)
	}
}

// A rebind moves HTTP/3 to a fresh UDP port; a connection opened before goes on being served.
func TestRebindMovesTheH3PortAndKeepsOpenConnections(t *testing.T) {
	c, _ := servertest.H3Client(t, nil)
	before := servertest.H3URL
	servertest.H3Get(t, c, "GET", "/bytes/10")
	servertest.Rebind(t)
	if servertest.H3URL == before {
		t.Fatalf("the HTTP/3 port stayed %s", servertest.H3URL)
	}
	req, _ := http.NewRequest("GET", before+"/bytes/10", nil)
	resp, err := c.Do(req) // on the connection kept from before the rebind
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the open connection was not served after a rebind: %v", err)
	}
	resp.Body.Close()
	fresh, _ := servertest.H3Client(t, nil)
	servertest.H3Get(t, fresh, "GET", "/bytes/10")
}

// --serve-only closes QUIC connections from any other client, as it does TCP ones.
func TestServeOnlyClosesQUICConnectionsFromOtherClients(t *testing.T) {
	defer sockets.SetServeOnly(sockets.SetServeOnly(netip.MustParseAddr("127.0.0.2")))
	for _, c := range []struct {
		local  string
		served bool
	}{{"127.0.0.1", false}, {"127.0.0.2", true}} {
		udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(c.local)})
		if err != nil {
			t.Fatal(err)
		}
		qt := &quic.Transport{Conn: udp}
		tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots},
			Dial: func(ctx context.Context, addr string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
				to, err := net.ResolveUDPAddr("udp", addr)
				if err != nil {
					return nil, err
				}
				return qt.DialEarly(ctx, to, tlsCfg, cfg)
			}}
		client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		resp, err := client.Get(servertest.H3URL + "/bytes/10")
		if err == nil {
			resp.Body.Close()
		}
		tr.Close()
		qt.Close()
		udp.Close()
		if served := err == nil && resp.StatusCode == 200; served != c.served {
			t.Errorf("a client at %s: served %v (%v), want %v", c.local, served, err, c.served)
		}
	}
}

// -- the stall limit --------------------------------------------------------------------------------

// A client that stops reading an answer loses that stream within the stall limit (reset, the
// write failure logged as on TCP), not its connection: the next request on it is answered.
func TestH3StallClientThatStopsReadingLosesTheStreamNotTheConnection(t *testing.T) {
	servertest.Reset(t)
	servertest.WithStallLimit(t, 300)
	c, _ := servertest.H3Client(t, nil)
	req, _ := http.NewRequest("GET", servertest.H3URL+"/json/60000000", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// it reads nothing: the stream's flow-control window fills and the server's write waits
	servertest.WaitFor(t, "the answer to a client that reads nothing to be given up", servertest.OneAnswerLogged)
	if e := servertest.Counters(t).Log[0]; e.Status != 200 || !strings.Contains(e.RespWriteError, "stalled") || e.RespBodyBytes >= 60_000_000 {
		t.Fatalf("log entry %+v", e)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	var h3err *http3.Error
	if !errors.As(err, &h3err) || !h3err.Remote || n >= 60_000_000 {
		t.Fatalf("the stalled stream ended with %d bytes and %v, want a reset from the server", n, err)
	}
	servertest.H3Get(t, c, "GET", "/bytes/100000")
	s := servertest.Counters(t)
	if s.Connections != 1 || len(s.Log) != 2 || s.Log[1].Conn != s.Log[0].Conn || s.Log[1].RespWriteError != "" {
		t.Fatalf("the second request: %d connections, log %+v", s.Connections, s.Log)
	}
}

// A client that stops sending its request body has the handler stop waiting for it within the
// stall limit; the handler answers (here 400), and the connection goes on.
func TestH3StallClientThatStopsSendingItsBodyIsNotWaitedFor(t *testing.T) {
	servertest.Reset(t)
	servertest.WithStallLimit(t, 300)
	c, _ := servertest.H3Client(t, nil)
	body, more := io.Pipe()
	t.Cleanup(func() { more.Close() })
	go more.Write([]byte("a=1&b=2&c=")) // then nothing, and no end
	req, _ := http.NewRequest("POST", servertest.H3URL+"/echo", body)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(answer), "stalled") {
		t.Fatalf("answer %d %q", resp.StatusCode, answer)
	}
	servertest.WaitFor(t, "the request to be logged", servertest.OneAnswerLogged)
	if e := servertest.Counters(t).Log[0]; e.Status != 400 || e.ReqBodyBytes != 10 {
		t.Fatalf("log entry %+v", e)
	}
	servertest.H3Get(t, c, "GET", "/bytes/100")
	if s := servertest.Counters(t); s.Connections != 1 || len(s.Log) != 2 || s.Log[1].Conn != s.Log[0].Conn {
		t.Fatalf("the second request: %d connections, log %+v", s.Connections, s.Log)
	}
}

// A slow reader that keeps taking the answer is never cut off, even while a single write of
// the handler (a cached 1 MB document) lasts longer than the stall limit.
func TestH3StallSlowReaderIsNotCutOff(t *testing.T) {
	servertest.Reset(t)
	servertest.WithStallLimit(t, 1500)
	// a small window the client does not grow: the server's write advances 16 KB at a time
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots}, DisableCompression: true,
		QUICConfig: &quic.Config{InitialStreamReceiveWindow: 64 << 10, MaxStreamReceiveWindow: 64 << 10}}
	t.Cleanup(func() { tr.Close() })
	servertest.H3Get(t, &http.Client{Transport: tr}, "GET", "/json/1000000") // now cached: one write
	servertest.Reset(t)
	resp, err := (&http.Client{Transport: tr}).Get(servertest.H3URL + "/json/1000000")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// 32 KB every 100 ms: about 3 s for the document, twice the stall limit; no wait is long
	start := time.Now()
	buf := make([]byte, 32<<10)
	total := 0
	for {
		n, err := io.ReadFull(resp.Body, buf)
		total += n
		if err != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if total != 1_000_000 {
		t.Fatalf("read %d bytes of a 1,000,000-byte body in %v", total, time.Since(start))
	}
	servertest.WaitFor(t, "the answer to be logged", servertest.OneAnswerLogged)
	if e := servertest.Counters(t).Log[0]; e.RespWriteError != "" || time.Since(start) < 2*time.Second {
		t.Fatalf("log entry %+v after %v", e, time.Since(start))
	}
}

// A stream whose request headers do not all come is reset within the stall limit (headerTimeout's
// part on TCP); the connection goes on.
func TestH3StallClientThatSendsNoCompleteHeadersLosesTheStream(t *testing.T) {
	servertest.Reset(t)
	servertest.WithStallLimit(t, 300)
	ctx := context.Background()
	qc, err := quic.DialAddr(ctx, strings.TrimPrefix(servertest.H3URL, "https://"),
		&tls.Config{RootCAs: servertest.Roots, NextProtos: []string{http3.NextProtoH3}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qc.CloseWithError(0, "") })
	str, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	str.Write([]byte{0x01, 0x10}) // a HEADERS frame of 16 bytes, none of which follow
	str.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = str.Read(make([]byte, 1))
	var serr *quic.StreamError
	if !errors.As(err, &serr) || !serr.Remote || serr.ErrorCode != quic.StreamErrorCode(http3.ErrCodeRequestIncomplete) {
		t.Fatalf("the stream without headers ended with %v, want a reset from the server", err)
	}
	req, _ := http.NewRequest("GET", servertest.H3URL+"/bytes/100", nil)
	resp, err := (&http3.Transport{}).NewClientConn(qc).RoundTrip(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the next request on the connection: %v", err)
	}
	resp.Body.Close()
	if s := servertest.Counters(t); s.Connections != 1 || s.Requests != 1 {
		t.Fatalf("%d connections, %d requests", s.Connections, s.Requests)
	}
}
