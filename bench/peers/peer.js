'use strict';
// Node.js peers for rlock's benchmark suite (bench/run).
//
//   node peer.js <node-redisson|redlock|redis-semaphore> s1 --addr HOST:PORT --n N [--variant default|tuned]
//   node peer.js <impl> s2 --addr HOST:PORT --k K --seconds S [--variant V]
//   node peer.js <impl> s3 --addr HOST:PORT --lock NAME --counter KEY --iters N
//                          --start-at NS --out FILE [--variant V]
//   node peer.js redis-semaphore s7 --addr HOST:PORT --lock NAME --permits K --seconds S
//                          --start-at NS --out FILE [--variant V]
//
// Prints one JSON line on stdout; diagnostics go to stderr. Exit 0 on
// success, 1 on a runtime failure, 2 on bad usage.
//
// s1: N sequential lock+unlock pairs on one lock (bench:s1:<pid>) after 100
//     uncounted warm-up pairs; each pair timed with the monotonic clock.
// s2: K distinct locks (bench:s2:<pid>:<i>) on the same client(s), each a
//     chain of lock+unlock pairs, for S seconds; total pairs per second.
// s3: one worker of the contended scenario: wait until CLOCK_MONOTONIC
//     reaches NS, then N times: acquire (retrying after a give-up, which is
//     counted in "errors"), GET counter, SET counter value+1 (plain ioredis
//     client), release. Writes "LOCK_RETURNED_NS UNLOCK_RETURNED_NS
//     UNLOCK_CALLED_NS" per iteration to FILE at the end (UNLOCK_CALLED:
//     just before the release call, the end of the critical section; the
//     driver measures handoffs from it). process.hrtime.bigint() is
//     CLOCK_MONOTONIC on Linux, the clock the C workers use.
// s7: one worker of the semaphore scenario (redis-semaphore's Semaphore of
//     K permits, the Mutex's options per variant): wait until NS, then for
//     S seconds acquire() / release() with no work in between (a give-up is
//     retried and counted in "errors"); writes "ACQUIRE_CALLED_NS
//     ACQUIRE_RETURNED_NS RELEASE_RETURNED_NS" per pair to FILE at the end,
//     and reports the process's CPU over the loop (cpu_s).
//
// Variants (see README.md):
//   node-redisson    pub/sub wake-ups, no polling setting: tuned == default.
//                    Lease: its watchdog (lockWatchdogTimeout default 30000 ms).
//   redlock 4.2.0    default: retryCount 10, retryDelay 200 ms, retryJitter
//                    100 ms (the library's defaults); tuned: retryDelay 2 ms,
//                    retryJitter 1 ms. Lease (ttl) 10000 ms in both.
//   redis-semaphore  Mutex, default: lockTimeout 10000, acquireTimeout 10000,
//                    retryInterval 10 ms (the library's defaults); tuned:
//                    retryInterval 1 ms.
// Give-ups (redlock's LockError after retryCount attempts, redis-semaphore's
// TimeoutError after acquireTimeout) are retried at once by the s3 loop and
// counted as errors; the libraries' own retry settings stay as they are.
const fs = require('fs');

// Resolve packages next to this script, whatever the cwd.
const req = (name) => require(require.resolve(name, { paths: [__dirname] }));

const WARMUP = 100;
const LEASE_MS = 10000;

function die(msg, code = 1) {
    process.stderr.write('peer.js: ' + msg + '\n');
    process.exit(code);
}

function now() {
    return process.hrtime.bigint();
}

function usage() {
    die('usage: node peer.js <node-redisson|redlock|redis-semaphore> <s1|s2|s3|s7> --addr HOST:PORT [flags]', 2);
}

