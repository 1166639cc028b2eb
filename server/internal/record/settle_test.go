package record

import (
	"testing"
	"time"
)

// A client can read the last byte of a large answer, and the lab ask for the counters, before
// the goroutine that wrote it has recorded it: the counters wait for it.
func TestCountersWaitForAnAnswerStillBeingRecorded(t *testing.T) {
	tr := NewTrial()
	tr.Answering.Add(1)
	go func() {
		time.Sleep(5 * time.Millisecond)
		tr.Record(LogEntry{Method: "GET", Path: "/bytes/1048576", Proto: "HTTP/1.1", Status: 200})
		tr.Answering.Add(-1)
	}()
	tr.Settle(time.Second)
	if got := tr.Snapshot().Requests; got != 1 {
		t.Fatalf("requests after settle = %v, want 1", got)
	}
}

// A request a client never finished must not hold the counters for longer than the limit.
func TestAnUnfinishedAnswerHoldsTheCountersOnlyUpToTheLimit(t *testing.T) {
	tr := NewTrial()
	tr.Answering.Add(1)
	start := time.Now()
	tr.Settle(20 * time.Millisecond)
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("settle waited %v with a limit of 20ms", waited)
	}
}
