package main

// The count-down latches (--latch): round r's latch (nf:latch:r) is
// checked alone (a partition per round). Its sequential model is the key
// the scripts see (lua/latch_*.lua): the count, 0 when the key is missing
// (a count-down that reaches zero or below deletes it):
//   - trySetCount(n): when missing, n; else nothing. Answered 1: it must
//     have found the key missing. Answered 0: it found it there, but a
//     send of the same call the library retried (evalWriteAsync) may have
//     set it just before: "n when missing". Besides, a send of it that got
//     no answer (the worker's retries, the library's) may land at any time
//     later, even after the latch reached zero, setting n again: every
//     call also gives a "maybe" that never returns;
//   - countDown: one fewer, not below 0 (DECR, then DEL at 0 or below).
//     Never resent (evalWriteNoRetry): with an error or no answer, that or
//     nothing, from the call on;
//   - await, released: at a moment when the count is 0. The await is a
//     GET of the count until it reads <= 0 (the zero message only wakes it
//     to read again): "released" means a GET within the call read 0;
//   - await, timed out (no error): at a moment when the count is > 0: the
//     call gives up only after a GET within it read more than 0 (a GET
//     still out at the deadline fails the call with an error). An await
//     that ended in an error says nothing: left out.
// The await's call is taken at its worker's count-down's answer (the
// worker awaits right after it; its retries after an error are within);
// its return at the W record.
// A worker's record that ends within a round (its process ended) leaves
// its trySetCount and count-down as ones with no answer.

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

const (
	ltSetCreated = iota // trySetCount answered 1
	ltSetExisted        // answered 0
	ltSetMaybe          // a send of it may land, or not, at any time
	ltCountDown
	ltCountDownMaybe
	ltReleased
	ltTimedOut
)

type ltIn struct {
	kind  int
	name  string
	round int64
}

func latchModel(count int64) porcupine.Model {
	setIfMissing := func(s int64) int64 {
		if s == 0 {
			return count
		}
		return s
	}
	down := func(s int64) int64 {
		if s > 0 {
			return s - 1
		}
		return 0
	}
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{int64(0)} },
		Step: func(state, input, output interface{}) []interface{} {
			s, in := state.(int64), input.(*ltIn)
			one := func(v int64) []interface{} { return []interface{}{v} }
			switch in.kind {
			case ltSetCreated:
				if s == 0 {
					return one(count)
				}
			case ltSetExisted:
				return one(setIfMissing(s))
			case ltSetMaybe:
				return []interface{}{s, setIfMissing(s)}
			case ltCountDown:
				return one(down(s))
			case ltCountDownMaybe:
				return []interface{}{s, down(s)}
			case ltReleased:
				if s == 0 {
					return one(s)
				}
			case ltTimedOut:
				if s > 0 {
					return one(s)
				}
			}
			return nil
		},
		Hash: func(state interface{}) uint64 { return uint64(state.(int64)+1) * 0x9e3779b97f4a7c15 },
		DescribeOperation: func(input, output interface{}) string {
			in := input.(*ltIn)
			what := [...]string{"trySetCount: set", "trySetCount: existed",
				"trySetCount: a send that may land", "countDown: ok", "countDown: no answer",
				"await: released", "await: timed out"}[in.kind]
			return fmt.Sprintf("%s (round %d): %s", in.name, in.round, what)
		},
		DescribeState: func(state interface{}) string {
			return fmt.Sprintf("count %d", state.(int64))
		},
	}
	return nm.ToModel()
}

// latchOps reads each worker's latch records into operations, by round.
// Lines: S r t, P r call return err set, D r sent err answered,
// W r t reached err.
func latchOps(ws []syncWorker) map[int64][]opAt {
	ops := map[int64][]opAt{}
	for _, w := range ws {
		latchWorker(w, ops)
	}
	for r, p := range ops {
		ops[r] = fewerMaybeSets(p)
	}
	return ops
}

// fewerMaybeSets keeps two of a round's trySetCount sends that may land
// late, called at the earliest one's call: the same verdict as all of
// them, and the search is far shorter (each never returns; a 50000-round
// history took 22 s with one per call, 1 to 2 s with two per round). A
// set changes the count only at 0, and the count is 0 at most twice: at
// the start, and once the round's count-downs (one per worker: exactly
// the count) brought a set count down; set again after that, nothing
// brings it back to 0. So at most two sends take effect, and two placed
// from the earliest call on can do whatever any of them did.
func fewerMaybeSets(p []opAt) []opAt {
	out := p[:0]
	first, n := int64(never), 0
	for _, o := range p {
		if o.in.(*ltIn).kind != ltSetMaybe {
			out = append(out, o)
			continue
		}
		if n++; o.call < first {
			first = o.call
		}
	}
	for i := 0; i < n && i < 2; i++ {
		out = append(out, opAt{wid: 0, call: first, ret: never,
			in: &ltIn{kind: ltSetMaybe, round: p[0].in.(*ltIn).round, name: "any worker"}})
	}
	return out
}

// latchRound is what a worker's records say of its round under way.
type latchRound struct {
	r        int64
	s        int64 // S: begun
	set      bool  // P seen
	setRet   int64
	downSent bool  // D seen
	downRet  int64 // the count-down's answer (the await's call)
}

func latchWorker(w syncWorker, ops map[int64][]opAt) {
	var cur *latchRound
	add := func(kind int, call, ret int64) {
		ops[cur.r] = append(ops[cur.r], opAt{wid: w.wid, call: call, ret: ret,
			in: &ltIn{kind: kind, round: cur.r, name: fmt.Sprintf("w%d", w.wid)}})
	}
	for _, l := range w.lines {
		t := l.arg(1, 0)
		if l.kind != 'S' && (cur == nil || l.arg(0, 0) != cur.r) {
			continue
		}
		switch l.kind {
		case 'S':
			if cur != nil {
				endRound(cur, add)
			}
			cur = &latchRound{r: l.arg(0, 0), s: t}
		case 'P':
			add(ltSetMaybe, t, never)
			cur.set, cur.setRet = true, l.arg(2, 0)
			if l.arg(3, -1) == 0 {
				kind := ltSetExisted
				if l.arg(4, 0) == 1 {
					kind = ltSetCreated
				}
				add(kind, t, cur.setRet)
			}
		case 'D':
			ret := l.arg(3, never)
			if l.arg(2, -1) == 0 && ret != never {
				add(ltCountDown, t, ret)
			} else {
				add(ltCountDownMaybe, t, never)
			}
			cur.downSent, cur.downRet = true, ret
		case 'W':
			if l.arg(3, -1) == 0 && cur.downSent && cur.downRet != never {
				kind := ltTimedOut
				if l.arg(2, 0) == 1 {
					kind = ltReleased
				}
				add(kind, cur.downRet, t)
			}
			cur = nil
		}
	}
	if cur != nil {
		endRound(cur, add)
	}
}

// endRound: a round whose records stop before its await's end (the
// process ended in it): what it may have sent without recording it.
func endRound(cur *latchRound, add func(kind int, call, ret int64)) {
	switch {
	case !cur.set: // its count-down comes after the P line
		add(ltSetMaybe, cur.s, never)
	case !cur.downSent:
		add(ltCountDownMaybe, cur.setRet, never)
	}
}
