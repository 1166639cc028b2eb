package h2

// A request on our HTTP/2 server that the hot path does not answer: serveHTTP runs in a goroutine
// with an http.Request and a ResponseWriter of this connection, as under net/http's HTTP/2.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2/hpack"

	"clientlab/server/internal/handlers"
	"clientlab/server/internal/shape"
	"clientlab/server/internal/sockets"
)

// h2stream is one request served by a goroutine. Its fields are under the connection's mu.
type h2stream struct {
	c           *h2conn
	id          uint32
	cond        *sync.Cond // on c.mu: body bytes arrived, or the stream ended
	sendWindow  int64
	recvWindow  int64
	recvUnacked int64
	pad         int64  // padding received and not yet credited
	in          []byte // request body bytes not yet read
	bodyDone    bool   // END_STREAM received
	err         error  // reset (by the client, or the connection ended)
	cancel      context.CancelFunc
	expect100   bool // send 100 Continue at the body's first read
	answered    bool // the answer's headers went out
}

// reset ends the stream from the reader's side (c.mu held).
func (s *h2stream) reset(err error) {
	if s.err == nil {
		s.err = err
	}
	s.cancel()
	s.cond.Broadcast()
}

// headers handles a complete header block: a new request (the only kind of block a client
// sends, trailers aside).
func (c *h2conn) headers(id uint32, endStream bool, block []byte) int {
	c.fields = c.fields[:0]
	c.fieldsSize = 0
	if _, err := c.dec.Write(block); err != nil {
		return errCodeCompression
	}
	if err := c.dec.Close(); err != nil {
		return errCodeCompression
	}
	if id <= c.lastStream {
		// trailers of a stream whose body is still arriving (nothing of ours uses them)
		c.mu.Lock()
		defer c.mu.Unlock()
		if s := c.streams[id]; s != nil && !s.bodyDone && endStream {
			s.bodyDone = true
			s.cond.Broadcast()
			return -1
		}
		return errCodeProtocol
	}
	c.lastStream = id
	if c.fieldsSize > h2MaxHeaderList {
		c.refuse(id, 431)
		return -1
	}
	var method, path, authority, scheme string
	regular := 0
	for _, f := range c.fields {
		if !strings.HasPrefix(f.Name, ":") {
			regular++
			continue
		}
		if regular > 0 {
			return c.streamError(id, errCodeProtocol) // pseudo-headers come first
		}
		switch f.Name {
		case ":method":
			method = f.Value
		case ":path":
			path = f.Value
		case ":authority":
			authority = f.Value
		case ":scheme":
			scheme = f.Value
		default:
			return c.streamError(id, errCodeProtocol)
		}
	}
	if method == "" || path == "" || scheme == "" || method == "CONNECT" {
		return c.streamError(id, errCodeProtocol)
	}
	if endStream && method == "GET" && c.answerHot(id, path, regular) {
		return -1
	}
	return c.startStream(id, endStream, method, path, authority)
}

// streamError resets one stream (the request was malformed); the connection carries on.
func (c *h2conn) streamError(id uint32, code uint32) int {
	c.mu.Lock()
	c.out = AppendFrameHeader(c.out, 4, FrameRSTStream, 0, id)
	c.out = append(c.out, byte(code>>24), byte(code>>16), byte(code>>8), byte(code))
	c.mu.Unlock()
	return -1
}

// refuse answers a request it cannot take with a bare status (headers too large).
func (c *h2conn) refuse(id uint32, status int) {
	c.mu.Lock()
	c.enc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
	c.appendHeadersLocked(id, true)
	c.mu.Unlock()
}

