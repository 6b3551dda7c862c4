package rlock.bench;

import java.io.BufferedOutputStream;
import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.SingleServerConfig;

/**
 * Redisson 4.7.0 as a peer of bench/run, following the contract of
 * bench/README.md: one JSON line on stdout, exit 0 / 1 (run time) / 2 (usage).
 *
 * <pre>
 *   java [-Dbench.warmupS=S] -jar redisson-bench-peer.jar s1 --addr H:P --n N --variant default|tuned|multi
 *        [--more-addrs H:P,H:P] [--warmup-s S]
 *   ... s2 --addr H:P --k K --seconds S [--warmup-s S]
 *   ... s3 --addr H:P --lock NAME --counter KEY --iters N --start-at NS --out FILE
 *        --variant default|tuned|fair
 *   ... s5 --addr H:P --n W
 *   ... s6 --addr H:P --lock NAME --counter KEY --seconds S --start-at NS --out FILE
 *        --variant rw|lock [--seed N] [--hold-us 1000] [--read-pct 90]
 *   ... s7 --addr H:P --lock NAME --permits K --seconds S --start-at NS --out FILE
 *   ... s7w --addr H:P --n W
 * </pre>
 *
 * Every lock is taken with the watchdog (no lease), as rlock's
 * RLOCK_LEASE_WATCHDOG. System.nanoTime() is CLOCK_MONOTONIC on Linux, the
 * clock of the other implementations' files. Before measuring, each
 * scenario warms the JIT up: S1 20 000 pairs or --warmup-s seconds (default:
 * the property bench.warmupS, else 10),
 * whichever ends first; S2 --warmup-s seconds of the same chains; S3 and S6
 * workers on a private lock name until 200 ms before --start-at, S7 workers
 * on a private semaphore the same way.
 */
public final class RedissonPeer {
    private static final int WARMUP_PAIRS = 20_000;

    private RedissonPeer() {}

