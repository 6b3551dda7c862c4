/*
 * The waiting protocol of rlock's reentrant lock (RLock), as the code
 * implements it, for Spin. Two clients, one owner (one waiting call at a
 * time) each, one lock name, one Redis server whose scripts run as atomic
 * steps. docs/reliability.md ("The waiting protocol, model-checked") maps
 * each step to its C function or Lua script.
 *
 * Abstract time: a timer may fire at any moment after it is armed; a lease
 * may run out at any moment its holder does not renew it (dead, or the
 * watchdog not renewing it). Faults, each bounded (MAXLOSS, MAXRESTART,
 * MAXDEATH, MAXDUP): a lost pub/sub connection (re-subscribed when it is
 * back), a Redis restart without its data, a holder that dies, an unlock
 * that reaches Redis twice. Replies are delayed arbitrarily, and the
 * command and pub/sub connections are not ordered with each other.
 *
 * Properties (each an assertion; CHECK_* picks them, all by default):
 *   MUTEX     two live callers never both hold the lock, unless Redis lost
 *             its data (a restart)
 *   WAKE      no lost wake-up: a waiter never sleeps on its TTL timer while
 *             the lock is free after an unlock message, nobody's acquire is
 *             on its way, and nothing is on the way to the waiter (message,
 *             subscription confirmation, pub/sub reconnect)
 *   ONCE      an unlock request changes the lock at most once
 *   COUNT     hold counts never go negative (checked inside the script)
 *   RENEW     the watchdog renews no hold the caller has unlocked (its
 *             count for the owner never exceeds the caller's holds)
 * Planted bugs (BUG_*), one per property, show that each check can fail.
 */

#define N 2
#define MAXH 2
#define NONE 2

#ifndef MAXLOSS
#define MAXLOSS 1
#endif
#ifndef MAXRESTART
#define MAXRESTART 1
#endif
#ifndef MAXDEATH
#define MAXDEATH 1
#endif
#ifndef MAXOPS
#define MAXOPS 3 /* lock() calls per client */
#endif
#ifndef MAXDUP
#define MAXDUP 1
#endif

#if !defined(CHECK_MUTEX) && !defined(CHECK_WAKE) && !defined(CHECK_ONCE) && \
    !defined(CHECK_COUNT) && !defined(CHECK_RENEW)
#define CHECK_MUTEX
#define CHECK_WAKE
#define CHECK_ONCE
#define CHECK_COUNT
#define CHECK_RENEW
#endif

mtype = { ACQ, UNL, REN, NIL, TTL, R0, R1, RNH, SUB, UNSUB, SUBOK, UNSUBOK, MSG0 };

/* Per client: its command connection, the watchdog's calls, and its
 * pub/sub connection. */
chan cmd[N] = [2] of { mtype };
chan rep[N] = [2] of { mtype };
chan wdc[N] = [1] of { mtype };
chan wdr[N] = [1] of { mtype };
chan psc[N] = [4] of { mtype };
chan psr[N] = [6] of { mtype };

/* ---- Redis ---- */
short hcnt[N];   /* the lock's hash: owner i's field (0: absent) */
byte latch[N];   /* the latch of i's current unlock request: NONE, 0, 1 */
byte applied[N]; /* times i's current unlock request changed the hash */
bool srvsub[N];  /* i's pub/sub connection is subscribed to the channel */
bool acqq[N];    /* an acquire of i is written, not yet run */
#define FREE_NONE 0
#define FREE_UNLOCK 1
#define FREE_OTHER 2
byte lastfree;   /* how the lock was last freed: unlock (published) or not */

