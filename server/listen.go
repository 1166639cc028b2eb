package main

// The public listeners: where the server may listen, how it tells h2c from HTTP/1.1 on the
// plain port without waiting for 24 bytes, and how it moves to fresh ports between trials.

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// -- where the server may listen ------------------------------------------------------------

// labPrefixes are the network lab's two subnets (clientlab/netlab/namespaces.py): the client/server
// link 10.77.0.0/24 and the lab's control link 10.77.9.0/24. Nothing else but loopback.
var labPrefixes = []netip.Prefix{netip.MustParsePrefix("10.77.0.0/24"), netip.MustParsePrefix("10.77.9.0/24")}

func allowedAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	if a.IsLoopback() { // 127.0.0.0/8 and ::1
		return true
	}
	for _, p := range labPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

const allowedText = "loopback (127.0.0.0/8, ::1) or the network lab's own subnets (10.77.0.0/24, 10.77.9.0/24)"

// listenAddr checks a --listen / --control-listen value and returns the address to bind. A host
// name is accepted only when every address it resolves to is allowed; the first one is bound.
func listenAddr(flagName, value string) (netip.Addr, error) {
	if value == "" {
		return netip.Addr{}, fmt.Errorf("%s is empty (that would mean every interface): give an address, %s", flagName, allowedText)
	}
	if a, err := netip.ParseAddr(value); err == nil {
		if !allowedAddr(a) {
			return netip.Addr{}, fmt.Errorf("%s %s refused: the bench server listens only on %s", flagName, value, allowedText)
		}
		return a.Unmap(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", value)
	if err != nil || len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("%s %s: not an address, and it does not resolve (%v)", flagName, value, err)
	}
	for _, a := range addrs {
		if !allowedAddr(a) {
			return netip.Addr{}, fmt.Errorf("%s %s refused: it resolves to %s; the bench server listens only on %s", flagName, value, a, allowedText)
		}
	}
	return addrs[0].Unmap(), nil
}

// serveOnly, when set (--serve-only), is the one client address the public ports serve: the
// bench server on a host of its own listens on an address others can reach, and closes every
// connection from anyone but the lab host at once.
var serveOnly netip.Addr

// anyOneAddr checks --listen when --serve-only guards the ports: one specific address of this
// host, never "every interface".
func anyOneAddr(flagName, value string) (netip.Addr, error) {
	a, err := netip.ParseAddr(value)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%s %s: with --serve-only, give this host's address the lab host reaches", flagName, value)
	}
	if a = a.Unmap(); a.IsUnspecified() || a.IsMulticast() {
		return netip.Addr{}, fmt.Errorf("%s %s refused: give one address of this host, not every interface", flagName, value)
	}
	return a, nil
}

// peerServed says whether a public connection may be served: always, unless --serve-only names
// another client.
func peerServed(c net.Conn) bool { return addrServed(c.RemoteAddr()) }

// addrServed is peerServed for a peer's address (a QUIC connection's, too).
func addrServed(remote net.Addr) bool {
	if !serveOnly.IsValid() {
		return true
	}
	peer, err := netip.ParseAddrPort(remote.String())
	return err == nil && peer.Addr().Unmap() == serveOnly
}

// listenOn opens a plain TCP listener (Go would make it MPTCP, which no client here asks for; its
// sockets refuse TCP_USER_TIMEOUT, see stallLimit) on a port the kernel picks.
func listenOn(a netip.Addr) (net.Listener, error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	l, err := lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(a, 0).String())
	if err != nil {
		return nil, err
	}
	if err := tuneListener(l); err != nil { // the backlog somaxconn allows now, not at startup
		l.Close()
		return nil, fmt.Errorf("listening socket: %w", err)
	}
	return l, nil
}

// serverErrors receives net/http's error log (bad requests, hang-ups; tests watch it for
// recovered panics).
var serverErrors io.Writer = io.Discard

// -- the public side --------------------------------------------------------------------------

// headerTimeout bounds how long a connection may take to send its request headers (and a new
// plain connection its first bytes); idle keep-alive connections wait up to idleTimeout.
const (
	headerTimeout = 60 * time.Second
	idleTimeout   = 5 * time.Minute
)

// public serves the http and https ports. Each port is a publicListener (counting, cap) served
// by one HTTP/1.1 server, which hands TLS connections that chose h2 to our HTTP/2 server
// (h2conn.go); a plain connection tells h2c from HTTP/1.1 in its first read (serveFast, or
// trackedConn.sniffRead) and an h2c one is handed to our HTTP/2 server too (p.h2c).
// Rebinding swaps the kernel listeners under the publicListeners: the servers and every
// accepted connection carry on.
type public struct {
	addr   netip.Addr
	base   *tls.Config // nil: no https port
	limit  *connLimit
	h2c    *connQueue // plain connections that opened with the HTTP/2 preface
	slow   *connQueue // plain connections the hot path handed to net/http (serveFast)
	plain  *publicListener
	secure *publicListener // nil without a certificate
	h3     *h3Side         // HTTP/3 on a UDP port (h3.go); nil without a certificate
	mu     sync.Mutex      // rebinds (control path only)
}

