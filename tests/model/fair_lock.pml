/*
 * The fair lock's queue (RFairLock) as rlock implements it, for Spin.
 * Three waiters W0..W2, each a client of its own (command connection,
 * pub/sub connection, one lock() call that may give up), and a first
 * holder H that holds the lock at the start and unlocks once. One Redis
 * server whose scripts run as atomic steps; replies and pub/sub traffic
 * are delayed arbitrarily, and a client's command and pub/sub connections
 * are not ordered with each other. docs/reliability.md ("The fair lock's
 * queue, model-checked") maps each step to its C function or Lua script.
 *
 * Abstract time: a waiter's queue timeout may pass at any moment (at most
 * MAXLAPSE times in a run), a TTL timer may fire at any moment after it is
 * armed, and a try-lock's wait may run out (or the call be cancelled) at
 * any moment (at most MAXGIVEUP give-ups in a run). Holds are watchdog
 * holds: no lease runs out.
 *
 * Properties (assertions; CHECK_* picks them, all by default):
 *   FIFO   a waiter never gets the lock while a waiter ahead of it in the
 *          queue is live (has not given up) and its timeout has not passed
 *   WAKE   no lost wake-up: a waiter never sleeps on its TTL timer while
 *          an unlock's message to it is due (it was first in line when the
 *          lock was released and has not tried since) and nothing is on
 *          the way to it on its pub/sub connection
 *   LEAVE  a waiter that gave up is out of the queue once its commands
 *          have run (acquire_failed), not only when its timeout passes
 * Planted bugs (BUG_*) show that each check can fail. CHECK_HEAD, not part
 * of the default, is stronger than WAKE and does not hold (see the docs):
 *   HEAD   the timer never wakes the first in line of a free lock while
 *          no command of anyone is left to run
 */

#define N 3        /* waiters; H is client N */
#define H N
#define NONE 255

#ifndef MAXLAPSE
#define MAXLAPSE 1
#endif
#ifndef MAXGIVEUP
#define MAXGIVEUP 1
#endif

#if !defined(CHECK_FIFO) && !defined(CHECK_WAKE) && !defined(CHECK_LEAVE) && \
    !defined(CHECK_HEAD)
#define CHECK_FIFO
#define CHECK_WAKE
#define CHECK_LEAVE
#endif

mtype = { ACQ, UNL, FAILED, NIL, TTL, DONE, SUB, SUBOK, MSG0 };

/* Redis */
byte holder = H;
byte q[N];             /* redisson_lock_queue:{name} */
byte qlen = 0;
bool inq[N];           /* in the queue (and in redisson_lock_timeout) */
bool lapsed[N];        /* its timeout in redisson_lock_timeout has passed */
bool srv_sub[N];       /* Redis has its SUBSCRIBE to its own channel */
byte lapses = 0;

/* ghosts for the properties */
bool due[N];           /* an unlock published to it; it has not tried since */
bool gaveup[N];        /* its call gave up (wait over or cancelled) */
byte giveups = 0;

/* Sized so that no send ever blocks (a blocked send would split an
 * atomic step; serve asserts it): a waiter has one command out at a
 * time, and hears one SUBOK and at most one message per unlock. */
chan cmd[N] = [2] of { mtype };   /* command connection, FIFO */
chan rep[N] = [1] of { mtype };
chan psreq[N] = [1] of { mtype }; /* pub/sub connection, FIFO each way */
chan psin[N] = [5] of { mtype };

inline pop() {
    q[0] = q[1]; q[1] = q[2]; q[2] = NONE; qlen--
}

/* lrem: x out of the queue */
inline qremove(x) {
    k = 0;
    do
    :: k < qlen && q[k] != x -> k++
    :: else -> break
    od;
    if
    :: k < qlen ->
        do
        :: k + 1 < N -> q[k] = q[k + 1]; k++
        :: else -> break
        od;
        q[N - 1] = NONE; qlen--
    :: else -> skip
    fi;
    inq[x] = false
}

/* The loop at the top of every script: waiters at the head whose timeout
 * has passed leave the queue. */
