// Package shape makes what answers carry: their bodies (content.go) and heads (shape.go).
package shape

// The shape of an answer's head: which headers it carries, in which order, how long they are.
// A client that parses headers in its own language pays for every byte and every line of them,
// so an answer much smaller than a real server's would flatter such clients. By default every
// answer is shaped like Debian 12's nginx 1.22 serving the same resource (the server the lab
// crosschecks against): Server, Date, Content-Type, Content-Length, Last-Modified, Connection,
// ETag, Accept-Ranges for a static resource, in nginx's order where the path writing the answer
// decides the order (the HTTP/1.1 hot path, HTTP/2), with nginx's sizes. The minimal shape
// (Content-Length, Content-Type, Date: net/http's answer to our handlers) stays available for
// scenarios that ask for it (control /config {"headers": "minimal"}).

import (
	"bytes"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2/hpack"
)

const (
	Nginx   = "nginx"
	Minimal = "minimal"
)

// minimalHeads is set while answers carry the minimal shape (default: nginx's).
var minimalHeads atomic.Bool

// MinimalHeads says whether answers carry the minimal shape of head (else nginx's).
func MinimalHeads() bool { return minimalHeads.Load() }

// SetMinimalHeads gives answers the minimal shape of head (on), or nginx's.
func SetMinimalHeads(on bool) { minimalHeads.Store(on) }

// ServerName is as long as nginx's "nginx/1.22.1": the bench server names itself, at nginx's size.
const ServerName = "clientlab/v1"

// The resources never change while the server runs: Last-Modified is the server's start (as
// nginx's is the file's mtime, the instant the lab wrote it), and the ETag is nginx's
// "<mtime in hex>-<length in hex>".
var (
	startedAt    = time.Now().Truncate(time.Second)
	LastModified = startedAt.UTC().Format(http.TimeFormat)
	ETagPrefix   = `"` + strconv.FormatInt(startedAt.Unix(), 16) + "-"
)

// appendETag appends the ETag value of a static answer of n bytes.
func appendETag(out []byte, n int64) []byte {
	out = append(out, ETagPrefix...)
	out = strconv.AppendInt(out, n, 16)
	return append(out, '"')
}

// etagTexts keeps the ETag values of the usual sizes as strings (HTTP/2, net/http), made once.
var etagTexts [1025]atomic.Pointer[string]

func ETagText(n int64) string {
	if n < int64(len(etagTexts)) {
		if v := etagTexts[n].Load(); v != nil {
			return *v
		}
		v := string(appendETag(nil, n))
		etagTexts[n].Store(&v)
		return v
	}
	return string(appendETag(nil, n))
}

// Header values shared by every answer (never written to: net/http and quic-go only read them).
var (
	serverValues       = []string{ServerName}
	lastModifiedValues = []string{LastModified}
	keepAliveValues    = []string{"keep-alive"}
	bytesValues        = []string{"bytes"}
)

// SetHead adds the nginx shape's headers to a net/http answer (the handler's own:
// Content-Type, Content-Length, Location, Set-Cookie, are set by it): Server and Date (the
// cached second, as nginx's), Connection: keep-alive over HTTP/1.x (net/http turns it into
// close when the connection closes, as nginx does; HTTP/2 and 3 have no Connection header), and
// for a static resource's 200 Last-Modified, ETag and Accept-Ranges. A gzip answer is nginx's
// gzip filter's: a weak ETag and no Accept-Ranges. net/http writes HTTP/1.1 headers sorted by
// name and quic-go in its map's order, so only the set and the sizes are nginx's there.
func SetHead(h http.Header, r *http.Request, static bool, length int64, gzipped bool) {
	if minimalHeads.Load() {
		return
	}
	h["Server"] = serverValues
	h["Date"] = []string{DateText(time.Now())}
	if r.ProtoMajor == 1 {
		h["Connection"] = keepAliveValues
	}
	if !static {
		return
	}
	h["Last-Modified"] = lastModifiedValues
	if gzipped {
		h["ETag"] = []string{"W/" + ETagText(length)}
		return
	}
	h["ETag"] = []string{ETagText(length)}
	h["Accept-Ranges"] = bytesValues
}

// h2Order is the order of nginx's HTTP/2 header block (ngx_http_v2_header_filter): its own
// fields, then the others in the order they were added; the others are written here sorted by
// name, after these.
var h2Order = []string{"Server", "Date", "Content-Type", "Content-Length", "Last-Modified", "Location",
	"Vary", "ETag", "Accept-Ranges", "Content-Encoding", "Set-Cookie", "Alt-Svc"}

