// Package server assembles the bench server: its public ports, the hand-offs between protocols, the control port.
package server

// The public listeners: where the server may listen, how it tells h2c from HTTP/1.1 on the
// plain port without waiting for 24 bytes, and how it moves to fresh ports between trials.

import (
	"context"
	"crypto/rand"
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

	"clientlab/server/internal/control"
	"clientlab/server/internal/faults"
	"clientlab/server/internal/h1"
	"clientlab/server/internal/h2"
	"clientlab/server/internal/h3"
	"clientlab/server/internal/handlers"
	"clientlab/server/internal/rawio"
	"clientlab/server/internal/record"
	"clientlab/server/internal/sockets"
)

// -- the public side --------------------------------------------------------------------------

// public serves the http and https ports. Each port is a publicListener (counting, cap) served
// by one HTTP/1.1 server, which hands TLS connections that chose h2 to our HTTP/2 server
// (h2conn.go); a plain connection tells h2c from HTTP/1.1 in its first read (serveFast, or
// trackedConn.sniffRead) and an h2c one is handed to our HTTP/2 server too (p.h2c).
// Rebinding swaps the kernel listeners under the publicListeners: the servers and every
// accepted connection carry on.
type public struct {
	addr   netip.Addr
	base   *tls.Config // nil: no https port
	limit  *record.ConnLimit
	h2c    *record.ConnQueue // plain connections that opened with the HTTP/2 preface
	slow   *record.ConnQueue // plain connections the hot path handed to net/http (serveFast)
	plain  *publicListener
	secure *publicListener // nil without a certificate
	h3     *h3.Side        // HTTP/3 on a UDP port (h3.go); nil without a certificate
	fast   *h1.Server      // the plain port's HTTP/1.1 hot path (fast.go)
	mu     sync.Mutex      // rebinds (control path only)
	// disableH2: the TLS port offers http/1.1 alone (control /config {"disable_h2": true})
	disableH2 atomic.Bool
}

func newPublic(addr netip.Addr, base *tls.Config, limit *record.ConnLimit) (*public, error) {
	p := &public{addr: addr, base: base, limit: limit, h2c: record.NewConnQueue(), slow: record.NewConnQueue()}
	p.fast = &h1.Server{Limit: limit, Slow: p.slow, H2C: p.h2c}
	p.plain = &publicListener{p: p}
	if base != nil {
		p.secure = &publicListener{p: p, secure: true}
		p.h3 = h3.NewSide(base, limit)
	}
	if _, err := p.rebind(); err != nil {
		return nil, err
	}
	hooks := func(s *http.Server) *http.Server {
		s.Handler = http.HandlerFunc(handlers.Serve)
		s.IdleTimeout = sockets.IdleTimeout
		s.ReadHeaderTimeout = sockets.HeaderTimeout
		s.MaxHeaderBytes = http.DefaultMaxHeaderBytes
		s.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, record.ConnKey{}, record.Tracked(c))
		}
		s.ConnState = func(c net.Conn, state http.ConnState) {
			limit.SetIdle(record.Tracked(c), state == http.StateIdle)
		}
		s.ErrorLog = log.New(sockets.ServerErrors(), "", 0) // clients that hang up are not the server's news
		return s
	}
	main := hooks(&http.Server{Protocols: new(http.Protocols)})
	main.ConnState = func(c net.Conn, state http.ConnState) {
		tc := record.Tracked(c)
		if state == http.StateClosed && tc != nil && tc.Handoff.CompareAndSwap(record.HandoffReleased, record.HandoffDone) {
			p.h2c.Push(tc) // an h2c connection the HTTP/1.1 server has just let go of (trackedConn.Close)
			return
		}
		limit.SetIdle(tc, state == http.StateIdle)
	}
	main.Protocols.SetHTTP1(true)
	main.Protocols.SetHTTP2(true) // over TLS, by ALPN; h2c is told apart by the connection itself
	if !netHTTP2 {
		// HTTP/2 is ours (h2conn.go); net/http hands it each connection that chose h2 by ALPN
		main.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){
			"h2": func(_ *http.Server, conn *tls.Conn, _ http.Handler) {
				state := conn.ConnectionState()
				h2.Serve(limit, record.Tracked(conn), conn, &state)
			},
		}
	}
	// the plain port: the HTTP/1.1 hot path (fast.go), which hands the rest to main (p.slow)
	go p.fast.Serve(p.plain)
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
		go h2.Serve(p.limit, c.(*record.Conn), c, nil)
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
	plain, err := sockets.Listen(p.addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", p.addr, err)
	}
	if p.secure == nil {
		return ports{"http": p.plain.swap(plain)}, nil
	}
	secure, err := sockets.Listen(p.addr)
	if err != nil {
		plain.Close()
		return nil, fmt.Errorf("cannot listen on %s: %w", p.addr, err)
	}
	h3Port, err := p.h3.Rebind(p.addr) // first: it is the one step left that may fail
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
		out["h3"] = p.h3.Port()
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
		if err == nil && !sockets.PeerServed(c) {
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
	waited := l.p.limit.Acquire()
	t := record.Current()
	tc := &record.Conn{Conn: raw, Raw: rawio.New(raw), TrialID: t.ID, TrialStart: t.Start, Rec: t.AddConn(l.secure, waited),
		OnClose: l.p.limit.Release}
	l.p.limit.Track(tc)
	if !l.secure {
		return tc, nil
	}
	cfg := l.p.base.Clone()
	if l.p.disableH2.Load() {
		cfg.NextProtos = []string{"http/1.1"}
	}
	// VerifyConnection runs after every handshake, full or resumed, on the server side too.
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		tc.Rec.Resumed.Store(cs.DidResume)
		if cs.NegotiatedProtocol == "h2" {
			tc.Rec.Proto.Store("h2")
			tc.NoEvents.Store(true)
		}
		record.Current().Handshake(cs.DidResume, false) // the trial it happens in (no reference to keep)
		return nil
	}
	return tls.Server(tc, cfg), nil
}

