package main

// The plain semaphore (RSemaphore, --rsemaphore): a new one each epoch
// (nf:rsem:<epoch>), each checked alone (a partition per epoch). Its
// sequential model is the key the scripts see (lua/semaphore_*.lua): the
// permits left, or none (the key missing):
//   - trySetPermits(k): when missing, k; else nothing (it answers set 1 or
//     0). Answered 1: it must have found the key missing. Answered 0: it
//     found it there, but a send of the same call the library retried
//     (evalWriteAsync) may have set it just before: so "k when missing".
//     No answer: that, or nothing, at any time from its call on (see
//     rsModel: pending in the state from its call on);
//   - tryAcquire(1): acquired: at least one permit, one fewer. Not
//     acquired (the wait ran out, no error): at a try where fewer than one
//     was left (missing or 0; every try's answer comes within the call,
//     and the call gives up only after a try answered "not yet"). An error
//     or no answer (never resent: syncedEvalNoRetry): one fewer or
//     nothing, from the call on;
//   - release(1): INCRBY, so one more (1 when missing). Sent once
//     (sync_worker.c): with an error or no answer, one more or nothing,
//     from when the hold ended on.
// A worker's record that ends within a round (its process ended) leaves
// its acquire, or its release once the hold was left (U), as one with no
// answer; one that ends in its hold keeps the permit.

import (
	"bufio"
	"fmt"
	"os"

	"github.com/anishathalye/porcupine"
)

const rsMissing = -1 // the semaphore's key does not exist

const (
	rsSetCreated = iota // trySetPermits answered 1
	rsSetExisted        // answered 0
	rsSetMaybe          // no answer, or an error
	rsAcquired
	rsNotAcquired
	rsAcquireMaybe
	rsReleased
	rsReleaseMaybe
	rsFinal // the count read at quiescence (netfault's available.log)
)

type rsIn struct {
	kind  int
	v     int64 // rsFinal: the count read
	name  string
	epoch int64
}

// rsState: the permits (rsMissing: no key) and the unanswered operations
// sent so far that may still take effect (each one at most once).
type rsState struct {
	p             int64
	set, acq, rel int
}

// Unanswered operations are not Porcupine operations that never return:
// with a few of them in a partition of thousands, a history that fails
// only at its last read (the count at quiescence) made the search try
// every place for each (a 5 s epoch: past 30 s and 1.8 GB). Instead an
// unanswered operation is recorded in the state when it is sent (an
// operation [call, call]), and before every later operation any of those
// pending may take effect, in any order, or stay pending (never applied):
// the same histories are legal, and the search stays linear.
func rsModel(permits int64) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{rsState{p: rsMissing}} },
		Step: func(state, input, output interface{}) []interface{} {
			var out []interface{}
			for _, s := range rsPending(state.(rsState), permits) {
				if n, ok := rsStep(s, input.(*rsIn), permits); ok {
					out = append(out, rsNorm(n))
				}
			}
			return out
		},
		Hash: func(state interface{}) uint64 {
			s := state.(rsState)
			return (uint64(s.p+2)*0x9e3779b97f4a7c15 ^ uint64(s.set)<<40 ^ uint64(s.acq)<<20 ^ uint64(s.rel))
		},
		DescribeOperation: func(input, output interface{}) string {
			in := input.(*rsIn)
			what := [...]string{"trySetPermits: set", "trySetPermits: existed",
				"trySetPermits: no answer (may land from here on)", "tryAcquire: acquired",
				"tryAcquire: not acquired", "tryAcquire: no answer (may land from here on)",
				"release: ok", "release: no answer (may land from here on)", "available"}[in.kind]
			if in.kind == rsFinal {
				what = fmt.Sprintf("available %d (at quiescence)", in.v)
			}
			return fmt.Sprintf("%s (epoch %d): %s", in.name, in.epoch, what)
		},
		DescribeState: func(state interface{}) string {
			s := state.(rsState)
			p := "no semaphore"
			if s.p != rsMissing {
				p = fmt.Sprintf("%d permits", s.p)
			}
			return fmt.Sprintf("%s; pending: %d sets, %d acquires, %d releases", p, s.set, s.acq, s.rel)
		},
	}
	return nm.ToModel()
}

// rsStep: one operation on s; false: it cannot have answered that there.
func rsStep(s rsState, in *rsIn, permits int64) (rsState, bool) {
	switch in.kind {
	case rsSetCreated:
		if s.p != rsMissing {
			return s, false
		}
		s.p = permits
	case rsSetExisted:
		if s.p == rsMissing {
			s.p = permits
		}
	case rsSetMaybe:
		s.set++
	case rsAcquired:
		if s.p < 1 {
			return s, false
		}
		s.p--
	case rsNotAcquired:
		return s, s.p < 1
	case rsAcquireMaybe:
		s.acq++
	case rsReleased:
		s.p = released(s.p)
	case rsReleaseMaybe:
		s.rel++
	case rsFinal:
		return s, s.p == in.v
	}
	return s, true
}

