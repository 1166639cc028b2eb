package faults

// Redirects of the second set (docs/behaviour.md): a 303 after a POST, whose next request the
// ledger shows by method and body length, and a redirect from the TLS origin s to plain http on
// origin a, where credentials headers must not arrive.

import (
	"net"
	"strconv"

	"clientlab/server/internal/handlers"
	"clientlab/server/internal/sockets"
)

// answerRedirect: /fault/see-other?to=<path> answers 303 to that path on this origin;
// /fault/redirect-to-plain?to=<path> answers 302 to http://<this address>:<origin a><path>.
func (f *Server) answerRedirect(c net.Conn, req *faultRequest) {
	to := req.query.Get("to")
	if to == "" {
		to = "/fault/landing"
	}
	if !handlers.SameOriginPath(to) {
		faultWhole(c, 400, "to must be a path\n")
		return
	}
	local := c.LocalAddr().(*net.TCPAddr)
	switch req.path {
	case "/fault/see-other":
		scheme := "http"
		if f.S != nil && local.Port == sockets.Port(f.S) {
			scheme = "https"
		}
		faultWhole(c, 303, "see other\n", "Location: "+scheme+"://"+net.JoinHostPort(local.IP.String(), strconv.Itoa(local.Port))+to)
	case "/fault/redirect-to-plain":
		faultWhole(c, 302, "redirecting\n", "Location: http://"+net.JoinHostPort(local.IP.String(), strconv.Itoa(sockets.Port(f.A)))+to)
	}
}
