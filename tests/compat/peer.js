'use strict';
// A node-redisson peer for tests/test_compat_node.c.
//
//   node peer.js <redis-url> <lock-name> hold <hold_ms> [lease=<ms>] [times=<n>] [watchdog=<ms>] [ca=<file>]
//   node peer.js <redis-url> <lock-name> wait [lease=<ms>] [watchdog=<ms>] [ca=<file>]
//
// <redis-url> is redis://, rediss:// (TLS) or unix://. For rediss://,
// ca=<file> is the PEM CA file to trust instead of Node's default CAs (the
// C side's ssl_truststore); the server's certificate is checked against the
// URL's host (a name, or an IP address in the certificate's IP SANs).
//
// hold: takes the lock <times> times (reentrant, default 1), prints LOCKED,
//   and keeps it. Each "unlock" line on stdin releases one hold (printing
//   RELEASED while holds remain); when <hold_ms> passes (-1: never) or stdin
//   closes, the remaining holds are released. Then prints UNLOCKED and exits.
// wait: takes the lock, waiting as long as it takes, prints LOCKED, releases
//   it, prints UNLOCKED and exits.
//
// lease=0 (the default) takes the lock under node-redisson's watchdog, whose
// timeout is watchdog=<ms> (default 30000, node-redisson's own default).
//
// stdout protocol, one line per event; <t> is CLOCK_MONOTONIC in ms (on
// Linux, process.hrtime is that clock, the same one as the C tests'
// rt_now_ms()), so the C side can order events across the two processes:
//   START <t>                      about to call lock()
//   LOCKED <t> <field> <holds>     holds the lock; <field> is its hash field
//   RELEASED <t> <holds-left>      released one hold, some remain
//   UNLOCKED <t>                   released the last hold
//   ERROR <message>                then exits with status 1
// Diagnostics go to stderr.
const fs = require('fs');
const net = require('net');
const { Redisson } = require('node-redisson');

function now() {
    return (process.hrtime.bigint() / 1000000n).toString();
}

function say(line) {
    process.stdout.write(line + '\n');
}

function die(message) {
    say('ERROR ' + String(message).replace(/\s+/g, ' '));
    process.stderr.write('peer.js: ' + message + '\n');
    process.exit(1);
}

// ioredis takes options, not a URL, through node-redisson: its
// config.redis.options are spread into each `new Redis(...)` (the command
// connection and the subscriber both), so `tls` applies to both.
function redisOptions(url, ca) {
    const u = new URL(url);
    const o = {
        // Fail instead of retrying for ever when the server is gone.
        maxRetriesPerRequest: 1,
        retryStrategy: (times) => (times > 3 ? null : 100),
        // ioredis 5.8.2 to 5.x sends its handshake (CLIENT SETINFO, the
        // ready check's INFO) after a SUBSCRIBE queued while connecting,
        // and then fails it: "Connection in subscriber mode, only
        // subscriber commands may be used" (ioredis issue #2037, fixed in
        // 6.0). node-redisson subscribes as soon as lock() waits, so a
        // loaded machine hit it. Neither is needed here.
        disableClientInfo: true,
        enableReadyCheck: false,
    };
    if (u.protocol === 'unix:') {
        o.path = decodeURIComponent(u.pathname);
        return o;
    }
    if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
        die('unsupported address ' + url);
    }
    o.host = u.hostname.replace(/^\[(.*)\]$/, '$1');
    o.port = u.port ? Number(u.port) : 6379;
    if (u.protocol === 'rediss:') {
        // tls.connect's options. Without servername Node checks the
        // certificate against `host`; SNI may not carry an IP address, so
        // servername is set for a host name only.
        o.tls = { rejectUnauthorized: true };
        if (ca !== undefined) {
            try {
                o.tls.ca = fs.readFileSync(ca, 'utf8');
            } catch (e) {
                die('cannot read ca=' + ca + ': ' + e.message);
            }
        }
        if (net.isIP(o.host) === 0) {
            o.tls.servername = o.host;
        }
    } else if (ca !== undefined) {
        die('ca= needs a rediss:// address');
    }
    if (u.username) {
        o.username = decodeURIComponent(u.username);
    }
    if (u.password) {
        o.password = decodeURIComponent(u.password);
    }
    if (u.pathname.length > 1) {
        o.db = Number(u.pathname.slice(1));
    }
    return o;
}

