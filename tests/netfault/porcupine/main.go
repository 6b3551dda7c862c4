// nf-porcupine: checks the histories of a netfault run (tests/netfault)
// with Porcupine (github.com/anishathalye/porcupine), a linearizability
// checker, against sequential models: the lock as a mutex (with strictly
// increasing tokens for the fenced lock) and the counter the workers
// update under it. README.md in tests/netfault ("Porcupine") says what it
// checks, how faults are excused and how the history is cut.
//
//	nf-porcupine --dir RECORDS [--final-counter N] [--notify-bound-ms 150]
//	             [--semaphore PERMITS | --rsemaphore PERMITS | --latch COUNT]
//	             [--timeout 60s] [--html DIR] [--unlock-unchecked]
//
// Prints one line per check and exits 0 (every check ok), 1 (a check found
// the history illegal), 3 (none illegal, but one ran out of time: unknown)
// or 2 (bad input).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

const (
	exitOK      = 0
	exitIllegal = 1
	exitInput   = 2
	exitUnknown = 3
)

type check struct {
	name  string
	model porcupine.Model
	segs  [][]porcupine.Operation
	what  string // counts, for the report line
}

func main() {
	dir := flag.String("dir", "", "the run's records (worker-*.rec, faults.log)")
	final := flag.Int64("final-counter", -1, "the counter read after the run (< 0: not checked)")
	bound := flag.Int64("notify-bound-ms", 150, "notify.c's NF_NOTIFY_BOUND_MS")
	tol := flag.Int64("lease-tolerance-ms", 20, "Redis's clock against the records'")
	timeout := flag.Duration("timeout", 60*time.Second, "per check; past it the check is unknown")
	per := flag.Int("segment", 400, "holds (increments) a segment takes before the next cut")
	sem := flag.Int("semaphore", 0, "the records are the permit semaphore's, of this many permits (sync_worker.c)")
	unchecked := flag.Bool("unlock-unchecked", false, "an unlock's OK does not say the lock was held (the fair lock's)")
	rsem := flag.Int64("rsemaphore", 0, "the records are the plain semaphore's, set to this many permits (sync_worker.c)")
	latch := flag.Int64("latch", 0, "the records are the latches', each set to this count (sync_worker.c)")
	avail := flag.String("available", "", "--rsemaphore: each epoch's count read at quiescence (\"epoch count\" a line)")
	html := flag.String("html", "", "write each illegal check's first illegal segment here (DIR/porcupine-NAME.html)")
	flag.Parse()
	if *dir == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(exitInput)
	}
	if *rsem > 0 || *latch > 0 {
		os.Exit(checkSync(*dir, *rsem, *latch, *avail, *timeout, *html))
	}
	rn, err := readRun(*dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "porcupine: %v\n", err)
		os.Exit(exitInput)
	}
	rl := rules{notifyBound: *bound * 1e6, leaseTol: *tol * 1e6, unlockUnchecked: *unchecked}
	rn.taint(rl)
	if *sem < 0 || *sem > maxCap {
		fmt.Fprintf(os.Stderr, "porcupine: --semaphore: 1 to %d permits\n", maxCap)
		os.Exit(exitInput)
	}
	os.Exit(checkAll(rn, rl, *sem, *final, *per, *timeout, *html))
}

func checkAll(rn *run, rl rules, sem int, final int64, per int, timeout time.Duration, html string) int {
	fenced, left := false, 0
	for _, h := range rn.holds {
		fenced = fenced || h.hasTok
		if h.failover {
			left++
		}
	}
	holds := fmt.Sprintf("%d holds (%d left out: failover)", len(rn.holds)-left, left)
	var checks []check
	if sem > 0 {
		checks = []check{{"semaphore", semModel(sem, false), holdSegments(rn, rl, sem, per),
			fmt.Sprintf("%d permits, %s", sem, holds)}}
	} else {
		name := "mutex"
		if fenced {
			name = "mutex+tokens"
		}
		cops := counterOps(rn, final, final >= 0)
		checks = []check{
			{name, semModel(1, fenced), holdSegments(rn, rl, 1, per), holds},
			{"counter", counterModel(), counterSegments(cops, per),
				fmt.Sprintf("%d operations", len(cops))},
		}
	}
	rc := exitOK
	for _, c := range checks {
		r := runCheck(c, timeout, html)
		if r == exitIllegal || (r == exitUnknown && rc == exitOK) {
			rc = r
		}
	}
	return rc
}

