package main

// The synchronizer workers' record files (tests/netfault/sync_worker.c,
// whose header gives the format): one event a line, a letter and numbers.
// The plain semaphore's and the latch's histories (rsem.go, latch.go) are
// built from these lines, one worker at a time.

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

type recLine struct {
	kind byte
	v    []int64 // the numbers after the letter
}

// arg is the i-th number, or def when the line has fewer.
func (l recLine) arg(i int, def int64) int64 {
	if i < len(l.v) {
		return l.v[i]
	}
	return def
}

type syncWorker struct {
	wid   int
	lines []recLine
}

// readSyncWorkers reads every worker-*.rec of dir; a line whose fields are
// not all numbers (a torn last line) is skipped.
func readSyncWorkers(dir string) ([]syncWorker, error) {
	files, err := workerFiles(dir)
	if err != nil {
		return nil, err
	}
	var ws []syncWorker
	for i, f := range files {
		w, err := readSyncWorker(f, i)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

func readSyncWorker(path string, wid int) (syncWorker, error) {
	w := syncWorker{wid: wid}
	f, err := os.Open(path)
	if err != nil {
		return w, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 || len(fs[0]) != 1 {
			continue
		}
		v := make([]int64, 0, len(fs)-1)
		for _, s := range fs[1:] {
			x, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				v = nil
				break
			}
			v = append(v, x)
		}
		if v == nil {
			continue
		}
		if fs[0] == "B" { // B wid pid lease
			w.wid = int(v[0])
		}
		w.lines = append(w.lines, recLine{kind: fs[0][0], v: v})
	}
	if err := sc.Err(); err != nil {
		return w, fmt.Errorf("%s: %v", path, err)
	}
	return w, nil
}

// partitions groups ops by key (a semaphore's epoch, a latch's round), each
// in call order, the keys in increasing order: Porcupine checks each alone
// (one key's state never depends on another's).
func partitions(ops map[int64][]opAt) [][]opAt {
	keys := make([]int64, 0, len(ops))
	for k := range ops {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	out := make([][]opAt, 0, len(keys))
	for _, k := range keys {
		p := ops[k]
		sort.SliceStable(p, func(i, j int) bool { return p[i].call < p[j].call })
		out = append(out, p)
	}
	return out
}

// toSegments makes each partition a Porcupine history.
func toSegments(parts [][]opAt) [][]porcupine.Operation {
	segs := make([][]porcupine.Operation, 0, len(parts))
	for _, p := range parts {
		s := make([]porcupine.Operation, len(p))
		for i, o := range p {
			s[i] = porcupine.Operation{ClientId: o.wid, Input: o.in, Call: o.call, Return: o.ret}
		}
		segs = append(segs, s)
	}
	return segs
}

// opAt is one operation of a synchronizer's history before it becomes a
// porcupine.Operation: ret == never when it may take effect at any time
// after its call, or never.
type opAt struct {
	wid       int
	call, ret int64
	in        interface{}
}
