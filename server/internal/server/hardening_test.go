package server_test

// Tests of the hardening: listen addresses, the control secret, bounded memory,
// handlers that stop with their client, redirect targets, short requests, idle and kept
// connections, rebinding to fresh ports. docs/reliability.md lists them by fault.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"clientlab/server/internal/control"
	"clientlab/server/internal/handlers"
	"clientlab/server/internal/record"
	"clientlab/server/internal/servertest"
	"clientlab/server/internal/shape"
	"clientlab/server/internal/sockets"
)

// -- listen addresses and the control secret --------------------------------------------------

func TestOnlyLoopbackAndLabAddressesAreAccepted(t *testing.T) {
	ok := []string{"127.0.0.1", "127.8.9.10", "::1", "10.77.0.2", "10.77.9.2", "10.77.0.1", "::ffff:127.0.0.1", "localhost"}
	refused := []string{"", "0.0.0.0", "::", "0", "192.168.1.10", "10.77.1.2", "10.78.0.2", "8.8.8.8",
		"fe80::1%lo", "::ffff:0.0.0.0", "[::1]", "example.invalid", "2001:db8::1", "169.254.1.1"}
	for _, v := range ok {
		if _, err := sockets.ListenAddr("--listen", v); err != nil {
			t.Errorf("%q refused: %v", v, err)
		}
	}
	for _, v := range refused {
		if a, err := sockets.ListenAddr("--listen", v); err == nil {
			t.Errorf("%q accepted as %s", v, a)
		} else if !strings.Contains(err.Error(), "--listen") {
			t.Errorf("%q: the message does not name the flag: %v", v, err)
		}
	}
}

func TestControlRequestsNeedTheSecret(t *testing.T) {
	for _, secret := range []string{"", "wrong-secret-0123456789", servertest.Secret + "x", strings.ToUpper(servertest.Secret)} {
		for _, path := range []string{"/health", "/counters", "/reset", "/config", "/rebind", "/digest?path=/bytes/1"} {
			method := "GET"
			if path == "/reset" || path == "/config" || path == "/rebind" {
				method = "POST"
			}
			req, _ := http.NewRequest(method, servertest.ControlURL+path, strings.NewReader("{}"))
			if secret != "" {
				req.Header.Set(control.SecretHeader, secret)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s %s with secret %q: %d, want 403", method, path, secret, resp.StatusCode)
			}
		}
	}
	if resp, _ := servertest.Control(t, "GET", "/health", ""); resp.StatusCode != 200 {
		t.Fatalf("with the secret: %d", resp.StatusCode)
	}
}

// -- bounded memory -----------------------------------------------------------------------------

func TestLargeJSONIsStreamedAndDigestsAgree(t *testing.T) {
	n := 3_000_017
	_, body := servertest.Get(t, http.DefaultClient, fmt.Sprintf("%s/json/%d", servertest.PlainURL, n))
	if len(body) != n || !json.Valid(body) {
		t.Fatalf("len %d valid %v", len(body), json.Valid(body))
	}
	if shape.JSONDoc(n) != nil {
		t.Fatal("a 3 MB document was cached")
	}
	resp, data := servertest.Control(t, "GET", fmt.Sprintf("/digest?path=/json/%d", n), "")
	var d struct {
		Size   int    `json:"size"`
		SHA256 string `json:"sha256"`
	}
	json.Unmarshal(data, &d)
	if resp.StatusCode != 200 || d.Size != n || d.SHA256 != sha256hex(body) {
		t.Fatalf("digest %d %+v", resp.StatusCode, d)
	}
}

