package main

// The counter the workers update under the lock (GET r, SET r + 1), as a
// register whose sequential model is a counter: a hold the lock protects
// reads and writes atomically, so two of them that read the same value
// cannot both have written (a lost update). Per hold h:
//   - untainted, SET acknowledged: inc(r) [acquired, SET returned]: the
//     register must hold r, then holds r + 1; but read(r) [acquired, GET
//     returned] and write(r + 1) [SET sent, SET returned] when a write the
//     lock does not order (a tainted hold's, an unanswered one) may land
//     within the hold, between its GET and its SET;
//   - untainted, SET unanswered: read(r) [acquired, GET returned], and
//     maybe(r + 1) [SET sent, never]: the write may land at any time, even
//     after the worker gave up (the kernel still sends what the socket
//     had), or never;
//   - untainted, SET refused or not sent: read(r);
//   - tainted (taint.go): its read is not checked (it may be stale: another
//     client held the lock), its write is: write(r + 1) [SET sent, SET
//     returned] when acknowledged, else maybe(r + 1) [SET sent, never];
//   - the final counter the driver read after every worker exited: read.

import (
	"fmt"
	"math"
	"sort"

	"github.com/anishathalye/porcupine"
)

const (
	cInc = iota
	cRead
	cWrite
	cMaybe
	cInit // a segment's start: any of vals (see counterSegments)
)

type counterIn struct {
	kind int
	v    int64
	vals []int64
	name string
}

const never = math.MaxInt64 - 1

func counterModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{int64(0)} },
		Step: func(state, input, output interface{}) []interface{} {
			s, in := state.(int64), input.(*counterIn)
			switch in.kind {
			case cInc:
				if s == in.v {
					return []interface{}{in.v + 1}
				}
			case cRead:
				if s == in.v {
					return []interface{}{s}
				}
			case cWrite:
				return []interface{}{in.v}
			case cMaybe:
				return []interface{}{s, in.v}
			case cInit:
				if s == 0 { // from the initial state only: nothing goes before it
					out := make([]interface{}, len(in.vals))
					for i, v := range in.vals {
						out[i] = v
					}
					return out
				}
			}
			return nil
		},
		Hash: func(state interface{}) uint64 { return uint64(state.(int64)) * 0x9e3779b97f4a7c15 },
		DescribeOperation: func(input, output interface{}) string {
			in := input.(*counterIn)
			switch in.kind {
			case cInc:
				return fmt.Sprintf("%s: GET %d, SET %d", in.name, in.v, in.v+1)
			case cRead:
				return fmt.Sprintf("%s: GET %d", in.name, in.v)
			case cWrite:
				return fmt.Sprintf("%s (tainted): SET %d", in.name, in.v)
			case cMaybe:
				return fmt.Sprintf("%s: SET %d unanswered", in.name, in.v)
			}
			return fmt.Sprintf("(segment start: one of %v)", in.vals)
		},
		DescribeState: func(state interface{}) string { return fmt.Sprint(state.(int64)) },
	}
	return nm.ToModel()
}

func counterOps(rn *run, final int64, hasFinal bool) []porcupine.Operation {
	var ops []porcupine.Operation
	add := func(h *hold, kind int, v, call, ret int64) {
		ops = append(ops, porcupine.Operation{ClientId: h.wid,
			Input: &counterIn{kind: kind, v: v, name: h.name()}, Call: call, Return: ret})
	}
	loose := looseWrites(rn)
	for _, h := range rn.holds {
		if !h.got {
			continue
		}
		wrote := h.intent && h.set != setRefused
		acked := wrote && h.set == setAcked
		switch {
		case !h.tainted() && acked && !loose.meets(h.a, h.s):
			add(h, cInc, h.read, h.a, h.s)
		case !h.tainted() && acked:
			add(h, cRead, h.read, h.a, h.g)
			add(h, cWrite, h.read+1, h.w, h.s)
		case !h.tainted():
			add(h, cRead, h.read, h.a, h.g)
			if wrote {
				add(h, cMaybe, h.read+1, h.w, never)
			}
		case acked:
			add(h, cWrite, h.read+1, h.w, h.s)
		case wrote:
			add(h, cMaybe, h.read+1, h.w, never)
		}
	}
	if hasFinal {
		t := rn.last + 1
		ops = append(ops, porcupine.Operation{ClientId: 0,
			Input: &counterIn{kind: cRead, v: final, name: "final"}, Call: t, Return: t})
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	return ops
}

type windows []window

// looseWrites: the windows in which a write the lock does not order may
// land: a tainted hold's [W, S] (its SET answered) or [W, never), an
// untainted hold's unanswered SET's [W, never).
func looseWrites(rn *run) windows {
	var v windows
	for _, h := range rn.holds {
		if !h.got || !h.intent || h.set == setRefused {
			continue
		}
		switch {
		case h.set != setAcked:
			v = append(v, window{h.w, never})
		case h.tainted():
			v = append(v, window{h.w, h.s})
		}
	}
	return v
}

func (v windows) meets(t0, t1 int64) bool {
	for _, w := range v {
		if w.t0 <= t1 && t0 <= w.t1 {
			return true
		}
	}
	return false
}

// counterSegments cuts the history at increments (or acknowledged writes)
// that nothing else overlaps. After such an inc(r) h, the register holds
// r + 1 (after write(v): v), or the value
// of a maybe write sent before that lands in between: the next segment
// starts with an init (at t = h's return + 1 ns, legal only from the
// initial state) to any of them, and takes every maybe write sent before
// t again from t on (it may land later still). Every operation other than
// the maybes either returned before h was called or is called after t,
// so the whole is linearizable only if each segment is; the other way, a
// maybe counted twice only allows more: a segment can miss a lost update
// a late write explains, never report one that is not there.
func counterSegments(ops []porcupine.Operation, perSegment int) [][]porcupine.Operation {
	var segs [][]porcupine.Operation
	var cur []porcupine.Operation
	var maybes []*counterIn
	maxRet := int64(math.MinInt64) // of the finite operations so far
	n := 0
	for i, op := range ops {
		in := op.Input.(*counterIn)
		if in.kind == cMaybe {
			maybes = append(maybes, in)
			cur = append(cur, op)
			continue
		}
		t := op.Return + 1
		after := in.v // what the register holds after a write or an inc
		if in.kind == cInc {
			after = in.v + 1
		}
		cut := n >= perSegment && (in.kind == cInc || in.kind == cWrite) && maxRet < op.Call &&
			i+1 < len(ops) && ops[i+1].Call > t
		cur = append(cur, op)
		n++
		if op.Return > maxRet {
			maxRet = op.Return
		}
		if !cut {
			continue
		}
		segs = append(segs, cur)
		vals := []int64{after}
		for _, m := range maybes {
			vals = append(vals, m.v)
		}
		cur = []porcupine.Operation{{Input: &counterIn{kind: cInit, vals: dedup(vals)}, Call: t, Return: t}}
		for _, m := range maybes {
			cur = append(cur, porcupine.Operation{Input: m, Call: t + 1, Return: never})
		}
		n = 0
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

func dedup(v []int64) []int64 {
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	out := v[:0]
	for i, x := range v {
		if i == 0 || x != v[i-1] {
			out = append(out, x)
		}
	}
	return out
}