func newPublic(addr netip.Addr, base *tls.Config, limit *connLimit) (*public, error) {
	p := &public{addr: addr, base: base, limit: limit, h2c: newConnQueue(), slow: newConnQueue()}
	p.plain = &publicListener{p: p}
	if base != nil {
		p.secure = &publicListener{p: p, secure: true}
		p.h3 = newH3Side(p)
	}
	if _, err := p.rebind(); err != nil {
		return nil, err
	}
	hooks := func(s *http.Server) *http.Server {
		s.Handler = http.HandlerFunc(serveHTTP)
		s.IdleTimeout = idleTimeout
		s.ReadHeaderTimeout = headerTimeout
		s.MaxHeaderBytes = http.DefaultMaxHeaderBytes
		s.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, ctxKey{}, tracked(c))
		}
		s.ConnState = func(c net.Conn, state http.ConnState) {
			limit.setIdle(tracked(c), state == http.StateIdle)
		}
		s.ErrorLog = log.New(serverErrors, "", 0) // clients that hang up are not the server's news
		return s
	}
	main := hooks(&http.Server{Protocols: new(http.Protocols)})
	main.ConnState = func(c net.Conn, state http.ConnState) {
		tc := tracked(c)
		if state == http.StateClosed && tc != nil && tc.handoff.CompareAndSwap(handoffReleased, handoffDone) {
			p.h2c.push(tc) // an h2c connection the HTTP/1.1 server has just let go of (trackedConn.Close)
			return
		}
		limit.setIdle(tc, state == http.StateIdle)
	}
	main.Protocols.SetHTTP1(true)
	main.Protocols.SetHTTP2(true) // over TLS, by ALPN; h2c is told apart by the connection itself
	if !netHTTP2 {
		// HTTP/2 is ours (h2conn.go); net/http hands it each connection that chose h2 by ALPN
		main.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){
			"h2": func(_ *http.Server, conn *tls.Conn, _ http.Handler) {
				state := conn.ConnectionState()
				p.serveH2(tracked(conn), conn, &state)
			},
		}
	}
	// the plain port: the HTTP/1.1 hot path (fast.go), which hands the rest to main (p.slow)
	go p.acceptFast()
	go serve(main, p.slow)
	if p.secure != nil {
		go serve(main, p.secure)
	}
	if netHTTP2 {
		h2c := hooks(&http.Server{Protocols: new(http.Protocols)})
		h2c.Protocols.SetUnencryptedHTTP2(true) // only ever handed connections that sent the whole preface
		go serve(h2c, p.h2c)
	} else {
		go p.acceptH2c()
	}
	return p, nil
}

// netHTTP2 serves HTTP/2 with net/http's server instead of ours (CLIENTLAB_SERVER_NETHTTP2=1:
// to compare the two).
var netHTTP2 = os.Getenv("CLIENTLAB_SERVER_NETHTTP2") == "1"

// acceptH2c serves the plain connections that opened with the HTTP/2 preface (the preface is
// still in their pending bytes).
func (p *public) acceptH2c() {
	for {
		c, err := p.h2c.Accept()
		if err != nil {
			return
		}
		go p.serveH2(c.(*trackedConn), c, nil)
	}
}

func serve(srv *http.Server, l net.Listener) {
	if err := srv.Serve(l); err != nil && err != http.ErrServerClosed {
		log.Fatalf("serving %s: %v", l.Addr(), err)
	}
}

// ports are the public ports, as the "listening" line and a rebind name them ("h3": UDP).
type ports map[string]int

// rebind opens new listeners on fresh kernel-chosen ports and closes the old ones; connections
// already accepted keep being served until they close.
func (p *public) rebind() (ports, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	plain, err := listenOn(p.addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", p.addr, err)
	}
	if p.secure == nil {
		return ports{"http": p.plain.swap(plain)}, nil
	}
	secure, err := listenOn(p.addr)
	if err != nil {
		plain.Close()
		return nil, fmt.Errorf("cannot listen on %s: %w", p.addr, err)
	}
	h3Port, err := p.h3.rebind(p.addr) // first: it is the one step left that may fail
	if err != nil {
		plain.Close()
		secure.Close()
		return nil, err
	}
	return ports{"http": p.plain.swap(plain), "https": p.secure.swap(secure), "h3": h3Port}, nil
}

