package h3

// qlog traces of the HTTP/3 side, for diagnosis only (--qlog-dir): quic-go writes one JSON-SEQ
// file per QUIC connection with its recovery events (congestion window, bytes in flight, RTT,
// each packet declared lost and why). The server is the sender of every download, so its trace
// is the one that shows how a transfer's congestion control fared.

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlogwriter"
)

// qlogFile buffers one trace's writes; the lock lets flushQlogs write out what a connection
// still open at the server's exit has buffered (quic-go closes a trace only when its connection
// ends, and the server exits when the lab closes its stdin, whatever is open).
type qlogFile struct {
	mu     sync.Mutex
	w      *bufio.Writer
	f      *os.File
	closed bool
}

var openQlogs sync.Map // *qlogFile -> struct{}

func (q *qlogFile) Write(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.w.Write(p)
}

func (q *qlogFile) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	openQlogs.Delete(q)
	if q.closed {
		return nil
	}
	q.closed = true
	err := q.w.Flush()
	if cerr := q.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (q *qlogFile) flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.w.Flush()
	}
}

// FlushQlogs writes out the buffered part of every trace still open.
func FlushQlogs() {
	openQlogs.Range(func(k, _ any) bool { k.(*qlogFile).flush(); return true })
}

// qlogTracer returns a quic.Config Tracer that writes each connection's trace to
// DIR/<original destination connection ID>_server.sqlog, as quic-go's QLOGDIR tracer names them.
func qlogTracer(dir string) func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
	return func(_ context.Context, isClient bool, odcid quic.ConnectionID) qlogwriter.Trace {
		side := "server"
		if isClient {
			side = "client"
		}
		path := filepath.Join(dir, fmt.Sprintf("%s_%s.sqlog", odcid, side))
		f, err := os.Create(path)
		if err != nil {
			log.Printf("--qlog-dir: %v (this connection is not traced)", err)
			return nil
		}
		q := &qlogFile{w: bufio.NewWriterSize(f, 64<<10), f: f}
		openQlogs.Store(q, struct{}{})
		trace := qlogwriter.NewConnectionFileSeq(q, isClient, odcid)
		go trace.Run()
		return trace
	}
}

// PrepareQlogDir makes the directory (as quic-go's own QLOGDIR does) and checks that it is one.
func PrepareQlogDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--qlog-dir %s: %w", dir, err)
	}
	return nil
}
