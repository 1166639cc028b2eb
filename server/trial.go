package main

// Per-trial counters: every connection accepted and every request served since the last reset.
// The lab reads them over the control endpoint; a reset starts a new trial.

import (
	"sync"
	"sync/atomic"
	"time"
)

const maxLogEntries = 1_000_000

// LogEntry is one request as the server saw it (field meanings: docs/bench-server.md).
type LogEntry struct {
	Conn           int64  `json:"conn"`
	Stream         int    `json:"stream"`
	Method         string `json:"method"`
	Path           string `json:"path"`
	Proto          string `json:"proto"`
	Status         int    `json:"status"`
	ReqBodyBytes   int64  `json:"req_body_bytes"`
	RespBodyBytes  int64  `json:"resp_body_bytes"`
	RespSHA256     string `json:"resp_sha256"`
	RespWriteError string `json:"resp_write_error,omitempty"` // the body's first failed write
	Gzip           bool   `json:"gzip"`
	CookieOK       *bool  `json:"cookie_ok"`
	ExpectContinue bool   `json:"expect_continue"`
	FormKind       string `json:"form_kind"`
	FormFields     int    `json:"form_fields"`
	FormSHA256     string `json:"form_sha256"`
	Reads          int    `json:"reads"`
	HeaderReads    int    `json:"header_reads"`
	FirstByteNs    int64  `json:"first_byte_ns"`
	LastByteNs     int64  `json:"last_byte_ns"`
	MaxReadGapNs   int64  `json:"max_read_gap_ns"`
	DoneNs         int64  `json:"done_ns"`
}

// connRecord is what one accepted connection did; counters are updated without locks.
type connRecord struct {
	id       int64
	tls      bool
	resumed  atomic.Bool
	proto    atomic.Value // string: "http/1.1", "h2", "h2c"
	requests atomic.Int64
	bytesIn  atomic.Int64
	bytesOut atomic.Int64
	opened   time.Time
	closed   atomic.Int64 // ns since the trial's start; 0 = open
}

type trial struct {
	start      time.Time
	mu         sync.Mutex
	conns      []*connRecord
	log        []LogEntry
	dropped    int64
	requests   int64
	versions   map[string]int64
	tlsFull    int64
	tlsResumed int64
	capWaits   int64 // connections that waited for a free slot under the server's cap
	capWaitNs  int64
	capReaped  int64 // idle keep-alive connections the server closed to make room
}

func (t *trial) capWaited(d time.Duration, reaped int) {
	t.mu.Lock()
	t.capWaits++
	t.capWaitNs += d.Nanoseconds()
	t.capReaped += int64(reaped)
	t.mu.Unlock()
}

func newTrial() *trial {
	return &trial{start: time.Now(), versions: map[string]int64{}}
}

func (t *trial) since(at time.Time) int64 { return at.Sub(t.start).Nanoseconds() }

var current atomic.Pointer[trial]

func init() { current.Store(newTrial()) }

var nextConnID atomic.Int64

func (t *trial) addConn(isTLS bool) *connRecord {
	c := &connRecord{id: nextConnID.Add(1), tls: isTLS, opened: time.Now()}
	c.proto.Store("http/1.1")
	t.mu.Lock()
	t.conns = append(t.conns, c)
	t.mu.Unlock()
	return c
}

func (t *trial) handshake(resumed bool) {
	t.mu.Lock()
	if resumed {
		t.tlsResumed++
	} else {
		t.tlsFull++
	}
	t.mu.Unlock()
}

func (t *trial) record(e LogEntry) {
	t.mu.Lock()
	t.requests++
	t.versions[e.Proto]++
	if len(t.log) < maxLogEntries {
		t.log = append(t.log, e)
	} else {
		t.dropped++
	}
	t.mu.Unlock()
}

type connJSON struct {
	ID       int64  `json:"id"`
	Proto    string `json:"proto"`
	TLS      bool   `json:"tls"`
	Resumed  bool   `json:"resumed"`
	Requests int64  `json:"requests"`
	BytesIn  int64  `json:"bytes_in"`
	BytesOut int64  `json:"bytes_out"`
	OpenedNs int64  `json:"opened_ns"`
	ClosedNs int64  `json:"closed_ns"`
}

type snapshotJSON struct {
	ElapsedNs   int64            `json:"elapsed_ns"`
	Connections int              `json:"connections"`
	TLS         map[string]int64 `json:"tls"`
	Requests    int64            `json:"requests"`
	Versions    map[string]int64 `json:"versions"`
	BytesIn     int64            `json:"bytes_in"`
	BytesOut    int64            `json:"bytes_out"`
	LogDropped  int64            `json:"log_dropped"`
	Conns       []connJSON       `json:"conns"`
	Log         []LogEntry       `json:"log"`
	Cap         *capJSON         `json:"cap,omitempty"`
}

// capJSON: the server's connection cap in this trial (only when one is set).
type capJSON struct {
	Limit      int   `json:"limit"`
	PeakOpen   int   `json:"peak_open"`
	Waited     int64 `json:"waited"`
	WaitNs     int64 `json:"wait_ns"`
	IdleClosed int64 `json:"idle_closed"`
}

func (t *trial) snapshot() snapshotJSON {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := snapshotJSON{
		ElapsedNs:   t.since(time.Now()),
		Connections: len(t.conns),
		TLS:         map[string]int64{"full": t.tlsFull, "resumed": t.tlsResumed},
		Requests:    t.requests,
		Versions:    map[string]int64{},
		LogDropped:  t.dropped,
		Conns:       make([]connJSON, 0, len(t.conns)),
		Log:         append([]LogEntry{}, t.log...), // [] rather than null when nothing arrived
	}
	for k, v := range t.versions {
		s.Versions[k] = v
	}
	if connCap != nil {
		if limit, peak := connCap.state(); limit > 0 {
			s.Cap = &capJSON{Limit: limit, PeakOpen: peak, Waited: t.capWaits, WaitNs: t.capWaitNs, IdleClosed: t.capReaped}
		}
	}
	for _, c := range t.conns {
		in, out := c.bytesIn.Load(), c.bytesOut.Load()
		s.BytesIn += in
		s.BytesOut += out
		s.Conns = append(s.Conns, connJSON{
			ID: c.id, Proto: c.proto.Load().(string), TLS: c.tls, Resumed: c.resumed.Load(),
			Requests: c.requests.Load(), BytesIn: in, BytesOut: out,
			OpenedNs: t.since(c.opened), ClosedNs: c.closed.Load(),
		})
	}
	return s
}
