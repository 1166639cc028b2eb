package main

import (
	"fmt"
	"math/rand"
)

// impairment is what one direction of the link does to the packets it carries.
type impairment struct {
	DelayMs        float64 `json:"delay_ms"`         // one way
	JitterMs       float64 `json:"jitter_ms"`        // each packet's delay: DelayMs ± up to JitterMs, uniform
	LossPct        float64 `json:"loss_pct"`         // share of packets dropped
	LossBurst      float64 `json:"loss_burst"`       // mean loss burst length (Gilbert model); 0: independent
	ReorderPct     float64 `json:"reorder_pct"`      // share of packets held back by ReorderExtraMs
	ReorderExtraMs float64 `json:"reorder_extra_ms"` // how long a reordered packet is held back
	RateMbit       float64 `json:"rate_mbit"`        // 0: no rate limit
	QueueMs        float64 `json:"queue_ms"`         // a packet that would wait longer for the rate is dropped
}

// check names the first setting out of range, as the flag or JSON field it came from.
func (c impairment) check() error {
	switch {
	case c.DelayMs < 0 || c.DelayMs > 10_000:
		return fmt.Errorf("delay_ms %g: want 0..10000", c.DelayMs)
	case c.JitterMs < 0 || c.JitterMs > 10_000:
		return fmt.Errorf("jitter_ms %g: want 0..10000", c.JitterMs)
	case c.LossPct < 0 || c.LossPct >= 100:
		return fmt.Errorf("loss_pct %g: want 0 <= loss < 100", c.LossPct)
	case c.LossBurst != 0 && c.LossBurst < 1:
		return fmt.Errorf("loss_burst %g: want 0 (independent losses) or a mean burst length >= 1", c.LossBurst)
	case c.LossBurst != 0 && c.gilbertEnter() > 1:
		return fmt.Errorf("loss_burst %g is too short for loss_pct %g: want loss_burst >= %.3g",
			c.LossBurst, c.LossPct, c.LossPct/(100-c.LossPct))
	case c.ReorderPct < 0 || c.ReorderPct > 100:
		return fmt.Errorf("reorder_pct %g: want 0..100", c.ReorderPct)
	case c.ReorderExtraMs < 0 || c.ReorderExtraMs > 10_000:
		return fmt.Errorf("reorder_extra_ms %g: want 0..10000", c.ReorderExtraMs)
	case c.RateMbit < 0 || c.RateMbit > 100_000:
		return fmt.Errorf("rate_mbit %g: want 0 (unlimited) ..100000", c.RateMbit)
	case c.QueueMs <= 0 || c.QueueMs > 10_000:
		return fmt.Errorf("queue_ms %g: want 0 < queue <= 10000", c.QueueMs)
	}
	return nil
}

// gilbertEnter is the good→bad chance per packet that makes the bad state's share LossPct when
// a burst lasts LossBurst packets on average (bad→good chance 1/LossBurst).
func (c impairment) gilbertEnter() float64 {
	p := c.LossPct / 100
	return p / (c.LossBurst * (1 - p))
}

type verdict int

const (
	pass       verdict = iota
	lostRandom         // the loss model dropped it
	lostQueue          // it would have waited longer than QueueMs for the rate
)

// shaper decides each packet's fate for one direction. Not safe for concurrent use.
type shaper struct {
	cfg      impairment
	rng      *rand.Rand
	bad      bool  // Gilbert state: in a loss burst
	linkFree int64 // ns: when the rate-limited link has sent the packets before
	lastDue  int64 // ns: the latest due time handed out in order
}

func newShaper(cfg impairment, seed int64) *shaper {
	return &shaper{cfg: cfg, rng: rand.New(rand.NewSource(seed))}
}

// schedule returns when a packet that arrived at now (ns) and has size bytes leaves the link,
// or why it never does; held says it was held back to reorder it.
//
// Jitter keeps order: a packet never leaves before one that arrived before it (a real link's
// jitter is mostly queueing, which keeps order), so jitter alone never reorders. Only the
// ReorderPct packets, held back by ReorderExtraMs, are overtaken.
func (s *shaper) schedule(now int64, size int) (due int64, v verdict, held bool) {
	if s.lose() {
		return 0, lostRandom, false
	}
	sent := now
	if s.cfg.RateMbit > 0 {
		start := max(now, s.linkFree)
		if float64(start-now) > s.cfg.QueueMs*1e6 {
			return 0, lostQueue, false
		}
		s.linkFree = start + int64(float64(size*8)/s.cfg.RateMbit*1e3) // bits / (Mbit/s) = µs; ×1e3 ns
		sent = s.linkFree
	}
	delay := s.cfg.DelayMs
	if s.cfg.JitterMs > 0 {
		delay = max(0, delay+(2*s.rng.Float64()-1)*s.cfg.JitterMs)
	}
	due = sent + int64(delay*1e6)
	if s.cfg.ReorderPct > 0 && s.rng.Float64()*100 < s.cfg.ReorderPct {
		return due + int64(s.cfg.ReorderExtraMs*1e6), pass, true
	}
	due = max(due, s.lastDue)
	s.lastDue = due
	return due, pass, false
}

func (s *shaper) lose() bool {
	p := s.cfg.LossPct / 100
	switch {
	case p <= 0:
		return false
	case s.cfg.LossBurst == 0:
		return s.rng.Float64() < p
	case s.bad:
		s.bad = s.rng.Float64() >= 1/s.cfg.LossBurst
	default:
		s.bad = s.rng.Float64() < s.cfg.gilbertEnter()
	}
	return s.bad
}
