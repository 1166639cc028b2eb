package shape_test

// The shape of the answers' heads (shape.go): nginx's by default — its header set, order and
// sizes, checked against what Debian 12's nginx 1.22.1 sends for the same files (captured from
// the lab's nginx: 250 bytes of head for /bytes/12, 254 for /bytes/1024) — on every path that
// writes an answer, and the minimal shape when asked.

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"

	"clientlab/server/internal/h1"
	"clientlab/server/internal/h2"
	"clientlab/server/internal/servertest"
	"clientlab/server/internal/shape"
)

var (
	httpDateText = `[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT`
	etagOfServer = regexp.QuoteMeta(shape.ETagPrefix)
)

// rawHead sends one request on a new connection and returns the answer's status line and
// header lines, each without its CRLF, and the head's size in bytes (blank line included).
func rawHead(t *testing.T, conn net.Conn, request string) ([]string, int) {
	t.Helper()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	var lines []string
	size := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("%q: %v after %q", request, err, lines)
		}
		size += len(line)
		if line == "\r\n" {
			return lines, size
		}
		lines = append(lines, strings.TrimSuffix(line, "\r\n"))
	}
}

func plainHead(t *testing.T, request string) ([]string, int) {
	t.Helper()
	conn := servertest.DialPlain(t)
	defer conn.Close()
	return rawHead(t, conn, request)
}

