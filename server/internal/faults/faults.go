// Package faults serves the behaviour matrix's fault origins and keeps their ledger.
package faults

// Faults: resources that misbehave byte for byte, for the behaviour matrix (docs/behaviour.md),
// on plain listeners of their own — origins "a" and "b", differing by port, and on loopback "c",
// another host (the next address, 127.0.0.2 beside 127.0.0.1) — and a
// ledger of every request that reached them: its path, method, origin and which credentials
// headers it carried. They are served by hand on raw connections, not by net/http, which would
// finish a short body or a chunked stream's last chunk on the handler's behalf.
//
// Every answer closes its connection: a fault leaves the connection in no state worth reusing,
// and the ledger then counts one request a connection.

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"clientlab/server/internal/handlers"
	"clientlab/server/internal/sockets"
)

const (
	maxFaultHead     = 64 << 10 // a request head larger than this is refused
	maxFaultWaitMs   = 60_000   // stall and trickle waits are bounded as delay_ms is
	maxFaultBytes    = 1 << 20  // bodies of the faults are small: what matters is their shape
	maxLedgerEntries = 10_000   // past this, requests are still counted per path, not listed
)

// credentialHeaders are the request headers that carry a user's credentials: the ones a client
// must not forward to another origin when it follows a redirect.
var credentialHeaders = []string{"Authorization", "Cookie", "Proxy-Authorization"}

// LedgerEntry is one request that reached a fault listener.
type LedgerEntry struct {
	Origin      string   `json:"origin"` // "a" or "b"
	Port        int      `json:"port"`
	Method      string   `json:"method"`
	Path        string   `json:"path"`
	Credentials []string `json:"credentials"` // which credentialHeaders arrived, in that order
	N           string   `json:"n,omitempty"` // the request's number, its query's n: the driver numbers them
	Conn        int64    `json:"conn"`        // the connection it came on (a serial number)
	Seq         int      `json:"seq"`         // its place on that connection: 1 is a fresh connection's first
	BodyBytes   int64    `json:"body_bytes"`  // the request body's length as it arrived
	// on the TLS fault origins (faults_tls.go), an entry of its own for each handshake (seq 0, no
	// path): "ok", or what ended it
	TLS            string  `json:"tls,omitempty"`
	AcceptEncoding string  `json:"accept_encoding,omitempty"` // the request's Accept-Encoding, where it sent one
	Refused        bool    `json:"refused,omitempty"`         // a stream refused unprocessed (REFUSED_STREAM)
	AtMs           float64 `json:"at_ms"`                     // when it arrived: ms since the ledger was emptied (faults_pool.go)
}

type ledger struct {
	mu      sync.Mutex
	entries []LedgerEntry
	counts  map[string]int // path -> requests
	// path?n=<n> -> requests: how often each numbered request arrived (a retry shows as 2)
	numbered map[string]int
	since    time.Time // the arrival times' zero: when the ledger was last emptied (faults_pool.go)
}

func (l *ledger) record(e LedgerEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	if e.Path != "" { // a handshake's entry is no request
		l.counts[e.Path]++
	}
	l.stamp(&e)
	if e.N != "" {
		if l.numbered == nil {
			l.numbered = map[string]int{}
		}
		l.numbered[e.Path+"?n="+e.N]++
	}
	if len(l.entries) < maxLedgerEntries {
		l.entries = append(l.entries, e)
	}
}

// Snapshot returns the ledger: its entries, the counts per path and per numbered request (and
// empties it when reset).
func (l *ledger) Snapshot(reset bool) ([]LedgerEntry, map[string]int, map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	entries := append([]LedgerEntry{}, l.entries...)
	counts, numbered := map[string]int{}, map[string]int{}
	for k, v := range l.counts {
		counts[k] = v
	}
	for k, v := range l.numbered {
		numbered[k] = v
	}
	if reset {
		l.entries, l.counts, l.numbered = nil, nil, nil
		l.since = time.Now()
	}
	return entries, counts, numbered
}

