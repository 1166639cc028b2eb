package main

// HTTP/3 (quic-go's http3) on a UDP port of its own beside the TLS port, with the same
// certificate (ALPN h3). Every QUIC connection is recorded as a TCP one is: a trackedConn (so
// the cap, carried and kept connections, and serveHTTP's recording work unchanged) whose
// record has proto "h3", its handshake (full, resumed, 0-RTT) and the QUIC layer's bytes.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// h3MaxStreams: request streams a client may have open at once on one connection (as HTTP/2's).
const h3MaxStreams = h2MaxStreams

// altSvc is the Alt-Svc value the TLS port's answers carry (`h3=":PORT"`), nil without HTTP/3.
var altSvc atomic.Pointer[string]

// h3Side serves HTTP/3: one http3.Server for every connection of every UDP endpoint.
type h3Side struct {
	p     *public
	tls   *tls.Config
	quic  *quic.Config
	srv   *http3.Server
	conns sync.Map // *quic.Conn -> *trackedConn, while it is served
	cur   *h3Endpoint
}

func newH3Side(p *public) *h3Side {
	cfg := p.base.Clone()
	cfg.NextProtos = []string{http3.NextProtoH3}
	h := &h3Side{p: p, tls: cfg, quic: &quic.Config{
		Allow0RTT:          true,
		MaxIdleTimeout:     idleTimeout, // as a keep-alive TCP connection may idle
		MaxIncomingStreams: h3MaxStreams,
	}}
	h.srv = &http3.Server{
		Handler:        http.HandlerFunc(h.serve),
		MaxHeaderBytes: http.DefaultMaxHeaderBytes,
		ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
			tc, _ := h.conns.Load(c)
			return context.WithValue(ctx, ctxKey{}, tc)
		},
	}
	return h
}

// h3Endpoint is one UDP socket and its QUIC listener. A rebind closes the listener only: the
// socket carries the connections already open until the last one ends (closing it would end
// them all, where a TCP listener's close ends none).
type h3Endpoint struct {
	udp  *net.UDPConn
	tr   *quic.Transport
	ln   *quic.EarlyListener
	mu   sync.Mutex
	open int  // connections being served
	gone bool // replaced by a rebind
}

// rebind opens a new UDP endpoint on a fresh port and retires the old one; it returns the port.
func (h *h3Side) rebind(addr netip.Addr) (int, error) {
	udp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		return 0, fmt.Errorf("cannot listen on UDP %s: %w", addr, err)
	}
	e := &h3Endpoint{udp: udp, tr: &quic.Transport{Conn: udp}}
	if e.ln, err = e.tr.ListenEarly(h.tls, h.quic); err != nil {
		udp.Close()
		return 0, fmt.Errorf("cannot serve QUIC on %s: %w", udp.LocalAddr(), err)
	}
	old := h.cur
	h.cur = e
	go h.accept(e)
	if old != nil {
		old.retire()
	}
	port := udp.LocalAddr().(*net.UDPAddr).Port
	value := `h3=":` + strconv.Itoa(port) + `"; ma=86400`
	altSvc.Store(&value)
	return port, nil
}

func (e *h3Endpoint) retire() {
	e.ln.Close()
	e.mu.Lock()
	e.gone = true
	idle := e.open == 0
	e.mu.Unlock()
	if idle {
		e.close()
	}
}

func (e *h3Endpoint) close() {
	e.tr.Close()
	e.udp.Close()
}

// ended counts a connection out; the last one of a retired endpoint closes its socket.
func (e *h3Endpoint) ended() {
	e.mu.Lock()
	e.open--
	last := e.gone && e.open == 0
	e.mu.Unlock()
	if last {
		e.close()
	}
}

func (h *h3Side) accept(e *h3Endpoint) {
	for {
		qc, err := e.ln.Accept(context.Background())
		if err != nil {
			return // retired
		}
		if !addrServed(qc.RemoteAddr()) {
			qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
			continue
		}
		e.mu.Lock()
		e.open++
		e.mu.Unlock()
		go h.serveConn(e, qc)
	}
}

