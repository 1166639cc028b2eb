package sockets

// The listening sockets' settings: the accept queue, and the stall limit that accepted sockets
// inherit. Go's net package reads net.core.somaxconn once per process (at the first listen) and
// uses that backlog for every later listener; the lab raises somaxconn for connection-heavy cells
// after the server started, so listeners opened by a rebind would keep the old, smaller queue and
// SYNs overflow it (clients retry after 1 s, 3 s).

import (
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// stallLimitMs: a client that takes nothing of an answer for this long — its receive window
// stays shut — loses its connection, as one that sends nothing of its request does
// (headerTimeout). Without it, a client that stopped reading held a goroutine, the answer's
// buffers and (HTTP/2) its connection's lock for ever. The kernel keeps the limit
// (TCP_USER_TIMEOUT also bounds zero-window probing): no timer on the write path, and a slow link
// that takes a few bytes now and then reopens the window and is never cut. It is set on the
// listening socket, which every accepted socket inherits it from: no system call per connection.
var stallLimitMs atomic.Int64

func init() { stallLimitMs.Store((60 * time.Second).Milliseconds()) }

// StallLimit is how long a client may take nothing of an answer before it loses its connection.
func StallLimit() time.Duration { return time.Duration(stallLimitMs.Load()) * time.Millisecond }

// SetStallLimit gives the listening sockets opened from now on, and so the connections they
// accept, the stall limit d (whole ms); it returns the limit before.
func SetStallLimit(d time.Duration) time.Duration {
	return time.Duration(stallLimitMs.Swap(d.Milliseconds())) * time.Millisecond
}

const tcpUserTimeout = 0x12 // TCP_USER_TIMEOUT (linux/tcp.h; not in package syscall)

// maxBacklog is the largest backlog listen(2) takes; Linux clamps it to somaxconn as it is now.
const maxBacklog = 65535

// tuneListener calls listen(2) again on a listening socket (Linux accepts that and sets the
// accept queue's length anew from the current somaxconn) and sets the stall limit that the
// socket's accepted connections inherit.
func tuneListener(l net.Listener) error {
	tl, ok := l.(*net.TCPListener)
	if !ok {
		return nil
	}
	raw, err := tl.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := raw.Control(func(fd uintptr) {
		if lerr = syscall.Listen(int(fd), maxBacklog); lerr == nil {
			lerr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, int(stallLimitMs.Load()))
		}
	}); err != nil {
		return err
	}
	return lerr
}