// nginx sends every field of an answer's HTTP/2 block whole with every answer (it never refers
// to a field it sent before), so a client's decoder does a whole block's work for every answer:
// 117 bytes for /bytes/1024. Its own fields (server, date, content-type, content-length,
// last-modified, location, vary) name themselves by the static table; the others (etag,
// accept-ranges, set-cookie, …) carry their names as strings. The bench server writes the same,
// as literals without indexing: they leave both sides' dynamic tables alone, so the
// connection's encoder, which writes :status and the minimal shape's fields, stays in step with
// the client's decoder. nginx's literals for its own fields add them to the dynamic table
// (which it never uses), a byte shorter each: the bench server's block is up to 5 bytes longer.

// h2OwnFields are nginx's own fields, whose names it takes from the static table.
var h2OwnFields = []string{"server", "date", "content-type", "content-length", "last-modified", "location", "vary"}

// appendH2Literal appends name: value as an HPACK literal field without indexing, its name by
// the static table for nginx's own fields, as a string for the others.
func appendH2Literal(out []byte, name, value string) []byte {
	if !slices.Contains(h2OwnFields, name) {
		out = append(out, 0) // literal without indexing, new name
		return appendHpackString(appendHpackString(out, name), value)
	}
	var b bytes.Buffer
	hpack.NewEncoder(&b).WriteField(hpack.HeaderField{Name: name, Value: value, Sensitive: true})
	lit := b.Bytes()
	lit[0] &^= 0x10 // "never indexed" (0001xxxx) to "without indexing" (0000xxxx), as nginx's
	return append(out, lit...)
}

// appendHpackString appends an HPACK string: Huffman-coded when that is shorter (RFC 7541 §5.2).
func appendHpackString(out []byte, s string) []byte {
	n, huffman := uint64(len(s)), hpack.HuffmanEncodeLength(s) < uint64(len(s))
	var h byte
	if huffman {
		n, h = hpack.HuffmanEncodeLength(s), 0x80
	}
	if n < 127 { // a 7-bit prefix (§5.1)
		out = append(out, h|byte(n))
	} else {
		out = append(out, h|127)
		for n -= 127; n >= 128; n >>= 7 {
			out = append(out, byte(n%128)|0x80)
		}
		out = append(out, byte(n))
	}
	if huffman {
		return hpack.AppendHuffmanString(out, s)
	}
	return append(out, s...)
}

