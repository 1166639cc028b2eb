package faults

// One slow origin beside fast ones on one client (docs/behaviour.md): the client sends requests
// to a slow origin (/fault/stall-headers on origin a) and, at the same time, to a fast one
// (/fault/landing on origin c, another host), all through one client object. A client whose pool
// (its connections, or its requests in flight) is shared by every origin and full of slow
// requests makes the fast ones wait for a slow answer. The server cannot see the client's queue,
// only when each request arrived: the ledger stamps every entry with its arrival, in ms on the
// server's monotonic clock since the ledger was last emptied, so that a fast request that came
// only after a slow one was answered is seen, never guessed.

import "time"

// stamp sets e's arrival time (at_ms); the ledger's clock starts when it is first written or
// emptied. Called with l.mu held.
func (l *ledger) stamp(e *LedgerEntry) {
	now := time.Now()
	if l.since.IsZero() {
		l.since = now
	}
	e.AtMs = float64(now.Sub(l.since).Microseconds()) / 1000
}