// ports are the public ports now.
func (p *public) ports() ports {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := ports{"http": p.plain.port()}
	if p.secure != nil {
		out["https"] = p.secure.port()
		out["h3"] = p.h3.port()
	}
	return out
}

// rawListener is one kernel listener; closing marks a close by rebind.
type rawListener struct {
	net.Listener
	closing atomic.Bool
}

// publicListener is what net/http serves for one public port: it accepts from the current
// kernel listener (moving to the new one when a rebind closes it), waits under the cap, and
// wraps every connection for the trial's counters.
type publicListener struct {
	p      *public
	secure bool
	cur    atomic.Pointer[rawListener]
}

// swap puts a new kernel listener in place and closes the old one; it returns the new port.
func (l *publicListener) swap(next net.Listener) int {
	old := l.cur.Swap(&rawListener{Listener: next})
	if old != nil {
		old.closing.Store(true)
		old.Close() // a pending Accept on it returns and takes the new one
	}
	return next.Addr().(*net.TCPAddr).Port
}

func (l *publicListener) port() int { return l.cur.Load().Addr().(*net.TCPAddr).Port }

func (l *publicListener) Addr() net.Addr { return l.cur.Load().Addr() }

func (l *publicListener) Close() error { return l.cur.Load().Close() }

func (l *publicListener) Accept() (net.Conn, error) {
	var raw net.Conn
	for {
		current := l.cur.Load()
		c, err := current.Accept()
		if err == nil && !peerServed(c) {
			c.Close()
			continue
		}
		if err == nil {
			raw = c
			break
		}
		if !current.closing.Load() {
			return nil, err // net/http retries temporary errors (out of descriptors) after a pause
		}
	}
	// over the cap, the connection waits here unserved, as it would in a full server's backlog
	waited := l.p.limit.acquire()
	t := current.Load()
	tc := &trackedConn{Conn: raw, raw: newRawIO(raw), trialID: t.id, trialStart: t.start, rec: t.addConn(l.secure, waited),
		onClose: l.p.limit.release}
	l.p.limit.track(tc)
	if !l.secure {
		tc.h2c = l.p.h2c // serveFast tells h2c from HTTP/1.1, or hands that to sniffRead
		return tc, nil
	}
	cfg := l.p.base.Clone()
	if disableH2.Load() {
		cfg.NextProtos = []string{"http/1.1"}
	}
	// VerifyConnection runs after every handshake, full or resumed, on the server side too.
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		tc.rec.resumed.Store(cs.DidResume)
		if cs.NegotiatedProtocol == "h2" {
			tc.rec.proto.Store("h2")
			tc.noEvents.Store(true)
		}
		current.Load().handshake(cs.DidResume, false) // the trial it happens in (no reference to keep)
		return nil
	}
	return tls.Server(tc, cfg), nil
}

// -- telling h2c from HTTP/1.1 ----------------------------------------------------------------

var h2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// sniffRead is a plain connection's first read, by the HTTP/1.1 server: it returns as soon as
// the bytes differ from the HTTP/2 preface (HTTP/1.x, however short the request: net/http's
// own check waited for 14, then 24 bytes, so a shorter request got no answer), and reads on
// while they match. A whole preface makes the connection h2c: the HTTP/1.1 server reads EOF
// and closes it, and its closing hook hands it, with the bytes read, to the h2c server.
func (c *trackedConn) sniffRead(p []byte) (int, error) {
	c.sniffing = false
	n := 0
	for {
		m, err := c.read(p[n:])
		n += m
		k := min(n, len(h2Preface))
		if !bytes.Equal(p[:k], h2Preface[:k]) || err != nil && n < len(h2Preface) {
			return n, err
		}
		// a whole preface is h2c even when the first read filled the buffer (a POST's first
		// write with its body: checked before the length, or it was answered as HTTP/1.1)
		if n >= len(h2Preface) {
			c.pending = bytes.Clone(p[:n])
			c.rec.proto.Store("h2c")
			c.noEvents.Store(true)
			c.handoff.Store(handoffPending)
			return 0, io.EOF
		}
		if n == len(p) {
			return n, err // a buffer shorter than the preface (net/http's is 4 KB)
		}
	}
}

// -- in-process listeners ---------------------------------------------------------------------

// connQueue is a net.Listener fed by our accept loops.
type connQueue struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newConnQueue() *connQueue {
	return &connQueue{ch: make(chan net.Conn, 256), done: make(chan struct{})}
}

func (q *connQueue) push(c net.Conn) {
	select {
	case q.ch <- c:
	case <-q.done:
		c.Close()
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ch:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return queueAddr{} }

type queueAddr struct{}

func (queueAddr) Network() string { return "clientlab" }
func (queueAddr) String() string  { return "public" }
