// Package h2 is the server's own HTTP/2 (h2 over TLS and h2c).
package h2

// Our own HTTP/2 server (h2 over TLS and h2c). net/http's spent 30–55 µs a request under
// h2load (a goroutine, a header map and a scheduled, separately flushed frame write per stream);
// here one goroutine reads a connection's frames, answers the hot static GETs in place
// (h2hot.go) and writes everything a read brought in with one flush. Every other request runs
// serveHTTP in a goroutine of its own, as under net/http (h2stream.go).

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/net/http2/hpack"

	"clientlab/server/internal/record"
	"clientlab/server/internal/sockets"
)

// frame types and flags (RFC 9113 §6)
const (
	FrameData         = 0x0
	FrameHeaders      = 0x1
	framePriority     = 0x2
	FrameRSTStream    = 0x3
	FrameSettings     = 0x4
	framePushPromise  = 0x5
	framePing         = 0x6
	FrameGoAway       = 0x7
	FrameWindowUpdate = 0x8
	frameContinuation = 0x9

	FlagEndStream  = 0x1
	FlagAck        = 0x1
	FlagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20
)

// error codes
const (
	errCodeNo           = 0x0
	errCodeProtocol     = 0x1
	errCodeInternal     = 0x2
	errCodeFlowControl  = 0x3
	errCodeStreamClosed = 0x5
	errCodeFrameSize    = 0x6
	errCodeRefused      = 0x7
	ErrCodeCancel       = 0x8
	errCodeCompression  = 0x9
)

const (
	h2MaxFrame        = 16384    // the largest frame we read (the protocol's default)
	h2StreamWindow    = 1 << 20  // what a client may send on one stream before we read it
	h2ConnWindow      = 16 << 20 // ... on the whole connection
	MaxStreams        = 250      // concurrent streams a client may open (net/http's default)
	h2MaxHeaderList   = 1 << 20  // as HTTP/1.1's header limit
	h2CreditThreshold = 256 << 10
	h2InitialWindow   = 65535 // the peer's windows until its SETTINGS say otherwise
)

var errH2Closed = errors.New("http2: connection closed")

// h2conn is one HTTP/2 connection.
type h2conn struct {
	limit *record.ConnLimit
	tc    *record.Conn
	nc    net.Conn             // what frames are read from and written to (a *tls.Conn, or tc for h2c)
	tls   *tls.ConnectionState // nil for h2c
	ctx   context.Context      // cancelled when the connection ends
	end   context.CancelFunc

	// reading: only the serve goroutine
	rbuf       []byte
	dec        *hpack.Decoder
	fields     []hpack.HeaderField
	fieldsSize int
	lastStream uint32
	block      []byte // a header block continued in CONTINUATION frames
	blockID    uint32
	blockEnd   bool // its HEADERS frame had END_STREAM

	// writing, flow control and the stream table: under mu
	mu         sync.Mutex
	out        []byte // frames waiting for the next flush
	enc        *hpack.Encoder
	encBuf     bytes.Buffer
	sendWindow int64 // the connection's send window
	initWindow int64 // the peer's initial stream window
	maxFrame   int   // the largest frame the peer takes
	streams    map[uint32]*h2stream
	werr       error // the first failed write: nothing is written after it
	activeSlow int   // streams served by goroutines
	// connection-level bytes received and not yet credited back
	recvUnacked int64
}

// Serve serves a connection that has negotiated h2 (TLS) or sent the h2c preface; it returns
// when the connection is done. limit is the server's cap on open connections.
func Serve(limit *record.ConnLimit, tc *record.Conn, nc net.Conn, state *tls.ConnectionState) {
	ctx, end := context.WithCancel(context.WithValue(context.Background(), record.ConnKey{}, tc))
	c := &h2conn{limit: limit, tc: tc, nc: nc, tls: state, ctx: ctx, end: end,
		rbuf: make([]byte, 0, 4096), sendWindow: h2InitialWindow, initWindow: h2InitialWindow,
		maxFrame: 16384, streams: map[uint32]*h2stream{}}
	c.enc = hpack.NewEncoder(&c.encBuf)
	c.dec = hpack.NewDecoder(4096, c.emit)
	c.dec.SetMaxStringLength(h2MaxHeaderList)
	tc.NoEvents.Store(true)
	// the handshake's or preface's reads are no request's (and pending reads would keep the
	// cap from closing the connection when idle)
	tc.TakeReads()
	defer c.close()
	defer func() {
		if r := recover(); r != nil { // one connection's trouble must not end the server
			fmt.Fprintf(sockets.ServerErrors(), "panic serving HTTP/2 for %s: %v\n", tc.RemoteAddr(), r)
		}
	}()
	limit.FastIdle(tc, true)
	c.serve()
}

