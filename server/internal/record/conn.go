package record

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

	"clientlab/server/internal/rawio"
)

// Conn wraps an accepted TCP connection.
type Conn struct {
	net.Conn
	Raw *rawio.Conn // the socket's own reads and writes (nil: through net.Conn)
	Rec *ConnRecord
	// the trial the connection was accepted in, by id and start (a pointer would keep that
	// trial's whole log alive for as long as the connection lives)
	TrialID    uint64
	TrialStart time.Time
	carriedIn  atomic.Uint64 // the last later trial in which it carried a request
	OnClose    func(*Conn)
	closed     atomic.Bool
	Idle       atomic.Bool // a hot-path connection waiting for its next request (serveFast)

	// A plain connection's first read tells h2c from HTTP/1.1 (sniffRead); an h2c one is handed
	// to the h2c server with the bytes read so far (pending). Only the goroutine reading the
	// connection touches sniffing and pending.
	Sniffing bool
	Pending  []byte
	Handoff  atomic.Int32 // handoffNone → handoffPending (preface seen) → handoffReleased (the HTTP/1.1 server closed it) → handoffDone

	mu       sync.Mutex
	arrival  arrival     // the reads since the end of the previous request on this connection
	reaping  bool        // closed by the cap while idle: bytes read from now on are dropped
	NoEvents atomic.Bool // HTTP/2: reads carry frames of many streams, not worth recording
}

const (
	handoffNone = iota
	handoffPending
	HandoffReleased
	HandoffDone
)

func (c *Conn) Read(p []byte) (int, error) {
	if c.Pending != nil {
		n := copy(p, c.Pending)
		if c.Pending = c.Pending[n:]; len(c.Pending) == 0 {
			c.Pending = nil
		}
		return n, nil
	}
	if c.Sniffing {
		return c.sniffRead(p)
	}
	return c.ReadSocket(p)
}

// ReadSocket reads the socket and records the read for the current request.
func (c *Conn) ReadSocket(p []byte) (n int, err error) {
	if c.Raw != nil {
		n, err = c.Raw.Read(p)
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
		c.Rec.bytesIn.Add(int64(n))
		if !c.NoEvents.Load() {
			c.arrival.add(time.Now())
		}
	}
	return n, err
}

// reap closes an idle connection to make room under the cap, unless a request has started
// to arrive on it; it reports whether it closed it.
func (c *Conn) reap() bool {
	c.mu.Lock()
	if c.arrival.Reads > 0 {
		c.mu.Unlock()
		return false
	}
	c.reaping = true
	c.mu.Unlock()
	c.Conn.Close() // the server's own reader sees it and closes the tracked connection: a slot frees
	return true
}

func (c *Conn) Write(p []byte) (n int, err error) {
	if c.Raw != nil {
		n, err = c.Raw.Write(p)
	} else {
		n, err = c.Conn.Write(p)
	}
	c.Rec.bytesOut.Add(int64(n))
	return n, err
}

// WriteAnswer writes an answer's head and body (in one system call where it can: rawIO.writev).
func (c *Conn) WriteAnswer(head, body []byte) (n int, err error) {
	if c.Raw != nil {
		n, err = c.Raw.Writev(head, body)
	} else {
		var wrote int64
		bufs := net.Buffers{head, body}
		wrote, err = bufs.WriteTo(c.Conn)
		n = int(wrote)
	}
	c.Rec.bytesOut.Add(int64(n))
	return n, err
}

func (c *Conn) Close() error {
	if c.Handoff.CompareAndSwap(handoffPending, HandoffReleased) {
		// the HTTP/1.1 server lets go of a connection that sent the h2c preface: its StateClosed
		// hook, which follows, hands it to the h2c server (after, so that the hooks stay in order)
		return nil
	}
	if c.closed.CompareAndSwap(false, true) {
		c.Rec.closed.Store(time.Since(c.TrialStart).Nanoseconds())
		if c.OnClose != nil {
			c.OnClose(c)
		}
	}
	return c.Conn.Close()
}

