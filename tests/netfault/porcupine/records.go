package main

// The worker record files tests/chaos/worker.c writes (worker-NNN.rec, one
// event a line; the format is at the top of worker.c) and netfault's
// faults.log, read into one hold per acquired lock call.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// SET statuses (worker.c's S record); setNone: no S record (the worker
// died between W and S), an answer never seen, like setUnknown.
const (
	setRefused = 0
	setAcked   = 1
	setUnknown = -1
	setNone    = -2
)

type hold struct {
	wid     int
	owner   uint64
	leaseMs int64 // < 0: the watchdog
	c, a    int64 // lock call made, acquired (CLOCK_MONOTONIC ns)
	hasC    bool
	hasA    bool
	u, r    int64 // leaving the hold (before the unlock), unlock returned
	hasU    bool
	hasR    bool
	rErr    int64
	lost    bool // the lost-lock callback named this owner
	tLost   int64
	token   int64
	hasTok  bool
	got     bool // the GET answered
	read    int64
	g       int64 // when the GET returned
	intent  bool  // W: the SET went out (or was about to)
	w       int64
	set     int   // setRefused ...
	s       int64 // when the SET returned
	// verdicts (taint)
	failover bool // met a failover window (Sentinel mode)
	leaseOut bool // a lease hold that ran past its lease, from its call
}

// name is the hold's client in the histories: worker and owner.
func (h *hold) name() string {
	return fmt.Sprintf("w%d/%d", h.wid, h.owner)
}

type window struct{ t0, t1 int64 }

type run struct {
	holds   []*hold
	windows []window // failover windows (faults.log "[failover]")
	last    int64    // the latest time in any record
	workers int
}

// workerFiles lists dir's worker-*.rec, sorted (a run's workers are read
// in the same order every time); none is an error, as a run has workers.
func workerFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "worker-*.rec"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no worker-*.rec in %s", dir)
	}
	sort.Strings(files)
	return files, nil
}

func readRun(dir string) (*run, error) {
	files, err := workerFiles(dir)
	if err != nil {
		return nil, err
	}
	rn := &run{workers: len(files)}
	for _, f := range files {
		if err := rn.readWorker(f); err != nil {
			return nil, err
		}
	}
	if err := rn.readFaults(filepath.Join(dir, "faults.log")); err != nil {
		return nil, err
	}
	sort.Slice(rn.holds, func(i, j int) bool { return rn.holds[i].a < rn.holds[j].a })
	return rn, nil
}

func ints(fields []string) ([]int64, bool) {
	v := make([]int64, len(fields))
	for i, f := range fields {
		x, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, false
		}
		v[i] = x
	}
	return v, true
}

func (rn *run) readWorker(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	wid, lease := -1, int64(-1)
	calls := map[uint64]*hold{}
	at := func(owner uint64) *hold {
		h := calls[owner]
		if h == nil {
			h = &hold{wid: wid, owner: owner, leaseMs: lease, set: setNone}
			calls[owner] = h
		}
		return h
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 1<<20)
	end := int64(0) // the worker's last record: a hold with no U ended by then
	for sc.Scan() {
		line := sc.Text()
		fs := strings.Fields(line)
		if len(fs) < 2 {
			continue
		}
		if fs[0] == "B" { // the lock's workers: B wid pid client lease; sync_worker.c's: B wid pid lease
			w, _ := strconv.Atoi(fs[1])
			l, _ := strconv.ParseInt(fs[len(fs)-1], 10, 64)
			wid, lease = w, l
			continue
		}
		if fs[0] == "T" || fs[0] == "H" || fs[0] == "X" {
			if t, err := strconv.ParseInt(fs[1], 10, 64); err == nil && t > end {
				end = t
			}
			continue
		}
		if len(fs) < 3 {
			continue
		}
		// "C" carries a kind letter: keep only the numbers that follow.
		nums := fs[1:]
		if fs[0] == "C" {
			nums = fs[1:3]
		}
		v, ok := ints(nums)
		if !ok || v[0] <= 0 {
			continue
		}
		owner, t := uint64(v[0]), v[1]
		if t > end {
			end = t
		}
		arg := int64(0)
		if len(v) > 2 {
			arg = v[2]
		}
		switch fs[0] {
		case "C":
			h := at(owner)
			h.c, h.hasC = t, true
		case "A":
			h := at(owner)
			h.a, h.hasA = t, true
		case "K":
			h := at(owner)
			h.token, h.hasTok = arg, true
		case "G":
			h := at(owner)
			h.got, h.read, h.g = true, arg, t
		case "W":
			h := at(owner)
			h.intent, h.w = true, t
		case "S":
			h := at(owner)
			h.set, h.s = int(arg), t
		case "U":
			h := at(owner)
			h.u, h.hasU = t, true
		case "R":
			h := at(owner)
			h.r, h.hasR, h.rErr = t, true, arg
		case "L":
			h := at(owner)
			if !h.lost {
				h.lost, h.tLost = true, t
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if end > rn.last {
		rn.last = end
	}
	for _, h := range calls {
		if !h.hasA {
			continue // not acquired (an acquire applied unanswered is an orphan: left out)
		}
		if !h.hasC {
			h.c = h.a
		}
		if !h.hasU { // killed while holding: its hold ends by its last record
			h.u = end
		}
		rn.holds = append(rn.holds, h)
	}
	return nil
}

func (rn *run) readFaults(path string) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 || !strings.Contains(sc.Text(), "[failover]") {
			continue
		}
		v, ok := ints(fs[2:4])
		if ok {
			rn.windows = append(rn.windows, window{v[0], v[1]})
		}
	}
	return sc.Err()
}
