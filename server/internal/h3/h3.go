// Package h3 serves HTTP/3 with quic-go, and writes qlog traces for diagnosis.
package h3

// HTTP/3 (quic-go's http3) on a UDP port of its own beside the TLS port, with the same
// certificate (ALPN h3). Every QUIC connection is recorded as a TCP one is: a trackedConn (so
// the cap, carried and kept connections, and serveHTTP's recording work unchanged) whose
// record has proto "h3", its handshake (full, resumed, 0-RTT) and the QUIC layer's bytes.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"clientlab/server/internal/h2"
	"clientlab/server/internal/handlers"
	"clientlab/server/internal/record"
	"clientlab/server/internal/sockets"
)

// h3MaxStreams: request streams a client may have open at once on one connection (as HTTP/2's).
const h3MaxStreams = h2.MaxStreams

// qlogDir is where every QUIC connection's qlog trace goes (--qlog-dir, qlog.go); nil or "": none.
var qlogDir atomic.Pointer[string]

// QlogDir is where the HTTP/3 sides made from now on write each QUIC connection's qlog trace;
// "": nowhere.
func QlogDir() string {
	if dir := qlogDir.Load(); dir != nil {
		return *dir
	}
	return ""
}

// SetQlogDir has the HTTP/3 sides made from now on write their qlog traces into dir (a directory
// PrepareQlogDir made; "": none); it returns the one before.
func SetQlogDir(dir string) string {
	if before := qlogDir.Swap(&dir); before != nil {
		return *before
	}
	return ""
}

// Side serves HTTP/3: one http3.Server for every connection of every UDP endpoint.
type Side struct {
	limit *record.ConnLimit
	tls   *tls.Config
	quic  *quic.Config
	srv   *http3.Server
	conns sync.Map // *quic.Conn -> *trackedConn, while it is served
	cur   *h3Endpoint
}

