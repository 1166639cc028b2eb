package faults_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
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

// rawFaultH2 opens an HTTP/2 connection to origin h2 and sends GETs of the targets on streams 1, 3, ...
func rawFaultH2(t *testing.T, targets ...string) *http2.Framer {
	t.Helper()
	c, err := tls.Dial("tcp", servertest.Faults.H2.Addr().String(), &tls.Config{RootCAs: servertest.Roots, ServerName: "127.0.0.1", NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, bufio.NewReader(c))
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.WriteSettings()
	for i, target := range targets {
		h2Get(fr, uint32(2*i+1), target)
	}
	return fr
}

// h2Get sends a GET of target on stream.
func h2Get(fr *http2.Framer, stream uint32, target string) {
	var block strings.Builder
	enc := hpack.NewEncoder(&blockWriter{&block})
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "x"}, {":path", target}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: []byte(block.String()), EndStream: true, EndHeaders: true})
}

type blockWriter struct{ b *strings.Builder }

func (w *blockWriter) Write(p []byte) (int, error) { return w.b.Write(p) }

// readWithin reads one frame, or fails when none comes within d.
func readWithin(fr *http2.Framer, d time.Duration) (http2.Frame, error) {
	got := make(chan http2.Frame, 1)
	go func() {
		if frame, err := fr.ReadFrame(); err == nil {
			got <- frame
		}
	}()
	select {
	case frame := <-got:
		return frame, nil
	case <-time.After(d):
		return nil, fmt.Errorf("no frame within %v", d)
	}
}

// h2Frames reads frames until the server has nothing more to say for a moment, as "type stream" lines.
func h2Frames(t *testing.T, fr *http2.Framer, want int) []string {
	t.Helper()
	var got []string
	for len(got) < want {
		frame, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		switch fm := frame.(type) {
		case *http2.GoAwayFrame:
			got = append(got, fmt.Sprintf("GOAWAY last=%d", fm.LastStreamID))
		case *http2.MetaHeadersFrame:
			got = append(got, fmt.Sprintf("HEADERS %d %s", fm.StreamID, fm.PseudoValue("status")))
		case *http2.DataFrame:
			got = append(got, fmt.Sprintf("DATA %d %q", fm.StreamID, fm.Data()))
		case *http2.RSTStreamFrame:
			got = append(got, fmt.Sprintf("RST %d %v", fm.StreamID, fm.ErrCode))
		}
	}
	return got
}

func TestGoAwayAnswersTheConnectionsFirstStreamAndNoLaterOne(t *testing.T) {
	numberedLedger(t)
	fr := rawFaultH2(t, "/fault/h2-goaway?n=1", "/fault/h2-goaway?n=2")
	got := strings.Join(h2Frames(t, fr, 3), "; ")
	if got != `GOAWAY last=1; HEADERS 1 200; DATA 1 "h2 n=1\n"` {
		t.Fatalf("frames: %s", got)
	}
	// stream 3 reached the server (the ledger has it, second on its connection) and stays unanswered
	var entries []faults.LedgerEntry
	for i := 0; i < 500 && len(entries) < 2; i++ {
		time.Sleep(10 * time.Millisecond)
		entries, _, _ = servertest.Faults.Ledger.Snapshot(false)
	}
	if len(entries) != 2 || entries[1].N != "2" || entries[1].Seq != 2 || entries[1].Conn != entries[0].Conn {
		t.Fatalf("ledger %+v", entries)
	}
	if frame, err := readWithin(fr, 300*time.Millisecond); err == nil {
		t.Fatalf("a frame came after the GOAWAY's answer: %v", frame)
	}
}

func TestRefusedStreamRefusesALaterStreamOnceThenAnswersIt(t *testing.T) {
	numberedLedger(t)
	fr := rawFaultH2(t, "/fault/h2-refused?n=1", "/fault/h2-refused?n=2", "/fault/h2-refused?n=2")
	got := strings.Join(h2Frames(t, fr, 5), "; ")
	want := `HEADERS 1 200; DATA 1 "h2 n=1\n"; RST 3 REFUSED_STREAM; HEADERS 5 200; DATA 5 "h2 n=2\n"`
	if got != want {
		t.Fatalf("frames: %s\nwant    %s", got, want)
	}
	_, numbered := numberedLedger(t)
	if numbered["/fault/h2-refused?n=1"] != 1 || numbered["/fault/h2-refused?n=2"] != 2 {
		t.Fatalf("numbered %v", numbered)
	}
}

// getEachOverH2 sends GETs of path?n=1 ... n=count to origin h2 through Go's HTTP/2 client, at
// most atOnce at a time, and fails the test for each that did not get its own answer ("h2 n=<n>").
func getEachOverH2(t *testing.T, path string, count, atOnce int) {
	t.Helper()
	client := &http.Client{Transport: &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: servertest.Roots}}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	slots := make(chan struct{}, atOnce)
	errs := make([]error, count)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d%s?n=%d", sockets.Port(servertest.Faults.H2), path, i+1))
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
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i+1, err)
		}
	}
}

// Go's HTTP/2 client sends again a stream the server did not process: every request is answered.
func TestAClientThatRetriesUnprocessedStreamsGetsEveryAnswer(t *testing.T) {
	for _, fault := range []string{"h2-goaway", "h2-refused"} {
		t.Run(fault, func(t *testing.T) {
			own := freshFaults(t)
			getEachOverH2(t, "/fault/"+fault, 4, 4)
			_, numbered := numberedLedger(t)
			for i := 1; i <= 4; i++ {
				if numbered[fmt.Sprintf("/fault/%s?n=%d", fault, i)] < 1 {
					t.Fatalf("numbered %v", numbered)
				}
			}
			own.waitReleased(t)
		})
	}
}
