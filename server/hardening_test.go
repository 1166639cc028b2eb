package main

// Tests of the hardening: listen addresses, the control secret, bounded memory,
// handlers that stop with their client, redirect targets, short requests, idle and kept
// connections, rebinding to fresh ports. docs/reliability.md lists them by fault.

import (
	"bufio"
	"bytes"
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
)

// -- listen addresses and the control secret --------------------------------------------------

func TestOnlyLoopbackAndLabAddressesAreAccepted(t *testing.T) {
	ok := []string{"127.0.0.1", "127.8.9.10", "::1", "10.77.0.2", "10.77.9.2", "10.77.0.1", "::ffff:127.0.0.1", "localhost"}
	refused := []string{"", "0.0.0.0", "::", "0", "192.168.1.10", "10.77.1.2", "10.78.0.2", "8.8.8.8",
		"fe80::1%lo", "::ffff:0.0.0.0", "[::1]", "example.invalid", "2001:db8::1", "169.254.1.1"}
	for _, v := range ok {
		if _, err := listenAddr("--listen", v); err != nil {
			t.Errorf("%q refused: %v", v, err)
		}
	}
	for _, v := range refused {
		if a, err := listenAddr("--listen", v); err == nil {
			t.Errorf("%q accepted as %s", v, a)
		} else if !strings.Contains(err.Error(), "--listen") {
			t.Errorf("%q: the message does not name the flag: %v", v, err)
		}
	}
}