// arrival summarises the reads that carried one request, kept as running figures so that
// memory does not grow with the number of reads (a 1-byte-per-read client costs nothing).
type arrival struct {
	Reads       int
	First, Last time.Time
	MaxGap      time.Duration
}

func (a *arrival) add(at time.Time) {
	if a.Reads == 0 {
		a.First = at
	} else {
		a.MaxGap = max(a.MaxGap, at.Sub(a.Last))
	}
	a.Last = at
	a.Reads++
}

// TakeReads summarises the reads recorded since the last call and starts anew (once per request).
func (c *Conn) TakeReads() arrival {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.arrival
	c.arrival = arrival{}
	return a
}

// PeekReadCount is how many reads are recorded so far for the current request.
func (c *Conn) PeekReadCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.arrival.Reads
}

// ConnLimit caps the number of open client connections; 0 means no cap. Connections over the
// cap are not served: they wait, as in a full server's backlog. To make
// room, the server closes an idle keep-alive connection first (as nginx does when it runs out of
// connections), so a client that opens more connections than the cap waits instead of hanging.
type ConnLimit struct {
	mu     sync.Mutex
	cond   *sync.Cond
	limit  int
	capped atomic.Bool // limit > 0
	active int
	peak   int // most connections open at once since the cap was last set
	idle   map[*Conn]struct{}
	conns  map[*Conn]struct{} // every accepted connection not closed yet
}

func NewConnLimit(limit int) *ConnLimit {
	l := &ConnLimit{limit: limit, idle: map[*Conn]struct{}{}, conns: map[*Conn]struct{}{}}
	l.capped.Store(limit > 0)
	l.cond = sync.NewCond(&l.mu)
	return l
}

// Acquire takes a slot for the next accepted connection; the current trial records how long it
// waited and how many idle connections were closed for it. It reports whether it waited.
func (l *ConnLimit) Acquire() bool {
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
		Current().capWaited(time.Since(started), reaped)
	}
	return !started.IsZero()
}

// SetIdle follows net/http's connection states: only idle keep-alive connections may be closed.
func (l *ConnLimit) SetIdle(c *Conn, idle bool) {
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

// Track registers an accepted connection (its slot was taken by acquire).
func (l *ConnLimit) Track(c *Conn) {
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
}

// Release frees the slot of a connection that closed.
func (l *ConnLimit) Release(c *Conn) {
	l.mu.Lock()
	l.active--
	delete(l.conns, c)
	delete(l.idle, c)
	l.mu.Unlock()
	l.cond.Broadcast()
}

// OpenConns lists the connections open now.
func (l *ConnLimit) OpenConns() []*Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	conns := make([]*Conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	return conns
}

// NewTrial starts the peak count again from the connections open now.
func (l *ConnLimit) NewTrial() {
	l.mu.Lock()
	l.peak = l.active
	l.mu.Unlock()
}

func (l *ConnLimit) State() (limit, peak int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit, l.peak
}

func (l *ConnLimit) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active
}

func (l *ConnLimit) Set(limit int) {
	l.mu.Lock()
	l.limit = limit
	l.capped.Store(limit > 0)
	l.peak = l.active
	if limit > 0 {
		for c := range l.conns {
			if c.Idle.Load() { // a hot-path connection between requests (serveFast)
				l.idle[c] = struct{}{}
			}
		}
	}
	l.mu.Unlock()
	l.cond.Broadcast()
}

// Tracked finds our connection under whatever net/http hands to ConnContext.
func Tracked(c net.Conn) *Conn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	t, _ := c.(*Conn)
	return t
}

// -- the hot path's and HTTP/2's bookkeeping ---------------------------------------------------

// Limited reports whether a cap on open connections is set.
func (l *ConnLimit) Limited() bool { return l.capped.Load() }