// startStream builds the request and serves it in a goroutine.
func (c *h2conn) startStream(id uint32, endStream bool, method, path, authority string) int {
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return c.streamError(id, errCodeProtocol)
	}
	header := make(http.Header, len(c.fields))
	var cookies []string
	for _, f := range c.fields {
		if strings.HasPrefix(f.Name, ":") {
			continue
		}
		if f.Name != strings.ToLower(f.Name) || f.Name == "connection" || f.Name == "transfer-encoding" ||
			f.Name == "keep-alive" || f.Name == "upgrade" || f.Name == "proxy-connection" ||
			f.Name == "te" && f.Value != "trailers" {
			return c.streamError(id, errCodeProtocol)
		}
		if f.Name == "cookie" {
			cookies = append(cookies, f.Value)
			continue
		}
		key := http.CanonicalHeaderKey(f.Name)
		header[key] = append(header[key], f.Value)
	}
	if len(cookies) > 0 {
		header["Cookie"] = []string{strings.Join(cookies, "; ")} // as RFC 9113 §8.2.3 and net/http
	}
	if authority == "" {
		authority = header.Get("Host")
	}
	ctx, cancel := context.WithCancel(c.ctx)
	s := &h2stream{c: c, id: id, recvWindow: h2StreamWindow, cancel: cancel, bodyDone: endStream,
		expect100: strings.EqualFold(header.Get("Expect"), "100-continue")}
	s.cond = sync.NewCond(&c.mu)
	r := &http.Request{Method: method, URL: u, Proto: "HTTP/2.0", ProtoMajor: 2, Header: header,
		Host: authority, RequestURI: path, RemoteAddr: c.tc.RemoteAddr().String(), TLS: c.tls}
	if endStream {
		r.Body = http.NoBody
	} else {
		r.Body = &h2body{s: s}
		r.ContentLength = -1
		if v := header.Get("Content-Length"); v != "" {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				r.ContentLength = n
			}
		}
	}
	r = r.WithContext(ctx)
	c.mu.Lock()
	if len(c.streams) >= MaxStreams || c.werr != nil {
		c.mu.Unlock()
		cancel()
		return c.streamError(id, errCodeRefused)
	}
	s.sendWindow = c.initWindow
	c.streams[id] = s
	c.activeSlow++
	c.limit.FastIdle(c.tc, false)
	c.mu.Unlock()
	go c.run(s, r)
	return -1
}

// run serves one stream and ends it.
func (c *h2conn) run(s *h2stream, r *http.Request) {
	w := &h2writer{s: s, header: http.Header{}, head: r.Method == "HEAD"}
	if serveStream(w, r) {
		w.finish()
	}
	c.mu.Lock()
	if !s.bodyDone && s.err == nil && c.streams[s.id] == s {
		// answered before the client finished its body: it need not send the rest
		c.out = AppendFrameHeader(c.out, 4, FrameRSTStream, 0, s.id)
		c.out = append(c.out, 0, 0, 0, errCodeNo)
	}
	c.dropStreamLocked(s)
	if c.activeSlow--; c.activeSlow == 0 {
		// the cap may close it now, as net/http's StateIdle allowed (under mu: in order with
		// the reader's calls)
		c.limit.FastIdle(c.tc, true)
	}
	c.flushLocked()
	c.mu.Unlock()
	s.cancel()
}

// serveStream runs the handler; a panic resets the stream (as net/http's HTTP/2 does) instead of
// ending the server. It reports whether the handler returned.
func serveStream(w *h2writer, r *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(sockets.ServerErrors(), "panic serving %s %s over HTTP/2: %v\n", r.Method, r.URL.Path, p)
			s, c := w.s, w.s.c
			c.mu.Lock()
			if c.streams[s.id] == s {
				c.resetStreamLocked(s, errCodeInternal)
			}
			c.mu.Unlock()
		}
	}()
	handlers.Serve(w, r)
	return true
}

// h2body is a request body: the DATA frames' bytes, read as they come.
type h2body struct{ s *h2stream }

func (b *h2body) Read(p []byte) (int, error) {
	s := b.s
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.expect100 {
		s.expect100 = false
		if !s.answered && s.err == nil {
			c.enc.WriteField(hpack.HeaderField{Name: ":status", Value: "100"})
			c.appendHeadersLocked(s.id, false)
			c.flushLocked()
		}
	}
	for len(s.in) == 0 && !s.bodyDone && s.err == nil {
		s.cond.Wait()
	}
	if len(s.in) > 0 {
		n := copy(p, s.in)
		s.in = s.in[n:]
		if len(s.in) == 0 {
			s.in = nil
		}
		c.creditLocked(s, int64(n)+s.pad)
		s.pad = 0
		if len(c.out) > 0 {
			c.flushLocked()
		}
		return n, nil
	}
	if s.err != nil {
		return 0, s.err
	}
	return 0, io.EOF
}

