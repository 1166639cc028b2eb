package main

// The HTTP/1.1 hot path of the plain port (issue 9). net/http costs several times nginx's CPU
// per small keep-alive GET (a goroutine hand-off, a bufio reader and writer, an http.Request,
// a header map and a response writer per request). The plain port's connections are read here
// instead: a request that is a plain GET of /bytes/{n}, /json/{n} or /feeds/{i} (no query, no
// body, no Expect, no Upgrade, one well-formed Host, HTTP/1.1) is parsed and answered in place,
// with one read and one write per request and no allocation, and recorded exactly as
// serveHTTP records it (log entry, read events, connection counters, carried connections).
// Everything else — another method or resource, a query, a body, a header this path does not
// read, HTTP/1.0, a request whose headers do not fit in the read buffer, record_digests on, a
// server cap — hands the connection, with every byte read so far, to net/http for the rest of
// its life: the answer to anything unusual is net/http's, as before. A connection that opens
// with the HTTP/2 preface goes to the h2c server as before.

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	fastReadBuffer = 4 << 10  // a request's headers must fit, else net/http takes the connection
	fastInline     = 64 << 10 // bodies up to this size go out in the same write as the headers
)

// fastBuffers holds the read buffers of connections; a connection keeps one while it lives.
var fastBuffers = sync.Pool{New: func() any { b := make([]byte, fastReadBuffer); return &b }}

// fastOut holds response buffers, taken for one write and given back.
var fastOut = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

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
	path  []byte
	close bool // Connection: close
	kind  byte // 'b' bytes, 'j' json, 'f' feeds
	n     int64
}

// serveFast serves one plain connection; it returns when the connection closes or has been
// handed to net/http (slow) or to the h2c server.
func (p *public) serveFast(tc *trackedConn) {
	bufp := fastBuffers.Get().(*[]byte)
	buf := *bufp
	handedOff := false
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(serverErrors, "panic serving %s: %v\n", tc.RemoteAddr(), r)
			tc.Close()
		}
		if !handedOff {
			tc.Close()
		}
		fastBuffers.Put(bufp)
	}()
	handoff := func(pending []byte) {
		handedOff = true
		tc.pending = bytes.Clone(pending)
		if len(tc.pending) == 0 {
			tc.pending = nil
		}
		p.slow.push(tc)
	}
	if p.limit.limited() || recordDigests.Load() {
		// the cap's idle bookkeeping and the digests are net/http's (verification passes); it
		// tells h2c from HTTP/1.1 itself (sniffRead)
		tc.sniffing = true
		handoff(nil)
		return
	}
	start, end := 0, 0 // buf[start:end] is read and not yet served
	first := true      // the connection's first request
	sniff := true      // the first bytes may be the HTTP/2 preface
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
			head = bytes.Index(buf[start:end], crlfcrlf)
		}
		if head < 0 {
			if start > 0 {
				end = copy(buf, buf[start:end])
				start = 0
			}
			if end == len(buf) || !sniff && bareLF(buf[:end]) {
				// headers longer than the buffer (net/http reads up to 1 MB of them), or lines
				// ending in a bare LF (net/http reads them)
				handoff(buf[:end])
				return
			}
			now := time.Now()
			switch {
			case first:
				setDeadline(tc.rec.opened.Add(headerTimeout))
			case end == 0:
				setDeadline(now.Add(idleTimeout))
			default:
				setDeadline(tc.firstRead().Add(headerTimeout))
			}
			idle := end == 0 && !first
			if idle {
				p.limit.fastIdle(tc, true)
			}
			n, err := tc.read(buf[end:])
			if idle {
				p.limit.fastIdle(tc, false)
			}
			end += n
			if sniff && n > 0 {
				k := min(end, len(h2Preface))
				if bytes.Equal(buf[:k], h2Preface[:k]) {
					if end < len(h2Preface) && err == nil {
						continue // so far the preface: read on
					}
					if end >= len(h2Preface) {
						handedOff = true
						tc.pending = bytes.Clone(buf[:end])
						tc.rec.proto.Store("h2c")
						tc.noEvents.Store(true)
						p.h2c.push(tc)
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
			continue
		}
		req = fastRequest{}
		if !parseFast(buf[start:start+head+2], &req) {
			handoff(buf[start:end])
			return
		}
		first = false
		start += head + 4
		if start == end {
			start, end = 0, 0
		}
		if !p.answerFast(tc, &req) || req.close {
			return
		}
	}
}

var crlfcrlf = []byte("\r\n\r\n")

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

// limited reports whether a cap on open connections is set.
func (l *connLimit) limited() bool { return l.capped.Load() }

// fastIdle follows a hot-path connection between requests: only idle keep-alive connections
// may be closed under the cap. Without a cap it costs one atomic store; set (the cap) finds the
// connections idle at that moment by their flag.
func (l *connLimit) fastIdle(c *trackedConn, idle bool) {
	c.idle.Store(idle)
	if l.capped.Load() {
		l.setIdle(c, idle)
	}
}

// firstRead is the instant of the current request's first read.
func (c *trackedConn) firstRead() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.arrival.reads == 0 {
		return time.Now()
	}
	return c.arrival.first
}