// The case: four requests for /json/60000000…60000003 took the server from 157 MB to 594 MB.
func TestDistinctLargeJSONSizesDoNotGrowTheHeap(t *testing.T) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := &http.Client{Transport: &http.Transport{}}
	for i := 0; i < 4; i++ {
		resp, err := c.Get(fmt.Sprintf("%s/json/%d", servertest.PlainURL, 60_000_000+i))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != int64(60_000_000+i) {
			t.Fatalf("got %d bytes", n)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 16<<20 {
		t.Fatalf("heap grew by %d MB", grew>>20)
	}
}

func TestSessionsKeepNoState(t *testing.T) {
	tokens := map[string]bool{}
	for i := 0; i < 1000; i++ {
		token := handlers.NewSession()
		if !handlers.ValidSession(token) || tokens[token] {
			t.Fatalf("token %q", token)
		}
		tokens[token] = true
	}
	for token := range tokens {
		bad := []byte(token)
		bad[len(bad)-1] ^= 1
		if handlers.ValidSession(string(bad)) || handlers.ValidSession(token[:60]) || handlers.ValidSession(strings.ToUpper(token)+"0") {
			t.Fatal("a forged token passed")
		}
		break
	}
}

func TestFormsAreReadWithinALimit(t *testing.T) {
	big := "a=" + strings.Repeat("x", handlers.MaxFormBytes)
	resp, err := http.Post(servertest.PlainURL+"/echo", "application/x-www-form-urlencoded", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a %d MB form: %d", len(big)>>20, resp.StatusCode)
	}
}

func TestLoggedPathsAreCut(t *testing.T) {
	servertest.Reset(t)
	servertest.Get(t, http.DefaultClient, servertest.PlainURL+"/"+strings.Repeat("p", 5000))
	if e := servertest.Counters(t).Log[0]; len(e.Path) != record.MaxLoggedString || e.Status != 404 {
		t.Fatalf("logged path of %d bytes, status %d", len(e.Path), e.Status)
	}
}

func TestNestedPrivateIsNotFound(t *testing.T) {
	if resp, _ := servertest.Get(t, http.DefaultClient, servertest.PlainURL+"/private/private/bytes/1"); resp.StatusCode != 401 {
		t.Fatalf("without a cookie: %d", resp.StatusCode)
	}
	resp, err := http.PostForm(servertest.PlainURL+"/login", url.Values{"user": {"u"}, "password": {"p"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest("GET", servertest.PlainURL+"/private/"+strings.Repeat("private/", 1000)+"bytes/1", nil)
	for _, c := range resp.Cookies() {
		req.AddCookie(c)
	}
	got, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got.Body.Close()
	if got.StatusCode != 404 {
		t.Fatalf("nested /private: %d", got.StatusCode)
	}
}

// -- handlers stop when their client goes away --------------------------------------------------

func TestDelayEndsWhenTheClientGoesAway(t *testing.T) {
	servertest.Reset(t)
	c := &http.Client{Timeout: 200 * time.Millisecond, Transport: &http.Transport{}}
	if _, err := c.Get(servertest.PlainURL + "/bytes/10?delay_ms=60000"); err == nil {
		t.Fatal("the client did not time out")
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		s := servertest.Counters(t)
		if len(s.Log) == 1 && s.Log[0].Status == 0 && strings.Contains(s.Log[0].RespWriteError, "went away") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the handler still sleeps after its client left: %+v", s.Log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, v := range []string{"60001", "-1", "99999999", "x"} {
		if resp, _ := servertest.Get(t, http.DefaultClient, servertest.PlainURL+"/bytes/1?delay_ms="+v); resp.StatusCode != 400 {
			t.Errorf("delay_ms=%s: %d", v, resp.StatusCode)
		}
	}
	start := time.Now()
	if resp, _ := servertest.Get(t, http.DefaultClient, servertest.PlainURL+"/bytes/1?delay_ms=50"); resp.StatusCode != 200 || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("delay_ms=50: %d after %v", resp.StatusCode, time.Since(start))
	}
}

func TestBigBodyStopsWhenTheClientGoesAway(t *testing.T) {
	servertest.Reset(t)
	conn := rawRequest(t, "GET /json/60000000 HTTP/1.1\r\nHost: x\r\n\r\n")
	io.CopyN(io.Discard, conn, 1<<20)
	conn.Close()
	servertest.WaitFor(t, "the handler to stop after its client left", servertest.OneAnswerLogged)
	if e := servertest.Counters(t).Log[0]; e.RespWriteError == "" || e.RespBodyBytes >= 60_000_000 {
		t.Fatalf("log entry %+v", e)
	}
}

func TestAClientThatStopsReadingLosesItsConnection(t *testing.T) {
	servertest.Reset(t)
	servertest.WithStallLimit(t, 300)
	// it asks for 60 MB and reads nothing: the server's socket buffer fills and its write waits
	rawRequest(t, "GET /json/60000000 HTTP/1.1\r\nHost: x\r\n\r\n")
	servertest.WaitFor(t, "the answer to a client that reads nothing to be given up", servertest.OneAnswerLogged)
	if e := servertest.Counters(t).Log[0]; e.RespWriteError == "" || e.RespBodyBytes >= 60_000_000 {
		t.Fatalf("log entry %+v", e)
	}
}

func TestASlowReaderIsNotCutOff(t *testing.T) {
	servertest.Reset(t)
	servertest.WithStallLimit(t, 200)
	conn := rawRequest(t, "GET /bytes/4000000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	// 64 KB every 50 ms: the whole answer takes far longer than the stall limit, but no wait does
	buf := make([]byte, 64<<10)
	total := 0
	for {
		n, err := io.ReadFull(conn, buf)
		total += n
		if err != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if total < 4_000_000 {
		t.Fatalf("read %d bytes of a 4,000,000-byte body", total)
	}
}

// -- redirect targets -----------------------------------------------------------------------------

func TestRedirectRefusesWhatABrowserReadsAsAnotherHost(t *testing.T) {
	refused := []string{"//example.com/x", `/\example.com/x`, `\\example.com`, "/%5Cexample.com/x", "/%5cexample.com",
		"/%2Fexample.com", "/%2f%2fexample.com", "/x%2F..%2F", "http://example.com/", "https:example.com",
		"javascript:alert(1)", "/\t/example.com", "/\n/example.com", " //example.com", "/\x00x", "/x\x7f",
		"/@example.com", "/x@y", "example.com/x", "", "/x y", "/x#frag", "/\u00e9", "/%", "/%zz", "/%5"}
	for _, to := range refused {
		resp, _ := servertest.Get(t, &http.Client{CheckRedirect: noFollow}, servertest.PlainURL+"/redirect/1?to="+url.QueryEscape(to))
		if resp.StatusCode != 400 {
			t.Errorf("to=%q: %d, Location %q", to, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	for _, to := range []string{"/", "/bytes/10", "/bytes/10?gzip=1&delay_ms=1", "/a/b/../c", "/x:y", "/%41%2e", "/json/100;x=1"} {
		resp, _ := servertest.Get(t, &http.Client{CheckRedirect: noFollow}, servertest.PlainURL+"/redirect/1?to="+url.QueryEscape(to))
		if resp.StatusCode != 302 || resp.Header.Get("Location") != to {
			t.Errorf("to=%q: %d, Location %q", to, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

func noFollow(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// -- short requests and h2c prior knowledge ------------------------------------------------------

func TestARequestShorterThanThePrefaceIsAnswered(t *testing.T) {
	for _, req := range []string{"GET /\r\n\r\n", "XX\r\n\r\n", "GET / HTTP/1.0\r\n\r\n", "\r\n\r\n", "G\n\n",
		"PRI * HTTP/1.1\r\n\r\n"} {
		conn := rawRequest(t, req) // and no half-close: the client waits for the answer
		conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if err != nil || !strings.HasPrefix(line, "HTTP/1.") {
			t.Errorf("%q: no answer (%q, %v)", req, line, err)
		}
	}
}

// slowConn sends its first write one byte at a time (an h2c preface split over many reads).
type slowConn struct {
	net.Conn
	once sync.Once
}

func (c *slowConn) Write(p []byte) (int, error) {
	first := false
	c.once.Do(func() { first = true })
	if !first {
		return c.Conn.Write(p)
	}
	for i := range p {
		if _, err := c.Conn.Write(p[i : i+1]); err != nil {
			return i, err
		}
		time.Sleep(time.Millisecond)
	}
	return len(p), nil
}

func TestH2CPrefaceSplitOverManyReadsIsStillHTTP2(t *testing.T) {
	servertest.Reset(t)
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: protocols, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return &slowConn{Conn: c}, err
	}}
	defer tr.CloseIdleConnections()
	resp, body := servertest.Get(t, &http.Client{Transport: tr}, servertest.PlainURL+"/bytes/100")
	if resp.ProtoMajor != 2 || len(body) != 100 {
		t.Fatalf("%s, %d bytes", resp.Proto, len(body))
	}
	if s := servertest.Counters(t); s.Conns[0].Proto != "h2c" {
		t.Fatalf("conns %+v", s.Conns)
	}
}

// -- connections left idle, and connections kept across trials -----------------------------------

func TestIdleAndKeptConnectionsAreCounted(t *testing.T) {
	servertest.Reset(t)
	idle := servertest.DialPlain(t)
	defer idle.Close()
	idleTLS, err := tls.Dial("tcp", strings.TrimPrefix(servertest.SecureURL, "https://"), &tls.Config{RootCAs: servertest.Roots})
	if err != nil {
		t.Fatal(err)
	}
	defer idleTLS.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	kept := &http.Client{Transport: tr}
	servertest.Get(t, kept, servertest.PlainURL+"/bytes/1")
	servertest.WaitFor(t, "3 connections, 2 of them idle", func(s record.Snapshot) bool { return s.Connections == 3 && s.IdleConns == 2 })
	if s := servertest.Counters(t); s.CarriedConns != 0 || s.CarriedRequests != 0 {
		t.Fatalf("first trial: %+v", s)
	}

	servertest.Reset(t) // a new job: the client keeps its connection (a protocol violation)
	servertest.Get(t, kept, servertest.PlainURL+"/bytes/1")
	servertest.Get(t, kept, servertest.PlainURL+"/bytes/2")
	s := servertest.Counters(t)
	if s.CarriedConns != 1 || s.CarriedRequests != 2 || s.OpenAtReset < 3 || s.KeptOpen != s.OpenAtReset ||
		s.Connections != 0 || s.IdleConns != 0 {
		t.Fatalf("kept connection not seen: carried %d/%d, open at reset %d, kept open %d, connections %d, idle %d",
			s.CarriedConns, s.CarriedRequests, s.OpenAtReset, s.KeptOpen, s.Connections, s.IdleConns)
	}
	if s.Requests != 2 || len(s.Log) != 2 {
		t.Fatalf("requests %d", s.Requests)
	}

	// closing connections right after a reset (a driver's close racing the next trial) is not a carry
	servertest.Reset(t)
	tr.CloseIdleConnections()
	idle.Close()
	idleTLS.Close()
	fresh := &http.Transport{}
	defer fresh.CloseIdleConnections()
	servertest.Get(t, &http.Client{Transport: fresh}, servertest.PlainURL+"/bytes/1")
	if s := servertest.Counters(t); s.CarriedConns != 0 || s.IdleConns != 0 {
		t.Fatalf("closing old connections counted: %+v", s)
	}
	// the three closed after the reset: open at its start, not kept (other tests' pools may be)
	servertest.WaitFor(t, "the 3 closed connections to leave the kept-open count", func(s record.Snapshot) bool { return s.KeptOpen == s.OpenAtReset-3 })
}

// rawRequest sends request as written on a new connection to the plain listener.
func rawRequest(t *testing.T, request string) net.Conn {
	t.Helper()
	conn := servertest.DialPlain(t)
	t.Cleanup(func() { conn.Close() })
	fmt.Fprint(conn, request)
	return conn
}

// -- fresh ports per trial -------------------------------------------------------------------------

func TestRebindMovesToFreshPortsAndKeepsOpenConnections(t *testing.T) {
	servertest.Reset(t)
	oldPlain, oldSecure := servertest.PlainURL, servertest.SecureURL
	plainTr := &http.Transport{}
	secureTr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots}, ForceAttemptHTTP2: true}
	defer plainTr.CloseIdleConnections()
	defer secureTr.CloseIdleConnections()
	servertest.Get(t, &http.Client{Transport: plainTr}, oldPlain+"/bytes/1")
	servertest.Get(t, &http.Client{Transport: secureTr}, oldSecure+"/bytes/1")

	servertest.Rebind(t)
	if servertest.PlainURL == oldPlain || servertest.SecureURL == oldSecure {
		t.Fatalf("same ports after rebind: %s %s", servertest.PlainURL, servertest.SecureURL)
	}
	// the old ports take no new connection...
	for _, u := range []string{oldPlain, oldSecure} {
		if c, err := net.DialTimeout("tcp", u[strings.Index(u, "//")+2:], time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections", u)
		}
	}
	// ...the connections open on them are still served, and the new ports serve
	servertest.Get(t, &http.Client{Transport: plainTr}, oldPlain+"/bytes/2")
	servertest.Get(t, &http.Client{Transport: secureTr}, oldSecure+"/bytes/2")
	servertest.Get(t, &http.Client{Transport: &http.Transport{}}, servertest.PlainURL+"/bytes/3")
	if resp, _ := servertest.Get(t, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots}, ForceAttemptHTTP2: true}},
		servertest.SecureURL+"/bytes/3"); resp.ProtoMajor != 2 {
		t.Fatalf("new https port: %s", resp.Proto)
	}
	if s := servertest.Counters(t); s.Requests != 6 || s.Connections != 4 {
		t.Fatalf("after rebind: %d requests on %d connections", s.Requests, s.Connections)
	}
}

// the rebind must not leave the old listeners' sockets or accept loops behind
func TestRebindReleasesTheOldListeners(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		servertest.Rebind(t)
	}
	time.Sleep(50 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before+4 {
		t.Fatalf("goroutines %d -> %d after 20 rebinds", before, after)
	}
	servertest.Get(t, http.DefaultClient, servertest.PlainURL+"/bytes/1")
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// an h2c connection handed over from the HTTP/1.1 server is still one the cap may close when idle
func TestACappedServerClosesIdleH2CConnections(t *testing.T) {
	servertest.Reset(t)
	servertest.Configure(t, fmt.Sprintf(`{"max_conns": %d}`, record.Cap().Open()+1))
	defer servertest.Configure(t, `{"max_conns": 0}`)
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 3; i++ {
			tr := &http.Transport{Protocols: protocols}
			if resp, _ := servertest.Get(t, &http.Client{Transport: tr}, servertest.PlainURL+"/bytes/10"); resp.ProtoMajor != 2 {
				t.Errorf("not h2c: %s", resp.Proto)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("an h2c client waited forever behind an idle h2c connection")
	}
	if s := servertest.Counters(t); s.Cap == nil || s.Cap.IdleClosed < 2 {
		t.Fatalf("cap record: %+v", s.Cap)
	}
}
