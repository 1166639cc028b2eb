package main

// The public listeners' accept queue. Go's net package reads net.core.somaxconn once per
// process (at the first listen) and uses that backlog for every later listener; the lab raises
// somaxconn for connection-heavy cells after the server started, so listeners opened by a
// rebind would keep the old, smaller queue and SYNs overflow it (clients retry after 1 s, 3 s).

import (
	"net"
	"syscall"
)

// maxBacklog is the largest backlog listen(2) takes; Linux clamps it to somaxconn as it is now.
const maxBacklog = 65535

// widenBacklog calls listen(2) again on a listening socket: Linux accepts that and sets the
// accept queue's length anew from the current somaxconn.
func widenBacklog(l net.Listener) error {
	tl, ok := l.(*net.TCPListener)
	if !ok {
		return nil
	}
	raw, err := tl.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := raw.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), maxBacklog) }); err != nil {
		return err
	}
	return lerr
}