    public static void main(String[] argv) {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        if (argv.length < 1) {
            usage("no scenario");
        }
        Map<String, String> a = new HashMap<>();
        for (int i = 1; i < argv.length; i++) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                usage("bad flag " + argv[i]);
            }
            a.put(argv[i].substring(2), argv[++i]);
        }
        if (!a.containsKey("addr")) {
            usage("--addr is required");
        }
        int rc;
        try {
            switch (argv[0]) {
                case "s1" -> rc = s1(a);
                case "s2" -> rc = s2(a);
                case "s3" -> rc = s3(a);
                case "s5" -> rc = s5(a);
                case "s6" -> rc = s6(a);
                case "s7" -> rc = s7(a);
                case "s7w" -> rc = s7w(a);
                default -> {
                    usage("unknown scenario " + argv[0]);
                    rc = 2;
                }
            }
        } catch (Exception e) {
            e.printStackTrace();
            rc = 1;
        }
        System.out.flush();
        // Redisson's Netty threads are not daemons: leave without waiting.
        Runtime.getRuntime().halt(rc);
    }

    private static void usage(String why) {
        System.err.println("RedissonPeer: " + why
                + " (usage: s1|s2|s3|s5|s6|s7|s7w --addr HOST:PORT [flags]; see the class comment)");
        Runtime.getRuntime().halt(2);
    }

    private static String need(Map<String, String> a, String k) {
        String v = a.get(k);
        if (v == null) {
            usage("--" + k + " is required");
        }
        return v;
    }

    // ---- the client ---------------------------------------------------------

    /** default: Redisson's defaults. tuned: 2 Netty threads, one idle connection. */
    private static RedissonClient client(String addr, boolean tuned) {
        Config cfg = new Config();
        SingleServerConfig s = cfg.useSingleServer().setAddress("redis://" + addr);
        if (tuned) {
            cfg.setNettyThreads(2);
            s.setConnectionMinimumIdleSize(1).setSubscriptionConnectionMinimumIdleSize(1);
        }
        return Redisson.create(cfg);
    }

    private static Map<String, Object> settings(RedissonClient c, boolean tuned) {
        Config cfg = c.getConfig();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("redisson", "4.7.0");
        m.put("nettyThreads", cfg.getNettyThreads());
        m.put("lockWatchdogTimeout", cfg.getLockWatchdogTimeout());
        m.put("useScriptCache", cfg.isUseScriptCache());
        m.put("connectionMinimumIdleSize", cfg.useSingleServer().getConnectionMinimumIdleSize());
        m.put("jvm", String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments()));
        m.put("java", System.getProperty("java.version"));
        return m;
    }

    private static long cpuNs() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime();
    }

    // ---- the JSON line --------------------------------------------------------

    private static String json(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof String s) {
            StringBuilder b = new StringBuilder("\"");
            for (char ch : s.toCharArray()) {
                if (ch == '"' || ch == '\\') {
                    b.append('\\').append(ch);
                } else if (ch < 0x20) {
                    b.append(String.format("\\u%04x", (int) ch));
                } else {
                    b.append(ch);
                }
            }
            return b.append('"').toString();
        }
        if (v instanceof Double d) {
            return Double.isFinite(d) ? String.format("%.3f", d) : "null";
        }
        if (v instanceof Map<?, ?> m) {
            StringBuilder b = new StringBuilder("{");
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (b.length() > 1) {
                    b.append(',');
                }
                b.append(json(e.getKey().toString())).append(':').append(json(e.getValue()));
            }
            return b.append('}').toString();
        }
        return v.toString();
    }

    private static Map<String, Object> line(String variant, String scenario) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("impl", "redisson");
        m.put("variant", variant);
        m.put("scenario", scenario);
        return m;
    }

    private static void print(Map<String, Object> m) {
        System.out.println(json(m));
    }

    private static double pct(double[] sorted, int n, double p) {
        if (n == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(p / 100.0 * n);
        return sorted[Math.max(rank, 1) - 1];
    }

    private static String uniqueName(String scen) {
        return "bench:" + scen + ":" + ProcessHandle.current().pid() + ":" + System.nanoTime();
    }

    // ---- S1 -------------------------------------------------------------------

    private static int s1(Map<String, String> a) throws Exception {
        int n = Integer.parseInt(need(a, "n"));
        String variant = a.getOrDefault("variant", "default");
        double warmupS = Double.parseDouble(a.getOrDefault("warmup-s", System.getProperty("bench.warmupS", "10")));
        boolean multi = variant.equals("multi");
        boolean tuned = variant.equals("tuned");
        List<RedissonClient> clients = new ArrayList<>();
        clients.add(client(a.get("addr"), tuned));
        if (multi) {
            for (String more : need(a, "more-addrs").split(",")) {
                clients.add(client(more, false));
            }
        }
        String name = uniqueName("s1");
        RLock l;
        if (multi) {
            RLock[] subs = new RLock[clients.size()];
            for (int i = 0; i < subs.length; i++) {
                subs[i] = clients.get(i).getLock(name);
            }
            l = clients.get(0).getMultiLock(subs);
        } else {
            l = clients.get(0).getLock(name);
        }
        long errors = 0;
        long warmEnd = System.nanoTime() + (long) (warmupS * 1e9);
        int warm = 0;
        while (warm < WARMUP_PAIRS && System.nanoTime() < warmEnd) {
            l.lock();
            l.unlock();
            warm++;
        }
        double[] lat = new double[n];
        long cpu0 = cpuNs();
        long w0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            try {
                l.lock();
                l.unlock();
            } catch (RuntimeException e) {
                errors++;
            }
            lat[i] = (System.nanoTime() - t0) / 1000.0;
        }
        long wall = System.nanoTime() - w0;
        long cpu = cpuNs() - cpu0;
        double mean = Arrays.stream(lat).average().orElse(Double.NaN);
        Arrays.sort(lat);
        Map<String, Object> m = line(variant, "S1");
        m.put("n", n);
        m.put("p50_us", pct(lat, n, 50));
        m.put("p99_us", pct(lat, n, 99));
        m.put("mean_us", mean);
        m.put("max_us", lat[n - 1]);
        m.put("cpu_us_per_pair", cpu / 1000.0 / n);
        m.put("cpu_pct", 100.0 * cpu / wall);
        m.put("warmup_pairs", warm);
        m.put("servers", clients.size());
        m.put("errors", errors);
        m.put("settings", settings(clients.get(0), tuned));
        print(m);
        return errors == 0 ? 0 : 1;
    }

    // ---- S2 -------------------------------------------------------------------

    /** K chains lock -> unlock -> lock ... on K names, each with its own owner id. */
    private static final class Chains {
        final RLock[] locks;
        final AtomicLong pairs = new AtomicLong();
        final AtomicLong errors = new AtomicLong();
        volatile boolean measuring;
        volatile boolean stop;
        final CountDownLatch done;
        final double[] lat = new double[1 << 20];
        final AtomicLong nlat = new AtomicLong();

        Chains(RedissonClient c, int k) {
            locks = new RLock[k];
            String base = uniqueName("s2");
            for (int i = 0; i < k; i++) {
                locks[i] = c.getLock(base + ":" + i);
            }
            done = new CountDownLatch(k);
        }

        void next(int i) {
            if (stop) {
                done.countDown();
                return;
            }
            long owner = i + 1;
            long t0 = System.nanoTime();
            locks[i].lockAsync(owner).thenCompose(x -> locks[i].unlockAsync(owner))
                    .whenComplete((x, e) -> {
                        if (e != null) {
                            errors.incrementAndGet();
                        } else if (measuring) {
                            pairs.incrementAndGet();
                            long j = nlat.getAndIncrement();
                            if (j < lat.length) {
                                lat[(int) j] = (System.nanoTime() - t0) / 1000.0;
                            }
                        }
                        next(i);
                    });
        }
    }

    private static int s2(Map<String, String> a) throws Exception {
        int k = Integer.parseInt(need(a, "k"));
        double secs = Double.parseDouble(need(a, "seconds"));
        double warmupS = Double.parseDouble(a.getOrDefault("warmup-s", System.getProperty("bench.warmupS", "10")));
        RedissonClient c = client(a.get("addr"), false);
        Chains ch = new Chains(c, k);
        for (int i = 0; i < k; i++) {
            ch.next(i);
        }
        Thread.sleep((long) (warmupS * 1000));
        long cpu0 = cpuNs();
        long t0 = System.nanoTime();
        ch.measuring = true;
        Thread.sleep((long) (secs * 1000));
        ch.measuring = false;
        long t1 = System.nanoTime();
        long cpu = cpuNs() - cpu0;
        ch.stop = true;
        boolean drained = ch.done.await(30, TimeUnit.SECONDS);
        double wall = (t1 - t0) / 1e9;
        long pairs = ch.pairs.get();
        int nl = (int) Math.min(ch.nlat.get(), ch.lat.length);
        double[] lat = Arrays.copyOf(ch.lat, nl);
        Arrays.sort(lat);
        Map<String, Object> m = line("default", "S2");
        m.put("k", k);
        m.put("seconds", wall);
        m.put("pairs", pairs);
        m.put("pairs_per_s", pairs / wall);
        m.put("p50_us", pct(lat, nl, 50));
        m.put("p99_us", pct(lat, nl, 99));
        m.put("cpu_us_per_pair", pairs > 0 ? cpu / 1000.0 / pairs : Double.NaN);
        m.put("errors", ch.errors.get() + (drained ? 0 : 1));
        m.put("settings", settings(c, false));
        print(m);
        return ch.errors.get() == 0 && drained ? 0 : 1;
    }

    // ---- S3 -------------------------------------------------------------------

    private static void sleepUntil(long ns) throws InterruptedException {
        long d;
        while ((d = ns - System.nanoTime()) > 0) {
            Thread.sleep(d / 1_000_000, (int) (d % 1_000_000));
        }
    }

    /** Pairs on a private name until `until` (nanoTime) or 20 000 pairs. */
    private static int warmUp(RLock l, long until) {
        int i = 0;
        while (i < WARMUP_PAIRS && System.nanoTime() < until) {
            l.lock();
            l.unlock();
            i++;
        }
        return i;
    }

    private static int s3(Map<String, String> a) throws Exception {
        String variant = a.getOrDefault("variant", "default");
        boolean fair = variant.equals("fair");
        int iters = Integer.parseInt(need(a, "iters"));
        long startAt = Long.parseLong(need(a, "start-at"));
        RedissonClient c = client(a.get("addr"), variant.equals("tuned"));
        String lockName = need(a, "lock");
        RLock l = fair ? c.getFairLock(lockName) : c.getLock(lockName);
        RLock warm = fair ? c.getFairLock(uniqueName("s3warm")) : c.getLock(uniqueName("s3warm"));
        warmUp(warm, startAt - 200_000_000L);
        Resp r = new Resp(a.get("addr"));
        String counter = need(a, "counter");
        long[] got = new long[iters];
        long[] released = new long[iters];
        // Just before each unlock call: the driver measures handoffs from
        // it, a moment the next holder cannot precede (the unlock's return
        // may be seen after the next holder already has the lock).
        long[] releasing = new long[iters];
        long errors = 0;
        sleepUntil(startAt);
        for (int i = 0; i < iters; i++) {
            l.lock();
            got[i] = System.nanoTime();
            Object v = r.call("GET", counter);
            long x = v == null ? 0 : Long.parseLong((String) v);
            r.call("SET", counter, Long.toString(x + 1));
            releasing[i] = System.nanoTime();
            l.unlock();
            released[i] = System.nanoTime();
        }
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < iters; i++) {
            b.append(got[i]).append(' ').append(released[i]).append(' ').append(releasing[i])
                    .append('\n');
        }
        Files.writeString(Path.of(need(a, "out")), b.toString(), StandardCharsets.US_ASCII,
                java.nio.file.StandardOpenOption.APPEND, java.nio.file.StandardOpenOption.CREATE);
        Map<String, Object> m = line(variant, "S3-worker");
        m.put("iters", iters);
        m.put("errors", errors);
        m.put("settings", settings(c, variant.equals("tuned")));
        print(m);
        return 0;
    }

    // ---- S5 -------------------------------------------------------------------

    /**
     * The used heap after System.gc() twice; the least of three such
     * readings, so that what a background thread allocates between the
     * collection and the reading does not count.
     */
    private static long usedHeapAfterGc() throws InterruptedException {
        MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
        long least = Long.MAX_VALUE;
        for (int k = 0; k < 3; k++) {
            for (int i = 0; i < 2; i++) {
                System.gc();
                Thread.sleep(50);
            }
            least = Math.min(least, mem.getHeapMemoryUsage().getUsed());
        }
        return least;
    }

    private static long rssBytes() throws IOException {
        for (String s : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (s.startsWith("VmRSS:")) {
                return Long.parseLong(s.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return -1;
    }

    private static long commandCalls(Resp r, String... cmds) throws IOException {
        String info = (String) r.call("INFO", "commandstats");
        long n = 0;
        for (String s : info.split("\r\n")) {
            for (String cmd : cmds) {
                if (s.startsWith("cmdstat_" + cmd + ":calls=")) {
                    n += Long.parseLong(s.substring(s.indexOf('=') + 1, s.indexOf(',')));
                }
            }
        }
        return n;
    }

    private static int s5(Map<String, String> a) throws Exception {
        int w = Integer.parseInt(need(a, "n"));
        RedissonClient c = client(a.get("addr"), false);
        Resp r = new Resp(a.get("addr"));
        String name = uniqueName("s5");
        String channel = "redisson_lock__channel:{" + name + "}";
        // A wait and handoff first, so that what the client sets up once
        // (connections, pub/sub) is in the baseline; and JIT warm-up.
        RLock warm = c.getLock(name + ":warm-up");
        warmUp(warm, System.nanoTime() + 3_000_000_000L);
        // The warm-up's cancelled watchdog timeouts leave the timer wheel
        // at its next ticks: let them go before the baseline.
        Thread.sleep(1000);
        RLock l = c.getLock(name);
        // The holder: Redisson's lock hash written directly, 600 s lease.
        r.call("HSET", name, "bench-holder:1", "1");
        r.call("PEXPIRE", name, "600000");
        long subs0 = commandCalls(r, "subscribe");
        long heap0 = usedHeapAfterGc();
        long rss0 = rssBytes();
        AtomicLong got = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        CountDownLatch done = new CountDownLatch(w);
        long tq = System.nanoTime();
        List<CompletableFuture<Void>> waiting = new ArrayList<>(w);
        for (int i = 0; i < w; i++) {
            long owner = i + 1;
            waiting.add(l.lockAsync(owner).toCompletableFuture()
                    .thenCompose(x -> {
                        got.incrementAndGet();
                        return l.unlockAsync(owner).toCompletableFuture();
                    })
                    .whenComplete((x, e) -> {
                        if (e != null) {
                            errors.incrementAndGet();
                        }
                        done.countDown();
                    }));
        }
        // Every waiter has tried once and is subscribed: no more acquire
        // scripts for 500 ms.
        long evals = commandCalls(r, "evalsha", "eval");
        long since = System.nanoTime();
        while (System.nanoTime() - since < 500_000_000L) {
            Thread.sleep(20);
            long e = commandCalls(r, "evalsha", "eval");
            if (e != evals) {
                evals = e;
                since = System.nanoTime();
            }
        }
        double queueS = (System.nanoTime() - tq - 500_000_000L) / 1e9;
        long heapW = usedHeapAfterGc();
        long rssW = rssBytes();
        long subs1 = commandCalls(r, "subscribe");
        long tr = System.nanoTime();
        r.call("DEL", name);
        r.call("PUBLISH", channel, "0");
        boolean drained = done.await(120, TimeUnit.SECONDS);
        double drainS = (System.nanoTime() - tr) / 1e9;
        long evals2 = commandCalls(r, "evalsha", "eval");
        Map<String, Object> m = line("default", "S5");
        m.put("w", w);
        m.put("subscribes", subs1 - subs0);
        m.put("queue_s", queueS);
        m.put("bytes_per_waiter", (double) (heapW - heap0) / w);
        m.put("rss_bytes_per_waiter", (double) (rssW - rss0) / w);
        m.put("drain_s", drainS);
        m.put("handoffs_per_s", w / drainS);
        // Acquire and unlock scripts both count: per unlock, minus the unlock itself.
        m.put("evals_per_unlock", (double) (evals2 - evals) / w - 1.0);
        m.put("acquired", got.get());
        m.put("errors", errors.get() + (drained ? 0 : w - got.get()));
        m.put("memory", "used heap after System.gc() twice (MemoryMXBean), VmRSS");
        m.put("settings", settings(c, false));
        print(m);
        return drained && errors.get() == 0 ? 0 : 1;
    }

    // ---- S6 -------------------------------------------------------------------

    private static long rngState;

    /** splitmix64, as bench/s6_worker.c: the same seed draws the same sequence. */
    private static long nextRand() {
        long z = (rngState += 0x9E3779B97F4A7C15L);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static long asLong(Object v) {
        if (v instanceof Long x) {
            return x;
        }
        return v == null ? 0 : Long.parseLong((String) v);
    }

    private static int s6(Map<String, String> a) throws Exception {
        String variant = a.getOrDefault("variant", "rw");
        boolean rw = variant.equals("rw");
        if (!rw && !variant.equals("lock")) {
            usage("s6: --variant is rw or lock");
        }
        String lockName = need(a, "lock");
        String counter = need(a, "counter");
        String readers = counter + ":readers";
        String writing = counter + ":writing";
        double secs = Double.parseDouble(need(a, "seconds"));
        long startAt = Long.parseLong(need(a, "start-at"));
        rngState = Long.parseLong(a.getOrDefault("seed", "1"));
        long holdNs = Long.parseLong(a.getOrDefault("hold-us", "1000")) * 1000;
        int readPct = Integer.parseInt(a.getOrDefault("read-pct", "90"));
        RedissonClient c = client(a.get("addr"), false);
        RLock rd = rw ? c.getReadWriteLock(lockName).readLock() : c.getLock(lockName);
        RLock wr = rw ? c.getReadWriteLock(lockName).writeLock() : rd;
        String wn = uniqueName("s6warm");
        RLock w1 = rw ? c.getReadWriteLock(wn).readLock() : c.getLock(wn);
        warmUp(w1, startAt - 200_000_000L);
        Resp r = new Resp(a.get("addr"));
        long errors = 0, readViolations = 0, writeViolations = 0, maxReaders = 0;
        StringBuilder ops = new StringBuilder();
        long n = 0;
        long end = startAt + (long) (secs * 1e9);
        // Late: the JVM's start and warm-up outlasted the lead time.
        long lateMs = Math.max(0, (System.nanoTime() - startAt) / 1_000_000);
        if (lateMs > 0) {
            System.err.println("RedissonPeer s6: ready " + lateMs + " ms after the start");
        }
        sleepUntil(startAt);
        long cpu0 = cpuNs();
        while (System.nanoTime() < end) {
            boolean read = Long.remainderUnsigned(nextRand(), 100) < readPct;
            RLock l = read ? rd : wr;
            long called = System.nanoTime();
            try {
                l.lock();
            } catch (RuntimeException e) {
                e.printStackTrace();
                errors++;
                continue;
            }
            long gotNs = System.nanoTime();
            if (read) {
                Object[] v = r.pipeline(new String[] {"INCR", readers}, new String[] {"GET", writing});
                maxReaders = Math.max(maxReaders, asLong(v[0]));
                readViolations += asLong(v[1]) != 0 ? 1 : 0;
                sleepUntil(System.nanoTime() + holdNs);
                v = r.pipeline(new String[] {"GET", writing}, new String[] {"DECR", readers});
                readViolations += asLong(v[0]) != 0 ? 1 : 0;
            } else {
                Object[] v = r.pipeline(new String[] {"SET", writing, "1"},
                        new String[] {"GET", readers}, new String[] {"GET", counter});
                writeViolations += asLong(v[1]) != 0 ? 1 : 0;
                sleepUntil(System.nanoTime() + holdNs);
                r.pipeline(new String[] {"SET", counter, Long.toString(asLong(v[2]) + 1)},
                        new String[] {"SET", writing, "0"});
            }
            try {
                l.unlock();
            } catch (RuntimeException e) {
                e.printStackTrace();
                errors++;
            }
            long rel = System.nanoTime();
            ops.append(read ? 'r' : 'w').append(' ').append(called).append(' ').append(gotNs)
                    .append(' ').append(rel).append('\n');
            n++;
        }
        long cpu = cpuNs() - cpu0;
        try (BufferedWriter f = new BufferedWriter(new FileWriter(need(a, "out"), true))) {
            f.write(ops.toString());
        }
        Map<String, Object> m = line(variant, "S6-worker");
        m.put("ops", n);
        m.put("cpu_s", cpu / 1e9);
        m.put("late_ms", lateMs);
        m.put("max_readers", maxReaders);
        m.put("read_violations", readViolations);
        m.put("write_violations", writeViolations);
        m.put("errors", errors);
        print(m);
        return n > 0 ? 0 : 1; // none: it missed the whole window
    }

    // ---- S7 --------------------------------------------------------------------

    /**
     * One worker of the semaphore scenario: getSemaphore(name), trySetPermits(K)
     * (a no-op once set), then from --start-at for --seconds acquire() /
     * release() with no work in between. Writes "ACQUIRE_CALLED_NS
     * ACQUIRE_RETURNED_NS RELEASE_RETURNED_NS" per pair, and reports the
     * process's CPU over the loop (cpu_s).
     */
    private static int s7(Map<String, String> a) throws Exception {
        String name = need(a, "lock");
        int permits = Integer.parseInt(need(a, "permits"));
        double secs = Double.parseDouble(need(a, "seconds"));
        long startAt = Long.parseLong(need(a, "start-at"));
        RedissonClient c = client(a.get("addr"), false);
        RSemaphore s = c.getSemaphore(name);
        s.trySetPermits(permits);
        RSemaphore warm = c.getSemaphore(uniqueName("s7warm"));
        warm.trySetPermits(1);
        long until = startAt - 200_000_000L;
        for (int i = 0; i < WARMUP_PAIRS && System.nanoTime() < until; i++) {
            warm.acquire();
            warm.release();
        }
        long lateMs = Math.max(0, (System.nanoTime() - startAt) / 1_000_000);
        if (lateMs > 0) {
            System.err.println("RedissonPeer s7: ready " + lateMs + " ms after the start");
        }
        StringBuilder pairs = new StringBuilder();
        long n = 0, errors = 0;
        long end = startAt + (long) (secs * 1e9);
        sleepUntil(startAt);
        long cpu0 = cpuNs();
        while (System.nanoTime() < end) {
            long called = System.nanoTime();
            try {
                s.acquire();
            } catch (RuntimeException e) {
                e.printStackTrace();
                errors++;
                continue;
            }
            long gotNs = System.nanoTime();
            try {
                s.release();
            } catch (RuntimeException e) {
                e.printStackTrace();
                errors++;
            }
            pairs.append(called).append(' ').append(gotNs).append(' ').append(System.nanoTime())
                    .append('\n');
            n++;
        }
        long cpu = cpuNs() - cpu0;
        try (BufferedWriter f = new BufferedWriter(new FileWriter(need(a, "out"), true))) {
            f.write(pairs.toString());
        }
        Map<String, Object> m = line("default", "S7-worker");
        m.put("ops", n);
        m.put("cpu_s", cpu / 1e9);
        m.put("late_ms", lateMs);
        m.put("errors", errors);
        m.put("settings", settings(c, false));
        print(m);
        return n > 0 ? 0 : 1; // none: it missed the whole window
    }

    /**
     * S7's waiters, as S5 for the lock: W acquireAsync(1) on one semaphore
     * with no permits, after a warm-up of 3 s of pairs on another; used heap
     * after System.gc() (the least of three readings) before and while all
     * wait; then release(W) and the drain until every acquire completed,
     * or 10 s. Redisson 4.7.0 runs one waiting listener per message
     * (SemaphorePubSub.onMessage), so the acquires of one JVM may not all
     * complete: how many did is reported (acquired), and drain_s only
     * when all did.
     */
    private static int s7w(Map<String, String> a) throws Exception {
        int w = Integer.parseInt(need(a, "n"));
        RedissonClient c = client(a.get("addr"), false);
        Resp r = new Resp(a.get("addr"));
        String name = uniqueName("s7w");
        RSemaphore warm = c.getSemaphore(name + ":warm-up");
        warm.trySetPermits(1);
        long until = System.nanoTime() + 3_000_000_000L;
        for (int i = 0; i < WARMUP_PAIRS && System.nanoTime() < until; i++) {
            warm.acquire();
            warm.release();
        }
        Thread.sleep(1000);
        RSemaphore s = c.getSemaphore(name);
        long heap0 = usedHeapAfterGc();
        long rss0 = rssBytes();
        long scripts0 = commandCalls(r, "evalsha", "eval");
        AtomicLong errors = new AtomicLong();
        AtomicLong acquired = new AtomicLong();
        java.util.concurrent.atomic.AtomicReference<String> firstError =
                new java.util.concurrent.atomic.AtomicReference<>();
        CountDownLatch done = new CountDownLatch(w);
        List<CompletableFuture<Void>> waiting = new ArrayList<>(w);
        for (int i = 0; i < w; i++) {
            waiting.add(s.acquireAsync().toCompletableFuture().whenComplete((x, e) -> {
                if (e != null) {
                    errors.incrementAndGet();
                    firstError.compareAndSet(null, e.toString());
                } else {
                    acquired.incrementAndGet();
                }
                done.countDown();
            }));
        }
        // Every acquire has tried and waits: no new script for 500 ms.
        long evals = commandCalls(r, "evalsha", "eval");
        long since = System.nanoTime();
        while (System.nanoTime() - since < 500_000_000L) {
            Thread.sleep(20);
            long e = commandCalls(r, "evalsha", "eval");
            if (e != evals) {
                evals = e;
                since = System.nanoTime();
            }
        }
        long heapW = usedHeapAfterGc();
        long rssW = rssBytes();
        long early = acquired.get();
        long failedWaiting = errors.get();
        long tr = System.nanoTime();
        s.release(w);
        boolean drained = done.await(10, TimeUnit.SECONDS);
        double drainS = (System.nanoTime() - tr) / 1e9;
        long evals2 = commandCalls(r, "evalsha", "eval");
        Map<String, Object> m = line("default", "S7-waiters");
        m.put("w", w);
        m.put("bytes_per_waiter", (double) (heapW - heap0) / w);
        m.put("rss_bytes_per_waiter", (double) (rssW - rss0) / w);
        m.put("scripts_per_waiter_queueing", (double) (evals - scripts0) / w);
        m.put("drained", drained);
        m.put("acquired", acquired.get());
        m.put("failed_while_waiting", failedWaiting);
        m.put("first_error", firstError.get());
        m.put("drain_s", drained ? drainS : null);
        m.put("scripts_per_waiter_draining", (double) (evals2 - evals) / w);
        m.put("completed_early", early);
        m.put("errors", errors.get());
        m.put("memory", "used heap after System.gc() twice (MemoryMXBean), VmRSS");
        m.put("settings", settings(c, false));
        print(m);
        return errors.get() == 0 && early == 0 ? 0 : 1;
    }

    // ---- a plain Redis connection (RESP2), for the counter and the probes ------

    private static final class Resp {
        private final Socket s;
        private final InputStream in;
        private final OutputStream out;

        Resp(String addr) throws IOException {
            int i = addr.lastIndexOf(':');
            s = new Socket(addr.substring(0, i), Integer.parseInt(addr.substring(i + 1)));
            s.setTcpNoDelay(true);
            in = new java.io.BufferedInputStream(s.getInputStream());
            out = new BufferedOutputStream(s.getOutputStream());
        }

        private void write(String... args) throws IOException {
            out.write(("*" + args.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            for (String x : args) {
                byte[] b = x.getBytes(StandardCharsets.UTF_8);
                out.write(("$" + b.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(b);
                out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
            }
        }

        private String readLine() throws IOException {
            StringBuilder b = new StringBuilder();
            int ch;
            while ((ch = in.read()) != '\r') {
                if (ch < 0) {
                    throw new IOException("connection closed");
                }
                b.append((char) ch);
            }
            in.read(); // '\n'
            return b.toString();
        }

        private Object read() throws IOException {
            String h = readLine();
            switch (h.charAt(0)) {
                case '+':
                    return h.substring(1);
                case '-':
                    throw new IOException("redis: " + h.substring(1));
                case ':':
                    return Long.parseLong(h.substring(1));
                case '$': {
                    int n = Integer.parseInt(h.substring(1));
                    if (n < 0) {
                        return null;
                    }
                    byte[] b = in.readNBytes(n + 2);
                    return new String(b, 0, n, StandardCharsets.UTF_8);
                }
                default:
                    throw new IOException("unexpected reply " + h);
            }
        }

        Object call(String... args) throws IOException {
            write(args);
            out.flush();
            return read();
        }

        Object[] pipeline(String[]... cmds) throws IOException {
            for (String[] c : cmds) {
                write(c);
            }
            out.flush();
            Object[] v = new Object[cmds.length];
            for (int i = 0; i < cmds.length; i++) {
                v[i] = read();
            }
            return v;
        }
    }
}
