#!/usr/bin/env python3
"""Checks of bench/s3_driver.py's handoff arithmetic, with no Redis:

    python3 bench/test_s3_driver.py

The workers are a stand-in script that writes holds chosen here to the
driver's --out files, so the timings are exact. The case that matters is
the one a loaded machine produces: the next holder gets the lock before the
previous holder's unlock *returns* (it was scheduled late to read its
reply), which made handoffs negative when they were measured from that
return.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "s3_driver.py")

# The stand-in worker: copies the lines given for its index (from the name
# of its --out file, holds.N) into that file, prints a worker's JSON line.
FAKE_WORKER = r'''
import json, os, sys
args = dict(zip(sys.argv[2::2], sys.argv[3::2]))  # after "s3"
out = args["--out"]
index = int(out.rsplit(".", 1)[1])
with open(os.environ["FAKE_HOLDS"]) as f:
    holds = json.load(f)[index]
with open(out, "a") as f:
    f.write("".join(" ".join(str(x) for x in h) + "\n" for h in holds))
print(json.dumps({"scenario": "S3-worker", "iters": len(holds), "errors": 0}))
'''

US = 1000  # ns


def run_driver(holds_per_worker):
    """s3_driver.py over stand-in workers writing the given
    (LOCK_RETURNED, UNLOCK_RETURNED, UNLOCK_CALLED) lines; its JSON line
    and exit code. The address has no server: the counter reads as
    missing (so the run exits 1) while the gaps are still computed."""
    with tempfile.TemporaryDirectory() as d:
        worker = os.path.join(d, "worker.py")
        with open(worker, "w") as f:
            f.write(FAKE_WORKER)
        holds_file = os.path.join(d, "holds.json")
        with open(holds_file, "w") as f:
            json.dump(holds_per_worker, f)
        env = dict(os.environ, FAKE_HOLDS=holds_file)
        iters = max(len(h) for h in holds_per_worker)
        p = subprocess.run(
            [sys.executable, DRIVER, "--cmd", "%s %s" % (sys.executable, worker),
             "--impl", "fake", "--addr", "127.0.0.1:1", "--procs", str(len(holds_per_worker)),
             "--iters", str(iters), "--lead-ms", "0", "--timeout", "20"],
            env=env, capture_output=True, text=True, timeout=60)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            raise AssertionError("no JSON line; stderr: " + p.stderr[-2000:])
        return json.loads(lines[-1]), p.returncode


class Handoff(unittest.TestCase):
    def test_late_unlock_return_is_not_a_negative_handoff(self):
        # Worker 0 calls unlock at 100 µs; worker 1 has the lock at 250 µs;
        # worker 0 sees its unlock's reply only at 400 µs.
        res, _ = run_driver([[(0, 400 * US, 100 * US)],
                             [(250 * US, 500 * US, 300 * US)]])
        self.assertEqual(res["handoffs"], 1)
        self.assertEqual(res["handoff_p50_us"], 150.0)
        self.assertEqual(res["overlaps"], 0)

    def test_every_gap_from_the_unlock_call(self):
        # Worker 0 holds twice (a gap, not a handoff), then worker 1.
        res, _ = run_driver([[(0, 50 * US, 20 * US), (80 * US, 130 * US, 110 * US)],
                             [(200 * US, 260 * US, 230 * US)]])
        self.assertEqual(res["handoffs"], 1)
        self.assertEqual(res["handoff_p50_us"], 90.0)
        self.assertEqual(res["gap_p50_us"], 60.0)

    def test_lock_before_the_previous_unlock_call_is_an_overlap(self):
        res, rc = run_driver([[(0, 400 * US, 300 * US)],
                              [(250 * US, 500 * US, 450 * US)]])
        self.assertEqual(res["overlaps"], 1)
        self.assertEqual(rc, 1)

    def test_a_line_without_the_unlock_call_fails_the_run(self):
        res, rc = run_driver([[(0, 400 * US)], [(250 * US, 500 * US, 450 * US)]])
        self.assertEqual(res["malformed_lines"], 1)
        self.assertEqual(rc, 1)


if __name__ == "__main__":
    unittest.main()
