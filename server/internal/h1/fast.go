// Package h1 is the plain port's HTTP/1.1 hot path.
package h1

// The HTTP/1.1 hot path of the plain port. net/http costs several times nginx's CPU
// per small keep-alive request (a goroutine hand-off, a bufio reader and writer, an http.Request,
// a header map and a response writer per request). The plain port's connections are read here
// instead: the requests of the default scenarios — GET of /bytes/{n}, /json/{n}, /feeds/{i} and
// /private/… (with the session cookie checked as validSession does), GET /redirect/{n}?to=PATH,
// POST /echo and POST /login with a Content-Length body that fits the read buffer — are parsed
// and answered in place (fastforms.go for forms, redirects and cookies), recorded exactly as
// serveHTTP records them (log entry, read events, connection counters, carried connections) and
// answered with net/http's bytes (status line, headers in its order, bodies).
// Everything else — another method or resource, another query, a chunked body, Expect, a body
// larger than the buffer, a header this path does not read, HTTP/1.0, a request whose headers do
// not fit in the read buffer, a bare LF, record_digests on, a server cap — hands the connection,
// with every byte read so far, to net/http for the rest of its life: the answer to anything
// unusual is net/http's, as before. A connection that opens with the HTTP/2 preface goes to the
// h2c server as before.

import (
	"bytes"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"clientlab/server/internal/handlers"
	"clientlab/server/internal/record"
	"clientlab/server/internal/shape"
	"clientlab/server/internal/sockets"
)

const (
	fastReadBuffer = 4 << 10  // a request's headers must fit, else net/http takes the connection
	fastInline     = 64 << 10 // bodies up to this size go out in the same write as the headers
)

// fastBuffers holds the read buffers of connections; a connection keeps one while it lives.
var fastBuffers = sync.Pool{New: func() any { b := make([]byte, fastReadBuffer); return &b }}

// fastOut holds response buffers, taken for one write and given back.
var fastOut = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// interned keeps the logged strings of the fast path's paths, so that a log entry costs no
// allocation: at most maxInterned distinct paths, then each one is copied.
var interned struct {
	mu sync.RWMutex
	m  map[string]string
}

const maxInterned = 8192

func internPath(b []byte) string {
	interned.mu.RLock()
	s, ok := interned.m[string(b)]
	interned.mu.RUnlock()
	if ok {
		return s
	}
	s = string(b)
	interned.mu.Lock()
	if interned.m == nil {
		interned.m = map[string]string{}
	}
	if len(interned.m) < maxInterned {
		interned.m[s] = s
	}
	interned.mu.Unlock()
	return s
}

// fastRequest is what the hot path takes from a request it serves itself.
type fastRequest struct {
	post    bool   // POST (else GET)
	path    []byte // the path, without the query
	close   bool   // Connection: close
	kind    byte   // 'b' bytes, 'j' json, 'f' feeds, 'r' redirect, 'e' echo, 'l' login
	private bool   // /private/{resource}: the session cookie decides
	n       int64  // the resource's size or index; the redirect's hops
	to      []byte // the redirect's target as sent (escaped)
	bodyLen int    // Content-Length (POST)
	ctype   []byte // Content-Type (POST)
	cookie  []byte // the Cookie header (private)
	body    []byte // the request body, once read
}

// off sends every new plain connection to net/http (tests compare both paths); handoffs counts
// the connections the hot path handed to net/http after reading from them.
var (
	off      atomic.Bool
	handoffs atomic.Int64
)

// SetOff sends every new plain connection to net/http (on) or lets the hot path serve those it
// can; it returns the setting before.
func SetOff(on bool) bool { return off.Swap(on) }

// Handoffs is how many connections the hot path handed to net/http after reading from them.
func Handoffs() int64 { return handoffs.Load() }

// Server is the plain port's hot path: it hands the connections it does not serve to
// net/http (slow) or to the h2c server (h2c), and follows the server's cap (limit).
type Server struct {
	Limit *record.ConnLimit
	Slow  *record.ConnQueue // connections handed to net/http, with the bytes read so far
	H2C   *record.ConnQueue // connections that opened with the HTTP/2 preface
}

