package faults

// The dark port: a listening socket whose accept queue is full and never drained, so that a
// client's SYN goes unanswered and its connect waits (docs/behaviour.md, connect-deadline).
// Linux drops a SYN to a listener whose accept queue is full (tcp_conn_request counts it as a
// ListenOverflow) and sends nothing back, so the client sees what a black-holed address shows it:
// SYN, SYN again after 1 s, 3 s, ... until its own timeout. listen(2) with a backlog of 0 admits
// one connection to the queue; the server fills it itself, at start, and never accepts.

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"clientlab/server/internal/sockets"
)

type darkOrigin struct {
	L    net.Listener
	mu   sync.Mutex
	fill []net.Conn // the connections that fill the queue, held until close
}

func openDark(addr netip.Addr) (*darkOrigin, error) {
	l, err := sockets.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s for the dark port: %w", addr, err)
	}
	raw, err := l.(*net.TCPListener).SyscallConn()
	if err == nil {
		var lerr error
		if err = raw.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), 0) }); err == nil {
			err = lerr
		}
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("the dark port's backlog of 0: %w", err)
	}
	d := &darkOrigin{L: l}
	// the one connection the queue takes: a loopback handshake, done before the port is named
	if err := d.fillOne(time.Second); err != nil {
		l.Close()
		return nil, fmt.Errorf("cannot fill the dark port's accept queue: %w", err)
	}
	return d, nil
}

// fillOne opens one more connection to the port; an error once the queue is full (the SYN is
// dropped and the dial times out).
func (d *darkOrigin) fillOne(timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", d.L.Addr().String(), timeout)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.fill = append(d.fill, c)
	d.mu.Unlock()
	return nil
}

func (d *darkOrigin) Port() int { return sockets.Port(d.L) }

func (d *darkOrigin) close() {
	d.L.Close()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.fill {
		c.Close()
	}
	d.fill = nil
}