/* ---- the clients ---- */
#define IDLE 0
#define INFL 1 /* an acquire in flight */
#define WAIT 2 /* a waiter on the entry, with its TTL timer */
byte op[N];
byte held[N];    /* holds the caller was told it has */
bool unl[N];     /* an unlock in flight */
bool dead[N];
byte wd[N];      /* the watchdog's count for the owner (renewal.c owner.count) */
bool rinfl[N];   /* a renewal round in flight */
byte wseq[N];    /* the watchdog owner's seq, new each time it is added */
byte rseq[N];    /* the seq the round in flight was sent for */
bool pendadd[N]; /* BUG_ADD_LATE: the watchdog add still to come */
/* the lock entry (pubsub.c rlock__lock_entry) and the op's fields */
bool ent[N], onlist[N], timer[N];
byte permits[N];
bool sconf[N];   /* acquire_op.sent_confirmed */
byte sgen[N];    /* acquire_op.sent_generation */
/* the channel's subscription (pubsub.c channel_sub) */
bool subex[N], want[N], sent[N], conf[N];
byte gen[N], outst[N];
bool psup[N];    /* the pub/sub connection is up */

bool excused;    /* Redis lost its data: exclusion is not promised */
byte nloss, nrestart, ndeath, ndup;
byte nops[N];
/* scratch, within one atomic step: not part of the state */
hidden mtype m;
hidden byte missed;

#define EXISTS (hcnt[0] != 0 || hcnt[1] != 0)
#define PSBOUND (len(psr[0]) + len(psc[0]) <= 2 && len(psr[1]) + len(psc[1]) <= 2)

/* ---- Redis: the scripts, each one atomic step ---- */

inline reply(i, m) {
    if
    :: dead[i] -> skip
    :: else -> assert(nfull(rep[i])); rep[i]!m
    fi
}

inline publish0() {
    if :: srvsub[0] -> assert(nfull(psr[0])); psr[0]!MSG0 :: else -> skip fi;
    if :: srvsub[1] -> assert(nfull(psr[1])); psr[1]!MSG0 :: else -> skip fi
}

/* lock_acquire.lua */
inline run_acquire(i) {
    acqq[i] = 0;
    if
    :: !EXISTS || hcnt[i] != 0 -> hcnt[i]++; assert(hcnt[i] <= MAXH + 1); reply(i, NIL)
    :: else -> reply(i, TTL)
    fi
}

/* lock_unlock.lua; answer: whether the caller reads the answer */
inline run_unlock(i, answer) {
    if
#ifndef BUG_NO_LATCH
    :: latch[i] != NONE ->
        if
        :: answer && latch[i] == 0 -> reply(i, R0)
        :: answer && latch[i] == 1 -> reply(i, R1)
        :: else -> skip
        fi
#endif
    :: else ->
        if
#ifndef BUG_NO_HEXISTS
        :: hcnt[i] == 0 -> if :: answer -> reply(i, RNH) :: else -> skip fi
#endif
        :: else ->
            hcnt[i]--;
            applied[i]++;
#ifdef CHECK_COUNT
            assert(hcnt[i] >= 0);
#endif
#ifdef CHECK_ONCE
            assert(applied[i] <= 1);
#endif
            if
            :: hcnt[i] > 0 ->
                latch[i] = 0;
                if :: answer -> reply(i, R0) :: else -> skip fi
            :: else ->
                hcnt[0] = 0; hcnt[1] = 0; /* del */
                publish0();
                lastfree = FREE_UNLOCK;
                latch[i] = 1;
                if :: answer -> reply(i, R1) :: else -> skip fi
            fi
        fi
    fi
}

/* lock_renew.lua */
inline run_renew(i) {
    if
    :: dead[i] -> skip
    :: hcnt[i] != 0 -> wdr[i]!R1
    :: else -> wdr[i]!R0
    fi
}

inline serve(i) {
    atomic {
        nempty(cmd[i]) ->
        if
        :: cmd[i]?[ACQ] -> cmd[i]?ACQ; run_acquire(i)
        :: cmd[i]?[UNL] -> cmd[i]?UNL; run_unlock(i, 1)
        fi
    }
}

