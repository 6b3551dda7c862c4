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

// ---- the plain semaphore (rsem.go) and the latches (latch.go), from record lines ----

// L is a record line (its times in ns: ms() them).
func L(kind byte, v ...int64) recLine { return recLine{kind: kind, v: v} }

func worker(wid int, lines ...recLine) syncWorker {
	return syncWorker{wid: wid, lines: lines}
}

// Plain-semaphore lines of worker records (times in ms).
func pset(epoch, c, r, err, set int64) []recLine {
	return []recLine{L('P', epoch, ms(c), ms(r), err, set)}
}

// hold: round n of epoch: called c, acquired a, left u, release answered r with rerr.
func hold1(n, epoch, c, a, u, r, rerr int64) []recLine {
	return []recLine{L('C', n, ms(c), epoch), L('A', n, ms(a)), L('U', n, ms(u)), L('R', n, ms(r), rerr)}
}

// notAcq: round n of epoch: called c, not acquired at f (err 0: the wait ran out; else unknown).
func notAcq(n, epoch, c, f, err int64) []recLine {
	return []recLine{L('C', n, ms(c), epoch), L('F', n, ms(f), err)}
}

func lines(parts ...[]recLine) []recLine {
	var out []recLine
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func rsemResult(finals map[int64]int64, ws ...syncWorker) porcupine.CheckResult {
	return checkSegs(rsModel(2), toSegments(partitions(withFinals(rsemOps(ws), finals))))
}

const errTimeout = -2 // any non-zero error: the outcome unknown

func TestRSemaphoreTwoPermits(t *testing.T) {
	w0 := worker(0, lines(pset(1, 0, 1, 0, 1), hold1(1, 1, 2, 3, 20, 21, 0))...)
	w1 := worker(1, lines(pset(1, 0, 2, 0, 0), hold1(1, 1, 2, 4, 30, 31, 0))...)
	want(t, rsemResult(nil, w0, w1), porcupine.Ok)
	// Two acquires of the last permit both answered acquired.
	w2 := worker(2, lines(pset(1, 0, 2, 0, 0), hold1(1, 1, 5, 6, 10, 11, 0))...)
	want(t, rsemResult(nil, w0, w1, w2), porcupine.Illegal)
	// The third after w0 gave its permit back.
	w2 = worker(2, lines(pset(1, 0, 2, 0, 0), hold1(1, 1, 5, 22, 25, 26, 0))...)
	want(t, rsemResult(nil, w0, w1, w2), porcupine.Ok)
	// Each epoch is a semaphore of its own.
	w2 = worker(2, lines(pset(2, 0, 2, 0, 1), hold1(1, 2, 5, 6, 10, 11, 0))...)
	want(t, rsemResult(nil, w0, w1, w2), porcupine.Ok)
}

func TestRSemaphoreNotAcquired(t *testing.T) {
	w0 := worker(0, lines(pset(1, 0, 1, 0, 1), hold1(1, 1, 2, 3, 20, 21, 0))...)
	w1 := worker(1, lines(pset(1, 0, 2, 0, 0), notAcq(1, 1, 5, 10, 0))...)
	// A permit was free all along.
	want(t, rsemResult(nil, w0, w1), porcupine.Illegal)
	w2 := worker(2, lines(pset(1, 0, 2, 0, 0), hold1(1, 1, 2, 4, 30, 31, 0))...)
	want(t, rsemResult(nil, w0, w1, w2), porcupine.Ok)
}

func TestRSemaphoreSet(t *testing.T) {
	// No semaphore before a trySetPermits: nothing to acquire.
	w0 := worker(0, lines(hold1(1, 1, 2, 3, 20, 21, 0), pset(1, 25, 26, 0, 1))...)
	want(t, rsemResult(nil, w0), porcupine.Illegal)
	// Two calls cannot both have set it.
	w0 = worker(0, pset(1, 0, 1, 0, 1)...)
	w1 := worker(1, pset(1, 2, 3, 0, 1)...)
	want(t, rsemResult(nil, w0, w1), porcupine.Illegal)
	// One unanswered may have set it.
	w1 = worker(1, lines(pset(1, 0, 1, errTimeout, 0), pset(1, 2, 3, 0, 0), hold1(1, 1, 4, 5, 6, 7, 0))...)
	want(t, rsemResult(nil, w1), porcupine.Ok)
}

func TestRSemaphoreUnknownRelease(t *testing.T) {
	set := pset(1, 0, 1, 0, 1)
	// w0's release got no answer; w1 gives its permit back.
	w0 := worker(0, lines(set, hold1(1, 1, 2, 3, 10, 11, errTimeout))...)
	w1 := worker(1, lines(pset(1, 0, 2, 0, 0), hold1(1, 1, 2, 4, 12, 13, 0))...)
	// Applied: two permits later.
	w2 := worker(2, hold1(1, 1, 20, 21, 40, 41, 0)...)
	w3 := worker(3, hold1(1, 1, 20, 22, 40, 41, 0)...)
	want(t, rsemResult(nil, w0, w1, w2, w3), porcupine.Ok)
	// Not applied: one, and a try that finds none.
	w3 = worker(3, notAcq(1, 1, 22, 25, 0)...)
	want(t, rsemResult(nil, w0, w1, w2, w3), porcupine.Ok)
	// Had w0's release answered OK, that try would have found a permit.
	w0 = worker(0, lines(set, hold1(1, 1, 2, 3, 10, 11, 0))...)
	want(t, rsemResult(nil, w0, w1, w2, w3), porcupine.Illegal)
}

func TestRSemaphoreUnknownAcquire(t *testing.T) {
	w1 := worker(1, lines(pset(1, 0, 1, 0, 1), hold1(1, 1, 10, 11, 30, 31, 0))...)
	w2 := worker(2, hold1(1, 1, 10, 12, 30, 31, 0)...)
	// w0 acquired and held to 40: three at once.
	w0 := worker(0, hold1(1, 1, 2, 5, 40, 41, 0)...)
	want(t, rsemResult(nil, w0, w1, w2), porcupine.Illegal)
	// w0's try got no answer: it may not have taken one.
	w0 = worker(0, notAcq(1, 1, 2, 5, errTimeout)...)
	want(t, rsemResult(nil, w0, w1, w2), porcupine.Ok)
	// Its process ended in its hold (no U): its release never went out,
	// the permit is kept (1 left at quiescence, not 2).
	w0 = worker(0, L('C', 1, ms(2), 1), L('A', 1, ms(5)))
	want(t, rsemResult(map[int64]int64{1: 1}, w0, w1), porcupine.Ok)
	want(t, rsemResult(map[int64]int64{1: 2}, w0, w1), porcupine.Illegal)
	want(t, rsemResult(nil, w0, w1, w2), porcupine.Illegal)
	// Ended after leaving it (U): its release may have gone out, or not.
	w0 = worker(0, L('C', 1, ms(2), 1), L('A', 1, ms(5)), L('U', 1, ms(6)))
	want(t, rsemResult(map[int64]int64{1: 1}, w0, w1), porcupine.Ok)
	want(t, rsemResult(map[int64]int64{1: 2}, w0, w1), porcupine.Ok)
}

func TestRSemaphoreQuiescence(t *testing.T) {
	w0 := worker(0, lines(pset(1, 0, 1, 0, 1), hold1(1, 1, 2, 3, 20, 21, 0))...)
	want(t, rsemResult(map[int64]int64{1: 2}, w0), porcupine.Ok)
	// A permit out of nothing (a release counted twice), or one lost.
	want(t, rsemResult(map[int64]int64{1: 3}, w0), porcupine.Illegal)
	want(t, rsemResult(map[int64]int64{1: 1}, w0), porcupine.Illegal)
	// Not there at all.
	want(t, rsemResult(map[int64]int64{}, w0), porcupine.Illegal)
	// An unanswered release explains one fewer.
	w0 = worker(0, lines(pset(1, 0, 1, 0, 1), hold1(1, 1, 2, 3, 20, 21, errTimeout))...)
	want(t, rsemResult(map[int64]int64{1: 1}, w0), porcupine.Ok)
	want(t, rsemResult(map[int64]int64{1: 2}, w0), porcupine.Ok)
	want(t, rsemResult(map[int64]int64{1: 3}, w0), porcupine.Illegal)
}

// Latch lines of a worker's round r (times in ms): begun s, trySetCount
// answered at p (set 1: it set the count), count-down sent d answered
// dr (derr), await ended w (reached 1: released; werr).
func lround(r, s, p, set, d, dr, derr, w, reached, werr int64) []recLine {
	return []recLine{L('S', r, ms(s)), L('P', r, ms(s), ms(p), 0, set),
		L('D', r, ms(d), derr, ms(dr)), L('W', r, ms(w), reached, werr)}
}

func latchResult(ws ...syncWorker) porcupine.CheckResult {
	return checkSegs(latchModel(int64(len(ws))), toSegments(partitions(latchOps(ws))))
}

func TestLatchReleased(t *testing.T) {
	w0 := worker(0, lround(1, 0, 1, 1, 2, 3, 0, 30, 1, 0)...)
	w1 := worker(1, lround(1, 0, 2, 0, 5, 6, 0, 30, 1, 0)...)
	w2 := worker(2, lround(1, 0, 3, 0, 10, 11, 0, 12, 1, 0)...)
	want(t, latchResult(w0, w1, w2), porcupine.Ok)
	// w0 released at 8, before w2's count-down was sent (at 10), every
	// count-down answered.
	early := worker(0, lround(1, 0, 1, 1, 2, 3, 0, 8, 1, 0)...)
	want(t, latchResult(early, w1, w2), porcupine.Illegal)
	// An unknown count-down does not help: it was sent at 5, still one short.
	w1u := worker(1, lround(1, 0, 2, 0, 5, 6, errTimeout, 30, 1, 0)...)
	want(t, latchResult(early, w1u, w2), porcupine.Illegal)
	// An await that ended in an error says nothing.
	w0e := worker(0, lround(1, 0, 1, 1, 2, 3, 0, 8, 1, errTimeout)...)
	want(t, latchResult(w0e, w1, w2), porcupine.Ok)
	// Rounds are latches of their own: round 2 counts from 3 again.
	w0 = worker(0, lines(lround(1, 0, 1, 1, 2, 3, 0, 30, 1, 0), lround(2, 31, 32, 1, 33, 34, 0, 35, 1, 0))...)
	want(t, latchResult(w0, w1, w2), porcupine.Illegal)
}

func TestLatchSetCount(t *testing.T) {
	w1 := worker(1, lround(1, 0, 2, 0, 5, 6, 0, 30, 1, 0)...)
	w2 := worker(2, lround(1, 0, 3, 0, 10, 11, 0, 12, 1, 0)...)
	// Two trySetCounts cannot both have set it, the latch never at zero between.
	w0 := worker(0, lround(1, 0, 4, 1, 4, 5, 0, 30, 1, 0)...)
	w1s := worker(1, lround(1, 0, 2, 1, 5, 6, 0, 30, 1, 0)...)
	want(t, latchResult(w0, w1s, w2), porcupine.Illegal)
	// A worker's record that stops after its trySetCount: its count-down may have gone.
	w0 = worker(0, L('S', 1, 0), L('P', 1, 0, ms(1), 0, 1))
	want(t, latchResult(w0, w1, w2), porcupine.Ok)
}

func TestLatchTimedOut(t *testing.T) {
	w1 := worker(1, lround(1, 0, 2, 0, 5, 6, 0, 30, 1, 0)...)
	w2 := worker(2, lround(1, 0, 3, 0, 10, 11, 0, 12, 1, 0)...)
	// Timed out, its await begun while the count was above 0.
	w0 := worker(0, lround(1, 0, 1, 1, 2, 3, 0, 30, 0, 0)...)
	want(t, latchResult(w0, w1, w2), porcupine.Ok)
	// Timed out with no trySetCount of the round begun before its await's
	// end: the latch never existed then.
	w0 = worker(0, L('D', 1, ms(2), 0, ms(3)))
	w0.lines = append([]recLine{L('S', 1, 0)}, w0.lines...)
	w0.lines = append(w0.lines, L('W', 1, ms(4), 0, 0))
	w1 = worker(1, lround(1, 5, 6, 1, 7, 8, 0, 30, 0, 0)...)
	w2 = worker(2, lround(1, 5, 6, 0, 9, 10, 0, 30, 0, 0)...)
	want(t, latchResult(w0, w1, w2), porcupine.Illegal)
}

// Random latch rounds: two late trySetCount sends per round (fewerMaybeSets)
// give the same verdict as one per call.
func TestLatchFewerMaybeSetsRandom(t *testing.T) {
	rnd := rand.New(rand.NewSource(7))
	verdicts := map[porcupine.CheckResult]int{}
	for k := 0; k < 3000; k++ {
		nw := 2 + rnd.Intn(2)
		var ws []syncWorker
		for i := 0; i < nw; i++ {
			tm := func() int64 { return int64(rnd.Intn(40)) }
			s := tm()
			p := s + 1 + tm()/4
			d := p + tm()/4
			dr := d + 1 + tm()/4
			w := dr + tm()/2
			perr, derr, set := int64(0), int64(0), int64(rnd.Intn(2))
			if rnd.Intn(4) == 0 {
				perr = errTimeout
			}
			if rnd.Intn(4) == 0 {
				derr = errTimeout
			}
			ls := []recLine{L('S', 1, ms(s)), L('P', 1, ms(s), ms(p), perr, set),
				L('D', 1, ms(d), derr, ms(dr)), L('W', 1, ms(w), int64(rnd.Intn(2)), 0)}
			ws = append(ws, worker(i, ls[:1+rnd.Intn(4)]...))
		}
		all := map[int64][]opAt{}
		for _, w := range ws {
			latchWorker(w, all)
		}
		whole := checkSegs(latchModel(int64(nw)), toSegments(partitions(all)))
		fewer := latchResult(ws...)
		if whole != fewer {
			t.Fatalf("history %d: one late set per call %s, two per round %s: %+v", k, whole, fewer, ws)
		}
		verdicts[whole]++
	}
	if verdicts[porcupine.Ok] == 0 || verdicts[porcupine.Illegal] == 0 {
		t.Fatalf("not both verdicts: %v", verdicts)
	}
}

// rsRefModel is the plain semaphore's model with each unanswered operation
// a Porcupine operation that never returns, applied or not where it is
// linearized: the usual way, which rsModel's pending operations replace.
func rsRefModel(permits int64) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{int64(rsMissing)} },
		Step: func(state, input, output interface{}) []interface{} {
			s, in := state.(int64), input.(*rsIn)
			var applied rsState
			switch in.kind {
			case rsSetMaybe:
				applied, _ = rsStep(rsState{p: s}, &rsIn{kind: rsSetExisted}, permits)
			case rsAcquireMaybe:
				if s < 1 {
					return []interface{}{s}
				}
				applied = rsState{p: s - 1}
			case rsReleaseMaybe:
				applied = rsState{p: released(s)}
			default:
				if n, ok := rsStep(rsState{p: s}, in, permits); ok {
					return []interface{}{n.p}
				}
				return nil
			}
			return []interface{}{s, applied.p}
		},
	}
	return nm.ToModel()
}

