package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"clientlab/server/internal/handlers"
	"clientlab/server/internal/record"
	"clientlab/server/internal/servertest"
	"clientlab/server/internal/shape"
)

func TestMain(m *testing.M) { servertest.Main(m) }

func TestKeepAliveRequestsShareOneConnection(t *testing.T) {
	servertest.Reset(t)
	c := &http.Client{Transport: &http.Transport{}}
	for i := 0; i < 25; i++ {
		servertest.Get(t, c, servertest.PlainURL+"/bytes/100")
	}
	s := servertest.Counters(t)
	if s.Connections != 1 || s.Requests != 25 || s.Conns[0].Requests != 25 {
		t.Fatalf("want 1 connection with 25 requests, got %d connections, %d requests", s.Connections, s.Requests)
	}
}

func TestConnectionCloseGivesOneConnectionPerRequest(t *testing.T) {
	servertest.Reset(t)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; i < 12; i++ {
		servertest.Get(t, c, servertest.PlainURL+"/bytes/100")
	}
	if s := servertest.Counters(t); s.Connections != 12 || s.Requests != 12 {
		t.Fatalf("want 12 connections, got %d (requests %d)", s.Connections, s.Requests)
	}
}

func TestBytesContentIsThePinnedLCGSequence(t *testing.T) {
	_, body := servertest.Get(t, http.DefaultClient, servertest.PlainURL+"/bytes/100000")
	if got := hex.EncodeToString(body[:8]); got != "c67e816b4bfbe2fb" {
		t.Fatalf("first bytes %s", got)
	}
	sum := sha256.Sum256(body)
	const want = "87fd5f2adc60aced7840c13907e5c3cda42132e0ebf13ea5c7f1cecae5db229c"
	if hex.EncodeToString(sum[:]) != want {
		t.Fatalf("sha256 of /bytes/100000 = %x", sum)
	}
	size, digest, _ := handlers.BodyDigest("/bytes/100000")
	if size != 100000 || digest != want {
		t.Fatalf("/digest disagrees with the body: %d %s", size, digest)
	}
}

func TestLargeBodiesDoNotAllocateTheirSize(t *testing.T) {
	var n countingDiscard
	if err := shape.WriteBytes(&n, 1<<30); err != nil || n != 1<<30 {
		t.Fatalf("wrote %d", n)
	}
	allocs := testing.AllocsPerRun(3, func() { shape.WriteBytes(io.Discard, 100<<20) })
	if allocs > 1 {
		t.Fatalf("writing 100 MB allocated %v times", allocs)
	}
}

type countingDiscard int64

func (c *countingDiscard) Write(p []byte) (int, error) {
	*c += countingDiscard(len(p))
	return len(p), nil
}

func TestJSONDocumentHasExactSizeAndIsValid(t *testing.T) {
	_, body := servertest.Get(t, http.DefaultClient, servertest.PlainURL+"/json/335114")
	if len(body) != 335114 || !json.Valid(body) {
		t.Fatalf("len %d valid %v", len(body), json.Valid(body))
	}
}

func TestFeedsAreDistinctAndSmall(t *testing.T) {
	seen := map[string]bool{}
	ids := []int{}
	for i := 0; i < shape.CachedFeeds+500; i++ { // the kept ones and some made per request
		ids = append(ids, i)
	}
	ids = append(ids, 50_000, shape.FeedCount-1)
	for _, i := range ids {
		doc := shape.FeedDoc(i)
		if len(doc) < 2000 || len(doc) > 20000 {
			t.Fatalf("feed %d is %d bytes", i, len(doc))
		}
		if !bytes.Equal(doc, shape.FeedDoc(i)) {
			t.Fatalf("feed %d is not the same twice", i)
		}
		seen[string(doc)] = true
	}
	if len(seen) != len(ids) {
		t.Fatalf("%d distinct feeds of %d", len(seen), len(ids))
	}
	if kept := shape.KeptFeeds(); kept > shape.CachedFeeds {
		t.Fatalf("%d feeds kept in memory, at most %d may be", kept, shape.CachedFeeds)
	}
}

