#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_replies (tests/fuzz/corpus/fuzz_replies).

Each seed is a config byte and records in fuzz_replies.c's format; run
this again after changing that format. The tags below must match the enum
in fuzz_replies.c."""
import os
import sys

(R_GOOD, R_ERR, R_RAW, R_BUILD, R_CLOSE, R_STALL, R_DELAY, R_SKIP, R_FLUSH,
 A_LOCK, A_TRY, A_UNLOCK, A_FORCE, A_QUERY, A_CANCEL, A_RELEASE, A_WAIT, A_SLEEP,
 A_PUBLISH, A_OTHER_LOCK, A_OTHER_UNLOCK, A_EXPIRE, A_KILL, A_PUSH, A_PUSH_RAW,
 A_LOST_CB, A_FREE, A_DESTROY_CB, A_LISTEN) = range(29)

# config bits
TCP, PASSWORD, USER, DB, PING, LONG_WATCHDOG, RETRY, BATCH1 = (1 << i for i in range(8))
STREAM = PASSWORD  # without TCP: the connections run on the library's own stream
# argument values (indexes into fuzz_replies.c's tables)
LOCK_A, LOCK_A_TAGGED, LOCK_B = 0, 1, 2
WATCHDOG, LEASE_5, LEASE_40, LEASE_LONG = 0, 1, 2, 3
Q_IS_LOCKED, Q_HELD, Q_HOLD_COUNT, Q_TTL = 0, 1, 2, 3

# Before the first lock command: PING on each connection. Scripts are
# loaded when a call first needs one (that call is an EVAL), so no reply
# goes to a SCRIPT LOAD here.
HANDSHAKE = 2


def rec(tag, *args):
    return bytes([tag] + list(args) + [0] * (4 - len(args)))


def err(text):
    return bytes([R_ERR, len(text)]) + text


def raw(data, run_it=False):
    return bytes([R_RAW, 1 if run_it else 0, len(data)]) + data


def push_raw(conn, data):
    return bytes([A_PUSH_RAW, conn, len(data)]) + data


def good(n=1):
    return rec(R_GOOD) * n


# reply grammar (see build() in fuzz_replies.c)
def b_int(index):
    return bytes([0, index])


def b_nil():
    return bytes([1])


def b_bulk(s):
    return bytes([2, len(s)]) + s


def b_status(s):
    return bytes([3, len(s)]) + s


def b_array(*items):
    return bytes([5, len(items)]) + b"".join(items)


def b_pubsub(kind, channel, item):
    return bytes([7, kind, channel]) + item


SEEDS = {
    "lock_unlock": [rec(A_LOCK, LOCK_A, 0, WATCHDOG), rec(A_UNLOCK, LOCK_A, 0)],
    "tcp_auth_select": [TCP | PASSWORD | USER | DB,
                        rec(A_LOCK, LOCK_A, 0, LEASE_40), rec(A_QUERY, Q_TTL, LOCK_A),
                        rec(A_UNLOCK, LOCK_A, 0)],
    "tcp_password_only": [TCP | PASSWORD, rec(A_TRY, LOCK_B, 1, 0, LEASE_LONG),
                          rec(A_FORCE, LOCK_B)],
    "contention_handoff": [rec(A_OTHER_LOCK, LOCK_A, 0), rec(A_LOCK, LOCK_A, 0, WATCHDOG),
                           rec(A_SLEEP, 10), rec(A_OTHER_UNLOCK, LOCK_A),
                           rec(A_UNLOCK, LOCK_A, 0)],
    "try_lock_runs_out": [rec(A_OTHER_LOCK, LOCK_A, 0), rec(A_TRY, LOCK_A, 1, 2, LEASE_40),
                          rec(A_SLEEP, 35)],
    "held_lease_expires": [rec(A_OTHER_LOCK, LOCK_B, 1), rec(A_LOCK, LOCK_B, 2, LEASE_40),
                           rec(A_SLEEP, 20), rec(A_UNLOCK, LOCK_B, 2)],
    "reentrant": [rec(A_LOCK, LOCK_A, 0, WATCHDOG), rec(A_LOCK, LOCK_A, 0, LEASE_40),
                  rec(A_QUERY, Q_HOLD_COUNT, LOCK_A, 0), rec(A_QUERY, Q_HELD, LOCK_A, 1),
                  rec(A_UNLOCK, LOCK_A, 0), rec(A_UNLOCK, LOCK_A, 0), rec(A_UNLOCK, LOCK_A, 0),
                  rec(A_QUERY, Q_IS_LOCKED, LOCK_A)],
    "watchdog_lost": [rec(A_LOST_CB, LOCK_A), rec(A_LOCK, LOCK_A, 0, WATCHDOG),
                      rec(A_SLEEP, 25), rec(A_EXPIRE, LOCK_A), rec(A_SLEEP, 25)],
    "watchdog_batches": [BATCH1, rec(A_LOCK, LOCK_A, 0, WATCHDOG),
                         rec(A_LOCK, LOCK_B, 1, WATCHDOG), rec(A_LOCK, LOCK_A_TAGGED, 2, WATCHDOG),
                         rec(A_SLEEP, 25), rec(A_UNLOCK, LOCK_B, 1)],
    "noscript_eval": [good(HANDSHAKE), rec(R_FLUSH), rec(A_LOCK, LOCK_A, 0, LEASE_40),
                      rec(A_UNLOCK, LOCK_A, 0)],
    "error_reply": [good(HANDSHAKE),
                    err(b"WRONGTYPE Operation against a key holding the wrong kind of value"),
                    rec(A_LOCK, LOCK_A, 0, WATCHDOG), rec(A_QUERY, Q_TTL, LOCK_A)],
    "handshake_rejected": [TCP | PASSWORD, err(b"WRONGPASS invalid username-password pair"),
                           rec(A_LOCK, LOCK_A, 0, WATCHDOG), rec(A_SLEEP, 10)],
    "stalled_server": [RETRY, good(HANDSHAKE), rec(R_STALL), rec(A_LOCK, LOCK_A, 0, WATCHDOG),
                       rec(A_QUERY, Q_IS_LOCKED, LOCK_B)],
    "late_reply": [good(HANDSHAKE), rec(R_DELAY, 40), rec(A_TRY, LOCK_A, 0, 1, LEASE_40),
                   rec(A_SLEEP, 39)],
    "truncated_array": [good(HANDSHAKE), raw(b"*2\r\n:1\r\n"), rec(A_LOCK, LOCK_A, 0, WATCHDOG),
                        rec(A_SLEEP, 30)],
    "protocol_error": [good(HANDSHAKE), raw(b"!garbage\r\n"), rec(A_LOCK, LOCK_A, 0, WATCHDOG),
                       rec(A_SLEEP, 10), rec(A_LOCK, LOCK_A, 1, WATCHDOG)],
    "two_replies_in_one": [good(HANDSHAKE), raw(b"$-1\r\n:1\r\n", run_it=True),
                           rec(A_LOCK, LOCK_A, 0, LEASE_40), rec(A_UNLOCK, LOCK_A, 0)],
    "wrong_types": [good(HANDSHAKE), bytes([R_BUILD]) + b_array(b_int(1), b_bulk(b"x")),
                    bytes([R_BUILD]) + b_status(b"OK"), bytes([R_BUILD]) + b_bulk(b"12abc"),
                    bytes([R_BUILD]) + b_array(b_int(8)),
                    rec(A_LOCK, LOCK_A, 0, WATCHDOG), rec(A_UNLOCK, LOCK_A, 0),
                    rec(A_QUERY, Q_HOLD_COUNT, LOCK_A, 0), rec(A_QUERY, Q_TTL, LOCK_A)],
    "huge_ttl": [good(HANDSHAKE), bytes([R_BUILD]) + b_int(8), bytes([R_BUILD]) + b_int(9),
                 rec(A_TRY, LOCK_A, 0, 3, WATCHDOG), rec(A_LOCK, LOCK_B, 0, WATCHDOG),
                 rec(A_SLEEP, 20)],
    # A lock (no wait bound) told the holder's ttl is INT64_MAX: its retry
    # timer must saturate, not overflow, when added to the clock.
    "huge_ttl_lock": [good(HANDSHAKE), bytes([R_BUILD]) + b_int(8),
                      rec(A_LOCK, LOCK_B, 0, WATCHDOG), rec(A_SLEEP, 20)],
    "skipped_reply": [good(HANDSHAKE), rec(R_SKIP), rec(A_QUERY, Q_IS_LOCKED, LOCK_A),
                      rec(A_QUERY, Q_TTL, LOCK_A), rec(A_SLEEP, 30)],
    "closed_mid_command": [good(HANDSHAKE), rec(R_CLOSE), rec(A_LOCK, LOCK_A, 0, WATCHDOG),
                           rec(A_SLEEP, 10), rec(A_LOCK, LOCK_A, 0, WATCHDOG)],
    "shared_channel": [rec(A_OTHER_LOCK, LOCK_A, 0), rec(A_LOCK, LOCK_A, 0, WATCHDOG),
                       rec(A_LOCK, LOCK_A_TAGGED, 1, WATCHDOG), rec(A_PUBLISH, LOCK_A, 1),
                       rec(A_PUBLISH, LOCK_A, 0), rec(A_OTHER_UNLOCK, LOCK_A),
                       rec(A_SLEEP, 10)],
    "pubsub_push": [rec(A_OTHER_LOCK, LOCK_B, 0), rec(A_LOCK, LOCK_B, 0, WATCHDOG),
                    bytes([A_PUSH, 1]) + b_pubsub(0, LOCK_B, b_bulk(b"0")),
                    bytes([A_PUSH, 1]) + b_pubsub(1, LOCK_B, b_int(1)),
                    push_raw(1, b"*3\r\n$7\r\nmessage\r\n$28\r\n"
                                b"redisson_lock__channel:{b\x00\xff}\r\n$1\r\n0\r\n"),
                    rec(A_SLEEP, 10), rec(A_OTHER_UNLOCK, LOCK_B),
                    bytes([A_PUSH, 1]) + b_pubsub(2, LOCK_B, b_int(0))],
    "cancel_waiter": [rec(A_OTHER_LOCK, LOCK_A, 0), rec(A_LOCK, LOCK_A, 0, WATCHDOG),
                      rec(A_CANCEL, 0), rec(A_RELEASE, 0), rec(A_OTHER_UNLOCK, LOCK_A)],
    "cancel_in_flight": [good(HANDSHAKE), rec(R_DELAY, 10), rec(A_LOCK, LOCK_A, 0, WATCHDOG),
                         rec(A_CANCEL, 0), rec(A_SLEEP, 15), rec(A_QUERY, Q_IS_LOCKED, LOCK_A)],
    "destroy_from_callback": [rec(A_OTHER_LOCK, LOCK_B, 0), rec(A_LOCK, LOCK_B, 1, WATCHDOG),
                              rec(A_DESTROY_CB), rec(A_LOCK, LOCK_A, 0, LEASE_40),
                              rec(A_UNLOCK, LOCK_A, 0), rec(A_FREE, LOCK_A),
                              rec(A_LOST_CB, LOCK_B)],
    "free_handle_held": [rec(A_LOST_CB, LOCK_A), rec(A_LOCK, LOCK_A, 0, WATCHDOG),
                         rec(A_FREE, LOCK_A), rec(A_SLEEP, 20), rec(A_UNLOCK, LOCK_A, 0)],
    "reconnect": [RETRY, rec(A_LOCK, LOCK_A, 0, WATCHDOG), rec(A_KILL, 0), rec(A_KILL, 0),
                  rec(A_SLEEP, 10), rec(A_QUERY, Q_HELD, LOCK_A, 0)],
    "server_gone": [rec(A_LISTEN), rec(A_KILL, 0), rec(A_KILL, 0),
                    rec(A_LOCK, LOCK_A, 0, WATCHDOG), rec(A_SLEEP, 30), rec(A_LISTEN),
                    rec(A_TRY, LOCK_A, 0, 2, LEASE_40)],
    "keepalive_ping": [PING, rec(A_OTHER_LOCK, LOCK_A, 0), rec(A_LOCK, LOCK_A, 0, WATCHDOG),
                       rec(A_SLEEP, 30), rec(A_OTHER_UNLOCK, LOCK_A)],
    "wait_drives_loop": [rec(A_LOCK, LOCK_A, 0, WATCHDOG), rec(A_WAIT, 0, 20),
                         rec(A_TRY, LOCK_A, 1, 1, LEASE_5), rec(A_WAIT, 1, 29)],
}


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_replies")
    os.makedirs(out, exist_ok=True)
    for name, parts in SEEDS.items():
        config = 0
        if parts and isinstance(parts[0], int):
            config, parts = parts[0], parts[1:]
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes([config]) + b"".join(parts))
        if not config & TCP:  # the same over the other transport
            with open(os.path.join(out, "stream-" + name), "wb") as f:
                f.write(bytes([config | STREAM]) + b"".join(parts))
    print(f"{len(SEEDS)} seeds (and their stream twins) in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
