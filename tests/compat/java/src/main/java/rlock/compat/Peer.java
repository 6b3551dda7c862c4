package rlock.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RExpirable;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;
import org.redisson.config.ShardedSubscriptionMode;

/**
 * A Redisson peer for tests/test_compat_redisson.c, scripted one line at a
 * time: each command on stdin gets exactly one line on stdout.
 *
 * <pre>
 *   connect &lt;redis://host:port&gt; [watchdogMs]  OK &lt;Redisson id&gt;
 *   connectCluster &lt;redis://host:port,...&gt; &lt;AUTO|ON|OFF&gt; [watchdogMs]
 *                                          OK &lt;Redisson id&gt;: Redis Cluster
 *                                          (useClusterServers) with that
 *                                          shardedSubscriptionMode
 *   field [owner]                          OK &lt;id&gt;:&lt;thread id&gt;, the owner's hash field
 *   &lt;lock command&gt;                         run on owner "main", at most 60 s
 *   on &lt;owner&gt; &lt;lock command&gt;              run on that owner's thread, at most 60 s
 *   async &lt;owner&gt; &lt;lock command&gt;           OK started; runs on that owner's thread
 *   await &lt;owner&gt; &lt;timeoutMs&gt;              OK &lt;value&gt; &lt;elapsedMs&gt; &lt;endMs&gt;, or TIMEOUT
 *   quit                                   OK bye, then exits (as at EOF)
 *   client &lt;alias&gt; &lt;redis://host:port&gt; &lt;watchdogMs&gt; &lt;timeoutMs&gt; &lt;retryAttempts&gt;
 *                                          OK &lt;Redisson id&gt;: one more client, for kind xred
 *
 * lock commands, each optionally prefixed by "kind &lt;kind&gt;" (default lock):
 *   kind lock    RedissonClient.getLock(name)
 *   kind fair    getFairLock(name)
 *   kind spin    getSpinLock(name)
 *   kind fenced  getFencedLock(name)
 *   kind read    getReadWriteLock(name).readLock()
 *   kind write   getReadWriteLock(name).writeLock()
 *   kind multi   getMultiLock(getLock(a), getLock(b), ...), the name written
 *                "a,b,..."; kind red: getRedLock(...) the same way
 *   kind xred    getRedLock(...) over locks of the clients made with "client",
 *                the name written "alias@name,alias@name,..." (one server each)
 *   kind fmulti  getMultiLock(group, values) (RedissonFasterMultiLock), the
 *                name written "group/value,value,..."; the client's codec
 *                is StringCodec, so each value is hashed as its UTF-8 bytes
 * e.g. "kind fair tryLock a 0 10000", "on w kind read unlock a".
 *   lock &lt;name&gt; &lt;leaseMs|-1&gt;               OK -        (-1: the watchdog)
 *   tryLock &lt;name&gt; &lt;waitMs&gt; &lt;leaseMs|-1&gt;   OK true|false
 *   unlock &lt;name&gt;                          OK -
 *   forceUnlock &lt;name&gt;                     OK true|false
 *   isLocked &lt;name&gt;                        OK true|false
 *   getHoldCount &lt;name&gt;                    OK &lt;n&gt;
 *   remainTimeToLive &lt;name&gt;                OK &lt;ms&gt; (-2: no lock, -1: no expiry)
 *   isHeldByCurrentThread &lt;name&gt;           OK true|false
 * fenced lock only (kind fenced):
 *   lockAndGetToken &lt;name&gt; &lt;leaseMs|-1&gt;    OK &lt;token&gt;
 *   tryLockAndGetToken &lt;name&gt; &lt;waitMs&gt; &lt;leaseMs|-1&gt;  OK &lt;token&gt;|null (null: not taken)
 *   getToken &lt;name&gt;                        OK &lt;token&gt;|null (null: none given yet)
 *
 * synchronizer commands (they run on an owner's thread too, so "on" and
 * "async" take them; see syncCommand):
 *   sem &lt;command&gt; &lt;name&gt; ...             RedissonClient.getSemaphore(name)
 *   psem &lt;command&gt; &lt;name&gt; ...            getPermitExpirableSemaphore(name)
 *   latch &lt;command&gt; &lt;name&gt; ...           getCountDownLatch(name)
 * </pre>
 *
 * A failure prints "ERROR &lt;exception&gt;: &lt;message&gt;", followed by
 * "(cause &lt;exception&gt;: &lt;message&gt;)" naming the root cause when there
 * is one. Redisson's lock owner is a Java thread, so each named owner has
 * one thread of its own that runs all of its commands: an unlock runs on
 * the thread that locked.
 * endMs is System.nanoTime() in ms, which on Linux is CLOCK_MONOTONIC, the
 * C tests' clock. Redisson's own log goes to stderr (warnings only).
 */
