// Package sockets says where the server may listen and opens its listening sockets.
package sockets

// Where the server may listen and how its sockets are opened: the allowed addresses, the one
// client a --serve-only server serves, and the timeouts every public connection keeps.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// labPrefixes are the network lab's two subnets (clientlab/netlab/namespaces.py): the client/server
// link 10.77.0.0/24 and the lab's control link 10.77.9.0/24. Nothing else but loopback.
var labPrefixes = []netip.Prefix{netip.MustParsePrefix("10.77.0.0/24"), netip.MustParsePrefix("10.77.9.0/24")}

func allowedAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	if a.IsLoopback() { // 127.0.0.0/8 and ::1
		return true
	}
	for _, p := range labPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

const AllowedText = "loopback (127.0.0.0/8, ::1) or the network lab's own subnets (10.77.0.0/24, 10.77.9.0/24)"

// ListenAddr checks a --listen / --control-listen value and returns the address to bind. A host
// name is accepted only when every address it resolves to is allowed; the first one is bound.
func ListenAddr(flagName, value string) (netip.Addr, error) {
	if value == "" {
		return netip.Addr{}, fmt.Errorf("%s is empty (that would mean every interface): give an address, %s", flagName, AllowedText)
	}
	if a, err := netip.ParseAddr(value); err == nil {
		if !allowedAddr(a) {
			return netip.Addr{}, fmt.Errorf("%s %s refused: the bench server listens only on %s", flagName, value, AllowedText)
		}
		return a.Unmap(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", value)
	if err != nil || len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("%s %s: not an address, and it does not resolve (%v)", flagName, value, err)
	}
	for _, a := range addrs {
		if !allowedAddr(a) {
			return netip.Addr{}, fmt.Errorf("%s %s refused: it resolves to %s; the bench server listens only on %s", flagName, value, a, AllowedText)
		}
	}
	return addrs[0].Unmap(), nil
}

// serveOnly, when set (--serve-only), is the one client address the public ports serve: the
// bench server on a host of its own listens on an address others can reach, and closes every
// connection from anyone but the lab host at once. Every accept reads it.
var serveOnly atomic.Pointer[netip.Addr]

// SetServeOnly makes a the one client address the public ports serve (the zero Addr: every
// client may connect); it returns the one before.
func SetServeOnly(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if before := serveOnly.Swap(&a); before != nil {
		return *before
	}
	return netip.Addr{}
}

// ServeOnly is the one client address the public ports serve; not valid where they serve every
// client.
func ServeOnly() netip.Addr {
	if a := serveOnly.Load(); a != nil {
		return *a
	}
	return netip.Addr{}
}

// AnyOneAddr checks --listen when --serve-only guards the ports: one specific address of this
// host, never "every interface".
func AnyOneAddr(flagName, value string) (netip.Addr, error) {
	a, err := netip.ParseAddr(value)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%s %s: with --serve-only, give this host's address the lab host reaches", flagName, value)
	}
	if a = a.Unmap(); a.IsUnspecified() || a.IsMulticast() {
		return netip.Addr{}, fmt.Errorf("%s %s refused: give one address of this host, not every interface", flagName, value)
	}
	return a, nil
}

// PeerServed says whether a public connection may be served: always, unless --serve-only names
// another client.
func PeerServed(c net.Conn) bool { return AddrServed(c.RemoteAddr()) }

// AddrServed is peerServed for a peer's address (a QUIC connection's, too).
func AddrServed(remote net.Addr) bool {
	only := ServeOnly()
	if !only.IsValid() {
		return true
	}
	peer, err := netip.ParseAddrPort(remote.String())
	return err == nil && peer.Addr().Unmap() == only
}

// Listen opens a plain TCP listener (Go would make it MPTCP, which no client here asks for; its
// sockets refuse TCP_USER_TIMEOUT, see stallLimit) on a port the kernel picks.
func Listen(a netip.Addr) (net.Listener, error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	l, err := lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(a, 0).String())
	if err != nil {
		return nil, err
	}
	if err := tuneListener(l); err != nil { // the backlog somaxconn allows now, not at startup
		l.Close()
		return nil, fmt.Errorf("listening socket: %w", err)
	}
	return l, nil
}

// serverErrors receives net/http's error log and the panics the servers recover (bad requests,
// hang-ups): nowhere, unless a test watches it.
var serverErrors atomic.Pointer[io.Writer]

// ServerErrors is where the servers write the errors they go on after.
func ServerErrors() io.Writer {
	if w := serverErrors.Load(); w != nil {
		return *w
	}
	return io.Discard
}

// SetServerErrors sends the errors the servers go on after to w (a test's, to watch for panics).
func SetServerErrors(w io.Writer) { serverErrors.Store(&w) }

// headerTimeout bounds how long a connection may take to send its request headers (and a new
// plain connection its first bytes); idle keep-alive connections wait up to idleTimeout.
const (
	HeaderTimeout = 60 * time.Second
	IdleTimeout   = 5 * time.Minute
)

func Port(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }
