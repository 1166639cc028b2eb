package main

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
	shapeNginx   = "nginx"
	shapeMinimal = "minimal"
)

// minimalHeads is set while answers carry the minimal shape (default: nginx's).
var minimalHeads atomic.Bool

// serverName is as long as nginx's "nginx/1.22.1": the bench server names itself, at nginx's size.
const serverName = "clientlab/v1"

// The resources never change while the server runs: Last-Modified is the server's start (as
// nginx's is the file's mtime, the instant the lab wrote it), and the ETag is nginx's
// "<mtime in hex>-<length in hex>".
var (
	startedAt    = time.Now().Truncate(time.Second)
	lastModified = startedAt.UTC().Format(http.TimeFormat)
	etagPrefix   = `"` + strconv.FormatInt(startedAt.Unix(), 16) + "-"
)

// appendETag appends the ETag value of a static answer of n bytes.
func appendETag(out []byte, n int64) []byte {
	out = append(out, etagPrefix...)
	out = strconv.AppendInt(out, n, 16)
	return append(out, '"')
}

// etagTexts keeps the ETag values of the usual sizes as strings (HTTP/2, net/http), made once.
var etagTexts [1025]atomic.Pointer[string]

func etagText(n int64) string {
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
	serverValues       = []string{serverName}
	lastModifiedValues = []string{lastModified}
	keepAliveValues    = []string{"keep-alive"}
	bytesValues        = []string{"bytes"}
)

// shapeHead adds the nginx shape's headers to a net/http answer (the handler's own:
// Content-Type, Content-Length, Location, Set-Cookie, are set by it): Server and Date (the
// cached second, as nginx's), Connection: keep-alive over HTTP/1.x (net/http turns it into
// close when the connection closes, as nginx does; HTTP/2 and 3 have no Connection header), and
// for a static resource's 200 Last-Modified, ETag and Accept-Ranges. A gzip answer is nginx's
// gzip filter's: a weak ETag and no Accept-Ranges. net/http writes HTTP/1.1 headers sorted by
// name and quic-go in its map's order, so only the set and the sizes are nginx's there.
func shapeHead(h http.Header, r *http.Request, static bool, length int64, gzipped bool) {
	if minimalHeads.Load() {
		return
	}
	h["Server"] = serverValues
	h["Date"] = []string{dateText(time.Now())}
	if r.ProtoMajor == 1 {
		h["Connection"] = keepAliveValues
	}
	if !static {
		return
	}
	h["Last-Modified"] = lastModifiedValues
	if gzipped {
		h["ETag"] = []string{"W/" + etagText(length)}
		return
	}
	h["ETag"] = []string{etagText(length)}
	h["Accept-Ranges"] = bytesValues
}

// h2Order is the order of nginx's HTTP/2 header block (ngx_http_v2_header_filter): its own
// fields, then the others in the order they were added; the others are written here sorted by
// name, after these.
var h2Order = []string{"Server", "Date", "Content-Type", "Content-Length", "Last-Modified", "Location",
	"Vary", "ETag", "Accept-Ranges", "Content-Encoding", "Set-Cookie", "Alt-Svc"}

// writeH2Fields encodes an answer's headers into an HTTP/2 header block: h2Order's first, in
// that order, then the others sorted by name; none of HTTP/1's connection headers.
func writeH2Fields(enc *hpack.Encoder, h http.Header) {
	for _, k := range h2Order {
		for _, v := range h[k] {
			enc.WriteField(hpack.HeaderField{Name: strings.ToLower(k), Value: v})
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
			enc.WriteField(hpack.HeaderField{Name: name, Value: v})
		}
	}
}