// serveFast serves one plain connection; it returns when the connection closes or has been
// handed to net/http (slow) or to the h2c server.
func (p *Server) serveFast(tc *record.Conn) {
	bufp := fastBuffers.Get().(*[]byte)
	buf := *bufp
	handedOff := false
	var sc *fastScratch // forms, redirects: taken when a request needs it
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(sockets.ServerErrors(), "panic serving %s: %v\n", tc.RemoteAddr(), r)
			tc.Close()
		}
		if !handedOff {
			tc.Close()
		}
		fastBuffers.Put(bufp)
		if sc != nil {
			fastScratches.Put(sc)
		}
	}()
	handoff := func(pending []byte) {
		handedOff = true
		if len(pending) > 0 {
			handoffs.Add(1)
		}
		tc.Pending = bytes.Clone(pending)
		if len(tc.Pending) == 0 {
			tc.Pending = nil
		}
		p.Slow.Push(tc)
	}
	if p.Limit.Limited() || record.RecordDigests() || off.Load() {
		// the cap's idle bookkeeping and the digests are net/http's (verification passes); it
		// tells h2c from HTTP/1.1 itself (sniffRead)
		tc.Sniffing = true
		handoff(nil)
		return
	}
	start, end := 0, 0 // buf[start:end] is read and not yet served
	first := true      // the connection's first request
	sniff := true      // the first bytes may be the HTTP/2 preface
	headerReads := -1  // reads that carried the current request's headers, once they are complete
	var deadline time.Time
	setDeadline := func(d time.Time) {
		// deadlines only move by whole seconds, so that most requests set none
		if d.Sub(deadline) >= time.Second || d.Before(deadline) {
			deadline = d
			tc.Conn.SetReadDeadline(d)
		}
	}
	var req fastRequest
	for {
		head := -1
		if !sniff {
			head = bytes.Index(buf[start:end], CRLFCRLF)
		}
		if head >= 0 {
			if headerReads < 0 {
				// net/http's handler starts (and counts the header reads) as soon as the headers
				// are in; a body that comes in later reads is counted only in reads
				headerReads = tc.PeekReadCount()
			}
			req = fastRequest{}
			if !parseFast(buf[start:start+head+2], &req) {
				handoff(buf[start:end])
				return
			}
			total := head + 4 + req.bodyLen
			if total > len(buf) {
				handoff(buf[start:end]) // a body larger than the hot path's buffer: net/http's
				return
			}
			if end-start >= total {
				req.body = buf[start+head+4 : start+total]
				if req.kind == 'e' || req.kind == 'l' || req.kind == 'r' || req.private {
					if sc == nil {
						sc = fastScratches.Get().(*fastScratch)
					}
				}
				first = false
				ok := p.answerFast(tc, &req, headerReads, sc)
				headerReads = -1
				start += total
				if start == end {
					start, end = 0, 0
				}
				if !ok || req.close {
					return
				}
				continue
			}
			// the body is still on its way (a client that sends it in a second write)
		}
		if start > 0 {
			end = copy(buf, buf[start:end])
			start = 0
		}
		if head < 0 && (end == len(buf) || !sniff && bareLF(buf[:end])) {
			// headers longer than the buffer (net/http reads up to 1 MB of them), or lines
			// ending in a bare LF (net/http reads them)
			handoff(buf[:end])
			return
		}
		now := time.Now()
		switch {
		case head >= 0:
			setDeadline(time.Time{}) // net/http waits for a body without a deadline
		case first:
			setDeadline(tc.Rec.Opened.Add(sockets.HeaderTimeout))
		case end == 0:
			setDeadline(now.Add(sockets.IdleTimeout))
		default:
			setDeadline(tc.FirstRead().Add(sockets.HeaderTimeout))
		}
		idle := end == 0 && !first
		if idle {
			p.Limit.FastIdle(tc, true)
			if tc.Raw != nil {
				// between requests the connection holds no buffer (thousands of idle
				// connections would hold 4 KB each): it waits for readiness, then takes one
				fastBuffers.Put(bufp)
				if sc != nil {
					fastScratches.Put(sc)
					sc = nil
				}
				werr := tc.Raw.WaitReadable()
				bufp = fastBuffers.Get().(*[]byte)
				buf = *bufp
				if werr != nil {
					p.Limit.FastIdle(tc, false)
					return // past the idle deadline, or closed: nothing was read
				}
			}
		}
		n, err := tc.ReadSocket(buf[end:])
		if idle {
			p.Limit.FastIdle(tc, false)
		}
		end += n
		if sniff && n > 0 {
			k := min(end, len(record.H2Preface))
			if bytes.Equal(buf[:k], record.H2Preface[:k]) {
				if end < len(record.H2Preface) && err == nil {
					continue // so far the preface: read on
				}
				if end >= len(record.H2Preface) {
					handedOff = true
					tc.Pending = bytes.Clone(buf[:end])
					tc.Rec.Proto.Store("h2c")
					tc.NoEvents.Store(true)
					p.H2C.Push(tc)
					return
				}
			}
			sniff = false
		}
		if err != nil {
			if end > 0 {
				// a partial request then an error (EOF, timeout): let net/http answer as it would
				handoff(buf[:end])
			}
			return
		}
	}
}