inline drop_lapsed() {
    do
    :: qlen > 0 && lapsed[q[0]] -> inq[q[0]] = false; pop()
    :: else -> break
    od
}

/* fair_lock_acquire.lua */
inline run_acquire(i) {
    /* FIFO: anyone live and not lapsed ahead of i, before the script? */
    blocked = false;
    k = 0;
    do
    :: k < qlen && q[k] != i ->
        if
        :: !lapsed[q[k]] && !gaveup[q[k]] -> blocked = true
        :: else -> skip
        fi;
        k++
    :: else -> break
    od;
    drop_lapsed();
    due[i] = false;
#ifdef BUG_NO_HEAD_CHECK
    /* the queue's head not checked: a free lock goes to whoever asks */
    if
    :: holder == NONE ->
        qremove(i);
#else
    if
    :: holder == NONE && (qlen == 0 || q[0] == i) ->
        if
        :: qlen > 0 -> inq[q[0]] = false; pop()
        :: else -> skip
        fi;
#endif
        holder = i;
#ifdef CHECK_FIFO
        assert(!blocked);
#endif
        rep[i]!NIL
    :: else ->
        if
        :: !inq[i] -> q[qlen] = i; qlen++; inq[i] = true; lapsed[i] = false
        :: else -> skip
        fi;
        rep[i]!TTL
    fi
}

/* fair_lock_unlock.lua (no re-entry here): release, and tell the first
 * waiter in line on its own channel. */
inline run_unlock(i) {
    assert(holder == i);
    holder = NONE;
    drop_lapsed();
    if
    :: qlen > 0 ->
        due[q[0]] = true;
        if
        :: srv_sub[q[0]] -> assert(len(psin[q[0]]) < 5); psin[q[0]]!MSG0
        :: else -> skip /* nobody listens yet: lost */
        fi
    :: else -> skip
    fi
}

inline serve(i) {
    atomic {
        cmd[i]?m ->
        assert(len(rep[i]) == 0);
        if
        :: m == ACQ -> run_acquire(i)
        :: m == UNL -> run_unlock(i); rep[i]!DONE
        :: m == FAILED -> qremove(i) /* fair_lock_acquire_failed.lua */
        fi;
#ifdef CHECK_LEAVE
        k = 0;
        do
        :: k < N ->
            assert(!(gaveup[k] && inq[k] && len(cmd[k]) == 0));
            k++
        :: else -> break
        od;
#endif
        k = 0
    }
}

inline serve_ps(i) {
    atomic { psreq[i]?m -> srv_sub[i] = true; psin[i]!SUBOK }
}

active proctype Redis() {
    byte m, k;
    bool blocked;
    q[0] = NONE; q[1] = NONE; q[2] = NONE;
end:
    do
    :: serve(0)
    :: serve(1)
    :: serve(2)
    :: serve_ps(0)
    :: serve_ps(1)
    :: serve_ps(2)
    :: atomic { holder == H -> run_unlock(H) }      /* the first holder */
    /* a queued waiter's timeout passes */
    :: atomic { lapses < MAXLAPSE && inq[0] && !lapsed[0] -> lapsed[0] = true; lapses++ }
    :: atomic { lapses < MAXLAPSE && inq[1] && !lapsed[1] -> lapsed[1] = true; lapses++ }
    :: atomic { lapses < MAXLAPSE && inq[2] && !lapsed[2] -> lapsed[2] = true; lapses++ }
    od
}

/* A waiter's lock() (base_lock_acquire.c with wait.c and pubsub.c). A
 * try-lock's wait may run out at each point the code checks it (the
 * reply, a wake-up, the timer), at most MAXGIVEUP times in a run, and a
 * cancel may come while a try is out (a cancel between tries is the same
 * as a wait that ran out there). */
inline send_acquire() {
    cmd[me]!ACQ;
    in_flight = true;
    note_confirmed = confirmed;    /* rlock__wait_sent */
    listening = joined             /* it listens while the try is out */
}

/* acquire_failed, then acquire_free: the locals go back to their start
 * values so that finished waiters do not multiply the states. */
inline give_up_quiet() {
    gaveup[me] = true;
    live = false;
    woken = false; note_confirmed = false; confirmed = false; joined = false;
    listening = false; timer = false; cancelled = false; w = false; permits = 0
}

