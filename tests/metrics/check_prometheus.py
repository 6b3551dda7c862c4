#!/usr/bin/env python3
"""Parses rlock_stats_write_prometheus's text with prometheus_client's own
parser (the one a Prometheus client library trusts), and checks the
families and the values of a client driven through known holds, waits,
a timeout, a cancel, a loss and an error (test_metrics'
test_metrics_text_of_driven_client writes the text).

    check_prometheus.py TEST_METRICS_BINARY
"""

import math
import os
import subprocess
import sys
import tempfile

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit("prometheus_client is missing: install python3-prometheus-client "
             "(scripts/deps) or pip install prometheus_client")


def families_of(text):
    out = {}
    for fam in text_string_to_metric_families(text):
        assert fam.name not in out, "family %s twice" % fam.name
        out[fam.name] = fam
    return out


def value(fam, suffix="", **labels):
    hits = [s.value for s in fam.samples
            if s.name == fam.name + suffix and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(hits) == 1, "%s%s %s: %d samples" % (fam.name, suffix, labels, len(hits))
    return hits[0]


def check_histogram(fam, count, at_least_s, above_s=None):
    assert fam.type == "histogram", fam.type
    buckets = [(float(s.labels["le"]), s.value) for s in fam.samples
               if s.name == fam.name + "_bucket"]
    assert buckets[-1][0] == math.inf
    bounds = [b for b, _ in buckets]
    assert bounds == sorted(bounds) and len(set(bounds)) == len(bounds), bounds
    cumulative = [v for _, v in buckets]
    assert cumulative == sorted(cumulative), "buckets not cumulative: %s" % cumulative
    assert value(fam, "_count") == count == cumulative[-1], (fam.name, count, cumulative[-1])
    assert value(fam, "_sum") >= at_least_s, (fam.name, value(fam, "_sum"))
    if above_s is not None:  # some observation above above_s seconds
        below = max(v for b, v in buckets if b < above_s)
        assert below < count, (fam.name, buckets)


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "metrics.txt")
        env = dict(os.environ, RLOCK_METRICS_OUT=path)
        subprocess.run([binary, "test_metrics_text_of_driven_client"], env=env, check=True,
                       timeout=100)
        with open(path, encoding="utf-8") as f:
            text = f.read()
    fams = families_of(text)
    counters = {  # prometheus_client names a counter's family without _total
        "rlock_acquisitions": 5, "rlock_waits": 3, "rlock_acquire_timeouts": 1,
        "rlock_acquire_cancelled": 1, "rlock_lost_locks": 1, "rlock_reconnects": 0,
    }
    for name, want in counters.items():
        fam = fams[name]
        assert fam.type == "counter", (name, fam.type)
        assert value(fam, "_total") == want, (name, value(fam, "_total"), want)
    assert value(fams["rlock_renewal_calls"], "_total") >= 1
    errors = fams["rlock_acquire_errors"]
    assert value(errors, "_total", code="RLOCK_ERR_CONNECTION") == 1
    assert value(errors, "_total", code="RLOCK_ERR_TIMEOUT") == 0
    assert sum(s.value for s in errors.samples) == 1
    for name in ("rlock_held_locks", "rlock_waiting_calls", "rlock_watched_locks"):
        assert fams[name].type == "gauge", name
        assert value(fams[name]) == 0, name
    check_histogram(fams["rlock_acquire_wait_seconds"], 5, 0.3, above_s=0.25)
    check_histogram(fams["rlock_hold_seconds"], 3, 0.3, above_s=0.25)
    check_histogram(fams["rlock_renewal_slack_seconds"], value(
        fams["rlock_renewal_slack_seconds"], "_count"), 0.0)
    assert value(fams["rlock_renewal_slack_seconds"], "_count") >= 1
    slack_min = value(fams["rlock_renewal_slack_min_seconds"])
    assert slack_min < 0.9, slack_min
    print("ok: %d families parsed" % len(fams))


if __name__ == "__main__":
    main()
