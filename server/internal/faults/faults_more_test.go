package faults_test

import (
	"bufio"
	"compress/gzip"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"clientlab/server/internal/faults"
	"clientlab/server/internal/servertest"
	"clientlab/server/internal/sockets"
)

// numberedLedger reads the ledger over the control port, emptying it: its entries and how often
// each numbered request arrived.
func numberedLedger(t *testing.T) ([]faults.LedgerEntry, map[string]int) {
	t.Helper()
	_, body := servertest.Control(t, "GET", "/faults?reset=1", "")
	var got struct {
		Entries  []faults.LedgerEntry `json:"entries"`
		Numbered map[string]int       `json:"numbered"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("ledger: %v in %s", err, body)
	}
	return got.Entries, got.Numbered
}

// keptClient sends requests one after another on one connection, as a pooling client does.
type keptClient struct {
	c net.Conn
	r *bufio.Reader
}

func dialKept(t *testing.T, l net.Listener) *keptClient {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return &keptClient{c: c, r: bufio.NewReader(c)}
}

// send writes one request (a body: a POST with it) and reads the answer, or the error in its place.
func (k *keptClient) send(method, target, body string) (*http.Response, string, error) {
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\n", method, target)
	if body != "" {
		head += fmt.Sprintf("Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n", len(body))
	}
	if _, err := io.WriteString(k.c, head+"\r\n"+body); err != nil {
		return nil, "", err
	}
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil {
		return nil, "", err
	}
	data, err := io.ReadAll(resp.Body)
	return resp, string(data), err
}

func TestTheKeepAliveRaceAnswersAConnectionsFirstRequestAndDropsTheNextUnanswered(t *testing.T) {
	for _, how := range []string{"fin", "rst"} {
		t.Run(how, func(t *testing.T) {
			numberedLedger(t)
			k := dialKept(t, servertest.Faults.A)
			resp, body, err := k.send("GET", "/fault/keepalive-race?close="+how+"&n=1", "")
			if err != nil || resp.StatusCode != 200 || body != "kept n=1\n" || resp.Close {
				t.Fatalf("first answer %v %q %v: want a 200 that keeps its connection", resp, body, err)
			}
			// the next request on the kept connection gets no answer: an end of stream, or a reset
			_, _, err = k.send("POST", "/fault/keepalive-race?close="+how+"&n=2", "field=value")
			if how == "fin" && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
				t.Fatalf("after a FIN: %v, want the end of the stream (the body was read: no reset)", err)
			}
			if how == "rst" && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("after a RST: %v, want a connection reset", err)
			}
			// a retry on a fresh connection is answered, and the ledger counts the request twice
			resp, body, err = dialKept(t, servertest.Faults.A).send("POST", "/fault/keepalive-race?close="+how+"&n=2", "field=value")
			if err != nil || resp.StatusCode != 200 || body != "kept n=2\n" {
				t.Fatalf("the retry: %v %q %v", resp, body, err)
			}
			entries, numbered := numberedLedger(t)
			if len(numbered) != 2 || numbered["/fault/keepalive-race?n=1"] != 1 || numbered["/fault/keepalive-race?n=2"] != 2 {
				t.Fatalf("numbered %v", numbered)
			}
			if len(entries) != 3 {
				t.Fatalf("entries %+v", entries)
			}
			first, dropped, retry := entries[0], entries[1], entries[2]
			if dropped.Conn != first.Conn || dropped.Seq != 2 || dropped.Method != "POST" || dropped.BodyBytes != 11 {
				t.Fatalf("the dropped request %+v, after %+v", dropped, first)
			}
			if retry.Conn == first.Conn || retry.Seq != 1 || retry.N != "2" || retry.BodyBytes != 11 {
				t.Fatalf("the retry %+v", retry)
			}
		})
	}
}

func TestTheKeepAliveRaceLeavesNoConnectionServed(t *testing.T) {
	own := freshFaults(t)
	k := dialKept(t, servertest.Faults.A)
	if _, _, err := k.send("GET", "/fault/keepalive-race?close=fin&n=1", ""); err != nil {
		t.Fatal(err)
	}
	k.send("GET", "/fault/keepalive-race?close=fin&n=2", "")
	k.c.Close()
	own.waitReleased(t)
}

func TestTheKeepAliveRaceRefusesAnUnknownWayToClose(t *testing.T) {
	if head, _ := splitAnswer(t, rawFault(t, servertest.Faults.A, "/fault/keepalive-race?close=slam")); !strings.HasPrefix(head, "HTTP/1.1 400 ") {
		t.Fatalf("head %q", head)
	}
}

func TestTheDarkPortAnswersNoSYN(t *testing.T) {
	if servertest.Faults.Dark == nil {
		t.Fatal("no dark port")
	}
	// twice: a connect that waits leaves the queue as full as it found it
	for i := 0; i < 2; i++ {
		c, err := net.DialTimeout("tcp", servertest.Faults.Dark.L.Addr().String(), 300*time.Millisecond)
		if err == nil {
			c.Close()
			t.Fatalf("try %d: connected to the dark port", i+1)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("try %d: %v, want the connect's timeout (no answer at all, not a refusal)", i+1, err)
		}
	}
	_, body := servertest.Control(t, "GET", "/faults", "")
	if !strings.Contains(string(body), fmt.Sprintf(`"dark":%d`, servertest.Faults.Dark.Port())) {
		t.Fatalf("the control port does not name the dark port: %s", body)
	}
}

func TestSeeOtherAfterAPostPointsAtItsTargetAndTheLedgerKeepsMethodAndBodyLength(t *testing.T) {
	numberedLedger(t)
	resp, _, err := dialKept(t, servertest.Faults.A).send("POST", "/fault/see-other?to=/fault/landing", "a=1&b=22")
	if err != nil || resp.StatusCode != 303 {
		t.Fatalf("%v %v", resp, err)
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d/fault/landing", sockets.Port(servertest.Faults.A)); resp.Header.Get("Location") != want {
		t.Fatalf("Location %q, want %q", resp.Header.Get("Location"), want)
	}
	// a client that re-sends the POST with its body, and one that follows with a GET
	dialKept(t, servertest.Faults.A).send("POST", "/fault/landing", "a=1&b=22")
	dialKept(t, servertest.Faults.A).send("GET", "/fault/landing", "")
	entries, _ := numberedLedger(t)
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%s %s %d", e.Method, e.Path, e.BodyBytes))
	}
	if strings.Join(got, "; ") != "POST /fault/see-other 8; POST /fault/landing 8; GET /fault/landing 0" {
		t.Fatalf("ledger %q", got)
	}
}

func TestAChunkedRequestBodyIsMeasuredAsItArrived(t *testing.T) {
	numberedLedger(t)
	c := dialKept(t, servertest.Faults.A)
	io.WriteString(c.c, "POST /fault/landing HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n")
	if resp, err := http.ReadResponse(c.r, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	if entries, _ := numberedLedger(t); len(entries) != 1 || entries[0].BodyBytes != 7 {
		t.Fatalf("entries %+v", entries)
	}
}

func TestTheTLSOriginRedirectsToPlainHTTPOnOriginA(t *testing.T) {
	if servertest.Faults.S == nil {
		t.Fatal("no TLS origin s")
	}
	numberedLedger(t)
	c, err := tls.Dial("tcp", servertest.Faults.S.Addr().String(), &tls.Config{RootCAs: servertest.Roots, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /fault/redirect-to-plain?to=/fault/landing HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d/fault/landing", sockets.Port(servertest.Faults.A)); resp.StatusCode != 302 || resp.Header.Get("Location") != want {
		t.Fatalf("%d to %q, want a 302 to %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	entries, _ := numberedLedger(t)
	if len(entries) != 1 || entries[0].Origin != "s" || strings.Join(entries[0].Credentials, ",") != "Authorization" {
		t.Fatalf("entries %+v", entries)
	}
}

// countZeros counts the bytes written to it, failing at the first that is not a zero.
type countZeros struct {
	n   int64
	bad bool
}

func (w *countZeros) Write(p []byte) (int, error) {
	for _, b := range p {
		if b != 0 {
			w.bad = true
		}
	}
	w.n += int64(len(p))
	return len(p), nil
}

func TestTheGzipBombDecodesToExactlyItsSizeOfZerosAtDeflatesBestRatio(t *testing.T) {
	for _, layers := range []int{1, 2} {
		t.Run(strconv.Itoa(layers), func(t *testing.T) {
			resp, body, err := dialKept(t, servertest.Faults.A).send("GET", fmt.Sprintf("/fault/gzip-bomb?mib=64&layers=%d", layers), "")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%v %v", resp, err)
			}
			want := map[int]string{1: "gzip", 2: "gzip, gzip"}[layers]
			if resp.Header.Get("Content-Encoding") != want || resp.Header.Get("X-Decoded-Length") != strconv.FormatInt(faults.BombBytes(64), 10) {
				t.Fatalf("head %v", resp.Header)
			}
			var r io.Reader = strings.NewReader(body)
			for i := 0; i < layers; i++ {
				z, err := gzip.NewReader(r)
				if err != nil {
					t.Fatal(err)
				}
				r = z
			}
			var got countZeros
			if _, err := io.Copy(&got, r); err != nil { // the gzip reader checks the CRC and the length
				t.Fatal(err)
			}
			if got.n != faults.BombBytes(64) || got.bad {
				t.Fatalf("decoded %d bytes (zeros only: %v), want %d zeros", got.n, !got.bad, faults.BombBytes(64))
			}
			if layers == 1 && float64(got.n)/float64(len(body)) < 1000 {
				t.Fatalf("%d bytes for %d decoded: a ratio under 1000", len(body), got.n)
			}
		})
	}
}

func TestTheGibibyteBombIsAboutAMebibyteAndTheSameBytesEveryTime(t *testing.T) {
	_, first, err := dialKept(t, servertest.Faults.A).send("GET", "/fault/gzip-bomb?mib=1024", "")
	if err != nil {
		t.Fatal(err)
	}
	_, second, _ := dialKept(t, servertest.Faults.A).send("GET", "/fault/gzip-bomb?mib=1024", "")
	if len(first) > 1_100_000 || len(first) < 1_000_000 || first != second {
		t.Fatalf("%d bytes, then %d (equal: %v)", len(first), len(second), first == second)
	}
}

func TestOversizedAndNumerousHeadersAreSentWhole(t *testing.T) {
	head, body := splitAnswer(t, rawFault(t, servertest.Faults.A, "/fault/big-header?kib=1024"))
	if !strings.Contains(head, "\r\nX-Big: "+string(faults.Body(1<<20))+"\r\n") || body != "headers\n" {
		t.Fatalf("a head of %d bytes, body %q", len(head), body)
	}
	head, _ = splitAnswer(t, rawFault(t, servertest.Faults.A, "/fault/many-headers?count=10000"))
	if n := strings.Count(head, "\r\nX-Many-"); n != 10000 || !strings.Contains(head, "\r\nX-Many-9999: 9999\r\n") {
		t.Fatalf("%d X-Many headers", n)
	}
}
