package main

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// monoNow is CLOCK_MONOTONIC in ns, the clock the timerfd counts in, read through Go's vDSO
// clock (a raw clock_gettime per packet would cost a system call).
var (
	monoStart = time.Now()
	monoBase  = func() int64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			panic(err)
		}
		return ts.Nano()
	}()
)

func monoNow() int64 { return monoBase + int64(time.Since(monoStart)) }

type packet struct {
	due  int64  // ns, CLOCK_MONOTONIC
	seq  uint64 // ties leave in arrival order
	data []byte
}

// packetHeap is a min-heap by (due, seq), typed so that a push allocates nothing.
type packetHeap []packet

func (h packetHeap) less(i, j int) bool {
	return h[i].due < h[j].due || (h[i].due == h[j].due && h[i].seq < h[j].seq)
}

func (h *packetHeap) push(p packet) {
	*h = append(*h, p)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *packetHeap) pop() packet {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q[last] = packet{}
	q = q[:last]
	for i := 0; ; {
		small, l, r := i, 2*i+1, 2*i+2
		if l < len(q) && q.less(l, small) {
			small = l
		}
		if r < len(q) && q.less(r, small) {
			small = r
		}
		if small == i {
			break
		}
		q[i], q[small] = q[small], q[i]
		i = small
	}
	*h = q
	return top
}

// delayLine holds packets until their due time and hands each to emit then. One timerfd set to
// the earliest due time (absolute, CLOCK_MONOTONIC) wakes the sender: the kernel's hrtimer is
// precise to microseconds, where Go's own timers round their sleeps to the millisecond.
type delayLine struct {
	mu    sync.Mutex
	queue packetHeap
	seq   uint64
	tfd   int
	armed int64 // the due time the timer is set for; 0: none pending
	emit  func(data []byte, late int64)
}

func newDelayLine(emit func(data []byte, late int64)) (*delayLine, error) {
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &delayLine{tfd: tfd, emit: emit}, nil
}

// push queues a packet to leave at due (ns, CLOCK_MONOTONIC); a due time past leaves at once.
func (d *delayLine) push(due int64, data []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	d.queue.push(packet{due: due, seq: d.seq, data: data})
	if d.armed == 0 || due < d.armed {
		d.arm(due)
	}
}

func (d *delayLine) arm(at int64) {
	d.armed = at
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(at, 1))} // 0 would disarm
	if err := unix.TimerfdSettime(d.tfd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		panic(err) // only on a bad fd or value: a bug here, not a condition to carry on from
	}
}

// run sends packets as they fall due, forever (its blocking read holds one OS thread).
func (d *delayLine) run() {
	var expirations [8]byte
	var due []packet
	for {
		if _, err := unix.Read(d.tfd, expirations[:]); err != nil && err != unix.EINTR {
			panic(err)
		}
		due = d.popDue(due[:0])
		for i := range due {
			d.emit(due[i].data, monoNow()-due[i].due)
			due[i] = packet{}
		}
	}
}

func (d *delayLine) popDue(out []packet) []packet {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := monoNow()
	for len(d.queue) > 0 && d.queue[0].due <= now {
		out = append(out, d.queue.pop())
	}
	d.armed = 0
	if len(d.queue) > 0 {
		d.arm(d.queue[0].due)
	}
	return out
}

// pending is how many packets wait in the line.
func (d *delayLine) pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.queue)
}