// checkSync checks the plain semaphore's (permits > 0) or the latches'
// records: one partition per semaphore (epoch) or latch (round).
func checkSync(dir string, permits, count int64, avail string, timeout time.Duration, html string) int {
	ws, err := readSyncWorkers(dir)
	var finals map[int64]int64
	if err == nil && avail != "" {
		finals, err = readAvailable(avail)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "porcupine: %v\n", err)
		return exitInput
	}
	var c check
	if permits > 0 {
		segs := toSegments(partitions(withFinals(rsemOps(ws), finals)))
		c = check{"rsemaphore", rsModel(permits), segs,
			fmt.Sprintf("%d permits, %d semaphores (epochs)", permits, len(segs))}
	} else {
		segs := toSegments(partitions(latchOps(ws)))
		c = check{"latch", latchModel(count), segs,
			fmt.Sprintf("count %d, %d latches (rounds)", count, len(segs))}
	}
	return runCheck(c, timeout, html)
}

func runCheck(c check, timeout time.Duration, html string) int {
	segs := c.segs
	var flat []porcupine.Operation
	for _, s := range segs {
		flat = append(flat, s...)
	}
	m := c.model
	m.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return segs }
	t0 := time.Now()
	res := porcupine.CheckOperationsTimeout(m, flat, timeout)
	took := time.Since(t0).Seconds()
	fmt.Printf("porcupine: %s: %s, %d operations in %d segments: %s (%.2f s)\n",
		c.name, c.what, len(flat), len(segs), outcome(res), took)
	switch res {
	case porcupine.Ok:
		return exitOK
	case porcupine.Unknown:
		fmt.Printf("porcupine: %s: UNKNOWN: not decided within %s (neither a pass nor a failure)\n",
			c.name, timeout)
		return exitUnknown
	}
	explain(c, timeout, html)
	return exitIllegal
}

func outcome(r porcupine.CheckResult) string {
	switch r {
	case porcupine.Ok:
		return "ok"
	case porcupine.Illegal:
		return "ILLEGAL"
	}
	return "unknown"
}

// explain finds the first illegal segment, says where it is and, with
// --html, draws it (porcupine.VisualizePath).
func explain(c check, timeout time.Duration, html string) {
	for i, s := range c.segs {
		if porcupine.CheckOperationsTimeout(c.model, s, timeout) != porcupine.Illegal {
			continue
		}
		fmt.Printf("porcupine: %s: segment %d of %d (%d operations, from %d to %d ns) is illegal\n",
			c.name, i+1, len(c.segs), len(s), s[0].Call, lastReturn(s))
		_, info := porcupine.CheckOperationsVerbose(c.model, s, timeout)
		stuck(c, s, info)
		if html == "" {
			fmt.Printf("porcupine: (--porcupine-html draws it)\n")
			return
		}
		path := filepath.Join(html, "porcupine-"+c.name+".html")
		if err := porcupine.VisualizePath(c.model, info, path); err != nil {
			fmt.Printf("porcupine: %s: cannot write %s: %v\n", c.name, path, err)
		} else {
			fmt.Printf("porcupine: %s: drawn in %s\n", c.name, path)
		}
		return
	}
}

func lastReturn(s []porcupine.Operation) int64 {
	r := s[0].Return
	for _, op := range s {
		if op.Return > r && op.Return != never {
			r = op.Return
		}
	}
	return r
}

// stuck prints where the longest linearization Porcupine found ends, and
// the operations called earliest that it could not place after it.
func stuck(c check, s []porcupine.Operation, info porcupine.LinearizationInfo) {
	parts := info.PartialLinearizationsOperations()
	var best []porcupine.Operation
	for _, p := range parts {
		for _, l := range p {
			if len(l) > len(best) {
				best = l
			}
		}
	}
	base := s[0].Call
	show := func(tag string, op porcupine.Operation) {
		ret := "never"
		if op.Return != never {
			ret = fmt.Sprintf("%.3f", float64(op.Return-base)/1e6)
		}
		fmt.Printf("porcupine:   %s %s [%.3f, %s ms]\n", tag, c.model.DescribeOperation(op.Input, op.Output),
			float64(op.Call-base)/1e6, ret)
	}
	fmt.Printf("porcupine: %s: the longest linearization takes %d of %d operations; it ends with\n",
		c.name, len(best), len(s))
	from := len(best) - 3
	if from < 0 {
		from = 0
	}
	for _, op := range best[from:] {
		show("", op)
	}
	placed := map[interface{}]bool{}
	for _, op := range best {
		placed[op.Input] = true
	}
	var left []porcupine.Operation
	for _, op := range s {
		if !placed[op.Input] {
			left = append(left, op)
		}
	}
	sort.Slice(left, func(i, j int) bool { return left[i].Call < left[j].Call })
	fmt.Printf("porcupine: %s: and none of these can follow it (called earliest):\n", c.name)
	for i := 0; i < len(left) && i < 4; i++ {
		show("x", left[i])
	}
}