inline serve_wd(i) {
    atomic { wdc[i]?REN -> run_renew(i) }
}

inline serve_ps(i) {
    atomic {
        nempty(psc[i]) ->
        if
        :: psc[i]?[SUB] -> psc[i]?SUB; srvsub[i] = 1; assert(nfull(psr[i])); psr[i]!SUBOK
        :: psc[i]?[UNSUB] -> psc[i]?UNSUB; srvsub[i] = 0; assert(nfull(psr[i])); psr[i]!UNSUBOK
        fi
    }
}

active proctype server() {
end:
    do
    :: serve(0)
    :: serve(1)
    :: serve_wd(0)
    :: serve_wd(1)
    :: serve_ps(0)
    :: serve_ps(1)
    od
}

/* ---- the client: pubsub.c ---- */

inline free_sub(i) {
    subex[i] = 0; want[i] = 0; sent[i] = 0; conf[i] = 0; gen[i] = 0; outst[i] = 0
}

inline send_subscribe(i) {
    if
    :: psup[i] -> psc[i]!SUB; sent[i] = 1; outst[i]++
    :: else -> skip /* on_ready subscribes */
    fi
}

/* rlock__pubsub_subscribe, first waiter of the name */
inline subscribe(i) {
    subex[i] = 1;
    ent[i] = 1;
    if
    :: !want[i] -> want[i] = 1; send_subscribe(i)
    :: else -> skip
    fi
}

/* rlock__pubsub_unsubscribe of the last reference: leave() */
inline unsubscribe(i) {
    ent[i] = 0;
    permits[i] = 0;
    if
    :: want[i] ->
        want[i] = 0;
        conf[i] = 0;
        if
        :: sent[i] ->
            sent[i] = 0;
            if :: psup[i] -> psc[i]!UNSUB; outst[i]++ :: else -> skip fi
        :: else -> skip
        fi;
        if :: outst[i] == 0 -> free_sub(i) :: else -> skip fi
    :: else -> skip
    fi
}

inline on_down(i) {
    psup[i] = 0;
    srvsub[i] = 0;
    do :: nempty(psc[i]) -> psc[i]?_ :: empty(psc[i]) -> break od;
    do :: nempty(psr[i]) -> psr[i]?_ :: empty(psr[i]) -> break od;
    if
    :: subex[i] ->
        sent[i] = 0; conf[i] = 0; outst[i] = 0;
        if :: !want[i] -> free_sub(i) :: else -> skip fi
    :: else -> skip
    fi
}

/* ---- the client: base_lock.c ---- */

/* send_acquire */
inline send_acquire(i) {
    sconf[i] = ent[i] && conf[i];
    sgen[i] = (ent[i] -> gen[i] : 0);
    op[i] = INFL;
    acqq[i] = 1;
    cmd[i]!ACQ
}

/* on_wake, and the timer's on_wait_timer (a lock() call: no deadline) */
inline wake(i) {
    onlist[i] = 0; timer[i] = 0;
    send_acquire(i)
}

/* rlock__entry_signal: one waiter, or a permit banked */
inline signal(i) {
    if
    :: onlist[i] -> wake(i)
    :: else -> permits[i]++
    fi
}

/* acquire_free */
inline acquire_free(i) {
    onlist[i] = 0; timer[i] = 0;
    if :: ent[i] -> unsubscribe(i) :: else -> skip fi;
    op[i] = IDLE
}

/* acquired: the watchdog first, then the caller's future */
inline watch(i) {
    if :: wd[i] == 0 -> wseq[i] = (wseq[i] + 1) % 4 :: else -> skip fi;
    wd[i]++
}

inline acquired(i) {
#ifdef BUG_ADD_LATE
    pendadd[i] = 1;
#else
    watch(i);
#endif
    held[i]++;
    acquire_free(i)
}