func echoDigest(t *testing.T, contentType string, body []byte) map[string]any {
	t.Helper()
	resp, err := http.Post(servertest.PlainURL+"/echo", contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return out
}

func TestFormDigestIsTheSameForUrlencodedAndMultipart(t *testing.T) {
	servertest.Reset(t)
	form := url.Values{"lang": {"php"}, "description": {""}, "code": {"a b&c=é"}}
	plain := echoDigest(t, "application/x-www-form-urlencoded", []byte(form.Encode()))
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, k := range []string{"code", "lang", "description"} {
		mw.WriteField(k, form.Get(k))
	}
	mw.Close()
	multi := echoDigest(t, mw.FormDataContentType(), buf.Bytes())
	if plain["kind"] != "urlencoded" || multi["kind"] != "multipart" || plain["form_sha256"] != multi["form_sha256"] {
		t.Fatalf("urlencoded %v, multipart %v", plain, multi)
	}
	// the canonical form documented for the lab: name \0 value \n, sorted
	h := sha256.New()
	for _, k := range []string{"code", "description", "lang"} {
		fmt.Fprintf(h, "%s\x00%s\n", k, form.Get(k))
	}
	if plain["form_sha256"] != hex.EncodeToString(h.Sum(nil)) {
		t.Fatalf("form digest does not follow the documented canonical form")
	}
	s := servertest.Counters(t)
	if s.Log[0].FormKind != "urlencoded" || s.Log[1].FormKind != "multipart" || s.Log[0].FormFields != 3 {
		t.Fatalf("log: %+v", s.Log)
	}
}

func TestRedirectChainHasNHops(t *testing.T) {
	servertest.Reset(t)
	resp, _ := servertest.Get(t, http.DefaultClient, servertest.PlainURL+"/redirect/3?to=/bytes/10")
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/bytes/10" {
		t.Fatalf("ended at %s with %d", resp.Request.URL, resp.StatusCode)
	}
	if s := servertest.Counters(t); s.Requests != 4 {
		t.Fatalf("want 3 hops + 1 = 4 requests, got %d", s.Requests)
	}
}

func TestPrivateNeedsTheLoginCookie(t *testing.T) {
	servertest.Reset(t)
	if resp, _ := servertest.Get(t, http.DefaultClient, servertest.PlainURL+"/private/bytes/10"); resp.StatusCode != 401 {
		t.Fatalf("without cookie: %d", resp.StatusCode)
	}
	resp, err := http.PostForm(servertest.PlainURL+"/login", url.Values{"user": {"u"}, "password": {"p"}})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("login: %v %v", err, resp)
	}
	req, _ := http.NewRequest("GET", servertest.PlainURL+"/private/bytes/10", nil)
	for _, c := range resp.Cookies() {
		req.AddCookie(c)
	}
	ok, err := http.DefaultClient.Do(req)
	if err != nil || ok.StatusCode != 200 {
		t.Fatalf("with cookie: %v %v", err, ok)
	}
	s := servertest.Counters(t)
	if *s.Log[0].CookieOK || !*s.Log[2].CookieOK {
		t.Fatalf("cookie_ok not recorded: %+v", s.Log)
	}
}

func TestGzipOnlyWhenAskedAndAccepted(t *testing.T) {
	servertest.Reset(t)
	servertest.Configure(t, `{"record_digests": true}`)
	defer servertest.Configure(t, `{"record_digests": false}`)
	req, _ := http.NewRequest("GET", servertest.PlainURL+"/bytes/50000?gzip=1", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("no gzip: %v %v", err, resp.Header)
	}
	zr, _ := gzip.NewReader(resp.Body)
	body, _ := io.ReadAll(zr)
	resp.Body.Close()
	_, digest, _ := handlers.BodyDigest("/bytes/50000")
	sum := sha256.Sum256(body)
	s := servertest.Counters(t)
	if hex.EncodeToString(sum[:]) != digest || !s.Log[0].Gzip || s.Log[0].RespSHA256 != digest {
		t.Fatalf("gzip body or log wrong: %+v", s.Log[0])
	}
	if resp, _ := servertest.Get(t, &http.Client{Transport: &http.Transport{DisableCompression: true}}, servertest.PlainURL+"/bytes/10?gzip=1"); resp.Header.Get("Content-Encoding") != "" {
		t.Fatal("gzip sent to a client that did not accept it")
	}
}