var CRLFCRLF = []byte("\r\n\r\n")

// bareLF reports whether a line in b ends in LF alone.
func bareLF(b []byte) bool {
	for i := bytes.IndexByte(b, '\n'); i >= 0; {
		if i == 0 || b[i-1] != '\r' {
			return true
		}
		j := bytes.IndexByte(b[i+1:], '\n')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// parseFast parses a request's head (request line and header lines, each ending in CRLF) and
// reports whether the hot path serves it.
func parseFast(h []byte, req *fastRequest) bool {
	line, rest, ok := bytes.Cut(h, crlf)
	if !ok || !bytes.HasSuffix(line, []byte(" HTTP/1.1")) {
		return false
	}
	var target []byte
	switch {
	case bytes.HasPrefix(line, []byte("GET /")):
		target = line[4 : len(line)-9]
	case bytes.HasPrefix(line, []byte("POST /")):
		req.post = true
		target = line[5 : len(line)-9]
	default:
		return false
	}
	path, query, hasQuery := bytes.Cut(target, []byte("?"))
	req.path = path
	if !routeFast(req, query, hasQuery) {
		return false
	}
	hosts, lengths, ctypes, cookies := 0, 0, 0, 0
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, crlf)
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return false
		}
		name := line[:colon]
		for _, c := range name {
			if !tokenByte[c] {
				return false
			}
		}
		value := bytes.Trim(line[colon+1:], " \t")
		for _, c := range value {
			if c < ' ' && c != '\t' || c == 0x7f {
				return false
			}
		}
		switch {
		case len(name) == 4 && asciiEqualFold(name, "host"):
			hosts++
			for _, c := range value {
				if !hostByte[c] {
					return false
				}
			}
		case asciiEqualFold(name, "connection"):
			// a list of tokens (LWP sends "TE"; "keep-alive, TE"): net/http closes after the
			// answer when any of them is "close", and ignores the rest
			for tokens := value; len(tokens) > 0; {
				var token []byte
				token, tokens, _ = bytes.Cut(tokens, []byte(","))
				token = bytes.Trim(token, " \t")
				if bytes.ContainsAny(token, " \t") {
					return false // "a close": one token by net/http's first reading, two by its second
				}
				if asciiEqualFold(token, "close") {
					req.close = true
				}
			}
		case asciiEqualFold(name, "content-length"):
			lengths++
			n, ok := contentLength(value)
			if !ok || !req.post && n != 0 {
				return false
			}
			req.bodyLen = n
		case asciiEqualFold(name, "content-type"):
			ctypes++
			req.ctype = value
		case asciiEqualFold(name, "cookie"):
			cookies++
			req.cookie = value
		case asciiEqualFold(name, "transfer-encoding"), asciiEqualFold(name, "expect"),
			asciiEqualFold(name, "upgrade"), asciiEqualFold(name, "http2-settings"):
			return false
		}
	}
	// a POST needs its Content-Length (net/http would read no body without one); several
	// Content-Type or Cookie headers are read by net/http's rules, not these
	return hosts == 1 && lengths <= 1 && ctypes <= 1 && cookies <= 1 && (!req.post || lengths == 1)
}