function parseArgs(argv) {
    if (argv.length < 2) {
        usage();
    }
    const a = { impl: argv[0], scenario: argv[1], variant: 'default' };
    const known = {
        '--addr': 'addr', '--n': 'n', '--variant': 'variant', '--k': 'k', '--seconds': 'seconds',
        '--lock': 'lock', '--counter': 'counter', '--iters': 'iters', '--start-at': 'startAt', '--out': 'out',
        '--permits': 'permits',
    };
    for (let i = 2; i < argv.length; i++) {
        let flag = argv[i];
        let val;
        const eq = flag.indexOf('=');
        if (flag.startsWith('--') && eq > 0) {
            val = flag.slice(eq + 1);
            flag = flag.slice(0, eq);
        } else {
            if (i + 1 >= argv.length) {
                die('missing value for ' + flag, 2);
            }
            val = argv[++i];
        }
        if (!(flag in known)) {
            die('unknown flag ' + flag, 2);
        }
        a[known[flag]] = val;
    }
    if (!['node-redisson', 'redlock', 'redis-semaphore'].includes(a.impl)) {
        die('unknown impl ' + a.impl, 2);
    }
    if (!['default', 'tuned'].includes(a.variant)) {
        die('unknown variant ' + a.variant, 2);
    }
    if (!a.addr) {
        die('--addr is required', 2);
    }
    const need = {
        s1: ['n'], s2: ['k', 'seconds'], s3: ['lock', 'counter', 'iters', 'startAt', 'out'],
        s7: ['lock', 'permits', 'seconds', 'startAt', 'out'],
    }[a.scenario];
    if (a.scenario === 's7' && a.impl !== 'redis-semaphore') {
        die('s7 is for redis-semaphore only', 2);
    }
    if (!need) {
        die('unknown scenario ' + a.scenario, 2);
    }
    for (const k of need) {
        if (a[k] === undefined) {
            die('missing flag for ' + k, 2);
        }
    }
    const int = (k) => {
        if (a[k] !== undefined) {
            if (!/^[0-9]+$/.test(a[k])) {
                die('bad number for ' + k + ': ' + a[k], 2);
            }
            a[k] = k === 'startAt' ? BigInt(a[k]) : Number(a[k]);
        }
    };
    ['n', 'k', 'iters', 'startAt', 'permits'].forEach(int);
    if (a.seconds !== undefined) {
        a.seconds = Number(a.seconds);
        if (!(a.seconds > 0)) {
            die('bad --seconds', 2);
        }
    }
    return a;
}

// HOST:PORT, [V6]:PORT or a bare host.
function redisOptions(addr) {
    const m = /^\[(.*)\]:([0-9]+)$/.exec(addr) || /^([^:]*):([0-9]+)$/.exec(addr);
    const o = m ? { host: m[1], port: Number(m[2]) } : { host: addr, port: 6379 };
    // Fail instead of reconnecting for ever when the server is gone.
    o.maxRetriesPerRequest = 1;
    o.retryStrategy = (times) => (times > 3 ? null : 100);
    // ioredis 5.8.2 to 5.x sends its handshake (CLIENT SETINFO, the ready
    // check's INFO) after a SUBSCRIBE queued while connecting, and then
    // fails it: "Connection in subscriber mode, only subscriber commands may
    // be used" (ioredis issue #2037, fixed in 6.0). node-redisson subscribes
    // as soon as lock() waits; tests/compat/peer.js turns both off too.
    // Neither is needed here.
    o.disableClientInfo = true;
    o.enableReadyCheck = false;
    return o;
}

function newIoredis(addr) {
    const Redis = req('ioredis');
    const c = new Redis(redisOptions(addr));
    c.on('error', (e) => process.stderr.write('peer.js: redis: ' + e.message + '\n'));
    return c;
}