// AppendH2Fields appends an answer's headers as literals without indexing: h2Order's first, in
// that order, then the others sorted by name; none of HTTP/1's connection headers.
func AppendH2Fields(out []byte, h http.Header) []byte {
	for _, k := range h2Order {
		for _, v := range h[k] {
			out = appendH2Literal(out, strings.ToLower(k), v)
		}
	}
	var rest []string
	for k := range h {
		if !slices.Contains(h2Order, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		name := strings.ToLower(k)
		if name == "connection" || name == "transfer-encoding" || name == "keep-alive" {
			continue
		}
		for _, v := range h[k] {
			out = appendH2Literal(out, name, v)
		}
	}
	return out
}

// The HTTP/2 hot path's block for /bytes/{n} after :status, made of parts encoded once: the
// constant fields, the date (once a second) and the fields that depend on n (once per size up
// to 1 KB).
var (
	h2Server     = appendH2Literal(nil, "server", ServerName)
	h2OctetType  = appendH2Literal(nil, "content-type", "application/octet-stream")
	h2LastMod    = appendH2Literal(nil, "last-modified", LastModified)
	h2Ranges     = appendH2Literal(nil, "accept-ranges", "bytes")
	h2DateField  atomic.Pointer[datedBytes]
	h2SizeFields [1025]atomic.Pointer[[2][]byte] // content-length, etag
)

type datedBytes struct {
	sec int64
	val []byte
}

func h2Date(now time.Time) []byte {
	if d := h2DateField.Load(); d != nil && d.sec == now.Unix() {
		return d.val
	}
	d := &datedBytes{sec: now.Unix(), val: appendH2Literal(nil, "date", DateText(now))}
	h2DateField.Store(d)
	return d.val
}

func h2Sized(n int64) *[2][]byte {
	if n < int64(len(h2SizeFields)) {
		if f := h2SizeFields[n].Load(); f != nil {
			return f
		}
	}
	f := &[2][]byte{appendH2Literal(nil, "content-length", ContentLengthText(n)), appendH2Literal(nil, "etag", ETagText(n))}
	if n < int64(len(h2SizeFields)) {
		h2SizeFields[n].Store(f)
	}
	return f
}

// AppendH2Static appends nginx's block for a file of n bytes of application/octet-stream, after
// :status: server, date, content-type, content-length, last-modified, etag, accept-ranges.
func AppendH2Static(out []byte, n int64, now time.Time) []byte {
	sized := h2Sized(n)
	out = append(out, h2Server...)
	out = append(out, h2Date(now)...)
	out = append(out, h2OctetType...)
	out = append(out, sized[0]...)
	out = append(out, h2LastMod...)
	out = append(out, sized[1]...)
	return append(out, h2Ranges...)
}

// h2AltSvc is the Alt-Svc literal of the current h3 port (made again when the port moves).
var h2AltSvc atomic.Pointer[[2]string]

func AppendH2AltSvc(out []byte, value string) []byte {
	if a := h2AltSvc.Load(); a != nil && a[0] == value {
		return append(out, a[1]...)
	}
	lit := appendH2Literal(nil, "alt-svc", value)
	h2AltSvc.Store(&[2]string{value, string(lit)})
	return append(out, lit...)
}

// httpDate is the Date header's value, formatted once a second.
var httpDate struct {
	sec atomic.Int64
	val atomic.Pointer[[]byte]
}

func dateValue(now time.Time) []byte {
	if s := now.Unix(); s != httpDate.sec.Load() || httpDate.val.Load() == nil {
		v := []byte(now.UTC().Format(timeFormatGMT))
		httpDate.val.Store(&v)
		httpDate.sec.Store(s)
		return v
	}
	return *httpDate.val.Load()
}

const timeFormatGMT = "Mon, 02 Jan 2006 15:04:05 GMT"

// AppendHead appends a status line and headers. In nginx's shape (shape.go) they are nginx's, in
// its order (ngx_http_header_filter): Server, Date, Content-Type, Content-Length, Last-Modified
// (static), Location, Connection, then ETag and Accept-Ranges (static) and Set-Cookie; net/http's
// path sends the same set sorted by name. In the minimal shape they are net/http's for our
// handlers: the handler's headers sorted by name (Content-Length, Content-Type, Location,
// Set-Cookie), then Date, then Connection: close when the request asked for it.
func AppendHead(out []byte, status int, length int64, ctype string, location []byte, setCookie string, close, static bool) []byte {
	if minimalHeads.Load() {
		return appendMinimalHead(out, status, length, ctype, location, setCookie, close)
	}
	out = append(out, "HTTP/1.1 "...)
	out = strconv.AppendInt(out, int64(status), 10)
	out = append(out, ' ')
	out = append(out, http.StatusText(status)...)
	out = append(out, "\r\nServer: "+ServerName+"\r\nDate: "...)
	out = append(out, dateValue(time.Now())...)
	out = append(out, "\r\nContent-Type: "...)
	out = append(out, ctype...)
	out = append(out, "\r\nContent-Length: "...)
	out = strconv.AppendInt(out, length, 10)
	if static {
		out = append(out, "\r\nLast-Modified: "...)
		out = append(out, LastModified...)
	}
	if location != nil {
		out = append(out, "\r\nLocation: "...)
		out = append(out, location...)
	}
	if close {
		out = append(out, "\r\nConnection: close"...)
	} else {
		out = append(out, "\r\nConnection: keep-alive"...)
	}
	if static {
		out = append(out, "\r\nETag: "...)
		out = appendETag(out, length)
		out = append(out, "\r\nAccept-Ranges: bytes"...)
	}
	if setCookie != "" {
		out = append(out, "\r\nSet-Cookie: "...)
		out = append(out, setCookie...)
	}
	return append(out, "\r\n\r\n"...)
}

func appendMinimalHead(out []byte, status int, length int64, ctype string, location []byte, setCookie string, close bool) []byte {
	out = append(out, "HTTP/1.1 "...)
	out = strconv.AppendInt(out, int64(status), 10)
	out = append(out, ' ')
	out = append(out, http.StatusText(status)...)
	out = append(out, "\r\nContent-Length: "...)
	out = strconv.AppendInt(out, length, 10)
	out = append(out, "\r\nContent-Type: "...)
	out = append(out, ctype...)
	if location != nil {
		out = append(out, "\r\nLocation: "...)
		out = append(out, location...)
	}
	if setCookie != "" {
		out = append(out, "\r\nSet-Cookie: "...)
		out = append(out, setCookie...)
	}
	out = append(out, "\r\nDate: "...)
	out = append(out, dateValue(time.Now())...)
	if close {
		out = append(out, "\r\nConnection: close"...)
	}
	return append(out, "\r\n\r\n"...)
}

// contentLengthText avoids formatting the usual sizes again and again.
var lengthTexts [1025]string

func init() {
	for i := range lengthTexts {
		lengthTexts[i] = strconv.Itoa(i)
	}
}

func ContentLengthText(n int64) string {
	if n < int64(len(lengthTexts)) {
		return lengthTexts[n]
	}
	return strconv.FormatInt(n, 10)
}

// DateText is the Date header's value as a string, made once a second.
func DateText(now time.Time) string {
	if d := dateString.Load(); d != nil && d.sec == now.Unix() {
		return d.val
	}
	d := &datedString{sec: now.Unix(), val: string(dateValue(now))}
	dateString.Store(d)
	return d.val
}

type datedString struct {
	sec int64
	val string
}

var dateString atomic.Pointer[datedString]
