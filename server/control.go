package main

// The lab's control endpoint: configuration, counters, reset, digests. Drivers never see it.

import (
	"encoding/json"
	"net/http"
)

type settings struct {
	RecordDigests *bool `json:"record_digests"`
	MaxConns      *int  `json:"max_conns"`
	DisableH2     *bool `json:"disable_h2"`
}

func controlHandler(limit *connLimit) http.Handler {
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
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
			http.Error(w, "bad config: "+err.Error(), http.StatusBadRequest)
			return
		}
		if s.RecordDigests != nil {
			recordDigests.Store(*s.RecordDigests)
		}
		if s.MaxConns != nil {
			limit.set(*s.MaxConns)
		}
		if s.DisableH2 != nil {
			disableH2.Store(*s.DisableH2)
		}
		reply(w, map[string]bool{"ok": true})
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		current.Store(newTrial())
		limit.newTrial()
		reply(w, map[string]bool{"ok": true})
	})
	mux.HandleFunc("GET /counters", func(w http.ResponseWriter, r *http.Request) {
		t := current.Load()
		if r.URL.Query().Get("reset") == "1" {
			t = current.Swap(newTrial())
			defer limit.newTrial()
		}
		reply(w, t.snapshot())
	})
	mux.HandleFunc("GET /digest", func(w http.ResponseWriter, r *http.Request) {
		size, digest, ok := bodyDigest(r.URL.Query().Get("path"))
		if !ok {
			http.Error(w, "no fixed body at that path", http.StatusNotFound)
			return
		}
		reply(w, map[string]any{"size": size, "sha256": digest})
	})
	return mux
}