// close ends the connection: every stream's handler sees its context cancelled and its writes fail.
func (c *h2conn) close() {
	c.mu.Lock()
	if c.werr == nil {
		c.werr = errH2Closed
	}
	for _, s := range c.streams {
		s.reset(errH2Closed)
	}
	c.mu.Unlock()
	c.end()
	c.limit.FastIdle(c.tc, false)
	c.nc.Close()
}

func (c *h2conn) emit(f hpack.HeaderField) {
	c.fieldsSize += len(f.Name) + len(f.Value) + 32
	if c.fieldsSize <= h2MaxHeaderList {
		c.fields = append(c.fields, f)
	}
}

// serve reads frames until the connection ends. It flushes what the frames it read produced
// once its buffer has no whole frame left, so a read's worth of requests costs one write.
func (c *h2conn) serve() {
	if !c.readPreface() {
		return
	}
	c.mu.Lock()
	// our settings, and a larger connection window than the default 64 KB
	c.out = AppendFrameHeader(c.out, 18, FrameSettings, 0, 0)
	c.out = AppendSetting(c.out, 0x3, MaxStreams)
	c.out = AppendSetting(c.out, 0x4, h2StreamWindow)
	c.out = AppendSetting(c.out, 0x6, h2MaxHeaderList)
	c.out = AppendWindowUpdate(c.out, 0, h2ConnWindow-h2InitialWindow)
	c.flushLocked()
	c.mu.Unlock()
	for {
		// the whole frames in the buffer
		pos := 0
		for len(c.rbuf)-pos >= 9 {
			length := int(c.rbuf[pos])<<16 | int(c.rbuf[pos+1])<<8 | int(c.rbuf[pos+2])
			if length > h2MaxFrame {
				c.goAway(errCodeFrameSize)
				return
			}
			if len(c.rbuf)-pos < 9+length {
				break
			}
			h := c.rbuf[pos : pos+9]
			payload := c.rbuf[pos+9 : pos+9+length]
			pos += 9 + length
			code := c.frame(h[3], h[4], binary.BigEndian.Uint32(h[5:])&0x7fffffff, payload)
			if code >= 0 {
				c.goAway(uint32(code))
				return
			}
		}
		c.rbuf = c.rbuf[:copy(c.rbuf, c.rbuf[pos:])]
		c.mu.Lock()
		err := c.flushLocked()
		if c.activeSlow == 0 && !c.tc.Idle.Load() {
			c.limit.FastIdle(c.tc, true) // between requests: the cap may close it (lock order: c.mu, then the cap's)
		}
		c.mu.Unlock()
		if err != nil {
			return
		}
		c.nc.SetReadDeadline(time.Now().Add(sockets.IdleTimeout))
		if len(c.rbuf) == cap(c.rbuf) {
			// a frame larger than the buffer (4 KB to start with: an idle connection holds little)
			c.rbuf = append(c.rbuf, make([]byte, cap(c.rbuf))...)[:len(c.rbuf)]
		}
		n, err := c.nc.Read(c.rbuf[len(c.rbuf):cap(c.rbuf)])
		c.rbuf = c.rbuf[:len(c.rbuf)+n]
		if err != nil && n == 0 {
			return
		}
		if c.tc.Idle.Load() {
			c.mu.Lock()
			c.limit.FastIdle(c.tc, false) // frames to serve: not to be closed under the cap meanwhile
			c.mu.Unlock()
		}
	}
}

func (c *h2conn) readPreface() bool {
	c.nc.SetReadDeadline(time.Now().Add(sockets.HeaderTimeout))
	buf := c.rbuf[:cap(c.rbuf)]
	n := 0
	for n < len(record.H2Preface) {
		m, err := c.nc.Read(buf[n:])
		n += m
		if !bytes.Equal(buf[:min(n, len(record.H2Preface))], record.H2Preface[:min(n, len(record.H2Preface))]) {
			return false
		}
		if err != nil && n < len(record.H2Preface) {
			return false
		}
	}
	c.rbuf = buf[:copy(buf, buf[len(record.H2Preface):n])]
	return true
}