// parseFast parses a request's head (request line and header lines, each ending in CRLF) and
// reports whether the hot path serves it.
func parseFast(h []byte, req *fastRequest) bool {
	line, rest, ok := bytes.Cut(h, crlf)
	if !ok || !bytes.HasPrefix(line, []byte("GET /")) || !bytes.HasSuffix(line, []byte(" HTTP/1.1")) {
		return false
	}
	req.path = line[4 : len(line)-9]
	if !routeFast(req) {
		return false
	}
	hosts := 0
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
			switch {
			case asciiEqualFold(value, "close"):
				req.close = true
			case asciiEqualFold(value, "keep-alive"):
			default:
				return false
			}
		case asciiEqualFold(name, "content-length"):
			if string(value) != "0" {
				return false
			}
		case asciiEqualFold(name, "transfer-encoding"), asciiEqualFold(name, "expect"),
			asciiEqualFold(name, "upgrade"), asciiEqualFold(name, "http2-settings"):
			return false
		}
	}
	return hosts == 1
}

var crlf = []byte("\r\n")

// routeFast reads /bytes/{n}, /json/{n} or /feeds/{i} with n in range and written in canonical
// digits; anything else (errors included) is net/http's.
func routeFast(req *fastRequest) bool {
	p := req.path
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
	if len(digits) == 0 || len(digits) > 10 || digits[0] == '0' && len(digits) > 1 {
		return false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int64(c-'0')
	}
	req.n = n
	switch req.kind {
	case 'b':
		return n <= maxBytes
	case 'j':
		return n >= 64 && n <= maxJSONDoc
	default:
		return n < feedCount
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
func (p *public) answerFast(tc *trackedConn, req *fastRequest) bool {
	t := current.Load()
	if tc.trialID != t.id {
		t.carried(tc)
	}
	headerReads := tc.peekReadCount()
	var ctype string
	var doc []byte
	switch req.kind {
	case 'b':
		ctype = "application/octet-stream"
	case 'j':
		ctype = "application/json"
		doc = jsonDoc(int(req.n))
	default:
		ctype = "application/atom+xml"
		doc = feedDoc(int(req.n))
		req.n = int64(len(doc))
	}
	outp := fastOut.Get().(*[]byte)
	out := append((*outp)[:0], "HTTP/1.1 200 OK\r\nContent-Length: "...)
	out = strconv.AppendInt(out, req.n, 10)
	out = append(out, "\r\nContent-Type: "...)
	out = append(out, ctype...)
	if req.close {
		out = append(out, "\r\nConnection: close"...)
	}
	out = append(out, "\r\nDate: "...)
	out = append(out, dateValue(time.Now())...)
	out = append(out, "\r\n\r\n"...)
	e := LogEntry{Conn: tc.rec.id, Method: "GET", Path: internPath(req.path), Proto: "HTTP/1.1",
		Status: 200, FormKind: "none"}
	inline := req.kind == 'b' && req.n <= fastInline || doc != nil && len(doc) <= fastInline
	var err error
	if inline {
		// as with net/http, which sends a small answer after its handler returned, the request
		// is recorded before the answer goes out (a client that has it finds it counted)
		if doc != nil {
			out = append(out, doc...)
		} else {
			out = appendBytes(out, req.n)
		}
		e.RespBodyBytes = req.n // a failed write counts what it was handed, as bodyWriter does
		p.recordFast(tc, t, &e, headerReads)
		_, err = tc.Write(out)
	} else {
		bw := &bodyWriter{w: tc}
		if _, err = tc.Write(out); err == nil {
			if doc != nil {
				bw.Write(doc)
			} else if req.kind == 'b' {
				writeBytes(bw, req.n)
			} else {
				writeJSON(bw, int(req.n))
			}
			err = bw.err
		}
		e.RespBodyBytes = bw.n
		if err != nil {
			e.RespWriteError = err.Error()
		}
		p.recordFast(tc, t, &e, headerReads)
	}
	*outp = out[:0]
	fastOut.Put(outp)
	return err == nil
}

// recordFast completes a log entry as serveHTTP does and records it.
func (p *public) recordFast(tc *trackedConn, t *trial, e *LogEntry, headerReads int) {
	a := tc.takeReads()
	if a.reads > 0 {
		e.Reads = a.reads
		e.HeaderReads = min(headerReads, a.reads)
		e.FirstByteNs = t.since(a.first)
		e.LastByteNs = t.since(a.last)
		e.MaxReadGapNs = a.maxGap.Nanoseconds()
	}
	tc.rec.requests.Add(1)
	now := time.Now()
	if e.FirstByteNs == 0 {
		e.FirstByteNs = t.since(now)
	}
	e.DoneNs = t.since(now)
	t.record(*e)
}

// appendBytes appends the first n bytes of /bytes/{n}'s content.
func appendBytes(out []byte, n int64) []byte {
	for n > 0 {
		k := min(n, blockSize)
		out = append(out, block[:k]...)
		n -= k
	}
	return out
}

// acceptFast accepts the plain port's connections and serves each on the hot path.
func (p *public) acceptFast() {
	var pause time.Duration
	for {
		c, err := p.plain.Accept()
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
		go p.serveFast(c.(*trackedConn))
	}
}

func isTemporary(err error) bool {
	t, ok := err.(interface{ Temporary() bool })
	return ok && t.Temporary()
}
