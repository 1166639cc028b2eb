package faults_test

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"clientlab/server/internal/servertest"
)

// The ledger stamps each request with its arrival on the server's clock: a fast request sent
// while a slow one stalls arrives before the slow answer, one sent after the slow answer after it.
func TestTheLedgerStampsEachArrivalSoAFastRequestBehindASlowOneIsSeen(t *testing.T) {
	fast := servertest.Faults.C
	if fast == nil {
		fast = servertest.Faults.B // no second servertest.Loopback address here: the other port is another origin too
	}
	faultLedger(t)
	const stallMs = 400
	slow := make(chan string)
	go func() { // rawFault's t.Fatal belongs to the test's own goroutine
		c, err := net.Dial("tcp", servertest.Faults.A.Addr().String())
		if err != nil {
			slow <- err.Error()
			return
		}
		defer c.Close()
		io.WriteString(c, "GET /fault/stall-headers?ms=400&n=1 HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		all, _ := io.ReadAll(c)
		slow <- string(all)
	}()
	waitForEntries(t, 1)
	during := rawFault(t, fast, "/fault/landing?n=2")
	if answer := <-slow; !strings.Contains(answer, "stalled 400 ms") {
		t.Fatalf("the slow answer: %q", answer)
	}
	after := rawFault(t, fast, "/fault/landing?n=3")
	for _, answer := range []string{during, after} {
		if !strings.HasSuffix(answer, "landed\n") {
			t.Fatalf("the fast answer: %q", answer)
		}
	}
	entries, _, _ := faultLedger(t)
	at := map[string]float64{}
	for _, e := range entries {
		at[e.N] = e.AtMs
	}
	if len(entries) != 3 || at["1"] < 0 || at["1"] > at["2"] || at["2"] >= at["1"]+stallMs || at["3"] < at["1"]+stallMs {
		t.Fatalf("arrivals %v (ms since the ledger was emptied): want 0 <= 1 <= 2 < 1+%d <= 3", at, stallMs)
	}
}

// waitForEntries waits until the ledger holds n entries, without emptying it.
func waitForEntries(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		entries, _, _ := servertest.Faults.Ledger.Snapshot(false)
		got := len(entries)
		if got >= n {
			return
		}
	}
	t.Fatalf("the ledger never held %d entries", n)
}