inline give_up() {
    cmd[me]!FAILED;
    give_up_quiet()
}


#define CAN_GIVE_UP (giveups < MAXGIVEUP)

/* retry: the wait may have run out */
inline retry() {
    if
    :: CAN_GIVE_UP -> giveups++; give_up()
    :: true -> send_acquire()
    fi
}

inline on_wake() {
    listening = false;
    if
    :: in_flight ->
#ifndef BUG_NO_WOKEN
        woken = true               /* its answer may be from before */
#else
        skip
#endif
    :: else -> timer = false; retry()  /* a give-up passes it on to its own entry: lost */
    fi
}

/* The reply says "held" (or "not first"): wait_for_unlock. */
inline wait_for_unlock() {
    w = woken; woken = false;
    if
    :: CAN_GIVE_UP -> giveups++; give_up()
    :: true ->
        if
        :: !joined -> joined = true; psreq[me]!SUB   /* its own channel */
        :: else -> skip
        fi;
        if
        :: w -> send_acquire()
#ifndef BUG_NO_CONFIRM_RETRY
        :: !w && confirmed && !note_confirmed -> send_acquire()
#endif
        :: !w && (!confirmed || note_confirmed) && permits > 0 ->
            permits--; send_acquire()
        :: else -> listening = true; timer = true    /* park */
        fi;
        w = false
    fi
}

proctype Waiter(byte me) {
    bool in_flight, woken, note_confirmed, confirmed, joined, listening;
    bool timer, cancelled, live = true, holding, unlocking, w;
    byte permits;
    mtype r;

    atomic { send_acquire() };
    do
    :: atomic {                          /* taken */
        rep[me]?NIL ->
        in_flight = false; live = false;
        woken = false; note_confirmed = false; confirmed = false; joined = false;
        listening = false; timer = false; permits = 0;
        if
        :: cancelled -> cmd[me]!UNL; unlocking = true; cancelled = false /* undo */
        :: else -> holding = true
        fi
       }
    :: atomic {                          /* held by another, or not first */
        rep[me]?TTL ->
        in_flight = false; listening = false;
        if
#ifndef BUG_NO_FAILED_ON_CANCEL
        :: cancelled -> give_up()
#else
        /* the clean-up skipped when a cancel waited for the try's answer */
        :: cancelled -> give_up_quiet()
#endif
        :: else -> wait_for_unlock()
        fi
       }
    :: atomic { holding -> cmd[me]!UNL; holding = false; unlocking = true }
    :: atomic { rep[me]?DONE -> unlocking = false }
    :: atomic {
        psin[me]?r ->
        if
        :: !live -> skip                     /* no entry any more */
        :: live && r == SUBOK ->             /* wake_all */
            confirmed = true;
            if
            :: listening -> on_wake()
            :: else -> skip
            fi
        :: live && r == MSG0 ->              /* signal */
            if
            :: listening -> on_wake()
            :: else -> permits++
            fi
        fi
       }
    :: atomic {                          /* the TTL timer fires */
        live && timer && !in_flight ->
#ifdef CHECK_WAKE
        assert(!due[me] || len(psin[me]) > 0 || len(psreq[me]) > 0);
#endif
#ifdef CHECK_HEAD
        /* stronger, not a property of the protocol (see the docs): the
         * timer never wakes the first in line of a free lock when no
         * command of anyone is still to run */
        assert(!(holder == NONE && qlen > 0 && q[0] == me && len(cmd[0]) == 0 &&
                 len(cmd[1]) == 0 && len(cmd[2]) == 0 && len(psin[me]) == 0 &&
                 len(psreq[me]) == 0));
#endif
        timer = false; listening = false;
        retry()
       }
    :: atomic {                          /* the caller cancels a try out */
        live && in_flight && !cancelled && CAN_GIVE_UP ->
        cancelled = true; giveups++
       }
    :: atomic { !live && !holding && !unlocking && len(psin[me]) == 0 -> break }
    od
}

init {
    atomic {
        run Waiter(0);
        run Waiter(1);
        run Waiter(2)
    }
}
