// Package record keeps the per-trial record: trials, log entries, connections and the cap on them.
package record

// Per-trial counters: every connection accepted and every request served since the last reset.
// The lab reads them over the control endpoint; a reset starts a new trial.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

const (
	maxLogEntries   = 1_000_000
	maxConnRecords  = 1_000_000 // beyond this, a trial counts connections without listing them
	MaxLoggedString = 1024      // a logged path (or method) is cut to this many bytes
)

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

// ConnRecord is what one accepted connection did; counters are updated without locks.
type ConnRecord struct {
	ID       int64
	tls      bool
	Resumed  atomic.Bool
	Proto    atomic.Value // string: "http/1.1", "h2", "h2c", "h3"
	Requests atomic.Int64
	bytesIn  atomic.Int64
	bytesOut atomic.Int64
	Opened   time.Time
	closed   atomic.Int64 // ns since the trial's start; 0 = open
	waited   bool         // waited for a slot under the server's cap (it may have given up meanwhile)
	// HTTP/3: the QUIC connection while it is open (its byte counts are the QUIC layer's), and
	// whether its first requests came as 0-RTT data
	Quic      atomic.Pointer[quic.Conn]
	EarlyData atomic.Bool
}

type Trial struct {
	ID              uint64
	Start           time.Time
	OpenAtStart     []*Conn      // client connections open when the trial started (accepted in earlier trials)
	carriedConns    atomic.Int64 // connections accepted before this trial that carried requests in it
	carriedRequests atomic.Int64 // the requests they carried
	mu              sync.Mutex
	conns           []*ConnRecord
	accepted        int64        // connections accepted in this trial, listed in conns or not
	log             [][]LogEntry // in chunks of logChunk entries: appending never copies the log
	logged          int64
	dropped         int64
	requests        int64
	versions        map[string]int64
	tlsFull         int64
	tlsResumed      int64
	tlsEarlyData    int64 // resumed QUIC handshakes whose client sent requests as 0-RTT data
	capWaits        int64 // connections that waited for a free slot under the server's cap
	capWaitNs       int64
	capReaped       int64 // idle keep-alive connections the server closed to make room
	// some answer of this trial carried Alt-Svc: the client was offered HTTP/3
	altSvcOffered atomic.Bool
	// requests being answered and not yet recorded: a client can read the last byte of a large
	// answer (and the lab ask for the counters) before the goroutine that wrote it records it
	Answering atomic.Int64
}

// Settle waits until every request the trial is answering has been recorded, at most `limit`
// (a request a client left unfinished must not hold the lab up).
func (t *Trial) Settle(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for t.Answering.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
}

func (t *Trial) capWaited(d time.Duration, reaped int) {
	t.mu.Lock()
	t.capWaits++
	t.capWaitNs += d.Nanoseconds()
	t.capReaped += int64(reaped)
	t.mu.Unlock()
}

var trialIDs atomic.Uint64

func NewTrial() *Trial {
	return &Trial{ID: trialIDs.Add(1), Start: time.Now(), versions: map[string]int64{}}
}

func (t *Trial) Since(at time.Time) int64 { return at.Sub(t.Start).Nanoseconds() }

// OfferedH3 notes that an answer carried Alt-Svc (a load first: most answers find it noted,
// and a store on every one would bounce the line between cores).
func (t *Trial) OfferedH3() {
	if !t.altSvcOffered.Load() {
		t.altSvcOffered.Store(true)
	}
}

// current is the trial the server records now.
var current atomic.Pointer[Trial]

func init() { current.Store(NewTrial()) }

// Current is the trial the server records now.
func Current() *Trial { return current.Load() }

// StartTrial makes t the trial the server records from now on; it returns the one before.
func StartTrial(t *Trial) *Trial { return current.Swap(t) }

var nextConnID atomic.Int64

func (t *Trial) AddConn(isTLS, waited bool) *ConnRecord {
	c := &ConnRecord{ID: nextConnID.Add(1), tls: isTLS, Opened: time.Now(), waited: waited}
	c.Proto.Store("http/1.1")
	t.mu.Lock()
	t.accepted++
	if len(t.conns) < maxConnRecords {
		t.conns = append(t.conns, c)
	}
	t.mu.Unlock()
	return c
}

// Carried counts a request that came on a connection accepted before this trial started: a
// client that kept its connections from an earlier job.
func (t *Trial) Carried(tc *Conn) {
	if tc.carriedIn.Swap(t.ID) != t.ID {
		t.carriedConns.Add(1)
	}
	t.carriedRequests.Add(1)
}

func (t *Trial) Handshake(resumed, earlyData bool) {
	t.mu.Lock()
	if earlyData {
		t.tlsEarlyData++
	}
	if resumed {
		t.tlsResumed++
	} else {
		t.tlsFull++
	}
	t.mu.Unlock()
}

// logChunk is how many log entries are allocated at once (about 1 MB).
const logChunk = 4096

func (t *Trial) Record(e LogEntry) {
	t.mu.Lock()
	t.requests++
	t.versions[e.Proto]++
	if t.logged < maxLogEntries {
		if n := len(t.log); n == 0 || len(t.log[n-1]) == cap(t.log[n-1]) {
			t.log = append(t.log, make([]LogEntry, 0, logChunk))
		}
		last := &t.log[len(t.log)-1]
		*last = append(*last, e)
		t.logged++
	} else {
		t.dropped++
	}
	t.mu.Unlock()
}