// Each impl: { settings, init(), make(name) -> handle, lock(handle), unlock(handle),
//              isGiveUp(err), close() }. lock() resolves when the lock is held,
//              or rejects; a rejection for which isGiveUp() is true is a give-up.
function makeImpl(impl, variant, addr) {
    if (impl === 'node-redisson') {
        const { Redisson } = req('node-redisson');
        // No polling: waiters are woken by the unlock message on a pub/sub
        // channel, so there is nothing to tune; "tuned" runs the same code.
        const redisson = new Redisson({ redis: { options: redisOptions(addr) } });
        for (const r of [redisson.redis, redisson.commandExecutor.subscribeRedis]) {
            r.on('error', (e) => process.stderr.write('peer.js: redis: ' + e.message + '\n'));
        }
        return {
            settings: {
                note: 'no polling setting',
                lockWatchdogTimeout_ms: Number(redisson.commandExecutor.redissonConfig.lockWatchdogTimeout),
                lease: 'watchdog',
            },
            init: () => Promise.all([redisson.redis.ping(), redisson.commandExecutor.subscribeRedis.ping()]),
            make: (name) => redisson.getLock(name),
            lock: (l) => l.lock(), // wait for ever, watchdog lease
            unlock: (l) => l.unlock(),
            isGiveUp: () => false,
            close: () => redisson.quit(),
        };
    }
    if (impl === 'redlock') {
        const Redlock = req('redlock');
        const client = newIoredis(addr);
        // default: the library's own retry settings (retryCount 10,
        // retryDelay 200 ms, retryJitter 100 ms in 4.2.0), read back from it.
        // tuned: a short retry delay.
        const opts = variant === 'tuned' ? { retryDelay: 2, retryJitter: 1 } : {};
        const rl = new Redlock([client], opts);
        rl.on('clientError', (e) => process.stderr.write('peer.js: redlock: ' + e.message + '\n'));
        return {
            settings: {
                retryCount: rl.retryCount,
                retryDelay_ms: rl.retryDelay,
                retryJitter_ms: rl.retryJitter,
                driftFactor: rl.driftFactor,
                lease_ms: LEASE_MS,
                on_give_up: 'retry, counted as error',
            },
            init: () => client.ping(),
            make: (name) => ({ name, held: null }),
            lock: async (h) => {
                h.held = await rl.lock(h.name, LEASE_MS);
            },
            unlock: async (h) => {
                const l = h.held;
                h.held = null;
                await l.unlock();
            },
            isGiveUp: (e) => e instanceof Redlock.LockError,
            close: () => client.quit(),
        };
    }
    if (impl === 'redis-semaphore') {
        const { Mutex, Semaphore } = req('redis-semaphore');
        const { TimeoutError } = req('redis-semaphore');
        const client = newIoredis(addr);
        // default: the library's own options (lockTimeout 10000,
        // acquireTimeout 10000, retryInterval 10 ms in 5.8.0); tuned:
        // retryInterval 1 ms.
        const opts = variant === 'tuned' ? { retryInterval: 1 } : {};
        const probe = new Mutex(client, 'probe', opts);
        const o = probe._acquireOptions;
        return {
            settings: {
                lockTimeout_ms: o.lockTimeout,
                acquireTimeout_ms: o.acquireTimeout,
                retryInterval_ms: o.retryInterval,
                refreshInterval_ms: probe._refreshTimeInterval,
                on_give_up: 'retry, counted as error',
            },
            init: () => client.ping(),
            // One Mutex object per lock name, reused: it keeps one identifier.
            make: (name) => new Mutex(client, name, opts),
            // S7: a Semaphore of `permits`, with the Mutex's options.
            makeSemaphore: (name, permits) => new Semaphore(client, name, permits, opts),
            lock: (m) => m.acquire(),
            unlock: (m) => m.release(),
            isGiveUp: (e) => e instanceof TimeoutError,
            close: () => client.quit(),
        };
    }
    throw new Error('unknown impl ' + impl);
}

// Nearest-rank percentile of a sorted array.
function pct(sorted, p) {
    const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
    return sorted[i];
}

const r1 = (x) => Math.round(x * 10) / 10;

async function runS1(a, im) {
    const h = im.make(`bench:s1:${process.pid}`);
    for (let i = 0; i < WARMUP; i++) {
        await im.lock(h);
        await im.unlock(h);
    }
    const lat = new Float64Array(a.n);
    const cpu0 = process.cpuUsage(); // the whole process: every thread
    for (let i = 0; i < a.n; i++) {
        const t0 = now();
        await im.lock(h);
        await im.unlock(h);
        lat[i] = Number(now() - t0) / 1000; // µs
    }
    const cpu = process.cpuUsage(cpu0);
    const sorted = Array.from(lat).sort((x, y) => x - y);
    const mean = sorted.reduce((s, x) => s + x, 0) / (sorted.length || 1);
    return {
        impl: a.impl, variant: a.variant, scenario: 'S1', n: a.n,
        p50_us: r1(pct(sorted, 50)), p99_us: r1(pct(sorted, 99)), mean_us: r1(mean),
        cpu_us_per_pair: r1((cpu.user + cpu.system) / a.n),
        settings: im.settings,
    };
}

