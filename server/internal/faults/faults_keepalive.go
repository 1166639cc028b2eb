package faults

// The keep-alive race (docs/behaviour.md): a connection kept after its first answer is closed by
// the server as the next request on it arrives — after the server read the request, before it
// answers, as a server whose idle timeout fires at that moment does. The client cannot have
// known: the connection was open when it sent. The ledger shows every request with its
// connection and its place on it, so that a retry (the same numbered request again, on a fresh
// connection) is seen, and a POST sent twice too.

import (
	"io"
	"net"
	"strconv"

	"clientlab/server/internal/handlers"
)

// raceConn is a connection whose next request the server drops.
type raceConn struct {
	reset bool // RST (SO_LINGER 0) rather than FIN
}

// answerRaceFirst answers a kept connection's first request whole, keeping the connection:
// /fault/keepalive-race?close=fin|rst&n=<the driver's number for the request>.
func answerRaceFirst(c net.Conn, req *faultRequest) (*raceConn, error) {
	how := req.query.Get("close")
	if how != "fin" && how != "rst" {
		faultWhole(c, 400, "close must be fin or rst\n")
		return nil, io.EOF
	}
	body := "kept n=" + handlers.Cut(req.query.Get("n")) + "\n"
	_, err := io.WriteString(c, faultHead(200, "text/plain; charset=utf-8", "Content-Length: "+strconv.Itoa(len(body)),
		"Connection: keep-alive", "Keep-Alive: timeout=60")+body)
	return &raceConn{reset: how == "rst"}, err
}

// drop closes the connection with no answer to the request just read. The request was read
// whole, body included, so a FIN is a FIN: the kernel answers a close with unread data by a RST.
func (r *raceConn) drop(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok && r.reset {
		tc.SetLinger(0)
	}
	c.Close()
}