// -- starting ---------------------------------------------------------------------------------

// Start opens the listeners and serves them in the background; it returns the "listening" line
// and the fault side (tests reach its origins).
func Start(addr, controlAddr netip.Addr, base *tls.Config, maxConns int, secret string) (map[string]any, *faults.Server, error) {
	limit := record.NewConnLimit(maxConns)
	record.SetCap(limit)
	controlLn, err := sockets.Listen(controlAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot listen on %s: %w", controlAddr, err)
	}
	p, err := newPublic(addr, base, limit)
	if err != nil {
		controlLn.Close()
		return nil, nil, err
	}
	fs, err := faults.Start(addr, base)
	if err != nil {
		controlLn.Close()
		return nil, nil, err
	}
	ready := map[string]any{"type": "listening", "control": sockets.Port(controlLn), "pid": os.Getpid(), "version": "1",
		"fault_a": sockets.Port(fs.A), "fault_b": sockets.Port(fs.B)}
	for origin, n := range fs.Ports() { // fault_a, fault_b, and those that listen here: c, s, h2, dark
		ready["fault_"+origin] = n
	}
	for name, n := range p.ports() {
		ready[name] = n
	}
	if only := sockets.ServeOnly(); only.IsValid() {
		ready["serve_only"] = only.String()
	}
	srv := &http.Server{Handler: control.Handler(limit, p.rebindPorts, fs, &p.disableH2, secret), ReadHeaderTimeout: sockets.HeaderTimeout,
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() {
		if err := srv.Serve(controlLn); err != nil && err != http.ErrServerClosed {
			log.Fatalf("serving the control port: %v", err)
		}
	}()
	return ready, fs, nil
}

// rebindPorts is rebind for the control port.
func (p *public) rebindPorts() (map[string]int, error) { return p.rebind() }

func TLSConfig(certFile, keyFile string) *tls.Config {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		log.Fatalf("cannot load the TLS certificate: %v", err)
	}
	return TLSConfigFor(cert)
}

func TLSConfigFor(cert tls.Certificate) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	// One explicit ticket key shared by every per-connection clone, so sessions resume.
	var key [32]byte
	rand.Read(key[:])
	cfg.SetSessionTicketKeys([][32]byte{key})
	return cfg
}
