package main

// Connection accounting: a listener that counts connections (and caps how many are open at
// once), and a conn that counts bytes and remembers when each read happened, so that the
// handler can tell how a request arrived (in how many reads, with which pauses).

import (
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

type readEvent struct {
	at time.Time
	n  int
}

// trackedConn wraps an accepted TCP connection.
type trackedConn struct {
	net.Conn
	rec     *connRecord
	trial   *trial
	onClose func()
	closed  atomic.Bool

	mu       sync.Mutex
	reads    []readEvent // reads since the end of the previous request on this connection
	reaping  bool        // closed by the cap while idle: bytes read from now on are dropped
	noEvents atomic.Bool // HTTP/2: reads carry frames of many streams, not worth recording
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
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
			c.reads = append(c.reads, readEvent{time.Now(), n})
		}
	}
	return n, err
}

// reap closes an idle connection to make room under the cap, unless a request has started
// to arrive on it; it reports whether it closed it.
func (c *trackedConn) reap() bool {
	c.mu.Lock()
	if len(c.reads) > 0 {
		c.mu.Unlock()
		return false
	}
	c.reaping = true
	c.mu.Unlock()
	c.Conn.Close() // the server's own reader sees it and closes the tracked connection: a slot frees
	return true
}

func (c *trackedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.rec.bytesOut.Add(int64(n))
	return n, err
}

func (c *trackedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.rec.closed.Store(c.trial.since(time.Now()))
		if c.onClose != nil {
			c.onClose()
		}
	}
	return c.Conn.Close()
}

// arrival summarises the reads that carried one request.
type arrival struct {
	reads       int
	first, last time.Time
	maxGap      time.Duration
}

// takeReads summarises the reads recorded since the last call and starts a new list
// (reusing its memory: this runs once per request).
func (c *trackedConn) takeReads() arrival {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := arrival{reads: len(c.reads)}
	if a.reads > 0 {
		a.first, a.last = c.reads[0].at, c.reads[a.reads-1].at
		for i := 1; i < a.reads; i++ {
			a.maxGap = max(a.maxGap, c.reads[i].at.Sub(c.reads[i-1].at))
		}
	}
	c.reads = c.reads[:0]
	return a
}

// peekReadCount is how many reads are recorded so far for the current request.
func (c *trackedConn) peekReadCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.reads)
}

// connLimit caps the number of open client connections; 0 means no cap. Connections over the
// cap are not served: they wait, as in a full server's backlog. To make
// room, the server closes an idle keep-alive connection first (as nginx does when it runs out of
// connections), so a client that opens more connections than the cap waits instead of hanging.
type connLimit struct {
	mu     sync.Mutex
	cond   *sync.Cond
	limit  int
	active int
	peak   int // most connections open at once since the cap was last set
	idle   map[*trackedConn]struct{}
}

func newConnLimit(limit int) *connLimit {
	l := &connLimit{limit: limit, idle: map[*trackedConn]struct{}{}}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// acquire takes a slot for the next accepted connection; the current trial records how long it
// waited and how many idle connections were closed for it.
func (l *connLimit) acquire() {
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

func (l *connLimit) release() {
	l.mu.Lock()
	l.active--
	l.mu.Unlock()
	l.cond.Broadcast()
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
	l.peak = l.active
	l.mu.Unlock()
	l.cond.Broadcast()
}

// trackingListener accepts connections into the current trial; with tlsConfig set it returns
// *tls.Conn (so net/http negotiates h2 by ALPN) over the tracked connection.
type trackingListener struct {
	net.Listener
	limit     *connLimit
	tlsConfig func() *tls.Config
}

func (l *trackingListener) Accept() (net.Conn, error) {
	raw, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	// over the cap, the connection waits here unserved, as it would in a full server's backlog
	l.limit.acquire()
	t := current.Load()
	tc := &trackedConn{Conn: raw, trial: t, rec: t.addConn(l.tlsConfig != nil), onClose: l.limit.release}
	if l.tlsConfig == nil {
		return tc, nil
	}
	cfg := l.tlsConfig()
	// VerifyConnection runs after every handshake, full or resumed, on the server side too.
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		tc.rec.resumed.Store(cs.DidResume)
		if cs.NegotiatedProtocol == "h2" {
			tc.rec.proto.Store("h2")
			tc.noEvents.Store(true)
		}
		t.handshake(cs.DidResume)
		return nil
	}
	return tls.Server(tc, cfg), nil
}

// tracked finds our connection under whatever net/http hands to ConnContext.
func tracked(c net.Conn) *trackedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	t, _ := c.(*trackedConn)
	return t
}