// serveConn records and serves one QUIC connection until it ends.
func (h *h3Side) serveConn(e *h3Endpoint, qc *quic.Conn) {
	defer e.ended()
	// over the cap, the connection waits here unserved (its handshake may be done: QUIC has
	// no backlog to leave it in)
	waited := h.p.limit.acquire()
	t := current.Load()
	rec := t.addConn(true, waited)
	rec.proto.Store("h3")
	rec.quic.Store(qc)
	tc := &trackedConn{Conn: quicConn{qc}, trialID: t.id, trialStart: t.start, rec: rec, onClose: h.p.limit.release}
	tc.noEvents.Store(true)
	h.p.limit.track(tc)
	h.p.limit.fastIdle(tc, true)
	go recordH3Handshake(qc, rec)
	h.conns.Store(qc, &h3conn{tc: tc})
	h.srv.ServeQUICConn(qc) // until the connection ends and its handlers have returned
	h.conns.Delete(qc)
	rec.finishQUIC(qc)
	tc.Close()
}

// recordH3Handshake counts the handshake once it is done: resumed or full, and whether the
// client's first requests came as 0-RTT data (known only then; the requests may be answered
// before it).
func recordH3Handshake(qc *quic.Conn, rec *connRecord) {
	select {
	case <-qc.HandshakeComplete():
	case <-qc.Context().Done():
		return
	}
	cs := qc.ConnectionState()
	rec.resumed.Store(cs.TLS.DidResume)
	rec.earlyData.Store(cs.Used0RTT)
	current.Load().handshake(cs.TLS.DidResume, cs.Used0RTT)
}

// h3conn is what ConnContext finds for a connection: its trackedConn and its requests in flight.
type h3conn struct {
	tc     *trackedConn
	mu     sync.Mutex
	active int
}

// serve records every HTTP/3 request as serveHTTP does, and tells the cap when the connection
// has none in flight (then it may close it, as net/http's StateIdle allows).
func (h *h3Side) serve(w http.ResponseWriter, r *http.Request) {
	hc, _ := r.Context().Value(ctxKey{}).(*h3conn)
	if hc == nil {
		serveHTTP(w, r)
		return
	}
	hc.busy(h.p.limit, 1)
	defer hc.busy(h.p.limit, -1)
	serveHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, hc.tc)))
}

func (hc *h3conn) busy(limit *connLimit, delta int) {
	hc.mu.Lock()
	hc.active += delta
	limit.fastIdle(hc.tc, hc.active == 0)
	hc.mu.Unlock()
}

// finishQUIC keeps the connection's final byte counts and lets go of it (a trial's record
// must not keep a closed connection's memory alive).
func (c *connRecord) finishQUIC(qc *quic.Conn) {
	st := qc.ConnectionStats()
	c.bytesIn.Store(int64(st.BytesReceived))
	c.bytesOut.Store(int64(st.BytesSent))
	c.quic.Store(nil)
}

// bytes are the connection's bytes so far: the QUIC layer's while the connection is open
// (QUIC packets, without UDP and IP headers; retransmissions included), else the counters.
func (c *connRecord) bytes() (in, out int64) {
	if qc := c.quic.Load(); qc != nil {
		st := qc.ConnectionStats()
		return int64(st.BytesReceived), int64(st.BytesSent)
	}
	return c.bytesIn.Load(), c.bytesOut.Load()
}

// quicConn stands for a QUIC connection where the accounting wants a net.Conn: its addresses,
// and Close (the cap closing an idle connection). Its bytes go through http3, never here.
type quicConn struct{ qc *quic.Conn }

func (q quicConn) Read([]byte) (int, error)         { return 0, net.ErrClosed }
func (q quicConn) Write([]byte) (int, error)        { return 0, net.ErrClosed }
func (q quicConn) LocalAddr() net.Addr              { return q.qc.LocalAddr() }
func (q quicConn) RemoteAddr() net.Addr             { return q.qc.RemoteAddr() }
func (q quicConn) SetDeadline(time.Time) error      { return nil }
func (q quicConn) SetReadDeadline(time.Time) error  { return nil }
func (q quicConn) SetWriteDeadline(time.Time) error { return nil }
func (q quicConn) Close() error {
	return q.qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
}

// port is the UDP port of the current endpoint (under public.mu, as rebind).
func (h *h3Side) port() int { return h.cur.udp.LocalAddr().(*net.UDPAddr).Port }

// advertiseH3 adds Alt-Svc to an answer on the TLS port, so that a client that upgrades to
// HTTP/3 by itself can be seen doing it (clients that do not act on Alt-Svc ignore it).
func advertiseH3(h http.Header, r *http.Request) {
	if r.TLS != nil && r.ProtoMajor < 3 {
		if v := altSvc.Load(); v != nil {
			h.Set("Alt-Svc", *v)
		}
	}
}