func TestTwoWriteRequestShowsTheGapBetweenItsReads(t *testing.T) {
	servertest.Reset(t)
	conn := servertest.DialPlain(t)
	defer conn.Close()
	conn.SetNoDelay(true)
	// a first request, so that the measured one is not the connection's first (see docs)
	fmt.Fprint(conn, "GET /bytes/1 HTTP/1.1\r\nHost: x\r\n\r\n")
	r := bufio.NewReader(conn)
	resp, _ := http.ReadResponse(r, nil)
	io.ReadAll(resp.Body)
	fmt.Fprint(conn, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\n")
	time.Sleep(150 * time.Millisecond) // the server may read the head late on a busy host: the gap is the pause less that
	fmt.Fprint(conn, "a=1&b=2")
	resp, _ = http.ReadResponse(r, nil)
	io.ReadAll(resp.Body)
	e := servertest.Counters(t).Log[1]
	if e.Reads < 2 || e.HeaderReads != 1 || e.MaxReadGapNs < 40e6 {
		t.Fatalf("want >= 2 reads with a >= 40 ms gap, got %+v", e)
	}
}

func TestTLSHandshakesCountFullAndResumed(t *testing.T) {
	servertest.Reset(t)
	cache := tls.NewLRUClientSessionCache(4)
	for i := 0; i < 2; i++ {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots, ClientSessionCache: cache}}
		servertest.Get(t, &http.Client{Transport: tr}, servertest.SecureURL+"/bytes/10")
		tr.CloseIdleConnections()
	}
	s := servertest.Counters(t)
	if s.TLS["full"] != 1 || s.TLS["resumed"] != 1 || s.Connections != 2 {
		t.Fatalf("want 1 full + 1 resumed on 2 connections, got %v on %d", s.TLS, s.Connections)
	}
}

func TestHTTP2OverTLSAndH2CAreCountedWithStreams(t *testing.T) {
	servertest.Reset(t)
	h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots}, ForceAttemptHTTP2: true}}
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: protocols}}
	for i := 0; i < 3; i++ {
		if resp, _ := servertest.Get(t, h2, servertest.SecureURL+"/bytes/10"); resp.ProtoMajor != 2 {
			t.Fatalf("TLS request was %s", resp.Proto)
		}
		if resp, _ := servertest.Get(t, h2c, servertest.PlainURL+"/bytes/10"); resp.ProtoMajor != 2 {
			t.Fatalf("h2c request was %s", resp.Proto)
		}
	}
	s := servertest.Counters(t)
	protos := map[string]int64{}
	for _, c := range s.Conns {
		protos[c.Proto] += c.Requests
	}
	if s.Versions["HTTP/2.0"] != 6 || protos["h2"] != 3 || protos["h2c"] != 3 || s.Connections != 2 {
		t.Fatalf("versions %v, streams per proto %v, connections %d", s.Versions, protos, s.Connections)
	}
}

func TestDisableH2LeavesOnlyHTTP11(t *testing.T) {
	servertest.Configure(t, `{"disable_h2": true}`)
	defer servertest.Configure(t, `{"disable_h2": false}`)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots}, ForceAttemptHTTP2: true}}
	if resp, _ := servertest.Get(t, c, servertest.SecureURL+"/bytes/10"); resp.ProtoMajor != 1 {
		t.Fatalf("got %s with h2 disabled", resp.Proto)
	}
}

func TestCountersResetToZero(t *testing.T) {
	servertest.Get(t, http.DefaultClient, servertest.PlainURL+"/bytes/10")
	servertest.Control(t, "GET", "/counters?reset=1", "")
	if s := servertest.Counters(t); s.Requests != 0 || s.Connections != 0 || len(s.Log) != 0 {
		t.Fatalf("after reset: %+v", s)
	}
}

func TestMaxConnsCapsOpenConnections(t *testing.T) {
	servertest.Reset(t)
	// connections left open by earlier tests count too: allow exactly two more
	limit := record.Cap().Open() + 2
	servertest.Configure(t, fmt.Sprintf(`{"max_conns": %d}`, limit))
	defer servertest.Configure(t, `{"max_conns": 0}`)
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := c.Get(servertest.PlainURL + "/bytes/10?delay_ms=40")
			if err != nil {
				t.Error(err)
				return
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	_, peak := record.Cap().State()
	if peak > limit || servertest.Counters(t).Requests != 6 {
		t.Fatalf("peak open connections %d with a cap of %d", peak, limit)
	}
}

func TestACappedServerClosesIdleConnectionsForWaitingOnes(t *testing.T) {
	servertest.Reset(t)
	servertest.Configure(t, `{"max_conns": 1}`)
	defer servertest.Configure(t, `{"max_conns": 0}`)
	// three keep-alive clients one after another: each leaves its connection open and idle
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 3; i++ {
			servertest.Get(t, &http.Client{Transport: &http.Transport{}}, servertest.PlainURL+"/bytes/10")
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a client waited forever behind an idle connection")
	}
	s := servertest.Counters(t)
	if s.Cap == nil || s.Cap.Limit != 1 || s.Cap.Waited < 2 || s.Cap.IdleClosed < 2 {
		t.Fatalf("cap record: %+v", s.Cap)
	}
}
