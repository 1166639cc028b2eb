package main

import (
	"math"
	"strings"
	"testing"
)

const ms = int64(1_000_000)

func base() impairment { return impairment{ReorderExtraMs: 10, QueueMs: 100} }

// within fails unless got is within z standard deviations of a binomial(n, p) count. With z = 6 a
// correct model fails about once in 10⁹ runs; the seeds are fixed anyway, so a pass is stable.
func within(t *testing.T, what string, got, n int, p, z float64) {
	t.Helper()
	mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	if math.Abs(float64(got)-mean) > z*sd {
		t.Fatalf("%s: %d of %d, want %.0f ± %.0f (%g sd)", what, got, n, mean, z*sd, z)
	}
}

func TestIndependentLossDropsTheAskedShare(t *testing.T) {
	for _, pct := range []float64{0.5, 1, 5} {
		cfg := base()
		cfg.LossPct = pct
		s := newShaper(cfg, 7)
		lost, n := 0, 100_000
		for i := 0; i < n; i++ {
			if _, v, _ := s.schedule(int64(i)*ms, 100); v == lostRandom {
				lost++
			}
		}
		within(t, "lost", lost, n, pct/100, 6)
	}
}

func TestNoLossAskedLosesNothing(t *testing.T) {
	s := newShaper(base(), 7)
	for i := 0; i < 10_000; i++ {
		if _, v, _ := s.schedule(int64(i)*ms, 1500); v != pass {
			t.Fatalf("packet %d dropped (%d) with no loss and no rate asked", i, v)
		}
	}
}

func TestGilbertLossKeepsTheShareAndMakesBurstsOfTheAskedLength(t *testing.T) {
	cfg := base()
	cfg.LossPct, cfg.LossBurst = 2, 4
	s := newShaper(cfg, 11)
	lost, bursts, run, n := 0, 0, 0, 400_000
	for i := 0; i < n; i++ {
		if _, v, _ := s.schedule(int64(i)*ms, 100); v == lostRandom {
			lost++
			run++
		} else if run > 0 {
			bursts++
			run = 0
		}
	}
	// losses come in bursts, so their count varies more than a binomial's: a 10 % band
	if share := float64(lost) / float64(n); math.Abs(share-0.02) > 0.002 {
		t.Fatalf("lost share %.4f, want 0.02 ± 0.002", share)
	}
	if mean := float64(lost) / float64(bursts); math.Abs(mean-4) > 0.4 {
		t.Fatalf("mean burst %.2f packets, want 4 ± 0.4", mean)
	}
}

func TestJitterVariesTheDelayButKeepsOrder(t *testing.T) {
	cfg := base()
	cfg.DelayMs, cfg.JitterMs = 25, 5
	s := newShaper(cfg, 3)
	var last, lo, hi int64 = 0, math.MaxInt64, 0
	for i := 0; i < 10_000; i++ {
		now := int64(i) * 2 * ms // 2 ms apart: jitter alone would reorder some
		due, _, held := s.schedule(now, 100)
		if held || due < last {
			t.Fatalf("packet %d leaves at %d, before the one sent before it (%d)", i, due, last)
		}
		last = due
		lo, hi = min(lo, due-now), max(hi, due-now)
	}
	if lo < 20*ms || hi > 30*ms || hi-lo < 8*ms {
		t.Fatalf("delays %.2f..%.2f ms, want spread over 20..30 ms", float64(lo)/1e6, float64(hi)/1e6)
	}
}

func TestReorderingHoldsBackTheAskedShareAndOnlyThen(t *testing.T) {
	for _, pct := range []float64{0, 10} {
		cfg := base()
		cfg.DelayMs, cfg.ReorderPct = 5, pct
		s := newShaper(cfg, 5)
		held, overtaken, n := 0, 0, 20_000
		var lastHeld int64
		for i := 0; i < n; i++ {
			now := int64(i) * ms
			due, _, h := s.schedule(now, 100)
			if h {
				held++
				lastHeld = due
				if due != now+15*ms {
					t.Fatalf("a held packet leaves after %d ns, want 5 + 10 ms", due-now)
				}
			} else if due < lastHeld {
				overtaken++
			}
		}
		within(t, "held back", held, n, pct/100, 6)
		if (overtaken > 0) != (pct > 0) {
			t.Fatalf("reorder_pct %g: %d packets overtook a held one", pct, overtaken)
		}
	}
}

func TestRateSpacesPacketsAndDropsPastTheQueue(t *testing.T) {
	cfg := base()
	cfg.RateMbit, cfg.QueueMs, cfg.DelayMs = 10, 5, 1
	s := newShaper(cfg, 1)
	var dues []int64
	drops := 0
	for i := 0; i < 20; i++ { // 20 packets of 1250 B at once: 1 ms each on a 10 Mbit/s link
		due, v, _ := s.schedule(0, 1250)
		if v == lostQueue {
			drops++
			continue
		}
		dues = append(dues, due)
	}
	for i, due := range dues {
		if want := int64(i+1)*ms + ms; due != want {
			t.Fatalf("packet %d leaves at %d ns, want %d", i, due, want)
		}
	}
	if len(dues) != 6 || drops != 14 { // waits of 0..5 ms fit a 5 ms queue
		t.Fatalf("%d sent, %d dropped; want 6 and 14", len(dues), drops)
	}
}

func TestCheckNamesTheSettingOutOfRange(t *testing.T) {
	for field, mutate := range map[string]func(*impairment){
		"loss_pct":   func(c *impairment) { c.LossPct = 100 },
		"loss_burst": func(c *impairment) { c.LossPct, c.LossBurst = 60, 1 },
		"jitter_ms":  func(c *impairment) { c.JitterMs = -1 },
		"queue_ms":   func(c *impairment) { c.QueueMs = 0 },
	} {
		cfg := base()
		mutate(&cfg)
		if err := cfg.check(); err == nil || !strings.HasPrefix(err.Error(), field) {
			t.Errorf("%s: got %v", field, err)
		}
	}
	if err := base().check(); err != nil {
		t.Fatal(err)
	}
}
