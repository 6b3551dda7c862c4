/*
 * The read/write lock's wake-up messages (RReadWriteLock) as rlock
 * implements them, for Spin. Two readers R0, R1 of one client (one
 * command connection, one pub/sub connection, one entry for the lock's
 * channel, each reader one lock() call that holds and then unlocks), and
 * a writer W of another client that holds the write lock at the start,
 * unlocks, and may take it once more with a try of its own (no wait) and
 * unlock again. One Redis server whose scripts run as atomic steps;
 * replies and messages are delayed arbitrarily, and the readers' command
 * and pub/sub connections are not ordered with each other.
 * docs/reliability.md ("The read/write lock's wake-all message,
 * model-checked") maps each step to its C function or Lua script.
 *
 * Abstract time: a TTL timer may fire at any moment after it is armed.
 * The readers' subscription to redisson_rwlock:{name} is confirmed from
 * the start (lock.pml checks the subscription's own protocol); holds are
 * watchdog holds: no lease runs out.
 *
 * Property WAKE: no lost wake-up for the wake-all message. A write unlock
 * publishes 1 (READ_UNLOCK_MESSAGE, every waiter may go); from then on,
 * until its next try runs in Redis, a reader that was waiting is due a
 * wake-up. A reader never sleeps on its TTL timer while one is due, the
 * lock is not write-held (it could take the read lock), and nothing is on
 * the way to it on the pub/sub connection.
 * Planted bugs (BUG_*) show that the check can fail.
 */

#ifndef R
#define R 3     /* readers */
#endif
#define NONE 255

#ifndef MAXWRITES
#define MAXWRITES 2 /* write holds in a run, the first at the start */
#endif

mtype = { ACQ, UNL, NIL, TTL, DONE, MSG0, MSG1 };
mtype = { FREE, READ, WRITE };

/* Redis: the lock's hash, as far as these scripts use it */
mtype mode = WRITE;
byte reads = 0;           /* read holds */
byte writes = 1;          /* write holds taken so far */

bool due[R];              /* ghost: a wake-all is due to the reader */
bool waiting[R];          /* ghost: the reader's lock() has not got the lock */

/* Sized so that no send ever blocks (a blocked send would split an
 * atomic step): one command per reader at a time, one message per unlock. */
chan cmd = [R] of { mtype, byte };   /* the readers' command connection */
chan rep[R] = [1] of { mtype };
chan psin = [MAXWRITES + R] of { mtype };  /* their pub/sub connection */

/* read_lock_acquire.lua */
inline run_read_acquire(i) {
    due[i] = false;
    if
    :: mode != WRITE -> mode = READ; reads++; rep[i]!NIL
    :: else -> rep[i]!TTL
    fi
}

/* read_lock_unlock.lua: the last read hold publishes 0 */
inline run_read_unlock(i) {
    reads--;
    if
    :: reads == 0 -> mode = FREE; psin!MSG0
    :: else -> skip
    fi;
    rep[i]!DONE
}

/* write_lock_unlock.lua: publishes 1, every waiter may go */
inline run_write_unlock() {
    mode = FREE;
    for (i : 0 .. R - 1) { due[i] = waiting[i] };
    psin!MSG1
}

active proctype Redis() {
    mtype m;
    byte i;
end:
    do
    :: atomic {
        cmd?m, i ->
        if
        :: m == ACQ -> run_read_acquire(i)
        :: m == UNL -> run_read_unlock(i)
        fi
       }
    :: atomic { mode == WRITE -> run_write_unlock() }           /* W unlocks */
    :: atomic {                                                 /* W's try */
        mode == FREE && writes < MAXWRITES -> mode = WRITE; writes++
       }
    od
}

/* The readers' client: each reader's call, and their entry (pubsub.c):
 * its waiters, and the permits a 0 leaves when nobody waits. */
bool in_flight[R], woken[R], joined[R], note_joined[R], timer[R], listening[R];
byte permits = 0;

/* send_acquire (base_lock_acquire.c) with rlock__wait_sent (wait.c) */
inline send_acquire(r) {
    cmd!ACQ, r;
    in_flight[r] = true;
    note_joined[r] = joined[r];    /* what the note records */
#ifndef BUG_NOT_LISTENING
    listening[r] = joined[r]       /* it listens while the try is out */
#endif
}

/* on_wake: a try out notes it, else the reader tries again now. */
inline on_wake(r) {
    listening[r] = false;
    if
    :: in_flight[r] ->
#ifndef BUG_NO_WOKEN
        woken[r] = true            /* its answer may be from before */
#else
        skip
#endif
    :: else -> timer[r] = false; send_acquire(r)
    fi
}

proctype Reader(byte me) {
    bool holding, w;

    atomic { waiting[me] = true; send_acquire(me) };
    do
    :: atomic {
        rep[me]?NIL ->
        in_flight[me] = false; listening[me] = false; waiting[me] = false;
        woken[me] = false; joined[me] = false; note_joined[me] = false;
        holding = true
       }
    :: atomic {                    /* wait_for_unlock */
        rep[me]?TTL ->
        in_flight[me] = false; listening[me] = false;  /* wait_stop */
        w = woken[me]; woken[me] = false;
        /* The first failure joins the entry. Its subscription is
         * confirmed, but this try went before the call joined, so a
         * message may have been missed: retry now (retry_now). */
        joined[me] = true;
        if
        :: w || !note_joined[me] -> send_acquire(me)
        :: else ->
            if
            :: permits > 0 -> permits--; send_acquire(me)
            :: else -> listening[me] = true; timer[me] = true   /* park */
            fi
        fi;
        w = false
       }
    :: atomic {                    /* the TTL timer fires */
        timer[me] && !in_flight[me] ->
        assert(!(due[me] && mode != WRITE && len(psin) == 0));
        timer[me] = false; listening[me] = false;
        send_acquire(me)
       }
    :: atomic { holding -> cmd!UNL, me; holding = false }
    :: atomic { rep[me]?DONE -> break }
    od
}

/* The pub/sub connection's messages (on_message -> rlock__wait_lock_message) */
active proctype PubSub() {
    mtype m;
    byte i;
end:
    do
    :: atomic {
        psin?m ->
        if
        :: m == MSG1 ->            /* rlock__entry_wake_all */
            for (i : 0 .. R - 1) {
                if
                :: listening[i] -> on_wake(i)
                :: else -> skip
                fi
            }
        :: m == MSG0 ->            /* rlock__entry_signal: one waiter (here
                                    * the lowest-numbered; the code takes
                                    * the longest-listening) */
            i = 0;
            do
            :: i < R && !listening[i] -> i++
            :: i < R && listening[i] -> on_wake(i); break
            :: i == R -> permits++; break
            od
        fi
       }
    od
}

init {
    atomic {
        byte r;
        for (r : 0 .. R - 1) { run Reader(r) }
    }
}