func (b *h2body) Close() error { return nil }

// h2writer is the ResponseWriter of one stream. Headers go out with the first body bytes or at
// the end (then with END_STREAM); the body is buffered up to one frame and sent as the peer's
// windows allow.
type h2writer struct {
	s      *h2stream
	header http.Header
	status int
	head   bool // a HEAD request: the body is not sent
	buf    []byte
	ended  bool
}

func (w *h2writer) Header() http.Header { return w.header }

func (w *h2writer) WriteHeader(code int) {
	if w.status != 0 || code < 200 {
		return
	}
	w.status = code
}

func (w *h2writer) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.ended {
		return 0, errors.New("http2: write after the end of the answer")
	}
	if w.head {
		return len(p), nil
	}
	written := 0
	for len(p) > 0 {
		k := min(len(p), h2MaxFrame-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		written += k
		if len(w.buf) == h2MaxFrame {
			if err := w.send(false); err != nil {
				return 0, err
			}
		}
	}
	return written, nil
}

// Flush sends what is buffered (the handlers do not call it; net/http's writers offer it).
func (w *h2writer) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.send(false)
}

// endedLocked is the error of a stream that was reset or a connection that failed (the
// buffered body is dropped), or nil.
func (w *h2writer) endedLocked() error {
	err := w.s.err
	if err == nil {
		err = w.s.c.werr
	}
	if err != nil {
		w.buf = w.buf[:0]
	}
	return err
}

// send writes the headers (once) and the buffered body, waiting for window as needed; end
// marks the stream's end.
func (w *h2writer) send(end bool) error {
	s, c := w.s, w.s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := w.endedLocked(); err != nil {
		return err
	}
	if !s.answered {
		s.answered = true
		c.enc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(w.status)})
		if shape.MinimalHeads() {
			for k, vs := range w.header {
				name := strings.ToLower(k)
				if name == "connection" || name == "transfer-encoding" || name == "keep-alive" {
					continue
				}
				for _, v := range vs {
					c.enc.WriteField(hpack.HeaderField{Name: name, Value: v})
				}
			}
			c.enc.WriteField(hpack.HeaderField{Name: "date", Value: shape.DateText(time.Now())})
		} else {
			if _, dated := w.header["Date"]; !dated {
				w.header["Date"] = []string{shape.DateText(time.Now())}
			}
			c.encBuf.Write(shape.AppendH2Fields(nil, w.header)) // nginx's fields and order (shape.go)
		}
		c.appendHeadersLocked(s.id, end && len(w.buf) == 0)
		if end && len(w.buf) == 0 {
			return c.flushLocked()
		}
	}
	data := w.buf
	for len(data) > 0 || end {
		for s.err == nil && c.werr == nil && (s.sendWindow <= 0 || c.sendWindow <= 0) && len(data) > 0 {
			c.flushLocked() // what is queued goes out while we wait
			s.cond.Wait()
		}
		if err := w.endedLocked(); err != nil {
			return err
		}
		k := int(min(int64(len(data)), s.sendWindow, c.sendWindow, int64(c.maxFrame)))
		var flags byte
		if end && k == len(data) {
			flags = FlagEndStream
		}
		c.out = AppendFrameHeader(c.out, k, FrameData, flags, s.id)
		c.out = append(c.out, data[:k]...)
		s.sendWindow -= int64(k)
		c.sendWindow -= int64(k)
		data = data[k:]
		if flags != 0 {
			break
		}
	}
	w.buf = w.buf[:0]
	return c.flushLocked()
}

// finish ends the answer after the handler returned.
func (w *h2writer) finish() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.ended {
		w.ended = true
		if !w.s.answered && !w.head && w.header.Get("Content-Length") == "" && bodyAllowed(w.status) {
			// the whole body is here (gzip's): its length, as net/http adds it
			w.header.Set("Content-Length", strconv.Itoa(len(w.buf)))
		}
		w.send(true)
	}
}

func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
