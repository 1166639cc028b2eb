package faults

// The connections the fault origins hold. A fault that stalls, trickles or keeps a connection
// must let it go when the client does; a connection is held from its accept until the goroutine
// serving it, and every goroutine that one started for it, have ended and the socket is closed,
// so that what a client that left still holds (a socket, a goroutine, the memory they keep) is
// seen, connection by connection, with its serial number (the ledger's conn), its origin, the
// client's address and how long it has been held.

import (
	"net"
	"sort"
	"sync"
	"time"
)

// Held is a connection a fault origin still holds.
type Held struct {
	Serial int64     `json:"serial"` // accepted order, from 1: the ledger's conn
	Origin string    `json:"origin"`
	Peer   string    `json:"peer"` // the client's address
	Since  time.Time `json:"since"`
	// the last request read on it (method and path): what a connection that stays was doing
	Request string `json:"request,omitempty"`
}

// heldConn is one connection being served, and how many of its goroutines still run.
type heldConn struct {
	Held
	reg        *register
	goroutines int // guarded by reg.mu
}

// register holds the connections being served.
type register struct {
	mu       sync.Mutex
	live     map[int64]*heldConn
	accepted int64
}

// open takes a connection the origin accepted: it is held, with its serving goroutine counted,
// until that goroutine calls done.
func (r *register) open(origin string, peer net.Addr) *heldConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live == nil {
		r.live = map[int64]*heldConn{}
	}
	r.accepted++
	h := &heldConn{Held: Held{Serial: r.accepted, Origin: origin, Peer: peer.String(), Since: time.Now()}, reg: r, goroutines: 1}
	r.live[h.Serial] = h
	return h
}

// goServe runs fn in a goroutine of the connection's own: it stays held until fn returns.
func (h *heldConn) goServe(fn func()) {
	h.reg.mu.Lock()
	h.goroutines++
	h.reg.mu.Unlock()
	go func() {
		defer h.done()
		fn()
	}()
}

// reading notes the request just read on the connection.
func (h *heldConn) reading(method, path string) {
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	h.Request = method + " " + path
}

// done says one of the connection's goroutines ended; the last lets the connection go.
func (h *heldConn) done() {
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	if h.goroutines--; h.goroutines == 0 {
		delete(h.reg.live, h.Serial)
	}
}

// Accepted is the serial number of the last connection accepted: those after it are new.
func (f *Server) Accepted() int64 {
	f.held.mu.Lock()
	defer f.held.mu.Unlock()
	return f.held.accepted
}

// HeldAfter lists the connections still held whose serial number is above after, oldest first.
func (f *Server) HeldAfter(after int64) []Held {
	f.held.mu.Lock()
	defer f.held.mu.Unlock()
	var out []Held
	for serial, h := range f.held.live {
		if serial > after {
			out = append(out, h.Held)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Serial < out[j].Serial })
	return out
}

// Active is how many connections the origins hold now.
func (f *Server) Active() int {
	f.held.mu.Lock()
	defer f.held.mu.Unlock()
	return len(f.held.live)
}
