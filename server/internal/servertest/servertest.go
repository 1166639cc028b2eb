// Package servertest is for tests only: one whole server per test binary and the control port's helpers.
package servertest

// What the server's tests share: one whole server started in the test binary (certificate,
// control secret, every port), and the helpers that talk to its control port.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"mime/multipart"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2/hpack"

	"clientlab/server/internal/control"
	"clientlab/server/internal/faults"
	"clientlab/server/internal/h2"
	"clientlab/server/internal/record"
	"clientlab/server/internal/server"
	"clientlab/server/internal/shape"
	"clientlab/server/internal/sockets"
)

var (
	PlainURL, SecureURL, ControlURL string
	H3URL                           string // HTTP/3: https on the UDP port
	Roots                           *x509.CertPool
	Faults                          *faults.Server // the fault origins
)

const Secret = "test-secret-0123456789"

var Loopback = netip.MustParseAddr("127.0.0.1")

// Control sends one request to the control port with the secret.
func Control(t testing.TB, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, ControlURL+path, strings.NewReader(body))
	req.Header.Set(control.SecretHeader, Secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

func Certificate() (tls.Certificate, *x509.CertPool) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	parsed, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(parsed)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func Reset(t testing.TB) {
	t.Helper()
	if resp, body := Control(t, "POST", "/reset", ""); resp.StatusCode != 200 {
		t.Fatalf("reset: %d %s", resp.StatusCode, body)
	}
}

func Configure(t testing.TB, settings string) {
	t.Helper()
	if resp, body := Control(t, "POST", "/config", settings); resp.StatusCode != 200 {
		t.Fatalf("config %s: %d %s", settings, resp.StatusCode, body)
	}
}

func Counters(t testing.TB) record.Snapshot {
	t.Helper()
	resp, body := Control(t, "GET", "/counters", "")
	var s record.Snapshot
	if err := json.Unmarshal(body, &s); err != nil || resp.StatusCode != 200 {
		t.Fatalf("counters: %d %v %s", resp.StatusCode, err, body)
	}
	return s
}

func Get(t *testing.T, c *http.Client, u string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// DialPlain opens a TCP connection to the plain port (the caller closes it).
func DialPlain(t testing.TB) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(PlainURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return c.(*net.TCPConn)
}

// Main starts the whole server on loopback, then runs the tests.
func Main(m *testing.M) {
	cert, pool := Certificate()
	Roots = pool
	ready, f, err := server.Start(Loopback, Loopback, server.TLSConfigFor(cert), 0, Secret)
	if err != nil {
		panic(err)
	}
	PlainURL = fmt.Sprintf("http://127.0.0.1:%d", ready["http"])
	SecureURL = fmt.Sprintf("https://127.0.0.1:%d", ready["https"])
	ControlURL = fmt.Sprintf("http://127.0.0.1:%d", ready["control"])
	Faults = f
	H3URL = fmt.Sprintf("https://127.0.0.1:%d", ready["h3"])
	os.Exit(m.Run())
}

// h2Request is one request sent both ways by the tests below.
type h2Request struct {
	Method, Path, ctype, body string
	header                    map[string]string
}

func H2Requests(t *testing.T) []h2Request {
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	mw.WriteField("user", "ann")
	fw, _ := mw.CreateFormFile("file", "a.bin")
	fw.Write(shape.Block[:5000])
	mw.Close()
	return []h2Request{
		{Method: "GET", Path: "/bytes/1024"},
		{Method: "GET", Path: "/bytes/0"},
		{Method: "GET", Path: "/bytes/16384"},
		{Method: "GET", Path: "/bytes/16385"},
		{Method: "GET", Path: "/bytes/200000"},
		{Method: "GET", Path: "/bytes/01024"},
		{Method: "GET", Path: "/bytes/x"},
		{Method: "GET", Path: "/bytes/10?gzip=1", header: map[string]string{"Accept-Encoding": "gzip"}},
		{Method: "GET", Path: "/bytes/10?delay_ms=5"},
		{Method: "GET", Path: "/bytes/10?delay_ms=-1"},
		{Method: "GET", Path: "/bytes/10", header: map[string]string{"Expect": "100-continue"}},
		{Method: "HEAD", Path: "/bytes/100"},
		{Method: "GET", Path: "/json/2000"},
		{Method: "GET", Path: "/feeds/7"},
		{Method: "GET", Path: "/redirect/2?to=/bytes/3"},
		{Method: "GET", Path: "/redirect/1?to=//evil"},
		{Method: "GET", Path: "/private/bytes/10"},
		{Method: "GET", Path: "/nowhere"},
		{Method: "POST", Path: "/echo", ctype: "application/x-www-form-urlencoded", body: "a=1&b=%20x&a=2"},
		{Method: "POST", Path: "/echo", ctype: mw.FormDataContentType(), body: mp.String()},
		{Method: "POST", Path: "/echo", ctype: "application/octet-stream", body: strings.Repeat("z", 300000)},
		{Method: "PUT", Path: "/echo", body: "raw"},
		{Method: "POST", Path: "/login", ctype: "application/x-www-form-urlencoded", body: "user=u&password=p"},
	}
}

func (r h2Request) Do(t *testing.T, c *http.Client, base string) (*http.Response, []byte) {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, _ := http.NewRequest(r.Method, base+r.Path, body)
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.Path, err)
	}
	return resp, data
}

func NoRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func CutText(b []byte) string { return string(b[:min(len(b), 80)]) }

type rawH2 struct {
	t    *testing.T
	C    net.Conn
	enc  *hpack.Encoder
	eb   bytes.Buffer
	Dec  *hpack.Decoder
	hdrs map[uint32][]hpack.HeaderField
}

func DialRawH2(t *testing.T, settings ...uint32) *rawH2 {
	u, _ := url.Parse(PlainURL)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	r := &rawH2{t: t, C: c, hdrs: map[uint32][]hpack.HeaderField{}}
	r.enc = hpack.NewEncoder(&r.eb)
	r.Dec = hpack.NewDecoder(4096, nil)
	out := append([]byte(nil), record.H2Preface...)
	out = h2.AppendFrameHeader(out, 6*len(settings)/2, h2.FrameSettings, 0, 0)
	for i := 0; i+1 < len(settings); i += 2 {
		out = h2.AppendSetting(out, uint16(settings[i]), settings[i+1])
	}
	r.Write(out)
	return r
}

func (r *rawH2) Write(b []byte) {
	if _, err := r.C.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawH2) Get(id uint32, path string) {
	r.eb.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", path}} {
		r.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	r.Write(append(h2.AppendFrameHeader(nil, r.eb.Len(), h2.FrameHeaders, h2.FlagEndHeaders|h2.FlagEndStream, id), r.eb.Bytes()...))
}

// Frame reads the next frame.
func (r *rawH2) Frame() (typ, flags byte, id uint32, payload []byte) {
	r.C.SetReadDeadline(time.Now().Add(10 * time.Second))
	h := make([]byte, 9)
	if _, err := io.ReadFull(r.C, h); err != nil {
		r.t.Fatal(err)
	}
	payload = make([]byte, int(h[0])<<16|int(h[1])<<8|int(h[2]))
	if _, err := io.ReadFull(r.C, payload); err != nil {
		r.t.Fatal(err)
	}
	return h[3], h[4], binary.BigEndian.Uint32(h[5:]) & 0x7fffffff, payload
}

// H3Client is an HTTP/3 client trusting the test certificate; cache (may be nil) keeps its
// TLS sessions for resumption. It is closed when the test ends.
func H3Client(t *testing.T, cache tls.ClientSessionCache) (*http.Client, *http3.Transport) {
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: Roots, ClientSessionCache: cache},
		DisableCompression: true}
	t.Cleanup(func() { tr.Close() })
	return &http.Client{Transport: tr, CheckRedirect: NoRedirect, Timeout: 10 * time.Second}, tr
}

func H3Get(t *testing.T, c *http.Client, method, path string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, H3URL+path, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s over HTTP/3: %v", method, path, err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil || resp.ProtoMajor != 3 {
		t.Fatalf("%s %s: %s, %v", method, path, resp.Proto, err)
	}
	return resp
}

// OtherHostForBrowser says whether a WHATWG URL parser, resolving location against an http URL,
// could leave the origin: it strips C0 controls and spaces at the ends and every tab and
// newline, reads "\" as "/", and a scheme or a leading "//" names another host.
func OtherHostForBrowser(location string) bool {
	s := strings.TrimFunc(location, func(r rune) bool { return r <= ' ' })
	s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	s = strings.ReplaceAll(s, `\`, "/")
	if strings.HasPrefix(s, "//") {
		return true
	}
	for i, c := range s {
		switch {
		case c == ':' && i > 0:
			return true // a scheme
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
			continue
		}
		break
	}
	return !strings.HasPrefix(s, "/")
}

// WaitFor polls the counters until cond holds, for at most 5 s.
func WaitFor(t *testing.T, what string, cond func(record.Snapshot) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := Counters(t)
		if cond(s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s: %+v", what, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func OneAnswerLogged(s record.Snapshot) bool { return len(s.Log) == 1 }

// Rebind moves the server to fresh ports (new listening sockets) and the tests with it.
func Rebind(t *testing.T) {
	t.Helper()
	resp, body := Control(t, "POST", "/rebind", "")
	var ports struct{ HTTP, HTTPS, H3 int }
	if err := json.Unmarshal(body, &ports); err != nil || resp.StatusCode != 200 || ports.HTTP == 0 || ports.HTTPS == 0 || ports.H3 == 0 {
		t.Fatalf("rebind: %d %s", resp.StatusCode, body)
	}
	PlainURL = fmt.Sprintf("http://127.0.0.1:%d", ports.HTTP)
	SecureURL = fmt.Sprintf("https://127.0.0.1:%d", ports.HTTPS)
	H3URL = fmt.Sprintf("https://127.0.0.1:%d", ports.H3)
}

// WithStallLimit gives the listening sockets, and so the connections accepted from now on, a
// stall limit of ms for the test; the next tests get the usual one back.
func WithStallLimit(t *testing.T, ms int64) {
	t.Helper()
	usual := sockets.SetStallLimit(time.Duration(ms) * time.Millisecond)
	Rebind(t)
	t.Cleanup(func() {
		sockets.SetStallLimit(usual)
		Rebind(t)
	})
}

// fuzzRuns resets the trial now and then, so that a long fuzz run's log stays small.
var fuzzRuns atomic.Int64

func FreshTrialSometimes() {
	if fuzzRuns.Add(1)%5000 == 0 {
		record.StartTrial(record.NewTrial())
	}
}