// frame handles one frame; it returns a connection error code, or -1.
func (c *h2conn) frame(typ, flags byte, id uint32, payload []byte) int {
	if c.block != nil && typ != frameContinuation {
		return errCodeProtocol // a header block must be continued at once
	}
	switch typ {
	case FrameData:
		return c.data(flags, id, payload)
	case FrameHeaders:
		if id == 0 || id%2 == 0 {
			return errCodeProtocol
		}
		body, ok := unpad(flags, payload)
		if !ok {
			return errCodeProtocol
		}
		if flags&flagPriority != 0 {
			if len(body) < 5 {
				return errCodeFrameSize
			}
			body = body[5:]
		}
		if flags&FlagEndHeaders == 0 {
			c.block = append([]byte(nil), body...)
			c.blockID = id
			c.blockEnd = flags&FlagEndStream != 0
			return -1
		}
		return c.headers(id, flags&FlagEndStream != 0, body)
	case frameContinuation:
		if c.block == nil || id != c.blockID {
			return errCodeProtocol
		}
		if len(c.block)+len(payload) > h2MaxHeaderList+h2MaxFrame {
			return errCodeProtocol
		}
		c.block = append(c.block, payload...)
		if flags&FlagEndHeaders == 0 {
			return -1
		}
		block := c.block
		c.block = nil
		return c.headers(id, c.blockEnd, block)
	case framePriority:
		if len(payload) != 5 {
			return errCodeFrameSize
		}
	case FrameRSTStream:
		if len(payload) != 4 || id == 0 {
			return errCodeProtocol
		}
		c.mu.Lock()
		if s := c.streams[id]; s != nil {
			s.reset(errors.New("http2: stream reset by the client"))
			c.dropStreamLocked(s)
		}
		c.mu.Unlock()
	case FrameSettings:
		return c.settings(flags, id, payload)
	case framePushPromise:
		return errCodeProtocol
	case framePing:
		if len(payload) != 8 || id != 0 {
			return errCodeProtocol
		}
		if flags&FlagAck == 0 {
			c.mu.Lock()
			c.out = AppendFrameHeader(c.out, 8, framePing, FlagAck, 0)
			c.out = append(c.out, payload...)
			c.mu.Unlock()
		}
	case FrameGoAway:
		// the client opens no more streams; the ones open finish, then it closes
	case FrameWindowUpdate:
		if len(payload) != 4 {
			return errCodeFrameSize
		}
		inc := int64(binary.BigEndian.Uint32(payload) & 0x7fffffff)
		c.mu.Lock()
		defer c.mu.Unlock()
		if id == 0 {
			if inc == 0 || c.sendWindow+inc > 1<<31-1 {
				return errCodeFlowControl
			}
			c.sendWindow += inc
			c.wakeAllLocked()
		} else if s := c.streams[id]; s != nil {
			if inc == 0 || s.sendWindow+inc > 1<<31-1 {
				c.resetStreamLocked(s, errCodeFlowControl)
			} else {
				s.sendWindow += inc
				s.cond.Broadcast()
			}
		}
	}
	return -1
}

func unpad(flags byte, payload []byte) ([]byte, bool) {
	if flags&flagPadded == 0 {
		return payload, true
	}
	if len(payload) < 1 || int(payload[0]) >= len(payload) {
		return nil, false
	}
	return payload[1 : len(payload)-int(payload[0])], true
}

