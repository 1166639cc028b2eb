// Package handlers serves the public resources and records every request around them.
package handlers

// The public resources (docs/bench-server.md) and the recording around every request.

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"clientlab/server/internal/record"
	"clientlab/server/internal/shape"
)

const (
	MaxBytes     = 2 << 30  // 2 GiB
	maxDelayMs   = 60_000   // delay_ms above this is refused
	MaxFormBytes = 16 << 20 // an urlencoded or multipart body is read whole: at most this much
	maxFormParts = 10_000
)

// countingBody counts the request body bytes the handler (or the drain after it) reads.
type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

// BodyWriter counts (and, while recording digests, hashes) the identity body bytes the handler
// produced, and remembers the first write error.
type BodyWriter struct {
	W    io.Writer
	N    int64
	hash hash.Hash
	Err  error
}

func (b *BodyWriter) Write(p []byte) (int, error) {
	n, err := b.W.Write(p)
	counted := p[:n]
	if err != nil && b.Err == nil {
		// HTTP/2: a client that has its whole body (it knows the Content-Length) may reset the
		// stream before the handler learns that its last DATA frame went out; the write then
		// reports 0 bytes that were in fact sent. The bytes handed over on the failing write are
		// counted (the client's own digest shows whether they arrived); the error is logged.
		b.Err = err
		counted = p
	}
	b.N += int64(len(counted))
	if b.hash != nil {
		b.hash.Write(counted)
	}
	return n, err
}

// exchange is one request being served: what the handlers fill into its log entry.
type exchange struct {
	w     http.ResponseWriter
	r     *http.Request
	query url.Values // parsed once; nil when the URL has no query
	entry record.LogEntry
	// static: the answer is a resource's (bytes, json, feeds), which nginx would serve as a file
	// (Last-Modified, ETag, Accept-Ranges in nginx's shape)
	static bool
}

// send answers with status and a body of n bytes (n < 0: unknown) produced by body.
func (x *exchange) send(status int, ctype string, n int64, body func(io.Writer) error) {
	h := x.w.Header()
	h.Set("Content-Type", ctype)
	var out io.Writer = x.w
	var zw *gzip.Writer
	if x.query.Get("gzip") == "1" && acceptsGzip(x.r) {
		h.Set("Content-Encoding", "gzip")
		h.Set("Vary", "Accept-Encoding")
		zw, _ = gzip.NewWriterLevel(x.w, gzip.BestSpeed)
		out = zw
		x.entry.Gzip = true
	} else if n >= 0 {
		h.Set("Content-Length", strconv.FormatInt(n, 10))
	}
	shape.SetHead(h, x.r, x.static && status == http.StatusOK, n, zw != nil)
	x.w.WriteHeader(status)
	x.entry.Status = status
	bw := &BodyWriter{W: out}
	if record.RecordDigests() {
		bw.hash = sha256.New()
	}
	_ = body(bw) // a client that goes away mid-body is its own problem; the log shows the bytes sent
	if zw != nil {
		zw.Close()
	}
	x.entry.RespBodyBytes = bw.N
	if bw.Err != nil {
		x.entry.RespWriteError = bw.Err.Error()
	}
	if bw.hash != nil {
		x.entry.RespSHA256 = hex.EncodeToString(bw.hash.Sum(nil))
	}
}

func (x *exchange) sendBytes(status int, ctype string, data []byte) {
	x.send(status, ctype, int64(len(data)), func(w io.Writer) error { _, err := w.Write(data); return err })
}

func (x *exchange) fail(status int, message string) {
	x.sendBytes(status, "text/plain; charset=utf-8", []byte(message+"\n"))
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.TrimSpace(params) != "q=0" {
			return true
		}
	}
	return false
}