async function runS2(a, im) {
    const handles = [];
    for (let i = 0; i < a.k; i++) {
        handles.push(im.make(`bench:s2:${process.pid}:${i}`));
    }
    // Warm up (scripts loaded, connections ready) outside the timed window.
    await im.lock(handles[0]);
    await im.unlock(handles[0]);
    let pairs = 0;
    let stop = false;
    const t0 = now();
    const deadline = t0 + BigInt(Math.round(a.seconds * 1e9));
    const chain = async (h) => {
        while (!stop) {
            await im.lock(h);
            await im.unlock(h);
            pairs++;
            if (now() >= deadline) {
                stop = true;
            }
        }
    };
    await Promise.all(handles.map(chain));
    const secs = Number(now() - t0) / 1e9;
    return {
        impl: a.impl, variant: a.variant, scenario: 'S2', k: a.k,
        pairs_per_sec: r1(pairs / secs), settings: im.settings,
    };
}

async function waitUntil(ns) {
    // Sleep coarsely, then spin on the monotonic clock for the last 2 ms.
    for (;;) {
        const left = ns - now();
        if (left <= 0n) {
            return;
        }
        if (left > 2000000n) {
            await new Promise((r) => setTimeout(r, Number((left - 2000000n) / 1000000n)));
        } else {
            while (now() < ns) {
                // spin
            }
            return;
        }
    }
}

async function runS3(a, im) {
    const plain = newIoredis(a.addr);
    await plain.ping();
    const h = im.make(a.lock);
    const lines = new Array(a.iters);
    let errors = 0;
    await waitUntil(a.startAt);
    for (let i = 0; i < a.iters; i++) {
        for (;;) {
            try {
                await im.lock(h);
                break;
            } catch (e) {
                if (!im.isGiveUp(e)) {
                    throw e;
                }
                errors++;
            }
        }
        const tLock = now();
        const v = await plain.get(a.counter);
        await plain.set(a.counter, String((v === null ? 0 : Number(v)) + 1));
        const tUnlockCalled = now();
        await im.unlock(h);
        const tUnlock = now();
        lines[i] = tLock + ' ' + tUnlock + ' ' + tUnlockCalled + '\n';
    }
    fs.writeFileSync(a.out, lines.join(''));
    await plain.quit();
    return {
        impl: a.impl, variant: a.variant, scenario: 'S3-worker', iters: a.iters,
        errors, settings: im.settings,
    };
}

async function runS7(a, im) {
    const sem = im.makeSemaphore(a.lock, a.permits);
    const lines = [];
    let errors = 0;
    await waitUntil(a.startAt);
    const end = a.startAt + BigInt(Math.round(a.seconds * 1e9));
    const cpu0 = process.cpuUsage();
    while (now() < end) {
        const called = now();
        try {
            await sem.acquire();
        } catch (e) {
            if (!im.isGiveUp(e)) {
                throw e;
            }
            errors++;
            continue;
        }
        const got = now();
        await sem.release();
        lines.push(called + ' ' + got + ' ' + now() + '\n');
    }
    const cpu = process.cpuUsage(cpu0);
    fs.writeFileSync(a.out, lines.join(''), { flag: 'a' });
    return {
        impl: a.impl, variant: a.variant, scenario: 'S7-worker', ops: lines.length,
        cpu_s: (cpu.user + cpu.system) / 1e6, errors, settings: im.settings,
    };
}

async function main() {
    const a = parseArgs(process.argv.slice(2));
    const im = makeImpl(a.impl, a.variant, a.addr);
    await im.init();
    const run = { s1: runS1, s2: runS2, s3: runS3, s7: runS7 }[a.scenario];
    const result = await run(a, im);
    await im.close().catch(() => {});
    // node-redisson leaves timers behind (a waiter's timeout is never
    // cleared): exit once the line is written rather than when they fire.
    process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0));
}

main().catch((e) => die(e && e.stack ? e.stack : String(e)));