type ConnJSON struct {
	ID      int64  `json:"id"`
	Proto   string `json:"proto"`
	TLS     bool   `json:"tls"`
	Resumed bool   `json:"resumed"`
	// EarlyData: an HTTP/3 connection whose client sent its first requests as 0-RTT data
	EarlyData bool  `json:"early_data"`
	Requests  int64 `json:"requests"`
	BytesIn   int64 `json:"bytes_in"`
	BytesOut  int64 `json:"bytes_out"`
	OpenedNs  int64 `json:"opened_ns"`
	ClosedNs  int64 `json:"closed_ns"`
}

type Snapshot struct {
	ElapsedNs   int64            `json:"elapsed_ns"`
	Connections int              `json:"connections"`
	TLS         map[string]int64 `json:"tls"`
	Requests    int64            `json:"requests"`
	Versions    map[string]int64 `json:"versions"`
	BytesIn     int64            `json:"bytes_in"`
	BytesOut    int64            `json:"bytes_out"`
	LogDropped  int64            `json:"log_dropped"`
	AltSvc      string           `json:"alt_svc,omitempty"` // the Alt-Svc value answers carried, if any did
	// connections accepted in this trial that carried no request (opened and left unused);
	// connections that waited under the cap are not counted (they may have given up waiting)
	IdleConns int `json:"idle_connections"`
	// connections already open when the trial started; those still open now (kept across the
	// reset, not merely closing late); those that carried requests in this trial
	OpenAtReset     int        `json:"open_at_reset"`
	KeptOpen        int        `json:"kept_open"`
	CarriedConns    int64      `json:"carried_connections"`
	CarriedRequests int64      `json:"carried_requests"`
	ConnsDropped    int64      `json:"conns_dropped"` // accepted beyond the listing's cap (counted in connections)
	Conns           []ConnJSON `json:"conns"`
	Log             []LogEntry `json:"log"`
	Cap             *capJSON   `json:"cap,omitempty"`
}

// capJSON: the server's connection cap in this trial (only when one is set).
type capJSON struct {
	Limit      int   `json:"limit"`
	PeakOpen   int   `json:"peak_open"`
	Waited     int64 `json:"waited"`
	WaitNs     int64 `json:"wait_ns"`
	IdleClosed int64 `json:"idle_closed"`
}

func (t *Trial) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Snapshot{
		ElapsedNs:   t.Since(time.Now()),
		Connections: int(t.accepted),
		TLS:         map[string]int64{"full": t.tlsFull, "resumed": t.tlsResumed, "early_data": t.tlsEarlyData},
		Requests:    t.requests,
		Versions:    map[string]int64{},
		LogDropped:  t.dropped,
		OpenAtReset: len(t.OpenAtStart), CarriedConns: t.carriedConns.Load(), CarriedRequests: t.carriedRequests.Load(),
		ConnsDropped: t.accepted - int64(len(t.conns)),
		Conns:        make([]ConnJSON, 0, len(t.conns)),
		Log:          make([]LogEntry, 0, t.logged), // [] rather than null when nothing arrived
	}
	if v := AltSvc(); v != nil && t.altSvcOffered.Load() {
		s.AltSvc = *v
	}
	for _, chunk := range t.log {
		s.Log = append(s.Log, chunk...)
	}
	for k, v := range t.versions {
		s.Versions[k] = v
	}
	for _, c := range t.OpenAtStart {
		if !c.closed.Load() {
			s.KeptOpen++
		}
	}
	if cl := Cap(); cl != nil {
		if limit, peak := cl.State(); limit > 0 {
			s.Cap = &capJSON{Limit: limit, PeakOpen: peak, Waited: t.capWaits, WaitNs: t.capWaitNs, IdleClosed: t.capReaped}
		}
	}
	for _, c := range t.conns {
		in, out := c.bytes()
		requests := c.Requests.Load()
		if requests == 0 && !c.waited {
			s.IdleConns++
		}
		s.BytesIn += in
		s.BytesOut += out
		s.Conns = append(s.Conns, ConnJSON{
			ID: c.ID, Proto: c.Proto.Load().(string), TLS: c.tls, Resumed: c.Resumed.Load(), EarlyData: c.EarlyData.Load(),
			Requests: requests, BytesIn: in, BytesOut: out,
			OpenedNs: t.Since(c.Opened), ClosedNs: c.closed.Load(),
		})
	}
	return s
}

// FinishQUIC keeps the connection's final byte counts and lets go of it (a trial's record
// must not keep a closed connection's memory alive).
func (c *ConnRecord) FinishQUIC(qc *quic.Conn) {
	st := qc.ConnectionStats()
	c.bytesIn.Store(int64(st.BytesReceived))
	c.bytesOut.Store(int64(st.BytesSent))
	c.Quic.Store(nil)
}

// bytes are the connection's bytes so far: the QUIC layer's while the connection is open
// (QUIC packets, without UDP and IP headers; retransmissions included), else the counters.
func (c *ConnRecord) bytes() (in, out int64) {
	if qc := c.Quic.Load(); qc != nil {
		st := qc.ConnectionStats()
		return int64(st.BytesReceived), int64(st.BytesSent)
	}
	return c.bytesIn.Load(), c.bytesOut.Load()
}
