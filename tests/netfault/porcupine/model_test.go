package main

// Hand-written histories, legal and illegal, for both models and for the
// cuts that split a history into segments (every result must be the same
// with a cut after every hold as with none).

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/anishathalye/porcupine"
)

var testRules = rules{notifyBound: ms(150), leaseTol: ms(20)}

func ms(v int64) int64 { return v * 1e6 }

// h: a watchdog hold of worker wid: call, acquired, left, unlock returned
// OK (times in ms).
func h(wid int, c, a, u, r int64) *hold {
	return &hold{wid: wid, owner: uint64(a + 1), leaseMs: -1, c: ms(c), a: ms(a), hasC: true,
		hasA: true, u: ms(u), hasU: true, r: ms(r), hasR: true, set: setNone}
}

func (x *hold) unlockFailed() *hold    { x.rErr = -5; return x }
func (x *hold) toldLost(t int64) *hold { x.lost, x.tLost = true, ms(t); return x }
func (x *hold) lease(l int64) *hold    { x.leaseMs = l; return x }
func (x *hold) tok(t int64) *hold      { x.token, x.hasTok = t, true; return x }
func (x *hold) inc(read, g, w, s int64, st int) *hold {
	x.got, x.read, x.g, x.intent, x.w, x.set, x.s = true, read, ms(g), true, ms(w), st, ms(s)
	return x
}

func newRun(hs ...*hold) *run {
	rn := &run{holds: hs}
	sort.Slice(rn.holds, func(i, j int) bool { return rn.holds[i].a < rn.holds[j].a })
	for _, x := range hs {
		if x.u > rn.last {
			rn.last = x.u
		}
	}
	rn.taint(testRules)
	return rn
}

func checkSegs(m porcupine.Model, segs [][]porcupine.Operation) porcupine.CheckResult {
	var flat []porcupine.Operation
	for _, s := range segs {
		flat = append(flat, s...)
	}
	m.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return segs }
	return porcupine.CheckOperationsTimeout(m, flat, 0)
}

// mutexResult checks rn whole and cut after every hold, and wants both the same.
func mutexResult(t *testing.T, rn *run, fenced bool) porcupine.CheckResult {
	t.Helper()
	return semResult(t, rn, 1, fenced)
}

func semResult(t *testing.T, rn *run, k int, fenced bool) porcupine.CheckResult {
	t.Helper()
	return semResultRules(t, rn, k, fenced, testRules)
}

func semResultRules(t *testing.T, rn *run, k int, fenced bool, rl rules) porcupine.CheckResult {
	t.Helper()
	whole := checkSegs(semModel(k, fenced), holdSegments(rn, rl, k, 1<<30))
	segs := holdSegments(rn, rl, k, 1)
	cut := checkSegs(semModel(k, fenced), segs)
	if whole != cut {
		t.Fatalf("whole %s, cut into %d segments %s", whole, len(segs), cut)
	}
	return whole
}

func want(t *testing.T, got, exp porcupine.CheckResult) {
	t.Helper()
	if got != exp {
		t.Fatalf("got %s, want %s", got, exp)
	}
}

func TestMutexTakingTurns(t *testing.T) {
	// w1 calls while w0 holds and gets the lock after w0's unlock.
	want(t, mutexResult(t, newRun(h(0, 0, 10, 20, 25), h(1, 5, 24, 40, 45), h(0, 26, 46, 50, 52)), false), porcupine.Ok)
}

func TestMutexTwoHolders(t *testing.T) {
	want(t, mutexResult(t, newRun(h(0, 0, 10, 40, 45), h(1, 5, 20, 30, 35)), false), porcupine.Illegal)
}

func TestMutexToldLostInTime(t *testing.T) {
	// w0 is cut off; w1 acquires at 200; w0's callback runs at 300, 100 ms later.
	rn := newRun(h(0, 0, 10, 1000, 1300).unlockFailed().toldLost(300), h(1, 100, 200, 210, 220))
	want(t, mutexResult(t, rn, false), porcupine.Ok)
}

func TestMutexToldLostLate(t *testing.T) {
	rn := newRun(h(0, 0, 10, 1000, 1300).unlockFailed().toldLost(500), h(1, 100, 200, 210, 220))
	want(t, mutexResult(t, rn, false), porcupine.Illegal)
}

func TestMutexNeverTold(t *testing.T) {
	rn := newRun(h(0, 0, 10, 1000, 1300).unlockFailed(), h(1, 100, 200, 210, 220))
	want(t, mutexResult(t, rn, false), porcupine.Illegal)
}

func TestMutexLeaseRanOut(t *testing.T) {
	// A 3 s lease held 3.5 s: another client may have it from 3 s after the call.
	rn := newRun(h(0, 0, 10, 3500, 3600).lease(3000).unlockFailed(), h(1, 100, 3100, 3200, 3300))
	want(t, mutexResult(t, rn, false), porcupine.Ok)
	// ... not before.
	rn = newRun(h(0, 0, 10, 3500, 3600).lease(3000).unlockFailed(), h(1, 100, 2000, 2100, 2200))
	want(t, mutexResult(t, rn, false), porcupine.Illegal)
}

