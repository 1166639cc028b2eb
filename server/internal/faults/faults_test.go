package faults_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"clientlab/server/internal/faults"
	"clientlab/server/internal/servertest"
	"clientlab/server/internal/sockets"
)

// faultLedger reads the ledger over the control port, emptying it.
func faultLedger(t *testing.T) (entries []faults.LedgerEntry, counts map[string]int, active int64) {
	t.Helper()
	_, body := servertest.Control(t, "GET", "/faults?reset=1", "")
	var got struct {
		Entries []faults.LedgerEntry `json:"entries"`
		Counts  map[string]int       `json:"counts"`
		Active  int64                `json:"active"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("ledger: %v in %s", err, body)
	}
	return got.Entries, got.Counts, got.Active
}

// rawFault sends one request head to a fault origin and returns everything the server sent until
// it closed the connection.
func rawFault(t *testing.T, l net.Listener, target string, extra ...string) string {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, l.Addr(), strings.Join(append(extra, ""), "\r\n"))
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	all, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%s: %v after %q", target, err, all)
	}
	return string(all)
}

// dialFault opens a connection to origin a and sends the request head of target; the connection
// closes when the test ends, if the test did not close it.
func dialFault(t *testing.T, target string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", servertest.Faults.A.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: x\r\n\r\n")
	return c
}

func splitAnswer(t *testing.T, answer string) (head, body string) {
	t.Helper()
	head, body, ok := strings.Cut(answer, "\r\n\r\n")
	if !ok {
		t.Fatalf("no end of head in %q", answer)
	}
	return head, body
}

func TestShortBodySendsFewerBytesThanItsContentLengthThenCloses(t *testing.T) {
	faultLedger(t)
	head, body := splitAnswer(t, rawFault(t, servertest.Faults.A, "/fault/short-body?length=1000&send=400"))
	if !strings.Contains(head, "\r\nContent-Length: 1000\r\n") || !strings.HasPrefix(head, "HTTP/1.1 200 OK\r\n") {
		t.Fatalf("head %q", head)
	}
	if body != string(faults.Body(400)) {
		t.Fatalf("body of %d bytes, want the 400 of the fault's pattern", len(body))
	}
}

func TestChunkedWithoutLastChunkEndsAfterItsFirstChunk(t *testing.T) {
	faultLedger(t)
	head, body := splitAnswer(t, rawFault(t, servertest.Faults.A, "/fault/chunked-no-end?bytes=500"))
	if !strings.Contains(head, "\r\nTransfer-Encoding: chunked\r\n") || strings.Contains(head, "Content-Length") {
		t.Fatalf("head %q", head)
	}
	if want := "1f4\r\n" + string(faults.Body(500)) + "\r\n"; body != want {
		t.Fatalf("body %q, want one chunk and no last chunk", body)
	}
}

func TestTrickleSendsTheWholeBodyOneByteAtATime(t *testing.T) {
	faultLedger(t)
	r := bufio.NewReader(dialFault(t, "/fault/trickle?bytes=5&every_ms=20"))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength != 5 {
		t.Fatalf("Content-Length %d", resp.ContentLength)
	}
	var got []byte
	reads := 0
	buf := make([]byte, 16)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			got = append(got, buf[:n]...)
			reads++
			if n != 1 {
				t.Fatalf("a read of %d bytes: the trickle sends one at a time", n)
			}
		}
		if err != nil {
			break
		}
	}
	if string(got) != "abcde" || reads != 5 {
		t.Fatalf("body %q in %d reads", got, reads)
	}
}

func TestStalledHeadersArriveWholeAfterTheStall(t *testing.T) {
	faultLedger(t)
	c := dialFault(t, "/fault/stall-headers?ms=300")
	// nothing may come before the stall is over: a read that gives up earlier finds nothing
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("%d bytes arrived during the stall", n)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "stalled 300 ms\n" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

// ownConns are the fault connections a test opens: those the server accepts after it began.
type ownConns struct{ after int64 }

// freshFaults empties the ledger and notes which connections the test opens from now on: its
// release check is about those alone, so that a connection an earlier test left held fails that
// test, not every one after it.
func freshFaults(t *testing.T) ownConns {
	t.Helper()
	faultLedger(t)
	return ownConns{after: servertest.Faults.Accepted()}
}

// held lists the test's connections the server still holds.
func (o ownConns) held() []faults.Held { return servertest.Faults.HeldAfter(o.after) }

// waitReleased waits until the server holds none of the test's connections (the goroutines that
// served them ended, their sockets closed), and fails naming each one still held and for how long.
func (o ownConns) waitReleased(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		held := o.held()
		if len(held) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var named []string
			for _, h := range held {
				named = append(named, fmt.Sprintf("connection %d to origin %s from %s (last request: %q), held %.1f s",
					h.Serial, h.Origin, h.Peer, h.Request, time.Since(h.Since).Seconds()))
			}
			t.Fatalf("the client left, and the server still holds %d of this test's fault connections: %s",
				len(held), strings.Join(named, "; "))
		}
	}
}

func TestAClientThatLeavesAStallOrATrickleReleasesItsConnection(t *testing.T) {
	for _, target := range []string{"/fault/stall-headers?ms=60000", "/fault/trickle?bytes=100000&every_ms=60000"} {
		t.Run(target, func(t *testing.T) {
			own := freshFaults(t)
			c := dialFault(t, target)
			// the request is being served once the ledger holds it
			for i := 0; ; i++ {
				if entries, _, _ := servertest.Faults.Ledger.Snapshot(false); len(entries) == 1 {
					break
				}
				if i == 500 {
					t.Fatal("the request never reached the ledger")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if held := own.held(); len(held) != 1 {
				t.Fatalf("connections served %+v, want the test's one", held)
			}
			c.Close()
			own.waitReleased(t)
		})
	}
}

// The release check is about the test's own connections: one opened before the test began and
// still held is not among them, and a held connection is named by its origin, its client and the
// request it last read.
func TestTheReleaseCheckCountsOnlyTheConnectionsTheTestOpened(t *testing.T) {
	earlierTest := freshFaults(t)
	earlier := dialFault(t, "/fault/stall-headers?ms=60000")
	var held []faults.Held
	for deadline := time.Now().Add(10 * time.Second); len(held) != 1 || held[0].Request == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the stalled request was never read: held %+v", held)
		}
		held = earlierTest.held()
	}
	if h := held[0]; h.Origin != "a" || h.Peer != earlier.LocalAddr().String() || h.Request != "GET /fault/stall-headers" ||
		h.Since.IsZero() {
		t.Fatalf("held %+v, want the stalled request from %s", h, earlier.LocalAddr())
	}
	if own := (ownConns{after: servertest.Faults.Accepted()}); len(own.held()) != 0 {
		t.Fatalf("a test that opened nothing holds %+v", own.held())
	}
	earlier.Close()
	earlierTest.waitReleased(t)
}

func TestRedirectToTheOtherOriginAndTheLedgerSeesTheCredentialsThatArrived(t *testing.T) {
	faultLedger(t)
	head, _ := splitAnswer(t, rawFault(t, servertest.Faults.A, "/fault/redirect-other?to=/fault/landing", "Authorization: Bearer x", "Cookie: s=1"))
	want := fmt.Sprintf("\r\nLocation: http://127.0.0.1:%d/fault/landing\r\n", sockets.Port(servertest.Faults.B))
	if !strings.HasPrefix(head, "HTTP/1.1 302 Found\r\n") || !strings.Contains(head, want) {
		t.Fatalf("head %q, want a 302 with %q", head, want)
	}
	// a client that forwards the Cookie but not the Authorization it was given
	rawFault(t, servertest.Faults.B, "/fault/landing", "Cookie: s=1", "Cookie: t=2")
	entries, counts, _ := faultLedger(t)
	if len(entries) != 2 {
		t.Fatalf("entries %+v", entries)
	}
	first, second := entries[0], entries[1]
	if first.Origin != "a" || first.Path != "/fault/redirect-other" || strings.Join(first.Credentials, ",") != "Authorization,Cookie" {
		t.Fatalf("first %+v", first)
	}
	if second.Origin != "b" || second.Port != sockets.Port(servertest.Faults.B) || second.Path != "/fault/landing" || strings.Join(second.Credentials, ",") != "Cookie" {
		t.Fatalf("second %+v", second)
	}
	if len(counts) != 2 || counts["/fault/redirect-other"] != 1 || counts["/fault/landing"] != 1 {
		t.Fatalf("counts %v", counts)
	}
}

func TestTheLedgerCountsEveryRequestPerPathExactlyAndEmptiesOnReset(t *testing.T) {
	own := freshFaults(t)
	for i := 0; i < 3; i++ {
		rawFault(t, servertest.Faults.A, "/fault/landing")
	}
	for i := 0; i < 2; i++ {
		rawFault(t, servertest.Faults.B, "/fault/landing?x=1", "Proxy-Authorization: Basic eDp5")
	}
	rawFault(t, servertest.Faults.B, "/nothing-here")
	entries, counts, _ := faultLedger(t)
	if len(entries) != 6 || counts["/fault/landing"] != 5 || counts["/nothing-here"] != 1 || len(counts) != 2 {
		t.Fatalf("%d entries, counts %v", len(entries), counts)
	}
	byOrigin := map[string]int{}
	proxied := 0
	for _, e := range entries {
		byOrigin[e.Origin]++
		if strings.Join(e.Credentials, ",") == "Proxy-Authorization" {
			proxied++
		}
	}
	if byOrigin["a"] != 3 || byOrigin["b"] != 3 || proxied != 2 {
		t.Fatalf("by origin %v, %d with Proxy-Authorization", byOrigin, proxied)
	}
	if entries, counts, _ := faultLedger(t); len(entries) != 0 || len(counts) != 0 {
		t.Fatalf("after reset: %v %v", entries, counts)
	}
	// every connection answered and closed is let go (at once the client read its answer, the
	// server may still be closing it)
	own.waitReleased(t)
}

func TestAFaultWithParametersOutOfBoundsIsRefused(t *testing.T) {
	for _, target := range []string{"/fault/stall-headers?ms=60001", "/fault/short-body?length=10&send=10", "/fault/trickle?bytes=0"} {
		if head, _ := splitAnswer(t, rawFault(t, servertest.Faults.A, target)); !strings.HasPrefix(head, "HTTP/1.1 400 ") {
			t.Errorf("%s: %q", target, head)
		}
	}
}

func TestRedirectToAnotherHostPointsAtOriginCOnTheNextLoopbackAddress(t *testing.T) {
	if servertest.Faults.C == nil {
		t.Fatal("no origin c on loopback")
	}
	faultLedger(t)
	head, _ := splitAnswer(t, rawFault(t, servertest.Faults.A, "/fault/redirect-other-host"))
	want := fmt.Sprintf("\r\nLocation: http://127.0.0.2:%d/fault/landing\r\n", sockets.Port(servertest.Faults.C))
	if !strings.Contains(head, want) {
		t.Fatalf("head %q, want %q", head, want)
	}
	rawFault(t, servertest.Faults.C, "/fault/landing", "Authorization: Basic eDp5")
	entries, _, _ := faultLedger(t)
	if len(entries) != 2 || entries[1].Origin != "c" || strings.Join(entries[1].Credentials, ",") != "Authorization" {
		t.Fatalf("entries %+v", entries)
	}
}
