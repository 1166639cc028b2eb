package main

import (
	"encoding/binary"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"time"
)

type sent struct{ due, at int64 }

// collect runs a delay line whose packets carry their own due time (8 bytes) and records when
// each was handed on.
func collect(t *testing.T) (func(due int64), func(n int) []sent) {
	var mu sync.Mutex
	var out []sent
	line, err := newDelayLine(func(data []byte, late int64) {
		at := monoNow()
		mu.Lock()
		out = append(out, sent{due: int64(binary.LittleEndian.Uint64(data)), at: at})
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	go line.run()
	push := func(due int64) { line.push(due, binary.LittleEndian.AppendUint64(nil, uint64(due))) }
	wait := func(n int) []sent {
		deadline := time.Now().Add(30 * time.Second) // generous: the machine is shared
		for {
			mu.Lock()
			got := slices.Clone(out)
			mu.Unlock()
			if len(got) >= n || time.Now().After(deadline) {
				return got
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return push, wait
}

func TestDelayLineSendsEveryPacketNeverEarlyInDueOrder(t *testing.T) {
	push, wait := collect(t)
	rng := rand.New(rand.NewSource(1))
	start := monoNow()
	for i := 0; i < 500; i++ { // due times in random order, as reordering makes them
		push(start + rng.Int63n(20*ms))
	}
	got := wait(500)
	if len(got) != 500 {
		t.Fatalf("%d of 500 packets sent", len(got))
	}
	for i, s := range got {
		if s.at < s.due {
			t.Fatalf("packet %d sent %d ns before its due time", i, s.due-s.at)
		}
		if i > 0 && s.due < got[i-1].due {
			t.Fatalf("packet %d (due %d) sent after one due later (%d)", i, s.due, got[i-1].due)
		}
	}
}

// TestDelayLineLateness logs how late packets leave at 1, 25 and 50 ms one-way delays (go test
// -v -run Lateness). It asserts only what cannot depend on the machine's load: nothing early.
func TestDelayLineLateness(t *testing.T) {
	for _, delayMs := range []int64{1, 25, 50} {
		push, wait := collect(t)
		const n = 400
		for i := 0; i < n; i++ {
			push(monoNow() + delayMs*ms)
			time.Sleep(250 * time.Microsecond)
		}
		got := wait(n)
		lates := make([]int64, 0, len(got))
		for _, s := range got {
			if s.at < s.due {
				t.Fatalf("sent %d ns early", s.due-s.at)
			}
			lates = append(lates, s.at-s.due)
		}
		slices.Sort(lates)
		q := func(f float64) float64 { return float64(lates[int(f*float64(len(lates)-1))]) / 1e3 }
		t.Logf("one-way %d ms: %d packets, late by median %.0f µs, p99 %.0f µs, max %.0f µs",
			delayMs, len(lates), q(0.5), q(0.99), q(1))
	}
}