func TestMutexUnlockedOkHeldToTheEnd(t *testing.T) {
	// The unlock answered OK: the lock was w0's until then, lease or not.
	rn := newRun(h(0, 0, 10, 3500, 3600).lease(3000), h(1, 100, 3100, 3200, 3300))
	want(t, mutexResult(t, rn, false), porcupine.Illegal)
}

func TestMutexUnlockUncheckedLeaseRanOut(t *testing.T) {
	// The fair lock's unlock answers OK when its key is gone (as
	// Redisson's): an OK proves nothing, and a lease that ran out lets
	// another client have the lock from the call plus the lease on ...
	rl := testRules
	rl.unlockUnchecked = true
	rn := newRun(h(0, 0, 10, 3500, 3600).lease(3000), h(1, 100, 3100, 3200, 3300))
	want(t, semResultRules(t, rn, 1, false, rl), porcupine.Ok)
	// ... not before.
	rn = newRun(h(0, 0, 10, 3500, 3600).lease(3000), h(1, 100, 2000, 2100, 2200))
	want(t, semResultRules(t, rn, 1, false, rl), porcupine.Illegal)
}

func TestMutexFailoverLeftOut(t *testing.T) {
	rn := &run{holds: []*hold{h(0, 0, 10, 40, 45), h(1, 5, 20, 30, 35)}, windows: []window{{ms(15), ms(25)}}}
	rn.taint(testRules)
	want(t, mutexResult(t, rn, false), porcupine.Ok)
}

func TestTokens(t *testing.T) {
	want(t, mutexResult(t, newRun(h(0, 0, 10, 20, 25).tok(3), h(1, 5, 30, 40, 45).tok(5)), true), porcupine.Ok)
	want(t, mutexResult(t, newRun(h(0, 0, 10, 20, 25).tok(5), h(1, 5, 30, 40, 45).tok(3)), true), porcupine.Illegal)
	want(t, mutexResult(t, newRun(h(0, 0, 10, 20, 25).tok(5), h(1, 5, 30, 40, 45).tok(5)), true), porcupine.Illegal)
	// Across a cut: the segment after w1's acquire starts from its token 7.
	rn := newRun(h(0, 0, 10, 20, 25).tok(5), h(1, 5, 30, 40, 45).tok(7), h(2, 6, 50, 60, 65).tok(6))
	want(t, mutexResult(t, rn, true), porcupine.Illegal)
}

func TestSemaphoreTwoPermits(t *testing.T) {
	two := []*hold{h(0, 0, 10, 40, 45), h(1, 5, 20, 30, 35)}
	want(t, semResult(t, newRun(two...), 2, false), porcupine.Ok)
	want(t, semResult(t, newRun(append(two, h(2, 6, 25, 50, 55))...), 2, false), porcupine.Illegal)
	// The third takes the permit w1 gave back.
	want(t, semResult(t, newRun(append(two, h(2, 6, 36, 50, 55))...), 2, false), porcupine.Ok)
	// A permit with a lease (2 s) past it may be taken from its call + 2 s on.
	lease := []*hold{h(0, 0, 10, 2500, 2600).lease(2000).unlockFailed(), h(1, 5, 20, 3000, 3005)}
	want(t, semResult(t, newRun(append(lease, h(2, 6, 2100, 2200, 2300))...), 2, false), porcupine.Ok)
	want(t, semResult(t, newRun(append(lease, h(2, 6, 1900, 2200, 2300))...), 2, false), porcupine.Illegal)
}

// Random histories: cut or whole, the same answer (semResult checks it).
func TestMutexCutsRandom(t *testing.T) {
	for k := 1; k <= 2; k++ {
		randomHolds(t, k)
	}
}

func randomHolds(t *testing.T, k int) {
	rng := rand.New(rand.NewSource(int64(k)))
	seen := map[porcupine.CheckResult]int{}
	for trial := 0; trial < 400; trial++ {
		var hs []*hold
		for w := 0; w < 2+k; w++ {
			at := int64(rng.Intn(20))
			for j := 0; j < 4; j++ {
				c := at
				a := c + int64(rng.Intn(30))
				u := a + 1 + int64(rng.Intn(15))
				r := u + int64(rng.Intn(5))
				x := h(w, c, a, u, r)
				x.owner = uint64(j + 1)
				switch rng.Intn(6) {
				case 0:
					x.unlockFailed().toldLost(a + int64(rng.Intn(300)))
				case 1:
					x.unlockFailed()
				}
				hs = append(hs, x)
				at = r + int64(rng.Intn(10))
			}
		}
		rn := newRun(hs...)
		seen[semResult(t, rn, k, false)]++
		if len(holdSegments(rn, testRules, k, 1)) > 1 {
			seen["cut"]++
		}
	}
	if seen[porcupine.Ok] == 0 || seen[porcupine.Illegal] == 0 || seen["cut"] == 0 {
		t.Fatalf("the random histories are all of one kind: %v", seen)
	}
}

