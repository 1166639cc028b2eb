package main

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// maxPacket is the largest IP packet a TUN read returns.
const maxPacket = 65535

// lateOver is the lateness past which a sent packet counts as late in the counters.
const lateOver = 1_000_000 // ns

// counters are one direction's figures since the last reset.
type counters struct {
	Packets    atomic.Int64 // read from the sending side
	Bytes      atomic.Int64
	LostRandom atomic.Int64 // dropped by the loss model
	LostQueue  atomic.Int64 // dropped by the rate's queue limit
	Reordered  atomic.Int64 // held back to reorder
	Sent       atomic.Int64 // written to the receiving side
	LateSumNs  atomic.Int64 // how far after its due time each packet was sent, summed
	LateMaxNs  atomic.Int64
	LateOver   atomic.Int64 // sent more than lateOver after its due time
	WriteErr   atomic.Int64 // the receiving side refused the packet
}

func (c *counters) snapshot(reset bool) map[string]int64 {
	take := func(v *atomic.Int64) int64 {
		if reset {
			return v.Swap(0)
		}
		return v.Load()
	}
	return map[string]int64{
		"packets": take(&c.Packets), "bytes": take(&c.Bytes), "lost_random": take(&c.LostRandom),
		"lost_queue": take(&c.LostQueue), "reordered": take(&c.Reordered), "sent": take(&c.Sent),
		"late_sum_ns": take(&c.LateSumNs), "late_max_ns": take(&c.LateMaxNs),
		"late_over_1ms": take(&c.LateOver), "write_errors": take(&c.WriteErr),
	}
}

// direction carries packets from one TUN device to the other through a shaper and a delay line.
type direction struct {
	in, out int // TUN fds
	mu      sync.Mutex
	shaper  *shaper
	line    *delayLine
	counts  counters
}

func newDirection(in, out int, cfg impairment, seed int64) (*direction, error) {
	d := &direction{in: in, out: out, shaper: newShaper(cfg, seed)}
	line, err := newDelayLine(d.send)
	if err != nil {
		return nil, err
	}
	d.line = line
	return d, nil
}

func (d *direction) settings() impairment {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.shaper.cfg
}

// configure changes the impairment live; the rate's and the order's clocks carry on.
func (d *direction) configure(cfg impairment) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.shaper.cfg = cfg
	d.shaper.bad = false
}

// carry reads packets until the device fails; each gets its fate from the shaper.
func (d *direction) carry() error {
	go d.line.run()
	buf := make([]byte, maxPacket)
	for {
		n, err := unix.Read(d.in, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		now := monoNow()
		d.counts.Packets.Add(1)
		d.counts.Bytes.Add(int64(n))
		d.mu.Lock()
		due, v, held := d.shaper.schedule(now, n)
		d.mu.Unlock()
		switch {
		case v == lostRandom:
			d.counts.LostRandom.Add(1)
			continue
		case v == lostQueue:
			d.counts.LostQueue.Add(1)
			continue
		case held:
			d.counts.Reordered.Add(1)
		}
		d.line.push(due, append([]byte(nil), buf[:n]...))
	}
}

func (d *direction) send(data []byte, late int64) {
	if _, err := unix.Write(d.out, data); err != nil {
		d.counts.WriteErr.Add(1) // e.g. the receiving device is down: the packet is lost, as on a wire
		return
	}
	d.counts.Sent.Add(1)
	d.counts.LateSumNs.Add(late)
	if late > lateOver {
		d.counts.LateOver.Add(1)
	}
	for prev := d.counts.LateMaxNs.Load(); late > prev && !d.counts.LateMaxNs.CompareAndSwap(prev, late); {
		prev = d.counts.LateMaxNs.Load()
	}
}