/* wait_for_unlock */
inline wait_for_unlock(i) {
    if :: !ent[i] -> subscribe(i) :: else -> skip fi;
#if defined(BUG_NO_CONFIRM_RETRY)
    missed = 0;
#elif defined(BUG_NO_GENERATION)
    missed = conf[i] && !sconf[i];
#else
    missed = conf[i] && (!sconf[i] || sgen[i] != gen[i]);
#endif
    if
    :: missed -> send_acquire(i)
    :: !missed && permits[i] > 0 -> permits[i]--; send_acquire(i)
    :: else -> onlist[i] = 1; timer[i] = 1; op[i] = WAIT
    fi
}

/* on_reply of the pub/sub connection */
inline on_ps(i, m) {
    if
    :: !subex[i] -> skip /* no subscription (left): not ours */
    :: m == MSG0 -> if :: want[i] && ent[i] -> signal(i) :: else -> skip fi
    :: m == UNSUBOK && outst[i] == 0 && want[i] -> sent[i] = 0; conf[i] = 0 /* unasked */
    :: else ->
        if :: outst[i] > 0 -> outst[i]-- :: else -> skip fi;
        if
        :: outst[i] > 0 -> skip /* a later command's reply decides */
        :: else ->
            if
            :: m == SUBOK && want[i] ->
                conf[i] = 1;
                gen[i]++;
                if :: onlist[i] -> wake(i) :: else -> skip fi /* wake_all */
            :: !want[i] -> free_sub(i)
            :: else -> skip
            fi
        fi
    fi
}

proctype client(byte i) {
end:
    do
    /* the caller: lock() (a re-entry when it holds the lock already); the
     * bound: no new call while pub/sub traffic is 3 deep (PSBOUND) */
    :: atomic { !dead[i] && op[i] == IDLE && !unl[i] && held[i] < (i == 0 -> MAXH : 1) && nops[i] < MAXOPS && PSBOUND ->
        nops[i]++; send_acquire(i) }
    /* the caller: unlock(); the blocking call's direct path tells the
     * watchdog first (rlock__direct_unlock_begin), with a new request id */
    :: atomic {
        !dead[i] && op[i] == IDLE && !unl[i] && held[i] > 0 ->
        held[i]--;
#ifndef BUG_NO_CANCEL
        if :: wd[i] > 0 -> wd[i]-- :: else -> skip fi;
#endif
        latch[i] = NONE; applied[i] = 0;
        unl[i] = 1;
        cmd[i]!UNL
    }
    :: atomic {
        rep[i]?m ->
        if
        :: m == NIL -> acquired(i)
        :: m == TTL -> wait_for_unlock(i)
        :: else -> unl[i] = 0 /* the latch's DEL follows; its key is not reused */
        fi
    }
    :: atomic { psr[i]?m -> on_ps(i, m) }
    /* the TTL timer (on_wait_timer): abstract time, any moment */
    :: atomic { op[i] == WAIT && timer[i] -> wake(i) }
    /* the watchdog's round, and its answer (a lock found gone is lost) */
    :: atomic { !dead[i] && wd[i] > 0 && !rinfl[i] -> rinfl[i] = 1; rseq[i] = wseq[i]; wdc[i]!REN }
    :: atomic {
        wdr[i]?m -> rinfl[i] = 0;
        if
#ifdef BUG_NO_SEQ
        :: m == R0 -> wd[i] = 0
#else
        /* unless unlocked (and maybe taken again) meanwhile */
        :: m == R0 && wd[i] > 0 && rseq[i] == wseq[i] -> wd[i] = 0
#endif
        :: else -> skip
        fi;
        rseq[i] = 0
    }
    :: atomic { pendadd[i] -> pendadd[i] = 0; watch(i) }
    /* the pub/sub connection is back: rlock__pubsub_on_ready */
    :: atomic {
        !dead[i] && !psup[i] -> psup[i] = 1;
        if :: subex[i] && want[i] -> send_subscribe(i) :: else -> skip fi
    }
    od
}