func rsNorm(s rsState) rsState {
	if s.p != rsMissing {
		s.set = 0
	}
	return s
}

// rsPending: every state s can be in once any of its pending operations
// took effect (each at most once, in any order), s itself included. A
// pending set that finds the key is a no-op for good (the key is never
// deleted): dropped, which keeps the states few.
func rsPending(s rsState, permits int64) []rsState {
	s = rsNorm(s)
	seen := map[rsState]bool{s: true}
	out := []rsState{s}
	for i := 0; i < len(out); i++ {
		c := out[i]
		var next []rsState
		if c.set > 0 {
			n := c
			n.set--
			if n.p == rsMissing {
				n.p = permits
			}
			next = append(next, n)
		}
		if c.acq > 0 && c.p >= 1 {
			n := c
			n.acq--
			n.p--
			next = append(next, n)
		}
		if c.rel > 0 {
			n := c
			n.rel--
			n.p = released(n.p)
			next = append(next, n)
		}
		for _, n := range next {
			if n = rsNorm(n); !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// released: INCRBY 1 (a missing key counts as 0).
func released(s int64) int64 {
	if s == rsMissing {
		return 1
	}
	return s + 1
}

// rsemOps reads each worker's plain-semaphore records into operations, by
// epoch. Lines: P epoch call return err set, C n t epoch, A n t, F n t err,
// U n t, R n t err.
func rsemOps(ws []syncWorker) map[int64][]opAt {
	ops := map[int64][]opAt{}
	for _, w := range ws {
		rsemWorker(w, ops)
	}
	return ops
}

func rsemWorker(w syncWorker, ops map[int64][]opAt) {
	var epoch, c, u int64
	var n int64 = -1               // the round under way (C seen), -1: none
	acquired, left := false, false // A seen, U seen
	add := func(kind int, e, call, ret int64) {
		ops[e] = append(ops[e], opAt{wid: w.wid, call: call, ret: ret,
			in: &rsIn{kind: kind, epoch: e, name: fmt.Sprintf("w%d/%d", w.wid, n)}})
	}
	for _, l := range w.lines {
		t := l.arg(1, 0)
		switch l.kind {
		case 'P':
			kind, ret := rsSetMaybe, t
			if l.arg(3, -1) == 0 {
				kind, ret = rsSetExisted, l.arg(2, 0)
				if l.arg(4, 0) == 1 {
					kind = rsSetCreated
				}
			}
			add(kind, l.arg(0, 0), t, ret)
		case 'C':
			n, epoch, c, acquired, left = l.arg(0, 0), l.arg(2, 0), t, false, false
		case 'F':
			if n < 0 {
				continue
			}
			if l.arg(2, -1) == 0 {
				add(rsNotAcquired, epoch, c, t)
			} else {
				add(rsAcquireMaybe, epoch, c, c)
			}
			n = -1
		case 'A':
			if n >= 0 {
				add(rsAcquired, epoch, c, t)
				acquired = true
			}
		case 'U':
			u, left = t, true
		case 'R':
			if n < 0 || !acquired {
				continue
			}
			if l.arg(2, -1) == 0 {
				add(rsReleased, epoch, u, t)
			} else {
				add(rsReleaseMaybe, epoch, u, u)
			}
			n = -1
		}
	}
	// The process ended within a round: its acquire or release unanswered;
	// ended in its hold (no U): its release never went out.
	switch {
	case n >= 0 && !acquired:
		add(rsAcquireMaybe, epoch, c, c)
	case n >= 0 && left:
		add(rsReleaseMaybe, epoch, u, u)
	}
}

// readAvailable reads netfault's available.log: "epoch count" a line, the
// semaphores that existed at quiescence.
func readAvailable(path string) (map[int64]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[int64]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e, v int64
		if _, err := fmt.Sscan(sc.Text(), &e, &v); err != nil {
			return nil, fmt.Errorf("%s: %q: %v", path, sc.Text(), err)
		}
		out[e] = v
	}
	return out, sc.Err()
}

// withFinals ends each epoch's history with the count read at quiescence,
// after every recorded time (a semaphore not read did not exist). nil: no
// reads, nothing added. An operation with no answer may still linearize
// after it (as it may never have been applied).
func withFinals(ops map[int64][]opAt, finals map[int64]int64) map[int64][]opAt {
	if finals == nil {
		return ops
	}
	last := int64(0)
	for _, p := range ops {
		for _, o := range p {
			if o.call > last {
				last = o.call
			}
			if o.ret != never && o.ret > last {
				last = o.ret
			}
		}
	}
	for e := range ops {
		v, ok := finals[e]
		if !ok {
			v = rsMissing
		}
		ops[e] = append(ops[e], opAt{wid: 0, call: last + 1, ret: last + 1,
			in: &rsIn{kind: rsFinal, v: v, epoch: e, name: "probe"}})
	}
	return ops
}