// Serve records every request around the resource handlers.
func Serve(w http.ResponseWriter, r *http.Request) {
	tc, _ := r.Context().Value(record.ConnKey{}).(*record.Conn)
	t := record.Current()
	t.Answering.Add(1) // until recorded: see trial.settle
	defer t.Answering.Add(-1)
	x := &exchange{w: w, r: r, entry: record.LogEntry{
		Method: Cut(r.Method), Path: Cut(r.URL.Path), Proto: r.Proto,
		ExpectContinue: strings.EqualFold(r.Header.Get("Expect"), "100-continue"),
		FormKind:       "none",
	}}
	headerReads := 0
	if tc != nil {
		x.entry.Conn = tc.Rec.ID
		if tc.TrialID != t.ID {
			t.Carried(tc) // a connection kept from an earlier trial (job)
		}
		if r.ProtoMajor == 2 {
			if r.TLS == nil {
				tc.Rec.Proto.Store("h2c")
			}
			tc.NoEvents.Store(true)
		} else {
			headerReads = tc.PeekReadCount()
		}
	}
	advertiseH3(w.Header(), r)
	body := &countingBody{ReadCloser: r.Body}
	r.Body = body
	if r.URL.RawQuery != "" {
		x.query = r.URL.Query()
	}
	if !delay(x) {
		route(x, r.URL.Path)
	}
	io.Copy(io.Discard, body) // the whole request has arrived before its reads are counted
	x.entry.ReqBodyBytes = body.n
	if tc != nil {
		a := tc.TakeReads()
		if r.ProtoMajor == 1 && a.Reads > 0 {
			x.entry.Reads = a.Reads
			x.entry.HeaderReads = min(headerReads, a.Reads)
			x.entry.FirstByteNs = t.Since(a.First)
			x.entry.LastByteNs = t.Since(a.Last)
			x.entry.MaxReadGapNs = a.MaxGap.Nanoseconds()
		}
		tc.Rec.Requests.Add(1)
	}
	if x.entry.FirstByteNs == 0 {
		x.entry.FirstByteNs = t.Since(time.Now()) // HTTP/2: the instant the handler started is the best we have
	}
	x.entry.DoneNs = t.Since(time.Now())
	t.Record(x.entry)
}

// delay waits delay_ms before the answer, or less if the client goes away (then the request is
// logged without a status); it reports whether it answered already (a refused delay_ms).
func delay(x *exchange) bool {
	v := x.query.Get("delay_ms")
	if v == "" {
		return false
	}
	ms, err := strconv.Atoi(v)
	if err != nil || ms < 0 || ms > maxDelayMs {
		x.fail(http.StatusBadRequest, "delay_ms must be 0 ... 60000")
		return true
	}
	if ms == 0 {
		return false
	}
	timer := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer timer.Stop()
	select {
	case <-timer.C:
		return false
	case <-x.r.Context().Done():
		x.entry.RespWriteError = "the client went away during delay_ms"
		return true
	}
}

// Cut keeps a logged string short (a copy, so the request's memory is not kept alive).
func Cut(s string) string {
	if len(s) <= record.MaxLoggedString {
		return s
	}
	return strings.Clone(s[:record.MaxLoggedString])
}

func route(x *exchange, path string) {
	routeIn(x, path, false)
}

func routeIn(x *exchange, path string, private bool) {
	head, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	switch head {
	case "bytes":
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n < 0 || n > MaxBytes {
			x.fail(http.StatusBadRequest, "size must be 0 ... 2 GiB")
			return
		}
		x.static = true
		x.send(http.StatusOK, "application/octet-stream", n, func(w io.Writer) error { return shape.WriteBytes(w, n) })
	case "json":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 64 || n > shape.MaxJSONDoc {
			x.fail(http.StatusBadRequest, "size must be 64 ... 64 MiB")
			return
		}
		x.static = true
		if doc := shape.JSONDoc(n); doc != nil {
			x.sendBytes(http.StatusOK, "application/json", doc)
			return
		}
		x.send(http.StatusOK, "application/json", int64(n), func(w io.Writer) error { return shape.WriteJSON(w, n) })
	case "feeds":
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || i >= shape.FeedCount {
			x.fail(http.StatusNotFound, "feeds are 0 ... 99999")
			return
		}
		x.static = true
		x.sendBytes(http.StatusOK, "application/atom+xml", shape.FeedDoc(i))
	case "echo":
		echo(x)
	case "redirect":
		redirect(x, rest)
	case "login":
		login(x)
	case "private":
		if private {
			x.fail(http.StatusNotFound, "no such resource")
			return
		}
		cookie, err := x.r.Cookie(SessionCookie)
		ok := err == nil && ValidSession(cookie.Value)
		x.entry.CookieOK = &ok
		if !ok {
			x.fail(http.StatusUnauthorized, "log in first: POST /login")
			return
		}
		routeIn(x, "/"+rest, true)
	default:
		x.fail(http.StatusNotFound, "no such resource")
	}
}

func redirect(x *exchange, rest string) {
	n, err := strconv.Atoi(rest)
	to := x.query.Get("to")
	if err != nil || n < 1 {
		x.fail(http.StatusBadRequest, "use /redirect/{n}?to=/path with n >= 1")
		return
	}
	if !SameOriginPath(to) {
		x.fail(http.StatusBadRequest, "to must be a path on this server: /, then letters, digits and -._~!$&'()*+,;=:/?% (no //, \\, @, %2F, %5C or control characters)")
		return
	}
	location := to
	if n > 1 {
		location = "/redirect/" + strconv.Itoa(n-1) + "?to=" + url.QueryEscape(to)
	}
	x.w.Header().Set("Location", location)
	x.sendBytes(http.StatusFound, "text/plain; charset=utf-8", []byte("redirecting\n"))
}

