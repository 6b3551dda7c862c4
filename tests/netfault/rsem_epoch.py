#!/usr/bin/env python3
"""Everything a kept --rsemaphore run (netfault --keep, or a failed run)
recorded about one semaphore (epoch), in time order: the faults around it,
each worker's calls of that epoch (C A U R F N lines, sync_worker.c) and
the library's log lines (worker-NNN.log) from its first call to its last.
Lines whose outcome is unknown or that failed are marked "<--".

    tests/netfault/rsem_epoch.py RECORDS_DIR EPOCH

The epoch is the one netfault prints for a semaphore out of bounds
("semaphore epoch N: ..."). Times are ms from the epoch's first call."""
import glob
import os
import sys


def faults(d):
    out = []
    for line in open(os.path.join(d, "faults.log")):
        p = line.split()
        out.append((int(p[2]), int(p[3]), p[0], p[1], "[failover]" in line))
    return out


def calls(d, epoch):
    """(t, worker, kind, round, err) of every line of epoch's rounds."""
    evs = []
    for path in sorted(glob.glob(os.path.join(d, "worker-*.rec"))):
        w = int(path[-7:-4])
        cur = None
        for line in open(path):
            p = line.split()
            if len(p) < 3 or p[0] in "BX":
                continue
            if p[0] == "C":
                cur = int(p[3]) if len(p) > 3 else None
            if cur == epoch:
                err = p[3] if len(p) > 3 and p[0] != "C" else ""
                evs.append((int(p[2]), w, p[0], p[1], err))
    return sorted(evs)


def logs(d, t0, t1):
    out = []
    for path in sorted(glob.glob(os.path.join(d, "worker-*.log"))):
        w = int(path[-7:-4])
        for line in open(path, errors="replace"):
            p = line.split(" ", 2)
            if len(p) == 3 and p[0].isdigit() and t0 <= int(p[0]) <= t1:
                out.append((int(p[0]), w, "log", p[1], p[2].rstrip()[:200]))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    d, epoch = sys.argv[1], int(sys.argv[2])
    evs = calls(d, epoch)
    if not evs:
        sys.exit("no call of epoch %d in %s" % (epoch, d))
    first, last = evs[0][0], evs[-1][0]
    counts = os.path.join(d, "semaphores.txt")
    if os.path.exists(counts):
        got = [l.split()[1] for l in open(counts) if l.split()[:1] == [str(epoch)]]
        print("available at quiescence: %s" % (got[0] if got else "its key is gone"))
    for a, b, kind, who, fo in faults(d):
        if b >= first - 20_000_000_000 and a <= last + 20_000_000_000:
            print("fault %-12s %-3s %10.1f .. %10.1f%s" % (kind, who, (a - first) / 1e6,
                                                          (b - first) / 1e6,
                                                          "  FAILOVER WINDOW" if fo else ""))
    held = 0
    for t, w, kind, n, x in sorted(evs + logs(d, first, last)):
        if kind == "log":
            print("%10.1f w%d   log %s" % ((t - first) / 1e6, w, x))
            continue
        held += (kind == "A") - (kind == "R")
        bad = kind == "N" or (kind in "FR" and x != "0")
        print("%10.1f w%d %s %s %s%s" % ((t - first) / 1e6, w, kind, n, x, "  <--" if bad else ""))


if __name__ == "__main__":
    main()