/* ---- faults ---- */

inline die(i) {
    dead[i] = 1;
    on_down(i);
    do :: nempty(rep[i]) -> rep[i]?_ :: empty(rep[i]) -> break od;
    do :: nempty(wdr[i]) -> wdr[i]?_ :: empty(wdr[i]) -> break od;
    op[i] = IDLE; held[i] = 0; unl[i] = 0; wd[i] = 0; rinfl[i] = 0; pendadd[i] = 0;
    wseq[i] = 0; rseq[i] = 0;
    ent[i] = 0; onlist[i] = 0; timer[i] = 0; permits[i] = 0; sconf[i] = 0; sgen[i] = 0;
    free_sub(i)
    /* acquires and unlocks it wrote may still run (acqq, cmd) */
}

/* A lease runs out only when nobody renews it: its holder is dead, or
 * has no watchdog hold (and no acquire whose answer would add one: the
 * answer comes within the lease, timeout_ms < lock_watchdog_timeout_ms). */
#define UNRENEWED(k) (hcnt[k] == 0 || dead[k] || \
                      (wd[k] == 0 && !pendadd[k] && op[k] != INFL))

active proctype faults() {
end:
    do
    :: atomic { nloss < MAXLOSS && psup[0] -> nloss++; on_down(0) }
    :: atomic { nloss < MAXLOSS && psup[1] -> nloss++; on_down(1) }
    :: atomic { ndeath < MAXDEATH && !dead[0] -> ndeath++; die(0) }
    :: atomic { ndeath < MAXDEATH && !dead[1] -> ndeath++; die(1) }
    /* an unlock written once reaches Redis twice, before its answer is read */
    :: atomic { ndup < MAXDUP && unl[0] -> ndup++; run_unlock(0, 0) }
    :: atomic { ndup < MAXDUP && unl[1] -> ndup++; run_unlock(1, 0) }
    /* the lease runs out (no message) */
    :: atomic {
        EXISTS && UNRENEWED(0) && UNRENEWED(1) ->
        hcnt[0] = 0; hcnt[1] = 0; lastfree = FREE_OTHER
    }
    /* Redis restarts without its data: the pub/sub connections drop */
    :: atomic {
        nrestart < MAXRESTART ->
        nrestart++;
        excused = 1;
        hcnt[0] = 0; hcnt[1] = 0; latch[0] = NONE; latch[1] = NONE;
        lastfree = FREE_OTHER;
        if :: psup[0] -> on_down(0) :: else -> skip fi;
        if :: psup[1] -> on_down(1) :: else -> skip fi
    }
    od
}

/* ---- the properties checked in every state ---- */

#define MUTEX (excused || held[0] == 0 || held[1] == 0)
/* i sleeps on its timer though the wake-up it is owed cannot come */
#define LOST(i) (op[i] == WAIT && !EXISTS && lastfree == FREE_UNLOCK && \
                 !acqq[0] && !acqq[1] && psup[i] && outst[i] == 0 && \
                 len(psr[i]) == 0 && len(psc[i]) == 0)
#define RENEW_OK(i) (wd[i] <= held[i])

active proctype monitor() {
end:
    atomic {
        if
        :: false -> skip
#ifdef CHECK_MUTEX
        :: !MUTEX -> assert(MUTEX)
#endif
#ifdef CHECK_WAKE
        :: LOST(0) -> assert(!LOST(0))
        :: LOST(1) -> assert(!LOST(1))
#endif
#ifdef CHECK_RENEW
        :: !RENEW_OK(0) -> assert(RENEW_OK(0))
        :: !RENEW_OK(1) -> assert(RENEW_OK(1))
#endif
        fi
    }
}

init {
    atomic {
        latch[0] = NONE; latch[1] = NONE;
        psup[0] = 1; psup[1] = 1;
        run client(0);
        run client(1)
    }
}