// SameOriginPath accepts only what every URL parser, WHATWG's included, reads as an absolute
// path on the same origin: "/" then RFC 3986 path and query characters, with none of what a
// browser could turn into another host (backslashes, which WHATWG reads as slashes; "//";
// encoded slashes and backslashes; control characters, which it strips; "@"; a scheme needs a
// ":" before any "/", impossible after the leading "/").
func SameOriginPath(to string) bool { return SameOriginPathOf(to) }

// SameOriginPathOf is sameOriginPath for a string or a byte slice (the hot path's, unallocated).
func SameOriginPathOf[T string | []byte](to T) bool {
	if len(to) == 0 || to[0] != '/' || len(to) > 8192 {
		return false
	}
	if len(to) > 1 && (to[1] == '/' || to[1] == '\\') {
		return false
	}
	for i := 0; i < len(to); i++ {
		c := to[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:/?", c) >= 0:
		case c == '%':
			if i+2 >= len(to) || !IsHex(to[i+1]) || !IsHex(to[i+2]) {
				return false
			}
			if a, b := to[i+1]|0x20, to[i+2]|0x20; a == '2' && b == 'f' || a == '5' && b == 'c' { // %2F, %5C in any case
				return false
			}
		default: // backslash, @, #, space, quotes, controls, non-ASCII
			return false
		}
	}
	return true
}

func IsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// -- forms --------------------------------------------------------------------------------

type field struct{ Name, Value string }

// FormDigest is the canonical digest of form fields (sorted by name, then value).
func FormDigest(fields []field) string {
	sort.Slice(fields, func(i, j int) bool {
		if fields[i].Name != fields[j].Name {
			return fields[i].Name < fields[j].Name
		}
		return fields[i].Value < fields[j].Value
	})
	h := sha256.New()
	for _, f := range fields {
		h.Write([]byte(f.Name))
		h.Write([]byte{0})
		h.Write([]byte(f.Value))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// readForm parses a urlencoded or multipart body; kind "raw" means neither (body hashed instead).
// Forms are read whole (their digest sorts the fields): at most maxFormBytes and maxFormParts.
func readForm(w http.ResponseWriter, r *http.Request) (kind string, fields []field, bodySHA string, err error) {
	mediaType, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mediaType {
	case "application/x-www-form-urlencoded":
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxFormBytes))
		if err != nil {
			return "", nil, "", err
		}
		return urlencodedForm(data)
	case "multipart/form-data":
		return multipartForm(http.MaxBytesReader(w, r.Body, MaxFormBytes), params["boundary"])
	}
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
	if err != nil {
		return "", nil, "", err
	}
	if n == 0 {
		return "none", nil, "", nil
	}
	return "raw", nil, hex.EncodeToString(h.Sum(nil)), nil
}

// FormOf is readForm for a body already read whole (the hot path's, far below maxFormBytes):
// the same parsing, from memory.
func FormOf(contentType string, body []byte) (kind string, fields []field, bodySHA string, err error) {
	mediaType, params, _ := mime.ParseMediaType(contentType)
	switch mediaType {
	case "application/x-www-form-urlencoded":
		return urlencodedForm(body)
	case "multipart/form-data":
		return multipartForm(bytes.NewReader(body), params["boundary"])
	}
	if len(body) == 0 {
		return "none", nil, "", nil
	}
	sum := sha256.Sum256(body)
	return "raw", nil, hex.EncodeToString(sum[:]), nil
}

func urlencodedForm(data []byte) (kind string, fields []field, bodySHA string, err error) {
	values, err := url.ParseQuery(string(data))
	if err != nil {
		return "", nil, "", err
	}
	for name, vs := range values {
		for _, v := range vs {
			fields = append(fields, field{name, v})
		}
	}
	sum := sha256.Sum256(data)
	return "urlencoded", fields, hex.EncodeToString(sum[:]), nil
}

func multipartForm(body io.Reader, boundary string) (kind string, fields []field, bodySHA string, err error) {
	reader := multipart.NewReader(body, boundary)
	for {
		part, err := reader.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", nil, "", err
		}
		if len(fields) == maxFormParts {
			return "", nil, "", fmt.Errorf("more than %d parts", maxFormParts)
		}
		value, err := io.ReadAll(part)
		if err != nil {
			return "", nil, "", err
		}
		fields = append(fields, field{part.FormName(), string(value)})
	}
	return "multipart", fields, "", nil
}

func echo(x *exchange) {
	kind, fields, bodySHA, err := readForm(x.w, x.r)
	if err != nil {
		x.fail(http.StatusBadRequest, "cannot read the body: "+err.Error())
		return
	}
	x.entry.FormKind = kind
	x.entry.FormFields = len(fields)
	if kind == "urlencoded" || kind == "multipart" {
		x.entry.FormSHA256 = FormDigest(fields)
		if kind == "multipart" {
			bodySHA = x.entry.FormSHA256 // the raw body carries a random boundary
		}
	}
	answer, _ := json.Marshal(map[string]any{
		"kind": kind, "fields": len(fields), "form_sha256": x.entry.FormSHA256, "body_sha256": bodySHA,
	})
	x.sendBytes(http.StatusOK, "application/json", append(answer, '\n'))
}