func TestControlRequestsNeedTheSecret(t *testing.T) {
	for _, secret := range []string{"", "wrong-secret-0123456789", testSecret + "x", strings.ToUpper(testSecret)} {
		for _, path := range []string{"/health", "/counters", "/reset", "/config", "/rebind", "/digest?path=/bytes/1"} {
			method := "GET"
			if path == "/reset" || path == "/config" || path == "/rebind" {
				method = "POST"
			}
			req, _ := http.NewRequest(method, controlURL+path, strings.NewReader("{}"))
			if secret != "" {
				req.Header.Set(secretHeader, secret)
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
	if resp, _ := control(t, "GET", "/health", ""); resp.StatusCode != 200 {
		t.Fatalf("with the secret: %d", resp.StatusCode)
	}
}

// -- bounded memory -----------------------------------------------------------------------------

// referenceJSON is the generator the server had before it streamed: the documents must not change.
func referenceJSON(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	const tail = `],"pad":""}`
	for i := 0; ; i++ {
		item := fmt.Sprintf(`{"id":%d,"name":"item-%07d","price":%d.%02d,"tags":["a%d","b%d"],"ok":%t}`,
			i, i, (i*7919)%10000, i%100, i%13, i%17, i%3 == 0)
		sep := ""
		if i > 0 {
			sep = ","
		}
		if sb.Len()+len(sep)+len(item)+len(tail) > n {
			break
		}
		sb.WriteString(sep + item)
	}
	pad := n - sb.Len() - len(tail)
	sb.WriteString(`],"pad":"`)
	sb.WriteString(strings.Repeat("x", pad))
	sb.WriteString(`"}`)
	return []byte(sb.String())
}

func TestStreamedJSONIsTheSameDocument(t *testing.T) {
	for _, n := range []int{64, 65, 90, 91, 92, 100, 1000, 4096, 32767, 32768, 32769, 335114, 1 << 20, 1<<20 + 1, 3_000_001} {
		var b bytes.Buffer
		if err := writeJSON(&b, n); err != nil {
			t.Fatal(err)
		}
		want := referenceJSON(n)
		if !bytes.Equal(b.Bytes(), want) {
			t.Fatalf("n=%d: streamed document differs (len %d vs %d)", n, b.Len(), len(want))
		}
		if !json.Valid(want) {
			t.Fatalf("n=%d: not valid JSON", n)
		}
	}
	if allocs := testing.AllocsPerRun(3, func() { writeJSON(io.Discard, 8<<20) }); allocs > 2 {
		t.Fatalf("streaming 8 MB allocated %v times", allocs)
	}
}

func TestLargeJSONIsStreamedAndDigestsAgree(t *testing.T) {
	n := 3_000_017
	_, body := get(t, http.DefaultClient, fmt.Sprintf("%s/json/%d", plainURL, n))
	if len(body) != n || !json.Valid(body) {
		t.Fatalf("len %d valid %v", len(body), json.Valid(body))
	}
	if jsonDoc(n) != nil {
		t.Fatal("a 3 MB document was cached")
	}
	resp, data := control(t, "GET", fmt.Sprintf("/digest?path=/json/%d", n), "")
	var d struct {
		Size   int    `json:"size"`
		SHA256 string `json:"sha256"`
	}
	json.Unmarshal(data, &d)
	if resp.StatusCode != 200 || d.Size != n || d.SHA256 != sha256hex(body) {
		t.Fatalf("digest %d %+v", resp.StatusCode, d)
	}
}

func TestJSONCacheStaysWithinItsBudget(t *testing.T) {
	for i := 0; i < 80; i++ {
		jsonDoc(maxCachedJSON - i)
	}
	jsonCache.mu.Lock()
	total, counted := 0, jsonCache.bytes
	jsonCache.docs.Range(func(_, v any) bool { total += len(v.([]byte)); return true })
	jsonCache.mu.Unlock()
	if total != counted || total > jsonCacheBytes {
		t.Fatalf("cache holds %d bytes (counted %d), budget %d", total, counted, jsonCacheBytes)
	}
}

// The case: four requests for /json/60000000…60000003 took the server from 157 MB to 594 MB.
func TestDistinctLargeJSONSizesDoNotGrowTheHeap(t *testing.T) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := &http.Client{Transport: &http.Transport{}}
	for i := 0; i < 4; i++ {
		resp, err := c.Get(fmt.Sprintf("%s/json/%d", plainURL, 60_000_000+i))
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
		token := newSession()
		if !validSession(token) || tokens[token] {
			t.Fatalf("token %q", token)
		}
		tokens[token] = true
	}
	for token := range tokens {
		bad := []byte(token)
		bad[len(bad)-1] ^= 1
		if validSession(string(bad)) || validSession(token[:60]) || validSession(strings.ToUpper(token)+"0") {
			t.Fatal("a forged token passed")
		}
		break
	}
}

func TestFormsAreReadWithinALimit(t *testing.T) {
	big := "a=" + strings.Repeat("x", maxFormBytes)
	resp, err := http.Post(plainURL+"/echo", "application/x-www-form-urlencoded", strings.NewReader(big))
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
	reset(t)
	get(t, http.DefaultClient, plainURL+"/"+strings.Repeat("p", 5000))
	if e := counters(t).Log[0]; len(e.Path) != maxLoggedString || e.Status != 404 {
		t.Fatalf("logged path of %d bytes, status %d", len(e.Path), e.Status)
	}
}

func TestNestedPrivateIsNotFound(t *testing.T) {
	if resp, _ := get(t, http.DefaultClient, plainURL+"/private/private/bytes/1"); resp.StatusCode != 401 {
		t.Fatalf("without a cookie: %d", resp.StatusCode)
	}
	resp, err := http.PostForm(plainURL+"/login", url.Values{"user": {"u"}, "password": {"p"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest("GET", plainURL+"/private/"+strings.Repeat("private/", 1000)+"bytes/1", nil)
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
	reset(t)
	c := &http.Client{Timeout: 200 * time.Millisecond, Transport: &http.Transport{}}
	if _, err := c.Get(plainURL + "/bytes/10?delay_ms=60000"); err == nil {
		t.Fatal("the client did not time out")
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		s := counters(t)
		if len(s.Log) == 1 && s.Log[0].Status == 0 && strings.Contains(s.Log[0].RespWriteError, "went away") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the handler still sleeps after its client left: %+v", s.Log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, v := range []string{"60001", "-1", "99999999", "x"} {
		if resp, _ := get(t, http.DefaultClient, plainURL+"/bytes/1?delay_ms="+v); resp.StatusCode != 400 {
			t.Errorf("delay_ms=%s: %d", v, resp.StatusCode)
		}
	}
	start := time.Now()
	if resp, _ := get(t, http.DefaultClient, plainURL+"/bytes/1?delay_ms=50"); resp.StatusCode != 200 || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("delay_ms=50: %d after %v", resp.StatusCode, time.Since(start))
	}
}

func TestBigBodyStopsWhenTheClientGoesAway(t *testing.T) {
	reset(t)
	conn := rawRequest(t, "GET /json/60000000 HTTP/1.1\r\nHost: x\r\n\r\n")
	io.CopyN(io.Discard, conn, 1<<20)
	conn.Close()
	waitFor(t, "the handler to stop after its client left", oneAnswerLogged)
	if e := counters(t).Log[0]; e.RespWriteError == "" || e.RespBodyBytes >= 60_000_000 {
		t.Fatalf("log entry %+v", e)
	}
}

func TestAClientThatStopsReadingLosesItsConnection(t *testing.T) {
	reset(t)
	withStallLimit(t, 300)
	// it asks for 60 MB and reads nothing: the server's socket buffer fills and its write waits
	rawRequest(t, "GET /json/60000000 HTTP/1.1\r\nHost: x\r\n\r\n")
	waitFor(t, "the answer to a client that reads nothing to be given up", oneAnswerLogged)
	if e := counters(t).Log[0]; e.RespWriteError == "" || e.RespBodyBytes >= 60_000_000 {
		t.Fatalf("log entry %+v", e)
	}
}

func TestASlowReaderIsNotCutOff(t *testing.T) {
	reset(t)
	withStallLimit(t, 200)
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
		resp, _ := get(t, &http.Client{CheckRedirect: noFollow}, plainURL+"/redirect/1?to="+url.QueryEscape(to))
		if resp.StatusCode != 400 {
			t.Errorf("to=%q: %d, Location %q", to, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	for _, to := range []string{"/", "/bytes/10", "/bytes/10?gzip=1&delay_ms=1", "/a/b/../c", "/x:y", "/%41%2e", "/json/100;x=1"} {
		resp, _ := get(t, &http.Client{CheckRedirect: noFollow}, plainURL+"/redirect/1?to="+url.QueryEscape(to))
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
	reset(t)
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: protocols, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return &slowConn{Conn: c}, err
	}}
	defer tr.CloseIdleConnections()
	resp, body := get(t, &http.Client{Transport: tr}, plainURL+"/bytes/100")
	if resp.ProtoMajor != 2 || len(body) != 100 {
		t.Fatalf("%s, %d bytes", resp.Proto, len(body))
	}
	if s := counters(t); s.Conns[0].Proto != "h2c" {
		t.Fatalf("conns %+v", s.Conns)
	}
}

// -- connections left idle, and connections kept across trials -----------------------------------

func TestIdleAndKeptConnectionsAreCounted(t *testing.T) {
	reset(t)
	idle, err := net.Dial("tcp", strings.TrimPrefix(plainURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idleTLS, err := tls.Dial("tcp", strings.TrimPrefix(secureURL, "https://"), &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	defer idleTLS.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	kept := &http.Client{Transport: tr}
	get(t, kept, plainURL+"/bytes/1")
	waitFor(t, "3 connections, 2 of them idle", func(s snapshotJSON) bool { return s.Connections == 3 && s.IdleConns == 2 })
	if s := counters(t); s.CarriedConns != 0 || s.CarriedRequests != 0 {
		t.Fatalf("first trial: %+v", s)
	}

	reset(t) // a new job: the client keeps its connection (a protocol violation)
	get(t, kept, plainURL+"/bytes/1")
	get(t, kept, plainURL+"/bytes/2")
	s := counters(t)
	if s.CarriedConns != 1 || s.CarriedRequests != 2 || s.OpenAtReset < 3 || s.KeptOpen != s.OpenAtReset ||
		s.Connections != 0 || s.IdleConns != 0 {
		t.Fatalf("kept connection not seen: carried %d/%d, open at reset %d, kept open %d, connections %d, idle %d",
			s.CarriedConns, s.CarriedRequests, s.OpenAtReset, s.KeptOpen, s.Connections, s.IdleConns)
	}
	if s.Requests != 2 || len(s.Log) != 2 {
		t.Fatalf("requests %d", s.Requests)
	}

	// closing connections right after a reset (a driver's close racing the next trial) is not a carry
	reset(t)
	tr.CloseIdleConnections()
	idle.Close()
	idleTLS.Close()
	fresh := &http.Transport{}
	defer fresh.CloseIdleConnections()
	get(t, &http.Client{Transport: fresh}, plainURL+"/bytes/1")
	if s := counters(t); s.CarriedConns != 0 || s.IdleConns != 0 {
		t.Fatalf("closing old connections counted: %+v", s)
	}
	// the three closed after the reset: open at its start, not kept (other tests' pools may be)
	waitFor(t, "the 3 closed connections to leave the kept-open count", func(s snapshotJSON) bool { return s.KeptOpen == s.OpenAtReset-3 })
}

// rawRequest sends request as written on a new connection to the plain listener.
func rawRequest(t *testing.T, request string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(plainURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprint(conn, request)
	return conn
}

// -- fresh ports per trial -------------------------------------------------------------------------

func TestRebindMovesToFreshPortsAndKeepsOpenConnections(t *testing.T) {
	reset(t)
	oldPlain, oldSecure := plainURL, secureURL
	plainTr := &http.Transport{}
	secureTr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	defer plainTr.CloseIdleConnections()
	defer secureTr.CloseIdleConnections()
	get(t, &http.Client{Transport: plainTr}, oldPlain+"/bytes/1")
	get(t, &http.Client{Transport: secureTr}, oldSecure+"/bytes/1")

	rebind(t)
	if plainURL == oldPlain || secureURL == oldSecure {
		t.Fatalf("same ports after rebind: %s %s", plainURL, secureURL)
	}
	// the old ports take no new connection...
	for _, u := range []string{oldPlain, oldSecure} {
		if c, err := net.DialTimeout("tcp", u[strings.Index(u, "//")+2:], time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections", u)
		}
	}
	// ...the connections open on them are still served, and the new ports serve
	get(t, &http.Client{Transport: plainTr}, oldPlain+"/bytes/2")
	get(t, &http.Client{Transport: secureTr}, oldSecure+"/bytes/2")
	get(t, &http.Client{Transport: &http.Transport{}}, plainURL+"/bytes/3")
	if resp, _ := get(t, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}},
		secureURL+"/bytes/3"); resp.ProtoMajor != 2 {
		t.Fatalf("new https port: %s", resp.Proto)
	}
	if s := counters(t); s.Requests != 6 || s.Connections != 4 {
		t.Fatalf("after rebind: %d requests on %d connections", s.Requests, s.Connections)
	}
}

// the rebind must not leave the old listeners' sockets or accept loops behind
func TestRebindReleasesTheOldListeners(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		rebind(t)
	}
	time.Sleep(50 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before+4 {
		t.Fatalf("goroutines %d -> %d after 20 rebinds", before, after)
	}
	get(t, http.DefaultClient, plainURL+"/bytes/1")
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// an h2c connection handed over from the HTTP/1.1 server is still one the cap may close when idle
func TestACappedServerClosesIdleH2CConnections(t *testing.T) {
	reset(t)
	configure(t, fmt.Sprintf(`{"max_conns": %d}`, connCap.open()+1))
	defer configure(t, `{"max_conns": 0}`)
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 3; i++ {
			tr := &http.Transport{Protocols: protocols}
			if resp, _ := get(t, &http.Client{Transport: tr}, plainURL+"/bytes/10"); resp.ProtoMajor != 2 {
				t.Errorf("not h2c: %s", resp.Proto)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("an h2c client waited forever behind an idle h2c connection")
	}
	if s := counters(t); s.Cap == nil || s.Cap.IdleClosed < 2 {
		t.Fatalf("cap record: %+v", s.Cap)
	}
}
