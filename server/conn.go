package main

// Connection accounting: a listener that counts connections (and caps how many are open at
// once), and a conn that counts bytes and remembers when each read happened, so that the
// handler can tell how a request arrived (in how many reads, with which pauses).

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// trackedConn wraps an accepted TCP connection.
type trackedConn struct {
	net.Conn
	raw *rawIO // the socket's own reads and writes (nil: through net.Conn)
	rec *connRecord
	// the trial the connection was accepted in, by id and start (a pointer would keep that
	// trial's whole log alive for as long as the connection lives)
	trialID    uint64
	trialStart time.Time
	carriedIn  atomic.Uint64 // the last later trial in which it carried a request
	onClose    func(*trackedConn)
	closed     atomic.Bool
	idle       atomic.Bool // a hot-path connection waiting for its next request (serveFast)

	// A plain connection's first read tells h2c from HTTP/1.1 (sniffRead); an h2c one is handed
	// to the h2c server with the bytes read so far (pending). Only the goroutine reading the
	// connection touches sniffing and pending.
	sniffing bool
	pending  []byte
	handoff  atomic.Int32 // handoffNone → handoffPending (preface seen) → handoffReleased (the HTTP/1.1 server closed it) → handoffDone

	mu       sync.Mutex
	arrival  arrival     // the reads since the end of the previous request on this connection
	reaping  bool        // closed by the cap while idle: bytes read from now on are dropped
	noEvents atomic.Bool // HTTP/2: reads carry frames of many streams, not worth recording
}

const (
	handoffNone = iota
	handoffPending
	handoffReleased
	handoffDone
)

func (c *trackedConn) Read(p []byte) (int, error) {
	if c.pending != nil {
		n := copy(p, c.pending)
		if c.pending = c.pending[n:]; len(c.pending) == 0 {
			c.pending = nil
		}
		return n, nil
	}
	if c.sniffing {
		return c.sniffRead(p)
	}
	return c.read(p)
}

// read reads the socket and records the read for the current request.
func (c *trackedConn) read(p []byte) (n int, err error) {
	if c.raw != nil {
		n, err = c.raw.read(p)
	} else {
		n, err = c.Conn.Read(p)
	}
	if n > 0 {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.reaping {
			// A request that raced the cap's close is lost, as on any server that closes an idle
			// connection: the client must send it again, and the handler never counts it.
			return 0, net.ErrClosed
		}
		c.rec.bytesIn.Add(int64(n))
		if !c.noEvents.Load() {
			c.arrival.add(time.Now())
		}
	}
	return n, err
}

// reap closes an idle connection to make room under the cap, unless a request has started
// to arrive on it; it reports whether it closed it.
func (c *trackedConn) reap() bool {
	c.mu.Lock()
	if c.arrival.reads > 0 {
		c.mu.Unlock()
		return false
	}
	c.reaping = true
	c.mu.Unlock()
	c.Conn.Close() // the server's own reader sees it and closes the tracked connection: a slot frees
	return true
}

func (c *trackedConn) Write(p []byte) (n int, err error) {
	if c.raw != nil {
		n, err = c.raw.write(p)
	} else {
		n, err = c.Conn.Write(p)
	}
	c.rec.bytesOut.Add(int64(n))
	return n, err
}

// writeAnswer writes an answer's head and body (in one system call where it can: rawIO.writev).
func (c *trackedConn) writeAnswer(head, body []byte) (n int, err error) {
	if c.raw != nil {
		n, err = c.raw.writev(head, body)
	} else {
		var wrote int64
		bufs := net.Buffers{head, body}
		wrote, err = bufs.WriteTo(c.Conn)
		n = int(wrote)
	}
	c.rec.bytesOut.Add(int64(n))
	return n, err
}

func (c *trackedConn) Close() error {
	if c.handoff.CompareAndSwap(handoffPending, handoffReleased) {
		// the HTTP/1.1 server lets go of a connection that sent the h2c preface: its StateClosed
		// hook, which follows, hands it to the h2c server (after, so that the hooks stay in order)
		return nil
	}
	if c.closed.CompareAndSwap(false, true) {
		c.rec.closed.Store(time.Since(c.trialStart).Nanoseconds())
		if c.onClose != nil {
			c.onClose(c)
		}
	}
	return c.Conn.Close()
}

// arrival summarises the reads that carried one request, kept as running figures so that
// memory does not grow with the number of reads (a 1-byte-per-read client costs nothing).
type arrival struct {
	reads       int
	first, last time.Time
	maxGap      time.Duration
}

func (a *arrival) add(at time.Time) {
	if a.reads == 0 {
		a.first = at
	} else {
		a.maxGap = max(a.maxGap, at.Sub(a.last))
	}
	a.last = at
	a.reads++
}