func (c *h2conn) settings(flags byte, id uint32, payload []byte) int {
	if id != 0 {
		return errCodeProtocol
	}
	if flags&FlagAck != 0 {
		if len(payload) != 0 {
			return errCodeFrameSize
		}
		return -1
	}
	if len(payload)%6 != 0 {
		return errCodeFrameSize
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 0; i < len(payload); i += 6 {
		v := binary.BigEndian.Uint32(payload[i+2:])
		switch binary.BigEndian.Uint16(payload[i:]) {
		case 0x1: // HEADER_TABLE_SIZE: the largest table our encoder may use
			c.enc.SetMaxDynamicTableSizeLimit(v)
		case 0x4: // INITIAL_WINDOW_SIZE: applies to open streams too
			if v > 1<<31-1 {
				return errCodeFlowControl
			}
			delta := int64(v) - c.initWindow
			c.initWindow = int64(v)
			for _, s := range c.streams {
				s.sendWindow += delta
			}
		case 0x5: // MAX_FRAME_SIZE
			if v < 16384 || v > 1<<24-1 {
				return errCodeProtocol
			}
			c.maxFrame = int(v)
		}
	}
	c.out = AppendFrameHeader(c.out, 0, FrameSettings, FlagAck, 0)
	c.wakeAllLocked()
	return -1
}

// data passes a DATA frame to its stream's body; the whole frame counts against the windows.
func (c *h2conn) data(flags byte, id uint32, payload []byte) int {
	if id == 0 {
		return errCodeProtocol
	}
	body, ok := unpad(flags, payload)
	if !ok {
		return errCodeProtocol
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.streams[id]
	if s == nil || s.bodyDone {
		// a stream already answered, reset or unknown: give the connection window back
		c.creditLocked(nil, int64(len(payload)))
		if s == nil && id > c.lastStream {
			return errCodeProtocol
		}
		if s != nil {
			c.resetStreamLocked(s, errCodeStreamClosed)
		}
		return -1
	}
	if int64(len(payload)) > s.recvWindow {
		c.resetStreamLocked(s, errCodeFlowControl)
		c.creditLocked(nil, int64(len(payload)))
		return -1
	}
	s.recvWindow -= int64(len(payload))
	s.pad += int64(len(payload) - len(body)) // padding is credited back when the body is read
	s.in = append(s.in, body...)
	if flags&FlagEndStream != 0 {
		s.bodyDone = true
	}
	s.cond.Broadcast()
	return -1
}

// creditLocked gives n bytes of receive window back, to the connection and (s != nil) the
// stream, in batches: a client never sees its window fall below three quarters.
func (c *h2conn) creditLocked(s *h2stream, n int64) {
	c.recvUnacked += n
	if c.recvUnacked >= h2CreditThreshold {
		c.out = AppendWindowUpdate(c.out, 0, uint32(c.recvUnacked))
		c.recvUnacked = 0
	}
	if s != nil && !s.bodyDone {
		s.recvUnacked += n
		if s.recvUnacked >= h2CreditThreshold {
			c.out = AppendWindowUpdate(c.out, s.id, uint32(s.recvUnacked))
			s.recvWindow += s.recvUnacked
			s.recvUnacked = 0
		}
	}
}

func (c *h2conn) resetStreamLocked(s *h2stream, code uint32) {
	c.out = AppendFrameHeader(c.out, 4, FrameRSTStream, 0, s.id)
	c.out = binary.BigEndian.AppendUint32(c.out, code)
	s.reset(errors.New("http2: stream reset"))
	c.dropStreamLocked(s)
}

func (c *h2conn) dropStreamLocked(s *h2stream) {
	if c.streams[s.id] == s {
		delete(c.streams, s.id)
		if len(s.in) > 0 {
			c.creditLocked(nil, int64(len(s.in)))
			s.in = nil
		}
	}
}

func (c *h2conn) goAway(code uint32) {
	c.mu.Lock()
	c.out = AppendFrameHeader(c.out, 8, FrameGoAway, 0, 0)
	c.out = binary.BigEndian.AppendUint32(c.out, c.lastStream)
	c.out = binary.BigEndian.AppendUint32(c.out, code)
	c.flushLocked()
	c.mu.Unlock()
}

// flushLocked writes the pending frames (with the lock held: frames go out in order).
func (c *h2conn) flushLocked() error {
	if c.werr != nil {
		c.out = c.out[:0]
		return c.werr
	}
	if len(c.out) == 0 {
		return nil
	}
	_, err := c.nc.Write(c.out)
	c.out = c.out[:0]
	if cap(c.out) > 256<<10 {
		c.out = nil // a large answer's buffer is not kept for the connection's life
	}
	if err != nil {
		c.werr = err
		c.wakeAllLocked()
	}
	return err
}

// appendHeaders appends a HEADERS frame (and CONTINUATIONs) carrying the block in c.encBuf.
func (c *h2conn) appendHeadersLocked(id uint32, endStream bool) {
	block := c.encBuf.Bytes()
	var flags byte
	if endStream {
		flags = FlagEndStream
	}
	typ := byte(FrameHeaders)
	for first := true; first || len(block) > 0; first = false {
		k := min(len(block), c.maxFrame)
		f := flags
		if k == len(block) {
			f |= FlagEndHeaders
		}
		c.out = AppendFrameHeader(c.out, k, typ, f, id)
		c.out = append(c.out, block[:k]...)
		block = block[k:]
		typ, flags = frameContinuation, 0
	}
	c.encBuf.Reset()
}

func AppendFrameHeader(out []byte, length int, typ, flags byte, id uint32) []byte {
	return append(out, byte(length>>16), byte(length>>8), byte(length), typ, flags,
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

func AppendSetting(out []byte, id uint16, v uint32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(out, id), v)
}

func AppendWindowUpdate(out []byte, id uint32, inc uint32) []byte {
	out = AppendFrameHeader(out, 4, FrameWindowUpdate, 0, id)
	return binary.BigEndian.AppendUint32(out, inc)
}

// wakeAllLocked wakes every stream waiting for window or body bytes.
func (c *h2conn) wakeAllLocked() {
	for _, s := range c.streams {
		s.cond.Broadcast()
	}
}