func NewSide(base *tls.Config, limit *record.ConnLimit) *Side {
	cfg := base.Clone()
	cfg.NextProtos = []string{http3.NextProtoH3}
	h := &Side{limit: limit, tls: cfg, quic: &quic.Config{
		Allow0RTT:          true,
		MaxIdleTimeout:     sockets.IdleTimeout, // as a keep-alive TCP connection may idle
		MaxIncomingStreams: h3MaxStreams,
	}}
	if dir := QlogDir(); dir != "" {
		h.quic.Tracer = qlogTracer(dir)
	}
	h.srv = &http3.Server{
		Handler:        http.HandlerFunc(h.serve),
		MaxHeaderBytes: http.DefaultMaxHeaderBytes,
		ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
			tc, _ := h.conns.Load(c)
			return context.WithValue(ctx, record.ConnKey{}, tc)
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

// Rebind opens a new UDP endpoint on a fresh port and retires the old one; it returns the port.
func (h *Side) Rebind(addr netip.Addr) (int, error) {
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
	record.SetAltSvc(&value)
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

func (h *Side) accept(e *h3Endpoint) {
	for {
		qc, err := e.ln.Accept(context.Background())
		if err != nil {
			return // retired
		}
		if !sockets.AddrServed(qc.RemoteAddr()) {
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
func (h *Side) serveConn(e *h3Endpoint, qc *quic.Conn) {
	defer e.ended()
	// over the cap, the connection waits here unserved (its handshake may be done: QUIC has
	// no backlog to leave it in)
	waited := h.limit.Acquire()
	t := record.Current()
	rec := t.AddConn(true, waited)
	rec.Proto.Store("h3")
	rec.Quic.Store(qc)
	tc := &record.Conn{Conn: quicConn{qc}, TrialID: t.ID, TrialStart: t.Start, Rec: rec, OnClose: h.limit.Release}
	tc.NoEvents.Store(true)
	h.limit.Track(tc)
	h.limit.FastIdle(tc, true)
	go recordH3Handshake(qc, rec)
	h.conns.Store(qc, &h3conn{tc: tc})
	h.serveStreams(qc) // until the connection ends and its handlers have returned
	h.conns.Delete(qc)
	rec.FinishQUIC(qc)
	tc.Close()
}

// serveStreams is http3's ServeQUICConn (without its graceful shutdown, which nothing here
// asks for) with a read deadline on each request stream: a client that opens a stream and
// sends no complete headers holds it (and a goroutine in http3) only for the stall limit, as
// headerTimeout bounds a TCP connection's first request; the body's reads renew the deadline
// (h3StallBody).
func (h *Side) serveStreams(qc *quic.Conn) {
	rc, err := h.srv.NewRawServerConn(qc)
	if err != nil {
		qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeInternalError), "")
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			str, err := qc.AcceptUniStream(context.Background())
			if err != nil {
				return
			}
			go rc.HandleUnidirectionalStream(str)
		}
	})
	for {
		str, err := qc.AcceptStream(context.Background())
		if err != nil {
			break // the connection ended
		}
		str.SetReadDeadline(time.Now().Add(sockets.StallLimit()))
		wg.Go(func() { rc.HandleRequestStream(str) })
	}
	wg.Wait()
}

// recordH3Handshake counts the handshake once it is done: resumed or full, and whether the
// client's first requests came as 0-RTT data (known only then; the requests may be answered
// before it).
func recordH3Handshake(qc *quic.Conn, rec *record.ConnRecord) {
	select {
	case <-qc.HandshakeComplete():
	case <-qc.Context().Done():
		return
	}
	cs := qc.ConnectionState()
	rec.Resumed.Store(cs.TLS.DidResume)
	rec.EarlyData.Store(cs.Used0RTT)
	record.Current().Handshake(cs.TLS.DidResume, cs.Used0RTT)
}

// h3conn is what ConnContext finds for a connection: its trackedConn and its requests in flight.
type h3conn struct {
	tc     *record.Conn
	mu     sync.Mutex
	active int
}

// serve records every HTTP/3 request as serveHTTP does, and tells the cap when the connection
// has none in flight (then it may close it, as net/http's StateIdle allows).
func (h *Side) serve(w http.ResponseWriter, r *http.Request) {
	if d, ok := w.(streamDeadlines); ok {
		sw := &h3Stall{ResponseWriter: w, d: d, limit: sockets.StallLimit()}
		r.Body = &h3StallBody{ReadCloser: r.Body, s: sw}
		w = sw
		defer sw.finish()
	}
	hc, _ := r.Context().Value(record.ConnKey{}).(*h3conn)
	if hc == nil {
		handlers.Serve(w, r)
		return
	}
	hc.busy(h.limit, 1)
	defer hc.busy(h.limit, -1)
	handlers.Serve(w, r.WithContext(context.WithValue(r.Context(), record.ConnKey{}, hc.tc)))
}

// streamDeadlines: http3's ResponseWriter sets its stream's deadlines.
type streamDeadlines interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// h3WriteStep: an answer goes to the stream in writes of at most this much, so that one large
// write (a 1 MB document) to a slow but steady reader is not taken for a stall.
const h3WriteStep = 64 << 10

// h3Stall gives HTTP/3 streams the stall limit that TCP_USER_TIMEOUT gives TCP connections
// (QUIC has none: a client that stops reading holds its stream and handler until the
// connection idles out, or for ever if its QUIC stack keeps acknowledging). Every write, and
// every read of the request body, must make progress within stallLimit; one that does not
// fails, and http3 then resets the stream (its frame unfinished, or its flush failing). The
// connection's other streams go on.
type h3Stall struct {
	http.ResponseWriter
	d       streamDeadlines
	limit   time.Duration
	stalled bool // a write failed: the answer is given up
}

func (s *h3Stall) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *h3Stall) Write(p []byte) (int, error) {
	n := 0
	for {
		s.d.SetWriteDeadline(time.Now().Add(s.limit))
		m, err := s.ResponseWriter.Write(p[n:min(len(p), n+h3WriteStep)])
		n += m
		if err != nil {
			s.stalled = true
			return n, stallError(err, "took nothing of the answer", s.limit)
		}
		if n == len(p) {
			return n, nil
		}
	}
}

// finish renews the deadline for what http3 sends once the handler has returned (a small
// answer is only buffered before), unless the answer was given up: then its flush fails at
// once and the stream is reset.
func (s *h3Stall) finish() {
	if !s.stalled {
		s.d.SetWriteDeadline(time.Now().Add(s.limit))
	}
}

// h3StallBody bounds the wait for each part of a request body (QUIC's idle timeout never comes
// while the client's stack acknowledges). The handler gets the error and answers; the stream ends.
type h3StallBody struct {
	io.ReadCloser
	s       *h3Stall
	stalled error // once stalled, the rest (serveHTTP's drain) is not waited for again
}

func (b *h3StallBody) Read(p []byte) (int, error) {
	if b.stalled != nil {
		return 0, b.stalled
	}
	b.s.d.SetReadDeadline(time.Now().Add(b.s.limit))
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		b.stalled = stallError(err, "sent nothing of its request body", b.s.limit)
		return n, b.stalled
	}
	return n, err
}

// stallError names a deadline's expiry for the log (quic-go's says only "deadline exceeded").
func stallError(err error, what string, limit time.Duration) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("stalled: the client %s for %v: %w", what, limit, err)
	}
	return err
}

func (hc *h3conn) busy(limit *record.ConnLimit, delta int) {
	hc.mu.Lock()
	hc.active += delta
	limit.FastIdle(hc.tc, hc.active == 0)
	hc.mu.Unlock()
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

// Port is the UDP port of the current endpoint (under public.mu, as rebind).
func (h *Side) Port() int { return h.cur.udp.LocalAddr().(*net.UDPAddr).Port }