// Server serves the fault resources on origins a and b.
type Server struct {
	A, B     net.Listener
	C        net.Listener // another host; nil where the next address is not this host's (the network lab)
	Ledger   ledger
	held     register     // the connections being served: a stalled client that left must not stay (faults_held.go)
	S        net.Listener // origin s: TLS, the https side of a redirect to plain http (faults_redirect.go)
	SConfig  *tls.Config
	H2       net.Listener // origin h2: TLS, HTTP/2 alone (faults_h2.go)
	h2Config *tls.Config
	Dark     *darkOrigin // a port whose accept queue is full: SYNs go unanswered (faults_connect.go)
	// certificates to refuse, and a stalled handshake, by origin name (faults_tls.go)
	TLSOrigins map[string]net.Listener
}

func Start(addr netip.Addr, base *tls.Config) (*Server, error) {
	a, err := sockets.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s for the fault origin a: %w", addr, err)
	}
	b, err := sockets.Listen(addr)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("cannot listen on %s for the fault origin b: %w", addr, err)
	}
	f := &Server{A: a, B: b}
	if addr.Is4() && addr.IsLoopback() {
		if c, err := sockets.Listen(addr.Next()); err == nil {
			f.C = c
			go f.accept(c, "c")
		}
	}
	if err := f.startMore(addr, base); err != nil {
		f.close()
		return nil, err
	}
	go f.accept(a, "a")
	go f.accept(b, "b")
	return f, nil
}

func (f *Server) close() {
	f.A.Close()
	f.B.Close()
	if f.C != nil {
		f.C.Close()
	}
	f.closeMore()
}

// Ports names the origins' ports (c only where it listens).
func (f *Server) Ports() map[string]int {
	ports := map[string]int{"a": sockets.Port(f.A), "b": sockets.Port(f.B)}
	if f.C != nil {
		ports["c"] = sockets.Port(f.C)
	}
	f.morePorts(ports)
	return ports
}

func (f *Server) accept(l net.Listener, origin string) {
	f.acceptEach(l, origin, func(c net.Conn, h *heldConn) {
		switch origin {
		case "h2":
			f.serveH2(c, sockets.Port(l), h)
		case "s":
			tc := tls.Server(c, f.SConfig)
			defer tc.Close()
			f.serveOn(tc, origin, sockets.Port(l), h)
		default:
			f.serveOn(c, origin, sockets.Port(l), h)
		}
	})
}

// acceptEach serves each connection l accepts (from a peer the server serves) in a goroutine of
// its own, held in the register (faults_held.go) while serve and the goroutines it starts for the
// connection run, and closed after serve.
func (f *Server) acceptEach(l net.Listener, origin string, serve func(net.Conn, *heldConn)) {
	for {
		c, err := l.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return
		}
		if !sockets.PeerServed(c) {
			c.Close()
			continue
		}
		h := f.held.open(origin, c.RemoteAddr())
		go func() {
			defer h.done()
			defer c.Close()
			serve(c, h)
		}()
	}
}

// faultRequest is a parsed request head.
type faultRequest struct {
	method, path string
	query        url.Values
	header       textproto.MIMEHeader
}