// takeReads summarises the reads recorded since the last call and starts anew (once per request).
func (c *trackedConn) takeReads() arrival {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.arrival
	c.arrival = arrival{}
	return a
}

// peekReadCount is how many reads are recorded so far for the current request.
func (c *trackedConn) peekReadCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.arrival.reads
}

// connLimit caps the number of open client connections; 0 means no cap. Connections over the
// cap are not served: they wait, as in a full server's backlog. To make
// room, the server closes an idle keep-alive connection first (as nginx does when it runs out of
// connections), so a client that opens more connections than the cap waits instead of hanging.
type connLimit struct {
	mu     sync.Mutex
	cond   *sync.Cond
	limit  int
	capped atomic.Bool // limit > 0
	active int
	peak   int // most connections open at once since the cap was last set
	idle   map[*trackedConn]struct{}
	conns  map[*trackedConn]struct{} // every accepted connection not closed yet
}

func newConnLimit(limit int) *connLimit {
	l := &connLimit{limit: limit, idle: map[*trackedConn]struct{}{}, conns: map[*trackedConn]struct{}{}}
	l.capped.Store(limit > 0)
	l.cond = sync.NewCond(&l.mu)
	return l
}

// acquire takes a slot for the next accepted connection; the current trial records how long it
// waited and how many idle connections were closed for it. It reports whether it waited.
func (l *connLimit) acquire() bool {
	l.mu.Lock()
	var started time.Time
	reaped := 0
	for l.limit > 0 && l.active >= l.limit {
		if started.IsZero() {
			started = time.Now()
		}
		for c := range l.idle {
			delete(l.idle, c)
			if c.reap() {
				reaped++
				break
			}
		}
		l.cond.Wait()
	}
	l.active++
	l.peak = max(l.peak, l.active)
	l.mu.Unlock()
	if !started.IsZero() {
		current.Load().capWaited(time.Since(started), reaped)
	}
	return !started.IsZero()
}

// setIdle follows net/http's connection states: only idle keep-alive connections may be closed.
func (l *connLimit) setIdle(c *trackedConn, idle bool) {
	if c == nil {
		return
	}
	l.mu.Lock()
	if idle {
		l.idle[c] = struct{}{}
		l.cond.Broadcast() // a waiting connection may take this one's place
	} else {
		delete(l.idle, c)
	}
	l.mu.Unlock()
}

// track registers an accepted connection (its slot was taken by acquire).
func (l *connLimit) track(c *trackedConn) {
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
}

// release frees the slot of a connection that closed.
func (l *connLimit) release(c *trackedConn) {
	l.mu.Lock()
	l.active--
	delete(l.conns, c)
	delete(l.idle, c)
	l.mu.Unlock()
	l.cond.Broadcast()
}

// openConns lists the connections open now.
func (l *connLimit) openConns() []*trackedConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	conns := make([]*trackedConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	return conns
}

// newTrial starts the peak count again from the connections open now.
func (l *connLimit) newTrial() {
	l.mu.Lock()
	l.peak = l.active
	l.mu.Unlock()
}

func (l *connLimit) state() (limit, peak int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit, l.peak
}

func (l *connLimit) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active
}

func (l *connLimit) set(limit int) {
	l.mu.Lock()
	l.limit = limit
	l.capped.Store(limit > 0)
	l.peak = l.active
	if limit > 0 {
		for c := range l.conns {
			if c.idle.Load() { // a hot-path connection between requests (serveFast)
				l.idle[c] = struct{}{}
			}
		}
	}
	l.mu.Unlock()
	l.cond.Broadcast()
}

// tracked finds our connection under whatever net/http hands to ConnContext.
func tracked(c net.Conn) *trackedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	t, _ := c.(*trackedConn)
	return t
}

// -- the hot path's and HTTP/2's bookkeeping ---------------------------------------------------

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

// -- telling h2c from HTTP/1.1 ----------------------------------------------------------------

// h2Preface opens every HTTP/2 connection with prior knowledge (h2c).
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

func (queueAddr) String() string { return "public" }

// -- what every path shares ------------------------------------------------------------------

// ctxKey finds a request's connection (*trackedConn) in its context.
type ctxKey struct{}

// recordDigests: every answer's body digest is logged (verification passes; control /config).
var recordDigests atomic.Bool

// altSvc is the Alt-Svc value the TLS port's answers carry (`h3=":PORT"`), nil without HTTP/3.
var altSvc atomic.Pointer[string]

// connCap is the running server's cap on open connections (the counters report it).
var connCap *connLimit
