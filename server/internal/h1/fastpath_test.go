package h1_test

// The hot path (fast.go, fastforms.go) against net/http: the same requests, on one connection,
// once through each; the answers (bytes on the wire, Date and session tokens aside; in nginx's
// shape the header lines of each answer as a sorted set, since net/http sorts them), the log
// entries (times and ids aside) and the connection's counters must be the same.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"clientlab/server/internal/h1"
	"clientlab/server/internal/handlers"
	"clientlab/server/internal/record"
	"clientlab/server/internal/servertest"
	"clientlab/server/internal/shape"
)

const chunkPause = 120 * time.Millisecond

// fastReq is one request: its chunks are written with a pause between them (separate reads);
// then `responses` answers are read (1 when 0). {cookie} stands for the session token last set.
type fastReq struct {
	chunks    []string
	responses int
}

type fastCase struct {
	name    string
	reqs    []fastReq
	handoff bool // the hot path is expected to hand the connection to net/http
}

func rawGet(target, extra string) fastReq {
	return fastReq{chunks: []string{"GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n" + extra + "\r\n"}}
}

func rawPostHead(target, ctype string, n int, extra string) string {
	h := "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n"
	if ctype != "" {
		h += "Content-Type: " + ctype + "\r\n"
	}
	return h + fmt.Sprintf("Content-Length: %d\r\n", n) + extra + "\r\n"
}

func rawPost(target, ctype, body, extra string) fastReq {
	return fastReq{chunks: []string{rawPostHead(target, ctype, len(body), extra) + body}}
}

// rawPostSplit sends the body in a second write (Nagle-like clients), or at a given offset.
func rawPostSplit(target, ctype, body string, at int) fastReq {
	head := rawPostHead(target, ctype, len(body), "")
	whole := head + body
	if at < 0 {
		at = len(head)
	}
	return fastReq{chunks: []string{whole[:at], whole[at:]}}
}

