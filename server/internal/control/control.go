// Package control serves the lab's control port: configuration, counters, reset, digests, rebind.
package control

// The lab's control endpoint: configuration, counters, reset, digests, rebind. Drivers never
// see it, and every request must carry the run's secret.

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"clientlab/server/internal/faults"
	"clientlab/server/internal/handlers"
	"clientlab/server/internal/record"
	"clientlab/server/internal/shape"
)

// SecretHeader carries the control secret the lab gave the server on its stdin.
const SecretHeader = "X-Clientlab-Secret"

// settleLimit bounds how long a counters request waits for answers still being recorded.
const settleLimit = 100 * time.Millisecond

type settings struct {
	RecordDigests *bool `json:"record_digests"`
	MaxConns      *int  `json:"max_conns"`
	DisableH2     *bool `json:"disable_h2"`
	// Headers is the shape of every answer's head (shape.go): "nginx" (the default) or "minimal"
	Headers *string `json:"headers"`
}

// Handler serves the control port: limit is the server's cap, rebind moves the public ports,
// fs is the fault side, disableH2 the TLS port's switch to HTTP/1.1 alone.
func Handler(limit *record.ConnLimit, rebind func() (map[string]int, error), fs *faults.Server, disableH2 *atomic.Bool, secret string) http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]bool{"ok": true})
	})
	mux.HandleFunc("POST /config", func(w http.ResponseWriter, r *http.Request) {
		var s settings
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&s); err != nil {
			http.Error(w, "bad config: "+err.Error(), http.StatusBadRequest)
			return
		}
		if s.Headers != nil && *s.Headers != shape.Nginx && *s.Headers != shape.Minimal {
			http.Error(w, `bad config: headers must be "nginx" or "minimal", not `+strconv.Quote(*s.Headers), http.StatusBadRequest)
			return
		}
		if s.RecordDigests != nil {
			record.SetRecordDigests(*s.RecordDigests)
		}
		if s.MaxConns != nil {
			limit.Set(*s.MaxConns)
		}
		if s.DisableH2 != nil {
			disableH2.Store(*s.DisableH2)
		}
		if s.Headers != nil {
			shape.SetMinimalHeads(*s.Headers == shape.Minimal)
		}
		reply(w, map[string]bool{"ok": true})
	})
	// a new trial starts: connections open now are the ones a client may have kept
	next := func() *record.Trial {
		t := record.NewTrial()
		t.OpenAtStart = limit.OpenConns()
		return t
	}
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		record.StartTrial(next())
		limit.NewTrial()
		reply(w, map[string]bool{"ok": true})
	})
	mux.HandleFunc("GET /counters", func(w http.ResponseWriter, r *http.Request) {
		t := record.Current()
		t.Settle(settleLimit) // the last answer's record, when the client was quicker than the server
		if r.URL.Query().Get("reset") == "1" {
			t = record.StartTrial(next())
			defer limit.NewTrial()
		}
		reply(w, t.Snapshot())
	})
	// the server's own CPU time: where the lab cannot read it from the kernel (a server on
	// another host), it reads it here before and after each trial
	mux.HandleFunc("GET /cpu", func(w http.ResponseWriter, r *http.Request) {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		reply(w, map[string]int64{"cpu_ns": ru.Utime.Nano() + ru.Stime.Nano()})
	})
	mux.HandleFunc("POST /rebind", func(w http.ResponseWriter, r *http.Request) {
		ports, err := rebind()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		reply(w, ports)
	})
	mux.HandleFunc("GET /digest", func(w http.ResponseWriter, r *http.Request) {
		size, digest, ok := handlers.BodyDigest(r.URL.Query().Get("path"))
		if !ok {
			http.Error(w, "no fixed body at that path", http.StatusNotFound)
			return
		}
		reply(w, map[string]any{"size": size, "sha256": digest})
	})
	fs.Control(mux, reply)
	want := []byte(secret)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(SecretHeader)), want) != 1 {
			http.Error(w, "control requests need the run's secret in "+SecretHeader, http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
