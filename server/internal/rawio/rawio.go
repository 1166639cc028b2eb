// Package rawio reads and writes sockets with raw system calls (the HTTP/1.1 hot path's).
package rawio

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Conn reads and writes a connection's non-blocking socket with raw system calls, waiting in the
// runtime's netpoller only when the socket would block.
//
// Why: Go's system-call wrappers tell the scheduler of every call (entersyscall), and the first
// such call after the process went idle wakes the runtime's monitor thread (sysmon) from its deep
// sleep and sets it polling every 20 µs for the next millisecond. A sequential client that sends a
// request every few hundred microseconds therefore kept sysmon polling all the time: on the core the
// client shares with the server (shared placement) each poll preempts the client. Measured on a
// 2-core VM with a 0.36 ms/request client: 25 µs of server CPU per request, against 7 µs for a
// client that never lets the server idle. A raw read or write of a ready socket cannot block, so
// the scheduler does not need to know of it.
type Conn struct {
	rc syscall.RawConn
}

// New is nil where the connection has no socket of its own (tests' pipes).
func New(c net.Conn) *Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return &Conn{rc: rc}
}

func (r *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			got, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait for readiness (and the read deadline) in the netpoller
			case 0:
				n = int(got)
			default:
				errno = e // got is -1 here: nothing was read
			}
			return true
		}
	})
	return n, ioResult(n, errno, err, true)
}

func (r *Conn) Write(p []byte) (int, error) { return r.Writev(p, nil) }

// WaitReadable returns once the socket may have something to read (a request, EOF or an error;
// the read that follows tells which), or when the read deadline passes. An idle connection waits
// here without holding a read buffer.
//
// It looks once (a peek: the netpoller forgets readiness older than this call, so only a look
// can tell), and after a wait for readiness returns without a second look: the read that follows
// looks anyway, and one that finds nothing (a wake-up for data already read) waits in the
// netpoller as any read does. One system call a request fewer for a client that sends its next
// request after our answer.
func (r *Conn) WaitReadable() error {
	var b [1]byte
	looked := false
	return r.rc.Read(func(fd uintptr) bool {
		if looked {
			return true // woken by readiness
		}
		looked = true
		for {
			_, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
				syscall.MSG_PEEK, 0, 0)
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			return true
		}
	})
}

// Writev writes head then body, both in one system call where the socket's buffer takes them:
// a client's first read finds the head and the start of the body together, as nginx and
// net/http (through its 4 KB buffer) send an answer. Two writes would wake the client twice.
func (r *Conn) Writev(head, body []byte) (int, error) {
	var n int
	var errno syscall.Errno
	total := len(head) + len(body)
	err := r.rc.Write(func(fd uintptr) bool {
		for n < total {
			var iov [2]syscall.Iovec
			k := 0
			for _, rest := range [2][]byte{head[min(n, len(head)):], body[max(0, n-len(head)):]} {
				if len(rest) > 0 {
					iov[k].Base = &rest[0]
					iov[k].SetLen(len(rest))
					k++
				}
			}
			wrote, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(k))
			switch e {
			case 0:
				n += int(wrote)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	return n, ioResult(n, errno, err, false)
}

// ioResult is what net.Conn's Read and Write return for the same outcome.
func ioResult(n int, errno syscall.Errno, waitErr error, reading bool) error {
	switch {
	case waitErr != nil:
		return waitErr // closed, or past the deadline (os.ErrDeadlineExceeded)
	case errno != 0:
		op := "write"
		if reading {
			op = "read"
		}
		return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
	case reading && n == 0:
		return io.EOF
	}
	return nil
}