// FastIdle follows a hot-path connection between requests: only idle keep-alive connections
// may be closed under the cap. Without a cap it costs one atomic store; set (the cap) finds the
// connections idle at that moment by their flag.
func (l *ConnLimit) FastIdle(c *Conn, idle bool) {
	c.Idle.Store(idle)
	if l.capped.Load() {
		l.SetIdle(c, idle)
	}
}

// FirstRead is the instant of the current request's first read.
func (c *Conn) FirstRead() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.arrival.Reads == 0 {
		return time.Now()
	}
	return c.arrival.First
}

// -- telling h2c from HTTP/1.1 ----------------------------------------------------------------

// H2Preface opens every HTTP/2 connection with prior knowledge (h2c).
var H2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// sniffRead is a plain connection's first read, by the HTTP/1.1 server: it returns as soon as
// the bytes differ from the HTTP/2 preface (HTTP/1.x, however short the request: net/http's
// own check waited for 14, then 24 bytes, so a shorter request got no answer), and reads on
// while they match. A whole preface makes the connection h2c: the HTTP/1.1 server reads EOF
// and closes it, and its closing hook hands it, with the bytes read, to the h2c server.
func (c *Conn) sniffRead(p []byte) (int, error) {
	c.Sniffing = false
	n := 0
	for {
		m, err := c.ReadSocket(p[n:])
		n += m
		k := min(n, len(H2Preface))
		if !bytes.Equal(p[:k], H2Preface[:k]) || err != nil && n < len(H2Preface) {
			return n, err
		}
		// a whole preface is h2c even when the first read filled the buffer (a POST's first
		// write with its body: checked before the length, or it was answered as HTTP/1.1)
		if n >= len(H2Preface) {
			c.Pending = bytes.Clone(p[:n])
			c.Rec.Proto.Store("h2c")
			c.NoEvents.Store(true)
			c.Handoff.Store(handoffPending)
			return 0, io.EOF
		}
		if n == len(p) {
			return n, err // a buffer shorter than the preface (net/http's is 4 KB)
		}
	}
}

// -- in-process listeners ---------------------------------------------------------------------

// ConnQueue is a net.Listener fed by our accept loops.
type ConnQueue struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func NewConnQueue() *ConnQueue {
	return &ConnQueue{ch: make(chan net.Conn, 256), done: make(chan struct{})}
}

func (q *ConnQueue) Push(c net.Conn) {
	select {
	case q.ch <- c:
	case <-q.done:
		c.Close()
	}
}

func (q *ConnQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ch:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *ConnQueue) Close() error {
	q.once.Do(func() { close(q.done) })
	return nil
}

func (q *ConnQueue) Addr() net.Addr { return queueAddr{} }

type queueAddr struct{}

func (queueAddr) Network() string { return "clientlab" }

func (queueAddr) String() string { return "public" }

// -- what every path shares ------------------------------------------------------------------

// ConnKey finds a request's connection (*trackedConn) in its context.
type ConnKey struct{}

// recordDigests: every answer's body digest is logged (verification passes; control /config).
var recordDigests atomic.Bool

// RecordDigests says whether every answer's body digest is logged.
func RecordDigests() bool { return recordDigests.Load() }

// SetRecordDigests has every answer's body digest logged, or not.
func SetRecordDigests(on bool) { recordDigests.Store(on) }

// altSvc is the Alt-Svc value the TLS port's answers carry (`h3=":PORT"`), nil without HTTP/3.
var altSvc atomic.Pointer[string]

// AltSvc is the Alt-Svc value the TLS port's answers carry; nil without HTTP/3.
func AltSvc() *string { return altSvc.Load() }

// SetAltSvc makes v the Alt-Svc value answers carry (nil: none); it returns the one before.
func SetAltSvc(v *string) *string { return altSvc.Swap(v) }

// connCap is the running server's cap on open connections (the counters report it).
var connCap atomic.Pointer[ConnLimit]

// Cap is the running server's cap on open connections; nil before the server starts.
func Cap() *ConnLimit { return connCap.Load() }

// SetCap makes l the cap the counters report.
func SetCap(l *ConnLimit) { connCap.Store(l) }