// Random epochs: the pending operations give the verdict of operations
// that never return.
func TestRSemaphorePendingRandom(t *testing.T) {
	rnd := rand.New(rand.NewSource(11))
	verdicts := map[porcupine.CheckResult]int{}
	for k := 0; k < 3000; k++ {
		var ws []syncWorker
		for i := 0; i < 2+rnd.Intn(2); i++ {
			tm := func() int64 { return int64(rnd.Intn(30)) }
			c := tm()
			ls := pset(1, c, c+1+tm()/5, []int64{0, 0, errTimeout}[rnd.Intn(3)], int64(rnd.Intn(2)))
			for n := int64(1); n <= 2; n++ {
				c = c + 2 + tm()/3
				a := c + tm()/5
				switch rnd.Intn(4) {
				case 0:
					ls = append(ls, notAcq(n, 1, c, a, []int64{0, errTimeout}[rnd.Intn(2)])...)
				default:
					u := a + tm()/3
					ls = append(ls, hold1(n, 1, c, a, u, u+1+tm()/5, []int64{0, 0, errTimeout}[rnd.Intn(3)])...)
				}
				c = a + 15
			}
			ws = append(ws, worker(i, ls[:1+rnd.Intn(len(ls))]...))
		}
		var finals map[int64]int64
		if rnd.Intn(2) == 0 {
			finals = map[int64]int64{1: int64(rnd.Intn(4))}
		}
		segs := toSegments(partitions(withFinals(rsemOps(ws), finals)))
		pending := checkSegs(rsModel(2), segs)
		for _, s := range segs {
			for i := range s {
				if k := s[i].Input.(*rsIn).kind; k == rsSetMaybe || k == rsAcquireMaybe || k == rsReleaseMaybe {
					s[i].Return = never
				}
			}
		}
		ref := checkSegs(rsRefModel(2), segs)
		if pending != ref {
			t.Fatalf("history %d: never returning %s, pending %s: %+v %v", k, ref, pending, ws, finals)
		}
		verdicts[ref]++
	}
	if verdicts[porcupine.Ok] == 0 || verdicts[porcupine.Illegal] == 0 {
		t.Fatalf("not both verdicts: %v", verdicts)
	}
	t.Logf("verdicts: %v", verdicts)
}
