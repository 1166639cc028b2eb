package faults_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"clientlab/server/internal/faults"
	"clientlab/server/internal/servertest"
	"clientlab/server/internal/sockets"
)

// h2Get sends a GET of target on stream.
func h2Get(fr *http2.Framer, stream uint32, target string) {
	var block strings.Builder
	enc := hpack.NewEncoder(&blockWriter{&block})
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "x"}, {":path", target}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: []byte(block.String()), EndStream: true, EndHeaders: true})
}

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
	numberedLedger(t)
	base := runtime.NumGoroutine()
	client := &http.Client{Transport: &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots}}, Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4)
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/fault/h2-max-streams?n=%d", sockets.Port(servertest.Faults.H2), i+1))
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(body) != fmt.Sprintf("h2 n=%d\n", i+1) {
					err = fmt.Errorf("body %q", body)
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	client.CloseIdleConnections()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i+1, err)
		}
	}
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
	waitReleased(t, base)
}