function parseArgs(argv) {
    if (argv.length < 3) {
        die('usage: peer.js <redis-url> <lock-name> hold <hold_ms> [k=v...] | wait [k=v...] (k: lease, times, watchdog, ca)');
    }
    const a = { url: argv[0], name: argv[1], action: argv[2], hold: -1, lease: 0, times: 1, watchdog: 30000 };
    let rest = argv.slice(3);
    if (a.action === 'hold') {
        if (rest.length < 1) {
            die('hold needs <hold_ms>');
        }
        a.hold = Number(rest[0]);
        rest = rest.slice(1);
    } else if (a.action !== 'wait') {
        die('unknown action ' + a.action);
    }
    for (const kv of rest) {
        if (kv.startsWith('ca=') && kv.length > 3) {
            a.ca = kv.slice(3);
            continue;
        }
        const m = /^(lease|times|watchdog)=(-?[0-9]+)$/.exec(kv);
        if (!m) {
            die('bad option ' + kv);
        }
        a[m[1]] = Number(m[2]);
    }
    return a;
}

async function main() {
    const a = parseArgs(process.argv.slice(2));
    const redisson = new Redisson({
        redis: { options: redisOptions(a.url, a.ca) },
        lockWatchdogTimeout: BigInt(a.watchdog),
    });
    for (const r of [redisson.redis, redisson.commandExecutor.subscribeRedis]) {
        r.on('error', (e) => process.stderr.write('peer.js: redis: ' + e.message + '\n'));
    }
    const lock = redisson.getLock(a.name);
    // node-redisson's field: "<Redisson instance UUID>:<lock object UUID>".
    const field = lock.getClientName(lock.clientId);
    const takeOnce = () => (a.lease > 0 ? lock.lock(a.lease) : lock.lock());

    say('START ' + now());
    let holds = 0;
    for (let i = 0; i < (a.action === 'hold' ? a.times : 1); i++) {
        await takeOnce();
        holds++;
    }
    say('LOCKED ' + now() + ' ' + field + ' ' + holds);

    if (a.action === 'hold') {
        await new Promise((resolve) => {
            let busy = Promise.resolve();
            const releaseOne = () => {
                busy = busy.then(async () => {
                    if (holds === 0) {
                        return;
                    }
                    await lock.unlock();
                    holds--;
                    if (holds > 0) {
                        say('RELEASED ' + now() + ' ' + holds);
                    } else {
                        resolve();
                    }
                });
                busy.catch((e) => die(e.message));
            };
            const releaseAll = () => {
                for (let i = holds; i > 0; i--) {
                    releaseOne();
                }
            };
            if (a.hold >= 0) {
                setTimeout(releaseAll, a.hold);
            }
            let buf = '';
            process.stdin.setEncoding('utf8');
            process.stdin.on('data', (chunk) => {
                buf += chunk;
                let nl;
                while ((nl = buf.indexOf('\n')) >= 0) {
                    const cmd = buf.slice(0, nl).trim();
                    buf = buf.slice(nl + 1);
                    if (cmd === 'unlock') {
                        releaseOne();
                    } else if (cmd !== '') {
                        die('unknown command ' + cmd);
                    }
                }
            });
            process.stdin.on('end', releaseAll);
        });
    } else {
        await lock.unlock();
    }
    say('UNLOCKED ' + now());
    await redisson.quit();
    // node-redisson leaves timers behind (a waiter's timeout is never
    // cleared): exit now rather than when they fire.
    process.exit(0);
}

main().catch((e) => die(e && e.stack ? e.stack : e));