func fastCases() []fastCase {
	curlB := "------------------------d74496d66958873e"
	pyB := "0f9b2ab8d6f1c1e4a3c5b6d7e8f90a1b"
	curlMP := h1.MultipartBody(curlB, "", "lang", "php", "description", "", "code", "test", "parent", "0")
	goCT, goMP := h1.GoMultipart()
	long := strings.Repeat("a=1&", 70) + "b=2"
	big := "x=" + strings.Repeat("y", 5000)
	login := rawPost("/login", "application/x-www-form-urlencoded", "user=lab&password=secret", "")
	return []fastCase{
		{name: "get-small", reqs: []fastReq{rawGet("/bytes/1024", ""), rawGet("/bytes/1024", ""), rawGet("/json/100", ""), rawGet("/feeds/7", "")}},
		{name: "post-form", reqs: []fastReq{
			rawPost("/echo", "application/x-www-form-urlencoded", h1.ScenarioForm, ""),
			rawPost("/echo", "application/x-www-form-urlencoded", h1.ScenarioForm, "Connection: keep-alive\r\n"),
			rawPost("/echo", "Application/X-WWW-Form-Urlencoded", "a+b=c%20d&&=x&y&%41=%42&a+b=", ""),
			rawPost("/echo", "application/x-www-form-urlencoded", "", ""),
		}},
		{name: "post-form-odd", reqs: []fastReq{
			rawPost("/echo", "application/x-www-form-urlencoded; charset=UTF-8", h1.ScenarioForm, ""),
			rawPost("/echo", "application/x-www-form-urlencoded", "a=1&b=%zz", ""),
			rawPost("/echo", "application/x-www-form-urlencoded", "a=1;b=2", ""),
			rawPost("/echo", "application/x-www-form-urlencoded", long, ""),
			rawPost("/echo", "application/octet-stream", "raw body", ""),
			rawPost("/echo", "", "no type", ""),
			rawPost("/echo", "", "", ""),
		}},
		{name: "post-multipart", reqs: []fastReq{
			rawPost("/echo", "multipart/form-data; boundary="+curlB, curlMP, ""),
			rawPost("/echo", "multipart/form-data; boundary="+pyB, h1.MultipartBody(pyB, "", "lang", "php", "description", "", "code", "test", "parent", "0"), ""),
			rawPost("/echo", goCT, goMP, ""),
			rawPost("/echo", `Multipart/Form-Data;Boundary="xYzZY"`, h1.MultipartBody("xYzZY", "Content-Type: text/plain\r\n", "a", "1", "a", "0", "b", ""), ""),
			rawPost("/echo", "multipart/form-data; boundary="+curlB, strings.TrimSuffix(curlMP, "\r\n"), ""),
			rawPost("/echo", "multipart/form-data; boundary="+curlB, curlMP+"epilogue", ""),
		}},
		{name: "post-multipart-odd", reqs: []fastReq{
			rawPost("/echo", "multipart/form-data; boundary=B", strings.ReplaceAll(h1.MultipartBody("B", "", "a", "1", "b", "2"), "\r\n", "\n"), ""),
			rawPost("/echo", "multipart/form-data; boundary=B", "preamble\r\n"+h1.MultipartBody("B", "", "a", "1"), ""),
			rawPost("/echo", "multipart/form-data; boundary=B", strings.Replace(h1.MultipartBody("B", "", "a", "1", "b", "2"), "--B\r\n", "--B  \r\n", 2), ""),
			rawPost("/echo", "multipart/form-data; boundary=B", h1.MultipartBody("B", "Content-Transfer-Encoding: quoted-printable\r\n", "a", "x=3D1"), ""),
			rawPost("/echo", "multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--Bx\r\n--B--\r\n", ""),
			rawPost("/echo", "multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n--B--\r\n", ""),
			rawPost("/echo", "multipart/form-data; boundary=B", "--B\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\n1\r\n--B--\r\n", ""),
			rawPost("/echo", "multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--B", ""),
			rawPost("/echo", "multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1", ""),
			rawPost("/echo", "multipart/form-data", "--B--\r\n", ""),
			rawPost("/echo", "multipart/form-data; boundary=B; boundary=C", "--B--\r\n", ""),
			rawPost("/echo", "multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=a; name=b\r\n\r\n1\r\n--B--\r\n", ""),
		}},
		{name: "body-in-a-second-read", reqs: []fastReq{
			rawGet("/bytes/1", ""),
			rawPostSplit("/echo", "application/x-www-form-urlencoded", h1.ScenarioForm, -1),
			rawPostSplit("/echo", "application/x-www-form-urlencoded", h1.ScenarioForm, len(rawPostHead("/echo", "application/x-www-form-urlencoded", len(h1.ScenarioForm), ""))+7),
			rawPostSplit("/echo", "multipart/form-data; boundary="+curlB, curlMP, -1),
			rawPostSplit("/login", "application/x-www-form-urlencoded", "user=lab&password=secret", -1),
		}},
		{name: "headers-in-two-reads", reqs: []fastReq{
			rawGet("/bytes/1", ""),
			{chunks: []string{"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Le", "ngth: 3\r\n\r\na=1"}},
		}},
		{name: "cookie-session", reqs: []fastReq{
			login,
			rawGet("/private/bytes/1024", "Cookie: clientlab_session={cookie}\r\n"),
			rawGet("/private/json/100", "Cookie: a=b; clientlab_session={cookie}; c=d\r\n"),
			rawGet("/private/feeds/3", `Cookie: clientlab_session="{cookie}"`+"\r\n"),
			rawGet("/private/bytes/10", "Cookie: clientlab_session=a\\b; clientlab_session={cookie}\r\n"),
			rawGet("/private/bytes/10", "Cookie: clientlab_session=0000\r\n"),
			rawGet("/private/bytes/10", "Cookie: other=1\r\n"),
			rawGet("/private/bytes/10", ""),
			rawGet("/private/bytes/10", "Cookie: clientlab_session=\r\n"),
			rawPost("/login", "multipart/form-data; boundary=B", h1.MultipartBody("B", "", "user", "u", "password", "p"), ""),
			rawPost("/login", "application/x-www-form-urlencoded", "user=lab&password=", ""),
			rawPost("/login", "application/x-www-form-urlencoded", "user=lab&password=&password=x", ""),
			rawPost("/login", "application/x-www-form-urlencoded", "user=%zz", ""),
			rawPost("/login", "text/plain", "user=lab&password=x", ""),
			rawPost("/login", "", "", ""),
		}},
		{name: "redirect-get", reqs: []fastReq{
			rawGet("/redirect/3?to=/bytes/1024", ""),
			rawGet("/redirect/2?to="+url.QueryEscape("/bytes/1024"), ""),
			rawGet("/redirect/1?to="+url.QueryEscape("/bytes/1024"), ""),
			rawGet("/bytes/1024", ""),
			rawGet("/redirect/12?to=/a/b?c=d%3D1!$'()*,:~", ""),
			rawGet("/redirect/2?to=/%7e%41", ""),
		}},
		{name: "redirect-refused", reqs: []fastReq{
			rawGet("/redirect/1?to=//evil.example/", ""),
			rawGet("/redirect/1?to=%2F%2Fevil.example", ""),
			rawGet("/redirect/1?to=/%5Cevil", ""),
			rawGet("/redirect/1?to=/%2fevil", ""),
			rawGet("/redirect/1?to=http://evil.example/", ""),
			rawGet("/redirect/1?to=/a%zz", ""),
			rawGet("/redirect/1?to=/a%4", ""),
			rawGet("/redirect/1?to=", ""),
			rawGet("/redirect/1?to=/x%40y", ""),
		}},
		{name: "pipelined", reqs: []fastReq{
			{chunks: []string{rawPostHead("/echo", "application/x-www-form-urlencoded", len(h1.ScenarioForm), "") + h1.ScenarioForm +
				"GET /redirect/2?to=/bytes/3 HTTP/1.1\r\nHost: x\r\n\r\n"}, responses: 2},
		}},
		{name: "connection-close", reqs: []fastReq{
			rawPost("/echo", "application/x-www-form-urlencoded", h1.ScenarioForm, "Connection: close\r\n"),
		}},
		{name: "close-after-redirect", reqs: []fastReq{rawGet("/redirect/1?to=/bytes/3", "Connection: close\r\n")}},
		{name: "close-after-401", reqs: []fastReq{rawGet("/private/bytes/3", "Connection: close\r\n")}},
		// Connection as a list of tokens, as LWP sends it
		{name: "connection-tokens", reqs: []fastReq{
			rawGet("/bytes/3", "TE: deflate,gzip;q=0.3\r\nConnection: TE\r\n"),
			rawGet("/bytes/3", "Connection: keep-alive, TE\r\n"),
			rawGet("/bytes/3", "Connection: ,\r\n"),
			rawGet("/bytes/3", "Connection: TE\r\nConnection: keep-alive\r\n"),
		}},
		{name: "close-among-tokens", reqs: []fastReq{rawGet("/bytes/3", "Connection: TE, Close\r\n")}},
		{name: "close-in-a-second-connection-header", reqs: []fastReq{rawGet("/bytes/3", "Connection: TE\r\nConnection: close\r\n")}},
		{name: "close-with-space", handoff: true, reqs: []fastReq{rawGet("/bytes/3", "Connection: x close\r\n")}},
		// net/http's from the first unusual request on
		{name: "oversize-body", handoff: true, reqs: []fastReq{rawPost("/echo", "application/x-www-form-urlencoded", h1.ScenarioForm, ""), rawPost("/echo", "application/x-www-form-urlencoded", big, ""), rawGet("/bytes/3", "")}},
		{name: "chunked-body", handoff: true, reqs: []fastReq{{chunks: []string{"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n3\r\na=1\r\n0\r\n\r\n"}}}},
		{name: "expect-continue", handoff: true, reqs: []fastReq{{chunks: []string{rawPostHead("/echo", "application/x-www-form-urlencoded", 3, "Expect: 100-continue\r\n"), "a=1"}, responses: 2}}},
		{name: "bare-lf", handoff: true, reqs: []fastReq{{chunks: []string{"GET /bytes/10 HTTP/1.1\nHost: x\n\n"}}}},
		{name: "http-1.0", handoff: true, reqs: []fastReq{{chunks: []string{"GET /bytes/10 HTTP/1.0\r\nHost: x\r\n\r\n"}}}},
		{name: "echo-with-query", handoff: true, reqs: []fastReq{rawPost("/echo?gzip=1", "application/x-www-form-urlencoded", h1.ScenarioForm, "")}},
		{name: "redirect-with-more-parameters", handoff: true, reqs: []fastReq{rawGet("/redirect/1?to=/x&gzip=1", "")}},
		{name: "redirect-zero-hops", handoff: true, reqs: []fastReq{rawGet("/redirect/0?to=/x", "")}},
		{name: "redirect-plus", handoff: true, reqs: []fastReq{rawGet("/redirect/1?to=/x+y", "")}},
		{name: "private-private", handoff: true, reqs: []fastReq{rawGet("/private/private/bytes/1", "")}},
		{name: "two-cookie-headers", handoff: true, reqs: []fastReq{login, rawGet("/private/bytes/1", "Cookie: a=1\r\nCookie: clientlab_session={cookie}\r\n")}},
		{name: "login-get", handoff: true, reqs: []fastReq{rawGet("/login", "")}},
		{name: "post-without-length", handoff: true, reqs: []fastReq{{chunks: []string{"POST /echo HTTP/1.1\r\nHost: x\r\n\r\n"}}}},
		{name: "content-length-leading-zero", handoff: true, reqs: []fastReq{{chunks: []string{"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 03\r\n\r\na=1"}}}},
	}
}