// readFaultRequest reads a request head from r, which stays the connection's reader (its body
// and the next request come after it): the head's size is bounded by the reader's source.
func readFaultRequest(r *bufio.Reader) (*faultRequest, error) {
	tp := textproto.NewReader(r)
	line, err := tp.ReadLine()
	if err != nil {
		return nil, err
	}
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !strings.HasPrefix(proto, "HTTP/1.") {
		return nil, fmt.Errorf("not an HTTP/1 request line: %q", line)
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, err
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	return &faultRequest{method: method, path: u.Path, query: u.Query(), header: h}, nil
}

// serveOn reads each request whole (its head and its body, whose length the ledger keeps) and
// answers it. Only the keep-alive race keeps a connection for a next request; every other answer
// closes it. c is h's connection, or the TLS connection over it.
func (f *Server) serveOn(c net.Conn, origin string, port int, h *heldConn) {
	src := &io.LimitedReader{R: c}
	r := bufio.NewReader(src)
	var race *raceConn
	var req *faultRequest
	for seq := 1; ; seq++ {
		var err error
		src.N = maxFaultHead
		c.SetReadDeadline(time.Now().Add(sockets.HeaderTimeout))
		req, err = readFaultRequest(r)
		if err != nil {
			return
		}
		src.N = maxFaultBytes + maxFaultHead // a body's chunk framing included
		bodyBytes, err := readFaultBody(r, req.header)
		if err != nil {
			faultWhole(c, 400, err.Error()+"\n")
			return
		}
		c.SetReadDeadline(time.Time{})
		entry := LedgerEntry{Origin: origin, Port: port, Method: handlers.Cut(req.method), Path: handlers.Cut(req.path),
			Credentials: []string{}, N: handlers.Cut(req.query.Get("n")), Conn: h.Serial, Seq: seq, BodyBytes: bodyBytes,
			AcceptEncoding: handlers.Cut(req.header.Get("Accept-Encoding"))}
		for _, name := range credentialHeaders {
			if len(req.header.Values(name)) > 0 {
				entry.Credentials = append(entry.Credentials, name)
			}
		}
		f.Ledger.record(entry)
		h.reading(entry.Method, entry.Path)
		if race != nil { // a request on a kept connection: the server closes it as the request arrives
			race.drop(c)
			return
		}
		if req.path == "/fault/keepalive-race" {
			if race, err = answerRaceFirst(c, req); err != nil {
				return
			}
			continue
		}
		break
	}
	// gone closes when the client closes or resets its side: a stall or a trickle stops then,
	// instead of holding a goroutine and a socket for its whole length
	gone := make(chan struct{})
	h.goServe(func() {
		io.Copy(io.Discard, c)
		close(gone)
	})
	f.answer(c, req, gone)
}

// intParam reads a bounded integer parameter, def when absent.
func intParam(q url.Values, name string, def, lo, hi int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s must be %d ... %d", name, lo, hi)
	}
	return n, nil
}