// contentLength reads a Content-Length in canonical digits, at most fastReadBuffer (anything
// else is net/http's: a larger body does not fit the hot path's buffer anyway).
func contentLength(v []byte) (int, bool) {
	if len(v) == 0 || len(v) > 5 || v[0] == '0' && len(v) > 1 {
		return 0, false
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= fastReadBuffer
}

var crlf = []byte("\r\n")

// routeFast reads the request's resource: /bytes/{n}, /json/{n} or /feeds/{i} (also under
// /private/) with n in range and written in canonical digits, /redirect/{n}?to=PATH (fastforms.go),
// POST /echo and POST /login; anything else (errors included) is net/http's.
func routeFast(req *fastRequest, query []byte, hasQuery bool) bool {
	p := req.path
	if req.post {
		switch {
		case hasQuery:
			return false
		case string(p) == "/echo":
			req.kind = 'e'
		case string(p) == "/login":
			req.kind = 'l'
		default:
			return false
		}
		return true
	}
	if bytes.HasPrefix(p, []byte("/redirect/")) {
		return hasQuery && routeRedirect(req, p[10:], query)
	}
	if hasQuery {
		return false
	}
	if bytes.HasPrefix(p, []byte("/private/")) {
		req.private = true
		p = p[8:]
	}
	var digits []byte
	switch {
	case bytes.HasPrefix(p, []byte("/bytes/")):
		req.kind, digits = 'b', p[7:]
	case bytes.HasPrefix(p, []byte("/json/")):
		req.kind, digits = 'j', p[6:]
	case bytes.HasPrefix(p, []byte("/feeds/")):
		req.kind, digits = 'f', p[7:]
	default:
		return false
	}
	n, ok := shape.CanonicalNumber(digits, 10)
	if !ok {
		return false
	}
	req.n = n
	switch req.kind {
	case 'b':
		return n <= handlers.MaxBytes
	case 'j':
		return n >= 64 && n <= shape.MaxJSONDoc
	default:
		return n < shape.FeedCount
	}
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

var tokenByte, hostByte [256]bool

func init() {
	for c := 0; c < 256; c++ {
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		tokenByte[c] = alnum || bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), byte(c)) >= 0
		hostByte[c] = alnum || bytes.IndexByte([]byte("-._:[]"), byte(c)) >= 0
	}
}