// recorder keeps every byte read from the connection.
type recorder struct {
	r   io.Reader
	buf bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.buf.Write(p[:n])
	return n, err
}

var (
	dateLine  = regexp.MustCompile(`Date: [^\r]*\r\n`)
	tokenText = regexp.MustCompile(`clientlab_session=[0-9a-f]{64}`)
	// an answer's head: its status line, then its header lines up to the blank line
	answerHead = regexp.MustCompile(`(?s)(HTTP/1\.1 \d{3} [^\r]*\r\n)(.*?\r\n)\r\n`)
)

// sortedHeads sorts the header lines of every answer on the wire: in nginx's shape the hot path
// writes them in nginx's order and net/http sorted by name (shape_test.go checks each order).
func sortedHeads(wire string) string {
	return answerHead.ReplaceAllStringFunc(wire, func(head string) string {
		m := answerHead.FindStringSubmatch(head)
		lines := strings.SplitAfter(m[2], "\r\n")
		sort.Strings(lines)
		return m[1] + strings.Join(lines, "") + "\r\n"
	})
}

type fastRun struct {
	wire     string
	log      []record.LogEntry
	conns    []record.ConnJSON
	handoffs int64
}

func runFastCase(t *testing.T, c fastCase, fast bool) fastRun {
	t.Helper()
	h1.SetOff(!fast)
	defer h1.SetOff(false)
	servertest.Reset(t)
	handoffs := h1.Handoffs()
	conn := servertest.DialPlain(t)
	defer conn.Close()
	conn.SetNoDelay(true)
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	rec := &recorder{r: conn}
	br := bufio.NewReader(rec)
	token := ""
	closed := false
	for _, r := range c.reqs {
		if closed {
			break
		}
		// net/http's background read (its check for a client gone during the handler) is still
		// pending just after it has sent an answer: a request sent at once gives it its first
		// byte, one more read on net/http's side than on the hot path's. Let it end first.
		time.Sleep(3 * time.Millisecond)
		for i, chunk := range r.chunks {
			if i > 0 {
				// far longer than the gap the log is judged by: on a busy host the server may
				// read the first chunk late, and the gap it measures is the pause less that delay
				time.Sleep(chunkPause)
			}
			if _, err := io.WriteString(conn, strings.ReplaceAll(chunk, "{cookie}", token)); err != nil {
				t.Fatal(err)
			}
		}
		for k := 0; k < max(1, r.responses); k++ {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s: %v (read so far: %q)", c.name, err, rec.buf.String())
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, ck := range resp.Cookies() {
				if ck.Name == handlers.SessionCookie {
					token = ck.Value
				}
			}
			if resp.Close {
				closed = true
				break
			}
		}
	}
	conn.CloseWrite()
	io.Copy(io.Discard, br) // until the server closes
	run := fastRun{handoffs: h1.Handoffs() - handoffs}
	wire := dateLine.ReplaceAllString(rec.buf.String(), "Date: -\r\n")
	run.wire = tokenText.ReplaceAllString(wire, "clientlab_session=TOKEN")
	if !shape.MinimalHeads() {
		run.wire = sortedHeads(run.wire)
	}
	var s record.Snapshot
	for deadline := time.Now().Add(2 * time.Second); ; {
		s = servertest.Counters(t)
		if len(s.Conns) == 1 && s.Conns[0].ClosedNs != 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, e := range s.Log {
		if e.MaxReadGapNs >= 20e6 {
			e.MaxReadGapNs = 1 // a pause of the test's (chunkPause): compare that there was one
		} else {
			e.MaxReadGapNs = 0
		}
		e.Conn, e.FirstByteNs, e.LastByteNs, e.DoneNs = 0, 0, 0, 0
		run.log = append(run.log, e)
	}
	for _, cj := range s.Conns {
		cj.ID, cj.OpenedNs, cj.ClosedNs = 0, 0, 0
		run.conns = append(run.conns, cj)
	}
	return run
}

func TestHotPathAnswersAndRecordsAsNetHTTP(t *testing.T) {
	for _, heads := range []string{shape.Nginx, shape.Minimal} {
		t.Run(heads, func(t *testing.T) {
			servertest.Configure(t, `{"headers": "`+heads+`"}`)
			defer servertest.Configure(t, `{"headers": "nginx"}`)
			hotPathAnswersAsNetHTTP(t)
		})
	}
}

func hotPathAnswersAsNetHTTP(t *testing.T) {
	for _, c := range fastCases() {
		t.Run(c.name, func(t *testing.T) {
			slow := runFastCase(t, c, false)
			fast := runFastCase(t, c, true)
			if slow.handoffs != 0 {
				t.Fatalf("the slow run went through the hot path")
			}
			if got := fast.handoffs > 0; got != c.handoff {
				t.Errorf("handed off to net/http: %v, want %v", got, c.handoff)
			}
			if fast.wire != slow.wire {
				t.Errorf("answers differ:\nhot path: %q\nnet/http: %q", fast.wire, slow.wire)
			}
			if len(fast.log) != len(slow.log) {
				t.Fatalf("log: %d entries on the hot path, %d from net/http", len(fast.log), len(slow.log))
			}
			for i := range fast.log {
				f, s := fmt.Sprintf("%+v", fast.log[i]), fmt.Sprintf("%+v", slow.log[i])
				if fb, sb := fast.log[i].CookieOK, slow.log[i].CookieOK; (fb == nil) != (sb == nil) || fb != nil && *fb != *sb {
					t.Errorf("entry %d: cookie_ok %v / %v", i, fb, sb)
				}
				fast.log[i].CookieOK, slow.log[i].CookieOK = nil, nil
				if fast.log[i] != slow.log[i] {
					t.Errorf("entry %d differs:\nhot path: %s\nnet/http: %s", i, f, s)
				}
			}
			if fmt.Sprint(fast.conns) != fmt.Sprint(slow.conns) {
				t.Errorf("connections differ:\nhot path: %+v\nnet/http: %+v", fast.conns, slow.conns)
			}
		})
	}
}

// BenchmarkScenarioRequests: the process's CPU per request (server and this raw client, one
// keep-alive connection, one request at a time) for the default scenarios' requests, on the hot
// path and on net/http: go test -run '^$' -bench ScenarioRequests -benchtime 3000x
func BenchmarkScenarioRequests(b *testing.B) {
	curlB := "------------------------d74496d66958873e"
	mp := h1.MultipartBody(curlB, "", "lang", "php", "description", "", "code", "test", "parent", "0")
	loginReq := rawPost("/login", "application/x-www-form-urlencoded", "user=lab&password=secret", "").chunks[0]
	cases := []struct {
		name string
		reqs []string
	}{
		{"get-small", []string{rawGet("/bytes/1024", "").chunks[0]}},
		{"post-form", []string{rawPost("/echo", "application/x-www-form-urlencoded", h1.ScenarioForm, "").chunks[0]}},
		{"post-multipart", []string{rawPost("/echo", "multipart/form-data; boundary="+curlB, mp, "").chunks[0]}},
		{"redirect-get", []string{rawGet("/redirect/3?to=/bytes/1024", "").chunks[0],
			rawGet("/redirect/2?to=%2Fbytes%2F1024", "").chunks[0], rawGet("/redirect/1?to=%2Fbytes%2F1024", "").chunks[0],
			rawGet("/bytes/1024", "").chunks[0]}},
		{"cookie-session", []string{rawGet("/private/bytes/1024", "Cookie: clientlab_session={cookie}\r\n").chunks[0]}},
	}
	for _, c := range cases {
		for _, fast := range []bool{true, false} {
			name := c.name + "/net-http"
			if fast {
				name = c.name + "/hot-path"
			}
			b.Run(name, func(b *testing.B) {
				h1.SetOff(!fast)
				defer h1.SetOff(false)
				conn := servertest.DialPlain(b)
				defer conn.Close()
				conn.SetNoDelay(true)
				buf := make([]byte, 64<<10)
				roundTrip := func(req []byte) []byte {
					if _, err := conn.Write(req); err != nil {
						b.Fatal(err)
					}
					n := 0
					for {
						m, err := conn.Read(buf[n:])
						if err != nil {
							b.Fatal(err)
						}
						n += m
						if h := bytes.Index(buf[:n], h1.CRLFCRLF); h >= 0 {
							i := bytes.Index(buf[:h], []byte("Content-Length: "))
							cl, _ := shape.CanonicalNumber(buf[i+16:i+16+bytes.IndexByte(buf[i+16:], '\r')], 10)
							if n >= h+4+int(cl) {
								return buf[:n]
							}
						}
					}
				}
				token := ""
				if resp := roundTrip([]byte(loginReq)); true {
					token = tokenText.FindString(string(resp))
				}
				reqs := make([][]byte, len(c.reqs))
				for i, r := range c.reqs {
					reqs[i] = []byte(strings.ReplaceAll(r, "clientlab_session={cookie}", token))
				}
				servertest.Reset(b)
				var before, after syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &before)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for _, r := range reqs {
						roundTrip(r)
					}
				}
				b.StopTimer()
				syscall.Getrusage(syscall.RUSAGE_SELF, &after)
				cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*len(reqs)), "cpu-µs/req")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