public final class Peer {
    private static final long SYNC_TIMEOUT_MS = 60_000;

    /** A lock owner: one thread, and the async command it runs, if any. */
    private static final class Owner {
        final ExecutorService thread;
        final long threadId;
        Future<String> pending;

        Owner(String name) throws Exception {
            thread = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "owner-" + name);
                t.setDaemon(true);
                return t;
            });
            threadId = thread.submit(() -> Thread.currentThread().getId()).get();
        }
    }

    private static RedissonClient redisson;
    private static final Map<String, Owner> owners = new HashMap<>();
    // one RLock per kind and name, one RReadWriteLock per name
    private static final Map<String, RLock> locks = new HashMap<>();
    private static final Map<String, RReadWriteLock> rwLocks = new HashMap<>();
    // the clients made with "client", by alias (kind xred)
    private static final Map<String, RedissonClient> clients = new HashMap<>();

    public static void main(String[] args) throws Exception {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String[] w = line.split("\\s+");
            String out;
            try {
                out = handle(w);
            } catch (Throwable e) {
                out = error(e);
            }
            System.out.println(out);
            System.out.flush();
            if (w[0].equals("quit")) {
                break;
            }
        }
        if (redisson != null) {
            redisson.shutdown(0, 2, TimeUnit.SECONDS);
        }
        System.exit(0);
    }

    private static String handle(String[] w) throws Exception {
        switch (w[0]) {
            case "connect": {
                need(w, 2);
                Config config = new Config();
                // The faster multi-lock hashes its values as the codec
                // encodes them; the locks themselves do not use the codec.
                config.setCodec(StringCodec.INSTANCE);
                config.useSingleServer()
                        .setAddress(w[1])
                        .setConnectionMinimumIdleSize(2)
                        .setConnectionPoolSize(8)
                        .setSubscriptionConnectionMinimumIdleSize(1);
                if (w.length > 2) {
                    config.setLockWatchdogTimeout(Long.parseLong(w[2]));
                }
                redisson = Redisson.create(config);
                return "OK " + serviceId();
            }
            case "connectCluster": {
                need(w, 3);
                Config config = new Config();
                config.setCodec(StringCodec.INSTANCE);
                config.useClusterServers()
                        .addNodeAddress(w[1].split(","))
                        .setShardedSubscriptionMode(ShardedSubscriptionMode.valueOf(w[2]))
                        .setMasterConnectionMinimumIdleSize(2)
                        .setMasterConnectionPoolSize(8)
                        .setSubscriptionConnectionMinimumIdleSize(1);
                if (w.length > 3) {
                    config.setLockWatchdogTimeout(Long.parseLong(w[3]));
                }
                redisson = Redisson.create(config);
                return "OK " + serviceId();
            }
            case "field": {
                Owner o = owner(w.length > 1 ? w[1] : "main");
                return "OK " + serviceId() + ":" + o.threadId;
            }
            case "on": {
                need(w, 3);
                return sync(owner(w[1]), Arrays.copyOfRange(w, 2, w.length));
            }
            case "async": {
                need(w, 3);
                Owner o = owner(w[1]);
                if (o.pending != null) {
                    return "ERROR owner " + w[1] + " is busy";
                }
                String[] cmd = Arrays.copyOfRange(w, 2, w.length);
                o.pending = o.thread.submit(timed(cmd));
                return "OK started";
            }
            case "await": {
                need(w, 3);
                Owner o = owner(w[1]);
                if (o.pending == null) {
                    return "ERROR owner " + w[1] + " runs nothing";
                }
                try {
                    String result = o.pending.get(Long.parseLong(w[2]), TimeUnit.MILLISECONDS);
                    o.pending = null;
                    return "OK " + result;
                } catch (TimeoutException e) {
                    return "TIMEOUT";
                } catch (ExecutionException e) {
                    o.pending = null;
                    return error(e.getCause());
                }
            }
            case "client":
                return "OK " + client(w);
            case "quit":
                return "OK bye";
            default:
                return sync(owner("main"), w);
        }
    }

    /** Runs cmd on o's thread and waits for it. */
    private static String sync(Owner o, String[] cmd) throws Exception {
        if (o.pending != null) {
            return "ERROR owner is busy with an async command";
        }
        try {
            return "OK " + o.thread.submit(() -> lockCommand(cmd)).get(SYNC_TIMEOUT_MS,
                    TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            return error(e.getCause());
        }
    }

    /** cmd, returning "value elapsedMs endMs". */
    private static Callable<String> timed(String[] cmd) {
        return () -> {
            long start = System.nanoTime();
            String value = lockCommand(cmd);
            long end = System.nanoTime();
            return value + " " + (end - start) / 1_000_000 + " " + end / 1_000_000;
        };
    }

    /** The lock of that kind called name (one object per kind and name). */
    private static RLock lockOf(String kind, String name) {
        synchronized (locks) {
            RLock lock = locks.get(kind + " " + name);
            if (lock != null) {
                return lock;
            }
            switch (kind) {
                case "lock":
                    lock = redisson.getLock(name);
                    break;
                case "fair":
                    lock = redisson.getFairLock(name);
                    break;
                case "spin":
                    lock = redisson.getSpinLock(name);
                    break;
                case "fenced":
                    lock = redisson.getFencedLock(name);
                    break;
                case "read":
                case "write": {
                    RReadWriteLock rw = rwLocks.computeIfAbsent(name, redisson::getReadWriteLock);
                    lock = kind.equals("read") ? rw.readLock() : rw.writeLock();
                    break;
                }
                case "multi":
                case "red": {
                    String[] names = name.split(",");
                    RLock[] subs = new RLock[names.length];
                    for (int i = 0; i < names.length; i++) {
                        subs[i] = redisson.getLock(names[i]);
                    }
                    lock = kind.equals("multi") ? redisson.getMultiLock(subs)
                                                : redisson.getRedLock(subs);
                    break;
                }
                case "xred":
                    lock = redLockAcrossClients(name);
                    break;
                case "fmulti": {
                    String[] gv = name.split("/", 2);
                    lock = redisson.getMultiLock(gv[0],
                            Arrays.asList((Object[]) gv[1].split(",")));
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown kind " + kind
                            + " (lock, fair, spin, fenced, read, write, multi, red, xred, fmulti)");
            }
            locks.put(kind + " " + name, lock);
            return lock;
        }
    }

    /** A command on a lock ("kind k" first, or the RLock), on the calling (owner's) thread. */
    private static String lockCommand(String[] w) throws Exception {
        if (w.length > 0 && SYNC_OBJECTS.contains(w[0])) {
            return syncCommand(w);
        }
        String kind = "lock";
        if (w.length > 0 && w[0].equals("kind")) {
            need(w, 3);
            kind = w[1];
            w = Arrays.copyOfRange(w, 2, w.length);
        }
        need(w, 2);
        if (redisson == null) {
            throw new IllegalStateException("not connected");
        }
        RLock lock = lockOf(kind, w[1]);
        switch (w[0]) {
            case "lock":
                need(w, 3);
                lock.lock(Long.parseLong(w[2]), TimeUnit.MILLISECONDS);
                return "-";
            case "tryLock":
                need(w, 4);
                return String.valueOf(lock.tryLock(Long.parseLong(w[2]), Long.parseLong(w[3]),
                        TimeUnit.MILLISECONDS));
            case "unlock":
                lock.unlock();
                return "-";
            case "forceUnlock":
                return String.valueOf(lock.forceUnlock());
            case "isLocked":
                return String.valueOf(lock.isLocked());
            case "getHoldCount":
                return String.valueOf(lock.getHoldCount());
            case "remainTimeToLive":
                return String.valueOf(lock.remainTimeToLive());
            case "isHeldByCurrentThread":
                return String.valueOf(lock.isHeldByCurrentThread());
            case "lockAndGetToken": {
                need(w, 3);
                long lease = Long.parseLong(w[2]);
                return String.valueOf(lease == -1 ? fenced(lock).lockAndGetToken()
                        : fenced(lock).lockAndGetToken(lease, TimeUnit.MILLISECONDS));
            }
            case "tryLockAndGetToken":
                need(w, 4);
                return String.valueOf(fenced(lock).tryLockAndGetToken(Long.parseLong(w[2]),
                        Long.parseLong(w[3]), TimeUnit.MILLISECONDS));
            case "getToken":
                return String.valueOf(fenced(lock).getToken());
            default:
                throw new IllegalArgumentException("unknown command " + w[0]);
        }
    }

    /** RObject / RExpirable calls on a semaphore: null when cmd is none. */
    private static String expirable(RExpirable o, String cmd, String[] w) {
        switch (cmd) {
            case "delete":
                return String.valueOf(o.delete());
            case "isExists":
                return String.valueOf(o.isExists());
            case "expire":
                need(w, 4);
                return String.valueOf(o.expire(Duration.ofMillis(Long.parseLong(w[3]))));
            case "clearExpire":
                return String.valueOf(o.clearExpire());
            case "remainTimeToLive":
                return String.valueOf(o.remainTimeToLive());
            default:
                return null;
        }
    }


    private static final java.util.Set<String> SYNC_OBJECTS = java.util.Set.of("sem", "psem", "latch");

    /**
     * A command on a synchronizer, on the calling (owner's) thread. Times
     * are ms; a wait of -1 waits without a bound (acquire, await()).
     *
     * <pre>
     *   sem trySetPermits &lt;name&gt; &lt;n&gt;            OK true|false
     *   sem addPermits &lt;name&gt; &lt;n&gt;               OK -
     *   sem acquire &lt;name&gt; &lt;n&gt;                  OK -
     *   sem tryAcquire &lt;name&gt; &lt;n&gt; &lt;waitMs&gt;       OK true|false
     *   sem release &lt;name&gt; &lt;n&gt;                  OK -
     *   sem availablePermits &lt;name&gt;              OK &lt;n&gt;
     *   sem drainPermits &lt;name&gt;                  OK &lt;n&gt;
     *   psem trySetPermits &lt;name&gt; &lt;n&gt;           OK true|false
     *   psem setPermits &lt;name&gt; &lt;n&gt;              OK -
     *   psem addPermits &lt;name&gt; &lt;n&gt;              OK -
     *   psem acquire &lt;name&gt; &lt;leaseMs|-1&gt;        OK &lt;permit id&gt;
     *   psem tryAcquire &lt;name&gt; &lt;waitMs&gt; &lt;leaseMs|-1&gt;   OK &lt;permit id&gt;|null
     *   psem release &lt;name&gt; &lt;id&gt;                OK - (ERROR IllegalArgumentException: unknown id)
     *   psem tryRelease &lt;name&gt; &lt;id&gt;             OK true|false
     *   psem updateLeaseTime &lt;name&gt; &lt;id&gt; &lt;leaseMs|-1&gt;   OK true|false
     *   psem getLeaseTime &lt;name&gt; &lt;id&gt;           OK &lt;ms&gt; (-1: no lease)
     *   psem availablePermits|getPermits|acquiredPermits &lt;name&gt;   OK &lt;n&gt;
     *   latch trySetCount &lt;name&gt; &lt;n&gt;            OK true|false
     *   latch countDown &lt;name&gt;                   OK -
     *   latch getCount &lt;name&gt;                    OK &lt;n&gt;
     *   latch await &lt;name&gt; &lt;waitMs|-1&gt;          OK true|false (-1: await(), then true)
     *   latch delete &lt;name&gt;                      OK true|false
     *   latch isExists &lt;name&gt;                    OK true|false
     *   sem releaseIfExists &lt;name&gt; &lt;n&gt;          OK true|false
     *   sem trySetPermitsTtl &lt;name&gt; &lt;n&gt; &lt;ttlMs&gt;  OK true|false (trySetPermits(n, ttl))
     *   psem acquireMany &lt;name&gt; &lt;n&gt; &lt;leaseMs|-1&gt;   OK &lt;id&gt;,&lt;id&gt;,...
     *   psem tryReleaseMany &lt;name&gt; &lt;id&gt;,&lt;id&gt;,...   OK &lt;n released&gt;
     *   psem releaseMany &lt;name&gt; &lt;id&gt;,&lt;id&gt;,...      OK - (ERROR IllegalArgumentException)
     *   sem|psem delete|isExists|clearExpire &lt;name&gt;     OK true|false
     *   sem|psem expire &lt;name&gt; &lt;ttlMs&gt;                OK true|false
     *   sem|psem remainTimeToLive &lt;name&gt;             OK &lt;ms&gt;|-1|-2
     * </pre>
     */

    private static String syncCommand(String[] w) throws Exception {
        need(w, 3);
        if (redisson == null) {
            throw new IllegalStateException("not connected");
        }
        String object = w[0];
        String cmd = w[1];
        String name = w[2];
        switch (object) {
            case "sem": {
                RSemaphore s = redisson.getSemaphore(name);
                switch (cmd) {
                    case "trySetPermits":
                        need(w, 4);
                        return String.valueOf(s.trySetPermits(Integer.parseInt(w[3])));
                    case "addPermits":
                        need(w, 4);
                        s.addPermits(Integer.parseInt(w[3]));
                        return "-";
                    case "acquire":
                        need(w, 4);
                        s.acquire(Integer.parseInt(w[3]));
                        return "-";
                    case "tryAcquire":
                        need(w, 5);
                        return String.valueOf(s.tryAcquire(Integer.parseInt(w[3]),
                                Duration.ofMillis(Long.parseLong(w[4]))));
                    case "release":
                        need(w, 4);
                        s.release(Integer.parseInt(w[3]));
                        return "-";
                    case "availablePermits":
                        return String.valueOf(s.availablePermits());
                    case "drainPermits":
                        return String.valueOf(s.drainPermits());
                    case "releaseIfExists":
                        need(w, 4);
                        return String.valueOf(s.releaseIfExists(Integer.parseInt(w[3])));
                    case "trySetPermitsTtl":
                        need(w, 5);
                        return String.valueOf(s.trySetPermits(Integer.parseInt(w[3]),
                                Duration.ofMillis(Long.parseLong(w[4]))));
                    default:
                        String common = expirable(s, cmd, w);
                        if (common != null) {
                            return common;
                        }
                        break;
                }
                break;
            }
            case "psem": {
                RPermitExpirableSemaphore s = redisson.getPermitExpirableSemaphore(name);
                switch (cmd) {
                    case "trySetPermits":
                        need(w, 4);
                        return String.valueOf(s.trySetPermits(Integer.parseInt(w[3])));
                    case "setPermits":
                        need(w, 4);
                        s.setPermits(Integer.parseInt(w[3]));
                        return "-";
                    case "addPermits":
                        need(w, 4);
                        s.addPermits(Integer.parseInt(w[3]));
                        return "-";
                    case "acquire": {
                        need(w, 4);
                        long lease = Long.parseLong(w[3]);
                        return lease == -1 ? s.acquire()
                                           : s.acquire(lease, TimeUnit.MILLISECONDS);
                    }
                    case "tryAcquire":
                        need(w, 5);
                        return String.valueOf(s.tryAcquire(Long.parseLong(w[3]),
                                Long.parseLong(w[4]), TimeUnit.MILLISECONDS));
                    case "release":
                        need(w, 4);
                        s.release(w[3]);
                        return "-";
                    case "tryRelease":
                        need(w, 4);
                        return String.valueOf(s.tryRelease(w[3]));
                    case "updateLeaseTime":
                        need(w, 5);
                        return String.valueOf(s.updateLeaseTime(w[3], Long.parseLong(w[4]),
                                TimeUnit.MILLISECONDS));
                    case "getLeaseTime":
                        need(w, 4);
                        return String.valueOf(s.getLeaseTime(w[3]));
                    case "availablePermits":
                        return String.valueOf(s.availablePermits());
                    case "getPermits":
                        return String.valueOf(s.getPermits());
                    case "acquiredPermits":
                        return String.valueOf(s.acquiredPermits());
                    case "acquireMany": { /* permits lease: the ids, comma-separated */
                        need(w, 5);
                        long lease = Long.parseLong(w[4]);
                        int n = Integer.parseInt(w[3]);
                        return String.join(",", lease == -1 ? s.acquire(n)
                                : s.acquire(n, lease, TimeUnit.MILLISECONDS));
                    }
                    case "tryReleaseMany":
                        need(w, 4);
                        return String.valueOf(s.tryRelease(Arrays.asList(w[3].split(","))));
                    case "releaseMany":
                        need(w, 4);
                        s.release(Arrays.asList(w[3].split(",")));
                        return "-";
                    default:
                        String common = expirable(s, cmd, w);
                        if (common != null) {
                            return common;
                        }
                        break;
                }
                break;
            }
            case "latch": {
                RCountDownLatch l = redisson.getCountDownLatch(name);
                switch (cmd) {
                    case "trySetCount":
                        need(w, 4);
                        return String.valueOf(l.trySetCount(Long.parseLong(w[3])));
                    case "countDown":
                        l.countDown();
                        return "-";
                    case "getCount":
                        return String.valueOf(l.getCount());
                    case "await": {
                        need(w, 4);
                        long wait = Long.parseLong(w[3]);
                        if (wait == -1) {
                            l.await();
                            return "true";
                        }
                        return String.valueOf(l.await(wait, TimeUnit.MILLISECONDS));
                    }
                    case "delete":
                        return String.valueOf(l.delete());
                    case "isExists":
                        return String.valueOf(l.isExists());
                    default:
                        break;
                }
                break;
            }
            default:
                break;
        }
        throw new IllegalArgumentException("unknown command " + object + " " + cmd);
    }

    /**
     * client alias address watchdogMs timeoutMs retryAttempts: one more
     * Redisson client (a server of a red lock's); its id.
     */
    private static String client(String[] w) {
        need(w, 6);
        if (clients.containsKey(w[1])) {
            throw new IllegalArgumentException("client " + w[1] + " exists already");
        }
        Config config = new Config();
        config.setLockWatchdogTimeout(Long.parseLong(w[3]));
        config.useSingleServer()
                .setAddress(w[2])
                .setTimeout(Integer.parseInt(w[4]))
                .setRetryAttempts(Integer.parseInt(w[5]))
                .setConnectionMinimumIdleSize(2)
                .setConnectionPoolSize(8)
                .setSubscriptionConnectionMinimumIdleSize(1);
        RedissonClient c = Redisson.create(config);
        clients.put(w[1], c);
        return ((Redisson) c).getServiceManager().getId();
    }

    /** getRedLock over "alias@name,alias@name,...", each lock of that client's. */
    private static RLock redLockAcrossClients(String name) {
        String[] parts = name.split(",");
        RLock[] subs = new RLock[parts.length];
        for (int i = 0; i < parts.length; i++) {
            String[] an = parts[i].split("@", 2);
            RedissonClient c = an.length == 2 ? clients.get(an[0]) : null;
            if (c == null) {
                throw new IllegalArgumentException("no client for " + parts[i]
                        + " (alias@name, the alias made with \"client\")");
            }
            subs[i] = c.getLock(an[1]);
        }
        return redisson.getRedLock(subs);
    }

    private static RFencedLock fenced(RLock lock) {
        if (!(lock instanceof RFencedLock)) {
            throw new IllegalArgumentException("not a fenced lock (use kind fenced)");
        }
        return (RFencedLock) lock;
    }

    private static Owner owner(String name) throws Exception {
        Owner o = owners.get(name);
        if (o == null) {
            o = new Owner(name);
            owners.put(name, o);
        }
        return o;
    }

    private static String serviceId() {
        if (redisson == null) {
            throw new IllegalStateException("not connected");
        }
        return ((Redisson) redisson).getServiceManager().getId();
    }

    private static void need(String[] w, int n) {
        if (w.length < n) {
            throw new IllegalArgumentException(w[0] + ": " + (n - 1) + " arguments needed");
        }
    }

    private static String error(Throwable e) {
        String msg = e.getClass().getSimpleName() + ": " + e.getMessage();
        // Redisson wraps some failures (RedisException around the
        // IllegalArgumentException of an unknown permit id): name the root.
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        if (root != e) {
            msg += " (cause " + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
        }
        return "ERROR " + msg.replaceAll("\\s+", " ");
    }
}
