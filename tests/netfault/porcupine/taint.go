package main

// Which holds a fault the harness injected excuses, and how: the rule
// README.md ("Porcupine") writes down. The chaos analysis
// (tests/chaos/analysis.c) calls a hold tainted when its lost-lock callback
// ran, when it took a lease and ran past it (counted from its lock call), or
// (Sentinel mode) when it met a failover window; notify.c asks a watchdog
// hold that another client overlapped to have been told lost at most
// NF_NOTIFY_BOUND_MS after that client's acquire.

type rules struct {
	notifyBound int64 // ns: notify.c's NF_NOTIFY_BOUND_MS
	leaseTol    int64 // ns: Redis expires by its wall clock, the records use CLOCK_MONOTONIC
	// The unlock's OK does not say the owner held the lock (the fair lock's
	// unlock answers OK when its key is gone, as Redisson's).
	unlockUnchecked bool
}

func (rn *run) taint(rl rules) {
	for _, h := range rn.holds {
		h.leaseOut = h.leaseMs > 0 && h.u-h.c >= h.leaseMs*1e6
		for _, w := range rn.windows {
			if h.c < w.t1 && w.t0 < h.u {
				h.failover = true
			}
		}
	}
}

// tainted: the chaos analysis's taint; its counter operations are not
// checked against the lock (see counterOps).
func (h *hold) tainted() bool {
	return h.lost || h.leaseOut || h.failover
}

// releaseWindow is when the server may have let go of the hold's lock, as
// the project's analysis sees it; another client's acquire must come after
// its start:
//   - the unlock answered OK: the owner still held the lock then (the
//     unlock script checks the owner), so [U, R]; not with
//     unlockUnchecked (the fair lock's unlock answers OK when the key is
//     gone): then as below, from U to R;
//   - else from U (the hold's end) to R (the unlock's error or timeout; U
//     when it never returned), with the window opening earlier when a fault
//     excuses the hold:
//   - a lease that ran out (U - call >= lease): from the call plus the
//     lease on (the server started the lease after the call): the lock may
//     have expired there, not earlier;
//   - a watchdog hold told lost at tL: from tL - the notification bound on
//     (notify.c accepts another client's acquire when the callback ran at
//     most that long after it), not before the acquire nor after U.
//
// A hold with no U (its worker killed) ends at its worker's last record.
func (h *hold) releaseWindow(rl rules) (lo, hi int64) {
	if h.hasR && h.rErr == 0 && !rl.unlockUnchecked {
		return h.u, h.r
	}
	lo, hi = h.u, h.u
	if h.hasR && h.r > hi {
		hi = h.r
	}
	if h.leaseOut {
		lo = clamp(h.c+h.leaseMs*1e6-rl.leaseTol, h.a, h.u)
	}
	if h.lost && h.leaseMs <= 0 {
		lo = clamp(h.tLost-rl.notifyBound, h.a, h.u)
	}
	return lo, hi
}

func clamp(v, lo, hi int64) int64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}
