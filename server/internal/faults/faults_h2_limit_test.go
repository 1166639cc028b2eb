package faults_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"clientlab/server/internal/faults"
)

// The first request brings the lowered limit and a PING; once the client has answered the PING,
// a stream opened beside the unanswered first is refused, and the first is answered after.
func TestAStreamOverTheLoweredLimitIsRefusedOnceTheClientKnowsIt(t *testing.T) {
	numberedLedger(t)
	fr := rawFaultH2(t, "/fault/h2-max-streams?n=1")
	for lowered := false; !lowered; {
		frame, err := readWithin(fr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		switch fm := frame.(type) {
		case *http2.SettingsFrame:
			if v, ok := fm.Value(http2.SettingMaxConcurrentStreams); ok && v == 1 {
				fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if fm.Data != faults.H2LimitPing {
				t.Fatalf("ping %q", fm.Data)
			}
			fr.WritePing(true, fm.Data)
			lowered = true
		default:
			t.Fatalf("before the PING: %T", frame)
		}
	}
	h2Get(fr, 3, "/fault/h2-max-streams?n=2")
	got := strings.Join(h2Frames(t, fr, 3), "; ")
	if got != `RST 3 REFUSED_STREAM; HEADERS 1 200; DATA 1 "h2 n=1\n"` {
		t.Fatalf("frames: %s", got)
	}
	entries, _ := numberedLedger(t)
	if len(entries) != 2 || entries[0].Refused || !entries[1].Refused || entries[1].N != "2" || entries[1].Seq != 2 {
		t.Fatalf("ledger %+v", entries)
	}
}

// Go's HTTP/2 client keeps to the limit it is told (it opens another connection): eight requests,
// four at a time, each answered, none processed twice.
func TestAClientThatKeepsToTheLoweredLimitGetsEveryAnswerOnce(t *testing.T) {
	own := freshFaults(t)
	getEachOverH2(t, "/fault/h2-max-streams", 8, 4)
	entries, _ := numberedLedger(t)
	processed := map[string]int{}
	for _, e := range entries {
		if !e.Refused {
			processed[e.N]++
		}
	}
	for i := 1; i <= 8; i++ {
		if processed[fmt.Sprint(i)] != 1 {
			t.Fatalf("n=%d processed %d times: %+v", i, processed[fmt.Sprint(i)], entries)
		}
	}
	own.waitReleased(t)
}