func faultHead(status int, ctype string, fields ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nServer: clientlab/v1\r\nDate: %s\r\nContent-Type: %s\r\n",
		status, statusText(status), time.Now().UTC().Format(http.TimeFormat), ctype)
	keep := false // the keep-alive race's first answer keeps its connection; every other closes it
	for _, f := range fields {
		b.WriteString(f + "\r\n")
		keep = keep || strings.HasPrefix(f, "Connection: keep-alive")
	}
	if !keep {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

func statusText(status int) string {
	switch status {
	case 200:
		return "OK"
	case 302:
		return "Found"
	case 303:
		return "See Other"
	case 400:
		return "Bad Request"
	case 404:
		return "Not Found"
	case 406:
		return "Not Acceptable"
	}
	return "Status"
}

// Body is n bytes of the faults' bodies: a, b, ..., z, a, ... (a body's prefix tells how
// far a client got).
func Body(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

func faultWhole(c net.Conn, status int, body string, fields ...string) {
	fields = append(fields, "Content-Length: "+strconv.Itoa(len(body)))
	io.WriteString(c, faultHead(status, "text/plain; charset=utf-8", fields...)+body)
}

// wait sleeps ms, or less when the client went away; it reports whether the client is still there.
func faultWait(ms int, gone <-chan struct{}) bool {
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-gone:
		return false
	}
}

func (f *Server) answer(c net.Conn, req *faultRequest, gone <-chan struct{}) {
	bad := func(err error) { faultWhole(c, 400, err.Error()+"\n") }
	q := req.query
	switch req.path {
	case "/fault/stall-headers": // nothing at all for ms, then a whole small answer
		ms, err := intParam(q, "ms", 1000, 0, maxFaultWaitMs)
		if err != nil {
			bad(err)
			return
		}
		if faultWait(ms, gone) {
			faultWhole(c, 200, "stalled "+strconv.Itoa(ms)+" ms\n")
		}
	case "/fault/trickle": // the head at once, then the body one byte every every_ms
		n, err1 := intParam(q, "bytes", 100, 1, maxFaultBytes)
		every, err2 := intParam(q, "every_ms", 100, 1, maxFaultWaitMs)
		if err := firstErr(err1, err2); err != nil {
			bad(err)
			return
		}
		if _, err := io.WriteString(c, faultHead(200, "application/octet-stream", "Content-Length: "+strconv.Itoa(n))); err != nil {
			return
		}
		body := Body(n)
		for i := range body {
			if !faultWait(every, gone) {
				return
			}
			if _, err := c.Write(body[i : i+1]); err != nil {
				return
			}
		}
	case "/fault/short-body": // Content-Length says length, send bytes go out, then the close
		length, err1 := intParam(q, "length", 1000, 1, maxFaultBytes)
		send, err2 := intParam(q, "send", length/2, 0, maxFaultBytes)
		if err := firstErr(err1, err2); err != nil || send >= length {
			bad(firstErr(err, fmt.Errorf("send must be below length")))
			return
		}
		io.WriteString(c, faultHead(200, "application/octet-stream", "Content-Length: "+strconv.Itoa(length))+string(Body(send)))
	case "/fault/chunked-no-end": // one chunk of bytes, then the close without the last chunk
		n, err := intParam(q, "bytes", 500, 1, maxFaultBytes)
		if err != nil {
			bad(err)
			return
		}
		io.WriteString(c, faultHead(200, "application/octet-stream", "Transfer-Encoding: chunked")+
			strconv.FormatInt(int64(n), 16)+"\r\n"+string(Body(n))+"\r\n")
	case "/fault/redirect-other": // 302 to the same path `to` on the other origin
		to := q.Get("to")
		if to == "" {
			to = "/fault/landing"
		}
		if !handlers.SameOriginPath(to) {
			bad(fmt.Errorf("to must be a path"))
			return
		}
		local := c.LocalAddr().(*net.TCPAddr)
		other := f.B
		if local.Port == sockets.Port(f.B) {
			other = f.A
		}
		faultWhole(c, 302, "redirecting\n", "Location: http://"+net.JoinHostPort(local.IP.String(), strconv.Itoa(sockets.Port(other)))+to)
	case "/fault/redirect-other-host": // 302 to the same path `to` on origin c, another host
		to := q.Get("to")
		if to == "" {
			to = "/fault/landing"
		}
		if !handlers.SameOriginPath(to) || f.C == nil {
			bad(fmt.Errorf("to must be a path, on a server listening on loopback (origin c)"))
			return
		}
		faultWhole(c, 302, "redirecting\n", "Location: http://"+f.C.Addr().String()+to)
	case "/fault/landing":
		faultWhole(c, 200, "landed\n")
	default:
		if f.answerMore(c, req, gone) {
			return
		}
		faultWhole(c, 404, "no such fault\n")
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Control adds the ledger to the control port: GET /faults (?reset=1 empties it after
// reading), POST /faults/reset.
func (f *Server) Control(mux *http.ServeMux, reply func(http.ResponseWriter, any)) {
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, r *http.Request) {
		entries, counts, numbered := f.Ledger.Snapshot(r.URL.Query().Get("reset") == "1")
		reply(w, map[string]any{"entries": entries, "counts": counts, "numbered": numbered, "active": f.Active(),
			"ports": f.Ports()})
	})
	mux.HandleFunc("POST /faults/reset", func(w http.ResponseWriter, r *http.Request) {
		f.Ledger.Snapshot(true)
		reply(w, map[string]bool{"ok": true})
	})
}