func tlsHead(t *testing.T, request string) ([]string, int) {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(servertest.SecureURL, "https://"),
		&tls.Config{RootCAs: servertest.Roots, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return rawHead(t, conn, request)
}

// matchHead checks the lines against patterns (regular expressions, whole lines), in order.
func matchHead(t *testing.T, what string, lines []string, patterns []string) {
	t.Helper()
	if len(lines) != len(patterns) {
		t.Errorf("%s: %d lines, want %d:\n%s", what, len(lines), len(patterns), strings.Join(lines, "\n"))
		return
	}
	for i, p := range patterns {
		if !regexp.MustCompile(`^` + p + `$`).MatchString(lines[i]) {
			t.Errorf("%s: line %d is %q, want %q\n%s", what, i, lines[i], p, strings.Join(lines, "\n"))
		}
	}
}

func get11(path, extra string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + "\r\n"
}

// nginxStatic is nginx's head for a file of n bytes of the given type, in its order.
func nginxStatic(ctype string, n int, connection string) []string {
	return []string{`HTTP/1\.1 200 OK`, `Server: clientlab/v1`, `Date: ` + httpDateText,
		`Content-Type: ` + regexp.QuoteMeta(ctype), fmt.Sprintf(`Content-Length: %d`, n),
		`Last-Modified: ` + httpDateText, `Connection: ` + connection,
		fmt.Sprintf(`ETag: %s%x"`, etagOfServer, n), `Accept-Ranges: bytes`}
}

func TestHotPathAnswersStaticResourcesInNginxShape(t *testing.T) {
	feed := len(shape.FeedDoc(7))
	for _, c := range []struct {
		path, ctype string
		n, size     int // body length; the head's bytes (nginx's, where the lab's nginx served it)
	}{
		{"/bytes/12", "application/octet-stream", 12, 250},
		{"/bytes/1024", "application/octet-stream", 1024, 254},
		{"/bytes/0", "application/octet-stream", 0, 249},
		{"/bytes/200000", "application/octet-stream", 200000, 258},
		{"/json/335114", "application/json", 335114, 250},
		{"/feeds/7", "application/atom+xml", feed, 0},
	} {
		lines, size := plainHead(t, get11(c.path, ""))
		matchHead(t, c.path, lines, nginxStatic(c.ctype, c.n, "keep-alive"))
		if c.size != 0 && size != c.size {
			t.Errorf("%s: a head of %d bytes, nginx's is %d", c.path, size, c.size)
		}
	}
	lines, size := plainHead(t, get11("/bytes/12", "Connection: close\r\n"))
	matchHead(t, "/bytes/12, Connection: close", lines, nginxStatic("application/octet-stream", 12, "close"))
	if size != 245 {
		t.Errorf("/bytes/12 with Connection: close: a head of %d bytes, nginx's is 245", size)
	}
}

func TestHotPathAnswersOtherResourcesInNginxShape(t *testing.T) {
	lines, _ := plainHead(t, get11("/private/bytes/1024", ""))
	matchHead(t, "401", lines, []string{`HTTP/1\.1 401 Unauthorized`, `Server: clientlab/v1`, `Date: ` + httpDateText,
		`Content-Type: text/plain; charset=utf-8`, `Content-Length: 26`, `Connection: keep-alive`})
	lines, _ = plainHead(t, get11("/redirect/2?to=/bytes/1", ""))
	matchHead(t, "302", lines, []string{`HTTP/1\.1 302 Found`, `Server: clientlab/v1`, `Date: ` + httpDateText,
		`Content-Type: text/plain; charset=utf-8`, `Content-Length: 12`, `Location: /redirect/1\?to=%2Fbytes%2F1`,
		`Connection: keep-alive`})
	form := "user=a&password=b"
	lines, _ = plainHead(t, fmt.Sprintf("POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", len(form), form))
	matchHead(t, "login", lines, []string{`HTTP/1\.1 200 OK`, `Server: clientlab/v1`, `Date: ` + httpDateText,
		`Content-Type: application/json`, `Content-Length: 19`, `Connection: keep-alive`,
		`Set-Cookie: clientlab_session=[0-9a-f]{64}; Path=/`})
}

// net/http writes a handler's headers sorted by name: its answers (TLS HTTP/1.1, and every
// request the hot path leaves to it) carry nginx's set at nginx's sizes, in that order.
func TestNetHTTPAnswersCarryNginxHeadersSortedByName(t *testing.T) {
	sorted := func(lines []string) []string {
		out := append([]string{lines[0]}, lines[1:]...)
		sort.Strings(out[1:])
		return out
	}
	h1.SetOff(true)
	defer h1.SetOff(false)
	for _, way := range []struct {
		name string
		head func(*testing.T, string) ([]string, int)
	}{{"net/http", plainHead}, {"TLS", tlsHead}} {
		for _, c := range []struct {
			path, ctype string
			n, size     int
		}{{"/bytes/1024", "application/octet-stream", 1024, 254}, {"/json/335114", "application/json", 335114, 250}} {
			lines, size := way.head(t, get11(c.path, ""))
			want := nginxStatic(c.ctype, c.n, "keep-alive")
			if way.name == "TLS" {
				// the offer of HTTP/3 (advertiseH3), which nginx 1.22 does not make
				alt := len(`Alt-Svc: h3=":"; ma=86400`+"\r\n") + len(strings.TrimPrefix(servertest.H3URL[strings.LastIndex(servertest.H3URL, ":"):], ":"))
				want = append(want, `Alt-Svc: h3=":\d+"; ma=86400`)
				c.size += alt
			}
			matchHead(t, way.name+" "+c.path, lines, sorted(want))
			if size != c.size {
				t.Errorf("%s %s: a head of %d bytes, want %d", way.name, c.path, size, c.size)
			}
		}
	}
}

// h2Heads sends GET path on a new h2c connection twice, one after the other, and returns each
// answer's header fields, in order, and the size of its header block.
func h2Heads(t *testing.T, path string) ([2][]hpack.HeaderField, [2]int) {
	r := servertest.DialRawH2(t)
	defer r.C.Close()
	var fields [2][]hpack.HeaderField
	var sizes [2]int
	for i, id := range []uint32{1, 3} {
		r.Get(id, path)
	frames:
		for {
			typ, flags, sid, payload := r.Frame()
			switch {
			case typ == h2.FrameSettings && flags&h2.FlagAck == 0:
				r.Write(h2.AppendFrameHeader(nil, 0, h2.FrameSettings, h2.FlagAck, 0))
			case typ == h2.FrameHeaders && sid == id:
				f, err := r.Dec.DecodeFull(payload)
				if err != nil {
					t.Fatal(err)
				}
				fields[i], sizes[i] = f, len(payload)
				break frames
			case typ == h2.FrameRSTStream || typ == h2.FrameGoAway:
				t.Fatalf("frame %d on stream %d: %x", typ, sid, payload)
			}
		}
	}
	return fields, sizes
}

func h2Head(t *testing.T, path string) []hpack.HeaderField {
	fields, _ := h2Heads(t, path)
	return fields[0]
}

func fieldNames(fields []hpack.HeaderField) string {
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	return strings.Join(names, " ")
}

func TestHTTP2AnswersInNginxOrder(t *testing.T) {
	static := ":status server date content-type content-length last-modified etag accept-ranges"
	for _, path := range []string{"/bytes/1024", "/json/1000", "/feeds/7", "/bytes/200000"} { // hot path, goroutine path
		fields := h2Head(t, path)
		if got := fieldNames(fields); got != static {
			t.Errorf("%s: fields %s, want nginx's %s", path, got, static)
		}
		if fields[1].Value != shape.ServerName || fields[5].Value != shape.LastModified || !strings.HasPrefix(fields[6].Value, shape.ETagPrefix) {
			t.Errorf("%s: %v", path, fields)
		}
	}
	if got, want := fieldNames(h2Head(t, "/redirect/1?to=/bytes/1")), ":status server date content-type content-length location"; got != want {
		t.Errorf("redirect: fields %s, want %s", got, want)
	}
}

// nginx sends every answer's fields whole (for /bytes/1024 117 or 118 bytes, as the date's
// Huffman code runs; for /json/335114 116); the bench server too, at most 5 bytes longer
// (shape.go).
// timeSlack is how many bytes longer the Huffman codes of the answer's times (Date,
// Last-Modified, the ETag's hex) are than they would be with every digit a 5-bit one ('0'): a
// digit's code is 5 or 6 bits, so the same block is a few bytes longer at some instants than at
// others, at nginx's as at ours.
func timeSlack(fields []hpack.HeaderField) int {
	slack := 0
	for _, f := range fields {
		if f.Name == "date" || f.Name == "last-modified" || f.Name == "etag" {
			digits := `[0-9]`
			if f.Name == "etag" {
				digits = `[0-9a-f]`
			}
			zeros := regexp.MustCompile(digits).ReplaceAllString(f.Value, "0")
			slack += int(hpack.HuffmanEncodeLength(f.Value)) - int(hpack.HuffmanEncodeLength(zeros))
		}
	}
	return slack
}

func TestHTTP2AnswersCarryTheirWholeBlockEveryTime(t *testing.T) {
	for path, nginx := range map[string]int{"/bytes/1024": 117, "/json/335114": 116} {
		fields, sizes := h2Heads(t, path)
		if sizes[0] != sizes[1] || sizes[0] < nginx-1 || sizes[0] > nginx+1+5+timeSlack(fields[0]) {
			t.Errorf("%s: header blocks of %d and %d bytes, nginx's are %d±1 each", path, sizes[0], sizes[1], nginx)
		}
	}
	servertest.Configure(t, `{"headers": "minimal"}`)
	defer servertest.Configure(t, `{"headers": "nginx"}`)
	if _, sizes := h2Heads(t, "/bytes/1024"); sizes[1] >= sizes[0] {
		t.Errorf("minimal: header blocks of %d and %d bytes: the second should refer to the first's fields", sizes[0], sizes[1])
	}
}

func TestHTTP3AnswersCarryNginxHeaders(t *testing.T) {
	c, _ := servertest.H3Client(t, nil)
	resp := servertest.H3Get(t, c, "GET", "/bytes/1024")
	for name, want := range map[string]string{"Server": shape.ServerName, "Content-Type": "application/octet-stream",
		"Content-Length": "1024", "Last-Modified": shape.LastModified, "Etag": shape.ETagText(1024), "Accept-Ranges": "bytes"} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if _, err := http.ParseTime(resp.Header.Get("Date")); err != nil || resp.Header.Get("Connection") != "" {
		t.Errorf("Date %q, Connection %q", resp.Header.Get("Date"), resp.Header.Get("Connection"))
	}
}

// The minimal shape is the bench server's answer before nginx's shape: Content-Length,
// Content-Type, Date (118 bytes of head for /bytes/1024), on every path.
func TestMinimalShapeRestoresTheOldAnswers(t *testing.T) {
	servertest.Configure(t, `{"headers": "minimal"}`)
	defer servertest.Configure(t, `{"headers": "nginx"}`)
	want := []string{`HTTP/1\.1 200 OK`, `Content-Length: 1024`, `Content-Type: application/octet-stream`, `Date: ` + httpDateText}
	for _, off := range []bool{false, true} {
		h1.SetOff(off)
		lines, size := plainHead(t, get11("/bytes/1024", ""))
		h1.SetOff(false)
		matchHead(t, fmt.Sprintf("minimal, net/http %v", off), lines, want)
		if size != 118 {
			t.Errorf("minimal, net/http %v: a head of %d bytes, want 118", off, size)
		}
	}
	lines, _ := plainHead(t, get11("/bytes/12", "Connection: close\r\n"))
	matchHead(t, "minimal, close", lines, []string{`HTTP/1\.1 200 OK`, `Content-Length: 12`,
		`Content-Type: application/octet-stream`, `Date: ` + httpDateText, `Connection: close`})
	for _, path := range []string{"/bytes/1024", "/json/1000"} {
		if got := fieldNames(h2Head(t, path)); got != ":status content-length content-type date" &&
			got != ":status content-type content-length date" {
			t.Errorf("minimal HTTP/2 %s: fields %s", path, got)
		}
	}
	c, _ := servertest.H3Client(t, nil)
	resp := servertest.H3Get(t, c, "GET", "/bytes/1024")
	if len(resp.Header) != 3 || resp.Header.Get("Server") != "" {
		t.Errorf("minimal HTTP/3: %v", resp.Header)
	}
}

func TestConfigRefusesAnUnknownShape(t *testing.T) {
	resp, body := servertest.Control(t, "POST", "/config", `{"headers": "apache"}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"nginx" or "minimal"`) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}