// -- login and sessions -------------------------------------------------------------------

const SessionCookie = "clientlab_session"

// Session tokens carry their own proof: 16 random bytes and a keyed SHA-256 of them, so that
// the server keeps nothing per login (memory does not grow with the number of logins).
var sessionKey = func() (k [32]byte) { rand.Read(k[:]); return }()

func sessionMAC(nonce []byte) [sha256.Size]byte {
	var in [32 + 16]byte
	copy(in[:32], sessionKey[:])
	copy(in[32:], nonce)
	return sha256.Sum256(in[:])
}

func NewSession() string {
	var raw [32]byte
	rand.Read(raw[:16])
	mac := sessionMAC(raw[:16])
	copy(raw[16:], mac[:16])
	return hex.EncodeToString(raw[:])
}

func ValidSession(token string) bool { return ValidSessionOf(token) }

// ValidSessionOf is validSession for a string or a byte slice (the hot path's, unallocated).
func ValidSessionOf[T string | []byte](token T) bool {
	var raw [32]byte
	if len(token) != 64 {
		return false
	}
	for i := 0; i < 32; i++ {
		hi, ok1 := FromHex(token[2*i])
		lo, ok2 := FromHex(token[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		raw[i] = hi<<4 | lo
	}
	mac := sessionMAC(raw[:16])
	return subtle.ConstantTimeCompare(mac[:16], raw[16:]) == 1
}

// FromHex reads one hex digit as hex.Decode does (either case).
func FromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func login(x *exchange) {
	if x.r.Method != http.MethodPost {
		x.fail(http.StatusMethodNotAllowed, "POST a form with user and password")
		return
	}
	kind, fields, _, err := readForm(x.w, x.r)
	x.entry.FormKind = kind
	x.entry.FormFields = len(fields)
	if err != nil {
		x.fail(http.StatusBadRequest, "cannot read the form: "+err.Error())
		return
	}
	x.entry.FormSHA256 = FormDigest(fields)
	got := map[string]string{}
	for _, f := range fields {
		got[f.Name] = f.Value
	}
	if got["user"] == "" || got["password"] == "" {
		x.fail(http.StatusBadRequest, "user and password are required")
		return
	}
	token := NewSession()
	http.SetCookie(x.w, &http.Cookie{Name: SessionCookie, Value: token, Path: "/"})
	x.sendBytes(http.StatusOK, "application/json", []byte(`{"logged_in":true}`+"\n"))
}

// -- digests for the lab ------------------------------------------------------------------

var (
	byteDigests     sync.Map // n -> string
	byteDigestCount atomic.Int64
)

const maxByteDigests = 4096 // distinct sizes remembered; beyond, digests are computed each time

// BodyDigest is the size and SHA-256 of the identity body a GET of path would get.
func BodyDigest(path string) (int64, string, bool) {
	path = strings.TrimPrefix(path, "/private")
	head, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	var data []byte
	switch head {
	case "bytes":
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n < 0 || n > MaxBytes {
			return 0, "", false
		}
		if d, ok := byteDigests.Load(n); ok {
			return n, d.(string), true
		}
		h := sha256.New()
		shape.WriteBytes(h, n)
		d := hex.EncodeToString(h.Sum(nil))
		if byteDigestCount.Add(1) <= maxByteDigests {
			byteDigests.Store(n, d)
		}
		return n, d, true
	case "json":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 64 || n > shape.MaxJSONDoc {
			return 0, "", false
		}
		if data = shape.JSONDoc(n); data == nil {
			h := sha256.New()
			shape.WriteJSON(h, n)
			return int64(n), hex.EncodeToString(h.Sum(nil)), true
		}
	case "feeds":
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || i >= shape.FeedCount {
			return 0, "", false
		}
		data = shape.FeedDoc(i)
	default:
		return 0, "", false
	}
	sum := sha256.Sum256(data)
	return int64(len(data)), hex.EncodeToString(sum[:]), true
}

// advertiseH3 adds Alt-Svc to an answer on the TLS port, so that a client that upgrades to
// HTTP/3 by itself can be seen doing it (clients that do not act on Alt-Svc ignore it).
func advertiseH3(h http.Header, r *http.Request) {
	if r.TLS != nil && r.ProtoMajor < 3 {
		if v := record.AltSvc(); v != nil {
			h.Set("Alt-Svc", *v)
			record.Current().OfferedH3()
		}
	}
}
