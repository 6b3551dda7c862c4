package main

// The holds model: the lock as a mutex, the permit semaphore as a counting semaphore:
// one model, a semaphore of capacity k (the mutex: k = 1; the fenced lock
// also hands out strictly increasing tokens). One Porcupine history of
// acquire(hold) [call, acquired] and release(hold) [releaseWindow]. Holds
// that met a failover window are left out (a failover can grant the lock
// twice; the chaos analysis excuses any pair with such a hold).

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

const maxCap = 4

const (
	opAcquire = iota
	opRelease
	opCut // the segment starts with these holds holding (see holdSegments)
)

type semIn struct {
	kind    int
	hold    int // 1-based index of the hold
	token   int64
	name    string
	holders []int // opCut
	names   []string
}

type semState struct {
	held  [maxCap]int // the holders, greatest first; 0: a free permit
	token int64       // the last token handed out (fenced)
}

func (s semState) with(id int) semState {
	v := s.held[:]
	v = append([]int{id}, v...)[:maxCap]
	sort.Sort(sort.Reverse(sort.IntSlice(v)))
	copy(s.held[:], v)
	return s
}

func (s semState) without(id int) (semState, bool) {
	for i, x := range s.held {
		if x == id {
			copy(s.held[i:], s.held[i+1:])
			s.held[maxCap-1] = 0
			return s, true
		}
	}
	return s, false
}

func (s semState) count() int {
	n := 0
	for _, x := range s.held {
		if x != 0 {
			n++
		}
	}
	return n
}

// semModel: capacity k (<= maxCap); fenced: tokens strictly increase.
func semModel(k int, fenced bool) porcupine.Model {
	return porcupine.Model{
		Init: func() interface{} { return semState{} },
		Step: func(state, input, output interface{}) (bool, interface{}) {
			s, in := state.(semState), input.(*semIn)
			switch in.kind {
			case opAcquire:
				if s.count() >= k || (fenced && in.token <= s.token) {
					return false, s
				}
				s = s.with(in.hold)
				if fenced {
					s.token = in.token
				}
				return true, s
			case opRelease:
				n, ok := s.without(in.hold)
				return ok, n
			default: // opCut: from the initial state only
				if s != (semState{}) {
					return false, s
				}
				for _, id := range in.holders {
					s = s.with(id)
				}
				s.token = in.token
				return true, s
			}
		},
		DescribeOperation: func(input, output interface{}) string {
			in := input.(*semIn)
			tok := ""
			if fenced {
				tok = fmt.Sprintf(" token %d", in.token)
			}
			switch in.kind {
			case opAcquire:
				return fmt.Sprintf("acquire %s%s", in.name, tok)
			case opRelease:
				return fmt.Sprintf("release %s", in.name)
			}
			return fmt.Sprintf("(segment start: %v hold%s)", in.names, tok)
		},
		DescribeState: func(state interface{}) string {
			s := state.(semState)
			return fmt.Sprintf("holders %v, token %d", s.held[:k], s.token)
		},
	}
}

// holdSegments cuts the history into segments Porcupine checks one by one
// (its cache keeps a bitset of the whole partition per step: a run's
// 50000 operations in one would take gigabytes). It cuts at t = A + 1 ns
// of a hold when exactly k holds H have acquired before t and open their
// release window after t (every permit taken at t). That is exact: in any
// legal order, a hold acquired before t and not in H released before the
// last of H acquired (else k + 1 held), and a hold acquired after t
// acquires after one of H released (its release comes after t, so it
// cannot have held with all of H); so the history is legal if and only if
// the part before t (H's acquires unreleased) and the part after it,
// started by a cut operation at t that puts H holding (legal only from the
// initial state, so nothing goes before it), both are. perSegment: holds
// a segment takes before the next cut.
func holdSegments(rn *run, rl rules, k, perSegment int) [][]porcupine.Operation {
	type rel struct {
		op porcupine.Operation
		h  *hold
		id int
	}
	var segs [][]porcupine.Operation
	var cur []porcupine.Operation
	var pending []rel // releases not yet placed
	n := 0
	for i, h := range rn.holds {
		if h.failover {
			continue
		}
		id := i + 1
		// Releases open before this acquire cannot be in a later H.
		keep := pending[:0]
		for _, p := range pending {
			if p.op.Call < h.a {
				cur = append(cur, p.op)
			} else {
				keep = append(keep, p)
			}
		}
		pending = keep
		lo, hi := h.releaseWindow(rl)
		cur = append(cur, porcupine.Operation{ClientId: h.wid,
			Input: &semIn{kind: opAcquire, hold: id, token: h.token, name: h.name()},
			Call:  h.c, Return: h.a})
		pending = append(pending, rel{porcupine.Operation{ClientId: h.wid,
			Input: &semIn{kind: opRelease, hold: id, name: h.name()}, Call: lo, Return: hi}, h, id})
		n++
		t := h.a + 1
		if n < perSegment || (i+1 < len(rn.holds) && rn.holds[i+1].a == t) {
			continue
		}
		var held, later []rel
		clean := true
		for _, p := range pending {
			switch {
			case p.op.Call > t:
				held = append(held, p)
			case p.op.Call < t:
				later = append(later, p) // placed in this segment
			default:
				clean = false
			}
		}
		if !clean || len(held) != k {
			continue
		}
		for _, p := range later {
			cur = append(cur, p.op)
		}
		segs = append(segs, cur)
		cut := &semIn{kind: opCut} // the last token: the greatest of H's
		for _, p := range held {
			if p.h.token > cut.token {
				cut.token = p.h.token
			}
			cut.holders = append(cut.holders, p.id)
			cut.names = append(cut.names, p.h.name())
		}
		cur = []porcupine.Operation{{ClientId: h.wid, Input: cut, Call: t, Return: t}}
		pending = held
		n = 0
	}
	for _, p := range pending {
		cur = append(cur, p.op)
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}