func counterResult(t *testing.T, rn *run, final int64) porcupine.CheckResult {
	t.Helper()
	ops := counterOps(rn, final, final >= 0)
	whole := checkSegs(counterModel(), counterSegments(ops, 1<<30))
	cut := checkSegs(counterModel(), counterSegments(ops, 1))
	if whole != cut && !(whole == porcupine.Illegal && cut == porcupine.Ok) {
		// A cut may only allow more (a maybe write counted twice), never less.
		t.Fatalf("whole %s, cut into segments %s", whole, cut)
	}
	return cut
}

func TestCounterIncrements(t *testing.T) {
	rn := newRun(h(0, 0, 10, 20, 25).inc(0, 12, 13, 15, setAcked),
		h(1, 5, 30, 40, 45).inc(1, 32, 33, 35, setAcked),
		h(0, 26, 50, 60, 65).inc(2, 52, 53, 55, setAcked))
	want(t, counterResult(t, rn, 3), porcupine.Ok)
	want(t, counterResult(t, rn, 2), porcupine.Illegal)
}

func TestCounterLostUpdate(t *testing.T) {
	// Both read 0, one after the other: the second lost the first's write.
	rn := newRun(h(0, 0, 10, 20, 25).inc(0, 12, 13, 15, setAcked),
		h(1, 5, 30, 40, 45).inc(0, 32, 33, 35, setAcked))
	want(t, counterResult(t, rn, -1), porcupine.Illegal)
	// Both read 0 at the same time (two holders): still one increment too few.
	rn = newRun(h(0, 0, 10, 40, 45).inc(0, 12, 13, 35, setAcked),
		h(1, 5, 11, 40, 45).inc(0, 14, 15, 36, setAcked))
	want(t, counterResult(t, rn, -1), porcupine.Illegal)
}

func TestCounterTaintedRollback(t *testing.T) {
	// x, told lost, read 0 and writes 1 late, after y (0 -> 1) and z
	// (1 -> 2): w then reads 1 again. x's write explains it.
	x := h(0, 0, 1, 100, 110).unlockFailed().toldLost(5).inc(0, 2, 80, 90, setAcked)
	rn := newRun(x, h(1, 3, 10, 20, 25).inc(0, 12, 13, 15, setAcked),
		h(2, 4, 30, 40, 45).inc(1, 32, 33, 35, setAcked),
		h(3, 6, 120, 140, 145).inc(1, 122, 123, 125, setAcked))
	want(t, counterResult(t, rn, 2), porcupine.Ok)
	// Untold, x's write is not excused.
	x.lost = false
	rn.taint(testRules)
	want(t, counterResult(t, rn, 2), porcupine.Illegal)
}

func TestCounterUnansweredSet(t *testing.T) {
	// y's SET of 1 got no answer: the next may read 0 (never applied) or 1.
	for _, next := range []int64{0, 1} {
		rn := newRun(h(0, 0, 10, 20, 25).inc(0, 12, 13, 15, setUnknown),
			h(1, 5, 30, 40, 45).inc(next, 32, 33, 35, setAcked))
		want(t, counterResult(t, rn, next+1), porcupine.Ok)
	}
	// ... or 1 later still, after a write of 2 (it landed late), across
	// the cuts after each increment.
	rn := newRun(h(0, 0, 10, 20, 25).inc(0, 12, 13, 15, setUnknown),
		h(1, 5, 30, 40, 45).inc(0, 32, 33, 35, setAcked),
		h(2, 6, 50, 60, 65).inc(1, 52, 53, 55, setAcked),
		h(3, 7, 70, 80, 85).inc(1, 72, 73, 75, setAcked))
	if n := len(counterSegments(counterOps(rn, 2, true), 1)); n < 3 {
		t.Fatalf("%d segments: the cuts are not tested", n)
	}
	want(t, counterResult(t, rn, 2), porcupine.Ok)
	// Without the unanswered SET, the last hold lost an update.
	rn.holds[0].set = setRefused
	want(t, counterResult(t, rn, 2), porcupine.Illegal)
	// A refused SET was not applied.
	rn = newRun(h(0, 0, 10, 20, 25).inc(0, 12, 13, 15, setRefused),
		h(1, 5, 30, 40, 45).inc(1, 32, 33, 35, setAcked))
	want(t, counterResult(t, rn, -1), porcupine.Illegal)
}

func TestCounterTaintedWriteInsideAHold(t *testing.T) {
	// x, told lost, writes 7 after y read 0 and before y wrote 1; z then
	// reads y's 1. Seen in a real run: y's GET and SET are two operations.
	x := h(0, 0, 1, 100, 110).unlockFailed().toldLost(5).inc(6, 2, 30, 35, setAcked)
	rn := newRun(x, h(1, 3, 10, 50, 55).inc(0, 12, 40, 45, setAcked),
		h(2, 4, 60, 70, 75).inc(1, 62, 63, 65, setAcked))
	want(t, counterResult(t, rn, 2), porcupine.Ok)
	// z reading 0 is still a lost update.
	rn.holds[2].read = 0
	want(t, counterResult(t, rn, 1), porcupine.Illegal)
}