// answerFast sends the answer to a request the hot path took and records it as serveHTTP does;
// it reports whether the connection may carry on.
func (p *Server) answerFast(tc *record.Conn, req *fastRequest, headerReads int, sc *fastScratch) bool {
	t := record.Current()
	t.Answering.Add(1) // until recorded: see trial.settle
	defer t.Answering.Add(-1)
	if tc.TrialID != t.ID {
		t.Carried(tc)
	}
	e := record.LogEntry{Conn: tc.Rec.ID, Method: "GET", Path: internPath(req.path), Proto: "HTTP/1.1",
		FormKind: "none", ReqBodyBytes: int64(req.bodyLen)}
	if req.post {
		e.Method = "POST"
	}
	switch req.kind {
	case 'e':
		return p.answerEcho(tc, t, &e, req, headerReads, sc)
	case 'l':
		return p.answerLogin(tc, t, &e, req, headerReads, sc)
	case 'r':
		return p.answerRedirect(tc, t, &e, req, headerReads, sc)
	}
	if req.private {
		ok := sessionCookieOK(req.cookie)
		if e.CookieOK = &cookieFalse; ok {
			e.CookieOK = &cookieTrue
		}
		if !ok {
			return p.answerSmall(tc, t, &e, req, headerReads, 401, textPlain, nil, "", []byte(msgLogIn))
		}
	}
	e.Status = 200
	var ctype string
	var doc []byte
	switch req.kind {
	case 'b':
		ctype = "application/octet-stream"
	case 'j':
		ctype = "application/json"
		doc = shape.JSONDoc(int(req.n))
	default:
		ctype = "application/atom+xml"
		doc = shape.FeedDoc(int(req.n))
		req.n = int64(len(doc))
	}
	outp := fastOut.Get().(*[]byte)
	out := shape.AppendHead((*outp)[:0], 200, req.n, ctype, nil, "", req.close, true)
	inline := req.kind == 'b' && req.n <= fastInline || doc != nil && len(doc) <= fastInline
	var err error
	if inline {
		// as with net/http, which sends a small answer after its handler returned, the request
		// is recorded before the answer goes out (a client that has it finds it counted)
		if doc != nil {
			out = append(out, doc...)
		} else {
			out = shape.AppendBytes(out, req.n)
		}
		e.RespBodyBytes = req.n // a failed write counts what it was handed, as bodyWriter does
		p.recordFast(tc, t, &e, headerReads)
		_, err = tc.Write(out)
	} else if doc != nil {
		// head and document in one write; the body counts as handed over once the head went
		// out, as bodyWriter counts a failed write
		var n int
		n, err = tc.WriteAnswer(out, doc)
		if n >= len(out) || err == nil {
			e.RespBodyBytes = int64(len(doc))
		}
		if err != nil {
			e.RespWriteError = err.Error()
		}
		p.recordFast(tc, t, &e, headerReads)
	} else {
		bw := &handlers.BodyWriter{W: tc}
		if _, err = tc.Write(out); err == nil {
			if req.kind == 'b' {
				shape.WriteBytes(bw, req.n)
			} else {
				shape.WriteJSON(bw, int(req.n))
			}
			err = bw.Err
		}
		e.RespBodyBytes = bw.N
		if err != nil {
			e.RespWriteError = err.Error()
		}
		p.recordFast(tc, t, &e, headerReads)
	}
	*outp = out[:0]
	fastOut.Put(outp)
	return err == nil
}

// cookie_ok values shared by every hot-path log entry (LogEntry keeps a *bool; never written through)
var cookieTrue, cookieFalse = true, false

// answerSmall sends a whole small answer in one write, recorded first (as answerFast's inline case).
func (p *Server) answerSmall(tc *record.Conn, t *record.Trial, e *record.LogEntry, req *fastRequest, headerReads, status int,
	ctype string, location []byte, setCookie string, body []byte) bool {
	e.Status = status
	e.RespBodyBytes = int64(len(body))
	outp := fastOut.Get().(*[]byte)
	out := shape.AppendHead((*outp)[:0], status, int64(len(body)), ctype, location, setCookie, req.close, false)
	out = append(out, body...)
	p.recordFast(tc, t, e, headerReads)
	_, err := tc.Write(out)
	*outp = out[:0]
	fastOut.Put(outp)
	return err == nil
}

// recordFast completes a log entry as serveHTTP does and records it.
func (p *Server) recordFast(tc *record.Conn, t *record.Trial, e *record.LogEntry, headerReads int) {
	a := tc.TakeReads()
	if a.Reads > 0 {
		e.Reads = a.Reads
		e.HeaderReads = min(headerReads, a.Reads)
		e.FirstByteNs = t.Since(a.First)
		e.LastByteNs = t.Since(a.Last)
		e.MaxReadGapNs = a.MaxGap.Nanoseconds()
	}
	tc.Rec.Requests.Add(1)
	now := time.Now()
	if e.FirstByteNs == 0 {
		e.FirstByteNs = t.Since(now)
	}
	e.DoneNs = t.Since(now)
	t.Record(*e)
}

// Serve accepts the plain port's connections and serves each on the hot path.
func (p *Server) Serve(l net.Listener) {
	var pause time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() || isTemporary(err) {
				// out of descriptors and the like: wait and try again, as net/http does
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				time.Sleep(pause)
				continue
			}
			return
		}
		pause = 0
		go p.serveFast(c.(*record.Conn))
	}
}

func isTemporary(err error) bool {
	t, ok := err.(interface{ Temporary() bool })
	return ok && t.Temporary()
}
