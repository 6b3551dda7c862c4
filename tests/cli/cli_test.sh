#!/usr/bin/env bash
# Drives the rlock command from a shell, as a user would.
#
#   cli_test.sh RLOCK_BINARY CASE ADDRESS
#
# ctest runs one CASE per test through with_redis, which starts a private
# redis-server and appends its ADDRESS. Exits 0 when the case passes.
set -euo pipefail

RLOCK="$1"
CASE="$2"
export RLOCK_ADDRESS="$3"
# The servers a case starts itself (Sentinel, Cluster, TLS): the binary
# with_redis runs too (tests/support/server_version.h).
REDIS_SERVER="${RT_REDIS_SERVER:-redis-server}"
WORK="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

fail() {
    echo "FAIL ($CASE): $*" >&2
    exit 1
}

# Waits until the lock $1 is held (rlock status exits 0), up to 10 s.
wait_locked() {
    for _ in $(seq 100); do
        if "$RLOCK" status "$1" >/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    fail "lock $1 was never taken"
}

# Waits until a line of file $1 matches the extended regex $2, up to 10 s.
wait_line() {
    for _ in $(seq 100); do
        if grep -Eq "$2" "$1"; then
            return 0
        fi
        sleep 0.1
    done
    cat "$1"
    fail "no line matching $2"
}

# Runs "$@" every 0.1 s until it succeeds, at most $1 times; its status.
retry() {
    local tries="$1"
    shift
    for _ in $(seq "$tries"); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

# Runs "$@" and sets rc to its exit status (set -e would stop at a failure).
run() {
    rc=0
    "$@" || rc=$?
}

# Prints a loopback port nothing answers on.
free_port() {
    local p
    for _ in $(seq 20); do
        p=$((20000 + RANDOM % 30000))
        redis-cli -p "$p" PING >/dev/null 2>&1 || {
            echo "$p"
            return
        }
    done
    fail "no free port"
}

# Starts a private redis-server (no persistence) on a free port, logging
# to $WORK/$1.log; sets sport to its port and server_pid to its pid.
start_server() {
    for _ in 1 2 3 4 5; do
        sport=$(free_port)
        "$REDIS_SERVER" --port "$sport" --bind 127.0.0.1 --save '' --appendonly no \
            >"$WORK/$1.log" 2>&1 &
        server_pid=$!
        retry 50 answers_ping "$sport" && return 0
    done
    fail "the server did not start: $(cat "$WORK/$1.log")"
}
answers_ping() { [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ]; }

# Starts a sentinel on a free port monitoring the server on port $2 as
# master $1 (quorum 1); sets sport to the sentinel's port.
start_sentinel() {
    for _ in 1 2 3 4 5; do
        sport=$(free_port)
        printf 'port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %s 1\n' \
            "$sport" "$WORK" "$1" "$2" >"$WORK/sentinel.conf"
        "$REDIS_SERVER" "$WORK/sentinel.conf" --sentinel >"$WORK/sentinel.log" 2>&1 &
        retry 100 names_master "$sport" "$1" && return 0
    done
    fail "the sentinel did not start: $(tr '\n' ' ' <"$WORK/sentinel.log")"
}
names_master() {
    [ -n "$(redis-cli -p "$1" SENTINEL get-master-addr-by-name "$2" 2>/dev/null)" ]
}

# Starts a TLS-only redis-server on a free port with certificate
# $WORK/$1.crt (key $WORK/srv.key, CA $WORK/ca.crt); sets tport to its port.
start_tls_server() {
    for _ in 1 2 3 4 5; do
        tport=$(free_port)
        "$REDIS_SERVER" --port 0 --tls-port "$tport" --bind 127.0.0.1 --save '' --appendonly no \
            --tls-cert-file "$WORK/$1.crt" --tls-key-file "$WORK/srv.key" \
            --tls-ca-cert-file "$WORK/ca.crt" --tls-auth-clients no --dir "$WORK" \
            >"$WORK/tls-redis.log" 2>&1 &
        retry 50 answers_tls "$tport" && return 0
    done
    fail "the TLS redis-server did not start: $(cat "$WORK/tls-redis.log")"
}
answers_tls() {
    [ "$(redis-cli --tls --cacert "$WORK/ca.crt" -p "$1" PING 2>/dev/null)" = PONG ]
}

# Starts tests/cli/reply_proxy.py in front of the private server, answering
# each command $1 with the bytes $2 itself; sets proxy to its address.
start_reply_proxy() {
    rm -f "$WORK/proxy.port"
    python3 "$(dirname "$0")/reply_proxy.py" "${RLOCK_ADDRESS##*:}" "$1" "$2" "$WORK/proxy.port" &
    for _ in $(seq 100); do
        [ -s "$WORK/proxy.port" ] && break
        sleep 0.1
    done
    [ -s "$WORK/proxy.port" ] || fail "the reply proxy did not start"
    proxy="redis://127.0.0.1:$(cat "$WORK/proxy.port")"
}

# Fails when file $1 holds a terminal control byte: ESC, BEL, or a C1
# control (U+0080..U+009F as UTF-8, which some terminals obey too).
no_control_bytes() {
    if LC_ALL=C grep -q "$(printf '[\x1b\x07]')" "$1" || LC_ALL=C grep -q "$(printf '\xc2[\x80-\x9f]')" "$1"; then
        od -c "$1" | head -20
        fail "$2: a control byte reached the output"
    fi
}

# rlock exec's command, in a mode other than a single plain server (issue
# 37; exec_fds and exec_env check that one): it inherits none of rlock's
# connections (no more sockets than the same command run without rlock)
# and no credential of --address $1 (which holds the password secretpw),
# for a lock and for a semaphore's permit. "${@:2}": the mode's options.
exec_child_clean() {
    local address="$1" base n out args
    shift
    local probe='ls -l /proc/self/fd | grep -c socket: || true; env'
    base=$(sh -c "$probe" | sed -n 1p)
    for args in "cli:fds" "--semaphore cli:fds-sem --permits 1"; do
        # shellcheck disable=SC2086 # args: a name, or options and a name
        out=$(env -u RLOCK_ADDRESS "$RLOCK" exec --address "$address" "$@" $args -- sh -c "$probe") ||
            fail "exec $args: $out"
        n=$(echo "$out" | sed -n 1p)
        [ "$n" -eq "$base" ] || fail "exec $args: the command has $n sockets, not $base"
        [[ "$out" != *secretpw* ]] || fail "exec $args: the command's environment holds the password"
    done
}

# Starts a three-master Redis Cluster of the case's own (no replicas) with
# the redis-server binary $1 and any further server options ($2...); sets
# nodes (their ports) and node_pids, and stops them at exit.
start_cluster() {
    local server="$1" n p up
    shift
    nodes=()
    node_pids=() # every one started, to stop
    node_pid=()  # the pid of the node at nodes[i]
    stop_nodes() {
        kill "${node_pids[@]}" 2>/dev/null || true
        for pid in "${node_pids[@]}"; do # bounded: SIGTERM, then SIGKILL after 5 s
            for _ in $(seq 50); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -KILL "$pid" 2>/dev/null || true
        done
    }
    trap 'stop_nodes; kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
    for n in 1 2 3; do
        up=0
        for _ in 1 2 3 4 5; do # a free port, and a free bus port (port + 10000)
            p=$((20000 + RANDOM % 25000))
            redis-cli -p "$p" PING >/dev/null 2>&1 && continue
            (: <>"/dev/tcp/127.0.0.1/$((p + 10000))") 2>/dev/null && continue
            mkdir -p "$WORK/node$p"
            "$server" --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
                --cluster-config-file "nodes-$p.conf" --dir "$WORK/node$p" --save '' \
                --appendonly no "$@" >"$WORK/node$p.log" 2>&1 &
            node_pids+=($!)
            retry 50 answers_ping "$p" && up=1 && node_pid+=($!) && break
        done
        [ "$up" = 1 ] || fail "cluster node $n did not start: $(cat "$WORK/node$p.log")"
        nodes+=("$p")
    done
    timeout 30 redis-cli --cluster create "127.0.0.1:${nodes[0]}" "127.0.0.1:${nodes[1]}" \
        "127.0.0.1:${nodes[2]}" --cluster-yes >"$WORK/create.log" 2>&1 ||
        fail "redis-cli --cluster create: $(cat "$WORK/create.log")"
    cluster_ok() {
        for p in "${nodes[@]}"; do
            redis-cli -p "$p" CLUSTER INFO | grep -q '^cluster_state:ok' || return 1
        done
    }
    retry 100 cluster_ok || fail "the cluster never reached cluster_state:ok"
    export RLOCK_CLUSTER_NODES="redis://127.0.0.1:${nodes[0]},redis://127.0.0.1:${nodes[1]}"
}

case "$CASE" in
serialise)
    # Three runs on one name: each one's start/end lines must be adjacent.
    log="$WORK/log"
    pids=()
    for who in a b c; do
        "$RLOCK" exec cli:serialise -- sh -c \
            "echo start $who >>'$log'; sleep 0.3; echo end $who >>'$log'" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || fail "an exec failed"
    done
    cat "$log"
    [ "$(wc -l <"$log")" -eq 6 ] || fail "expected 6 lines"
    while read -r s1 w1 && read -r s2 w2; do
        [ "$s1 $s2" = "start end" ] && [ "$w1" = "$w2" ] || fail "holds interleave"
    done <"$log"
    ;;
exit_status)
    run "$RLOCK" exec cli:status -- sh -c 'exit 3'
    [ "$rc" -eq 3 ] || fail "exit 3 came back as $rc"
    run "$RLOCK" exec cli:status -- true
    [ "$rc" -eq 0 ] || fail "true came back as $rc"
    run "$RLOCK" exec cli:status -- sh -c 'kill -KILL $$'
    [ "$rc" -eq 137 ] || fail "death by SIGKILL came back as $rc, not 137"
    run "$RLOCK" exec cli:status -- /nonexistent/command
    [ "$rc" -eq 127 ] || fail "a missing command gave $rc, not 127"
    # Each run released the lock.
    run "$RLOCK" status cli:status
    [ "$rc" -eq 1 ] || fail "the lock is still held after the runs"
    ;;
sigterm)
    # SIGTERM to rlock reaches the command, whose status then comes back.
    "$RLOCK" exec cli:sigterm -- sh -c \
        "trap 'echo got TERM >\"$WORK/trap\"; exit 7' TERM; echo ready >\"$WORK/ready\"; \
         while :; do sleep 0.1; done" &
    pid=$!
    for _ in $(seq 100); do
        [ -s "$WORK/ready" ] && break
        sleep 0.1
    done
    [ -s "$WORK/ready" ] || fail "the command never started"
    kill -TERM "$pid"
    run wait "$pid"
    [ "$rc" -eq 7 ] || fail "rlock exited $rc, not the command's 7"
    grep -q "got TERM" "$WORK/trap" || fail "the command did not get SIGTERM"
    run "$RLOCK" status cli:sigterm
    [ "$rc" -eq 1 ] || fail "the lock is still held"
    ;;
wait_timeout)
    "$RLOCK" exec cli:wait -- sleep 5 &
    holder=$!
    wait_locked cli:wait
    start=$(date +%s%N)
    run "$RLOCK" exec --wait 500 cli:wait -- sh -c 'echo ran >"$0"' "$WORK/ran"
    took=$((($(date +%s%N) - start) / 1000000))
    [ "$rc" -eq 75 ] || fail "--wait ran out with status $rc, not 75"
    [ ! -e "$WORK/ran" ] || fail "the command ran without the lock"
    [ "$took" -ge 450 ] && [ "$took" -lt 4000 ] || fail "gave up after $took ms, not ~500"
    run "$RLOCK" exec --wait 0 cli:wait -- true
    [ "$rc" -eq 75 ] || fail "--wait 0 gave status $rc, not 75"
    kill -TERM "$holder"
    wait "$holder" || true
    run "$RLOCK" exec --wait 2000 cli:wait -- true
    [ "$rc" -eq 0 ] || fail "the freed lock was not taken: $rc"
    ;;
status)
    run "$RLOCK" status cli:held
    [ "$rc" -eq 1 ] || fail "a free lock's status is $rc, not 1"
    "$RLOCK" exec cli:held -- sleep 5 &
    holder=$!
    wait_locked cli:held
    "$RLOCK" status cli:held | tee "$WORK/text"
    grep -q '^cli:held: locked$' "$WORK/text" || fail "text status does not say locked"
    grep -Eq '^  holder [0-9a-f-]{36}:[0-9]+: 1 hold$' "$WORK/text" || fail "no holder line"
    grep -Eq '^  ttl: [0-9]+ ms$' "$WORK/text" || fail "no ttl line"
    "$RLOCK" status --json cli:held | tee "$WORK/json"
    grep -q '"locked":true' "$WORK/json" || fail "json: not locked"
    grep -Eq '"holders":\[\{"owner":"[0-9a-f-]{36}:[0-9]+","holds":1\}\]' "$WORK/json" ||
        fail "json: no holder"
    kill -TERM "$holder"
    wait "$holder" || true
    run "$RLOCK" status --json cli:held
    [ "$rc" -eq 1 ] || fail "status after the holder ended: $rc, not 1"
    ;;
unlock_force)
    # A short watchdog timeout, so the renewal finds the lock gone quickly.
    "$RLOCK" exec --watchdog-timeout 900 --kill-on-lost cli:force -- sleep 30 \
        2>"$WORK/stderr" &
    holder=$!
    wait_locked cli:force
    run "$RLOCK" unlock --force cli:force
    [ "$rc" -eq 0 ] || fail "unlock --force gave $rc, not 0"
    run "$RLOCK" status cli:force
    [ "$rc" -eq 1 ] || fail "still locked after unlock --force"
    # The holder learns it lost the lock and stops its command.
    run wait "$holder"
    cat "$WORK/stderr"
    [ "$rc" -eq 143 ] || fail "the holder's command ended with $rc, not 143 (SIGTERM)"
    grep -q 'lost the lock "cli:force"' "$WORK/stderr" || fail "no lost-lock message"
    run "$RLOCK" unlock --force cli:force
    [ "$rc" -eq 1 ] || fail "unlock --force of a free lock gave $rc, not 1"
    ;;
fenced_token)
    "$RLOCK" exec --kind fenced cli:fenced -- sh -c 'echo "$RLOCK_TOKEN"' >"$WORK/t1"
    RLOCK_TOKEN=stale "$RLOCK" exec --kind fenced cli:fenced -- sh -c 'echo "$RLOCK_TOKEN"' \
        >"$WORK/t2"
    t1=$(cat "$WORK/t1")
    t2=$(cat "$WORK/t2")
    echo "tokens: $t1 $t2"
    [[ "$t1" =~ ^[0-9]+$ ]] && [[ "$t2" =~ ^[0-9]+$ ]] || fail "no numeric RLOCK_TOKEN"
    [ "$t2" -gt "$t1" ] || fail "tokens do not increase"
    run "$RLOCK" status cli:fenced >"$WORK/status"
    grep -q "last fencing token: $t2" "$WORK/status" || fail "status: no token"
    # Other kinds export no token.
    out=$(RLOCK_TOKEN= "$RLOCK" exec cli:fenced -- sh -c 'echo "${RLOCK_TOKEN-unset}"')
    [ "$out" = unset ] || fail "a plain lock exported RLOCK_TOKEN=$out"
    ;;
sentinel)
    # One sentinel monitoring the private server as "clim": every command
    # finds the lock through it, with --address giving only the db.
    port=${RLOCK_ADDRESS##*:}
    start_sentinel clim "$port"
    export RLOCK_MASTER_NAME=clim RLOCK_SENTINELS="redis://127.0.0.1:$sport"
    export RLOCK_ADDRESS=redis://ignored
    "$RLOCK" exec --client-name cli-sentinel cli:sent -- sh -c \
        "redis-cli -p $port CLIENT LIST | grep -c name=cli-sentinel >'$WORK/named'; sleep 3" &
    holder=$!
    wait_locked cli:sent
    [ "$(redis-cli -p "$port" EXISTS cli:sent)" = 1 ] || fail "the lock is not on the master"
    "$RLOCK" status cli:sent | grep -q '^cli:sent: locked$' || fail "status through the sentinel"
    run wait "$holder"
    [ "$rc" -eq 0 ] || fail "exec through the sentinel gave $rc"
    [ "$(cat "$WORK/named")" -ge 1 ] || fail "no connection named cli-sentinel"
    run "$RLOCK" status --sentinels redis://127.0.0.1:1 cli:sent
    [ "$rc" -eq 69 ] || fail "an unreachable sentinel gave $rc, not 69"
    run "$RLOCK" status --master-name nosuch cli:sent
    [ "$rc" -eq 69 ] || fail "an unknown master gave $rc, not 69"
    run env -u RLOCK_SENTINELS "$RLOCK" status cli:sent
    [ "$rc" -eq 64 ] || fail "--master-name without sentinels gave $rc, not 64"
    # A latch and a semaphore's permit through the sentinel.
    "$RLOCK" latch set cli:sent-latch 1 >/dev/null || fail "latch set through the sentinel"
    [ "$(redis-cli -p "$port" GET cli:sent-latch)" = 1 ] || fail "the latch is not on the master"
    "$RLOCK" latch await --wait 10000 cli:sent-latch >/dev/null &
    waiter=$!
    sleep 0.3
    "$RLOCK" latch count-down cli:sent-latch >/dev/null
    run wait "$waiter"
    [ "$rc" -eq 0 ] || fail "latch await through the sentinel gave $rc"
    run "$RLOCK" exec --semaphore cli:sent-sem --permits 1 -- \
        sh -c "redis-cli -p $port GET cli:sent-sem >'$WORK/sem'"
    [ "$rc" -eq 0 ] && [ "$(cat "$WORK/sem")" = 0 ] || fail "exec --semaphore through the sentinel"
    "$RLOCK" semaphore set cli:sent-sem 4 >/dev/null || fail "semaphore set through the sentinel"
    [ "$(redis-cli -p "$port" GET cli:sent-sem)" = 4 ] || fail "the semaphore is not on the master"
    # The command has no socket of rlock's (the sentinel's, the master's)
    # and not the master's password.
    redis-cli -p "$port" CONFIG SET requirepass secretpw >/dev/null
    exec_child_clean "redis://:secretpw@ignored"
    ;;
sentinel_tls)
    # A TLS-only server and a TLS-only sentinel monitoring it over TLS, with
    # a CA and a certificate made here: rediss:// sentinels mean TLS to the
    # master they name too, for exec (the library) and status (the
    # command's own connections).
    (cd "$WORK" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
            -out ca.crt -days 2 -subj /CN=cli-ca &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key \
            -out srv.csr -subj /CN=127.0.0.1 &&
        printf 'subjectAltName=IP:127.0.0.1\n' >srv.ext &&
        openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
            -extfile srv.ext -out srv.crt) >"$WORK/openssl.log" 2>&1 ||
        fail "openssl: $(cat "$WORK/openssl.log")"
    tls_conf() { # the TLS lines both servers share
        printf 'port 0\nbind 127.0.0.1\ndir %s\ntls-port %s\ntls-cert-file %s\n' "$WORK" "$1" \
            "$WORK/srv.crt"
        printf 'tls-key-file %s\ntls-ca-cert-file %s\n' "$WORK/srv.key" "$WORK/ca.crt"
        printf 'tls-auth-clients no\ntls-replication yes\n'
    }
    tcli() { redis-cli --tls --cacert "$WORK/ca.crt" -h 127.0.0.1 "$@" 2>/dev/null; }
    up=0
    for _ in 1 2 3 4 5; do
        tport=$((20000 + RANDOM % 30000))
        sport=$((20000 + RANDOM % 30000))
        redis-cli -p "$tport" PING >/dev/null 2>&1 && continue
        redis-cli -p "$sport" PING >/dev/null 2>&1 && continue
        tls_conf "$tport" >"$WORK/master.conf"
        "$REDIS_SERVER" "$WORK/master.conf" --save '' --appendonly no >"$WORK/master.log" 2>&1 &
        answers_tls_master() { [ "$(tcli -p "$tport" PING)" = PONG ]; }
        retry 50 answers_tls_master || continue
        { tls_conf "$sport"; printf 'sentinel monitor clim 127.0.0.1 %s 1\n' "$tport"; } \
            >"$WORK/sentinel.conf"
        "$REDIS_SERVER" "$WORK/sentinel.conf" --sentinel >"$WORK/sentinel.log" 2>&1 &
        names_master_tls() { [ -n "$(tcli -p "$sport" SENTINEL get-master-addr-by-name clim)" ]; }
        retry 100 names_master_tls && up=1 && break
    done
    [ "$up" = 1 ] || fail "TLS servers did not start: $(cat "$WORK"/*.log)"
    export RLOCK_MASTER_NAME=clim RLOCK_SENTINELS="rediss://127.0.0.1:$sport"
    export RLOCK_ADDRESS=redis://ignored RLOCK_TLS_CA="$WORK/ca.crt"
    "$RLOCK" exec cli:stls -- sh -c "sleep 3" &
    holder=$!
    held() { [ "$(tcli -p "$tport" EXISTS cli:stls)" = 1 ]; }
    retry 100 held || fail "exec through the TLS sentinel did not take the lock on the master"
    "$RLOCK" status cli:stls | grep -q '^cli:stls: locked$' || fail "status through the TLS sentinel"
    run wait "$holder"
    [ "$rc" -eq 0 ] || fail "exec through the TLS sentinel gave $rc"
    # A CA that did not sign them: refused at once, with the reason.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/o.key" \
        -out "$WORK/other.crt" -days 2 -subj /CN=other-ca >/dev/null 2>&1
    run env RLOCK_TLS_CA="$WORK/other.crt" "$RLOCK" exec cli:stls -- true 2>"$WORK/refused.err"
    cat "$WORK/refused.err"
    [ "$rc" -eq 69 ] || fail "exec with a CA that did not sign the sentinel's gave $rc, not 69"
    grep -q 'certificate verification failed' "$WORK/refused.err" || fail "no reason given"
    ;;
cluster)
    # Three cluster-enabled servers of the case's own, a master each (no
    # replicas, to keep it light): every command finds the lock's master
    # from the nodes it is given, the first of which does not serve it.
    start_cluster "$REDIS_SERVER"
    # The port of the master serving key $1: the node that answers EXISTS
    # (the others answer MOVED).
    owner_of() {
        for p in "${nodes[@]}"; do
            [ "$(redis-cli -p "$p" EXISTS "$1" 2>/dev/null || true)" = 0 ] && echo "$p" && return
        done
        return 0
    }
    # A name whose slot the first node given does not serve.
    for i in $(seq 20); do
        name="cli:cluster:$i"
        owner=$(owner_of "$name")
        [ -n "$owner" ] && [ "$owner" != "${nodes[0]}" ] && break
    done
    [ -n "$owner" ] && [ "$owner" != "${nodes[0]}" ] || fail "no name served by another master"
    echo "$name is on the master at port $owner; nodes given: ${nodes[*]}"
    export RLOCK_CLUSTER_NODES="redis://127.0.0.1:${nodes[0]},redis://127.0.0.1:${nodes[1]}"
    RLOCK_CLUSTER_NODES+=",redis://127.0.0.1:${nodes[2]}"

    run "$RLOCK" status "$name"
    [ "$rc" -eq 1 ] || fail "a free lock's status in the cluster is $rc, not 1"
    "$RLOCK" watch --timeout 20000 "$name" >"$WORK/events" 2>"$WORK/watch.err" &
    watcher=$!
    wait_line "$WORK/events" "$name: not locked\$"
    # A short watchdog timeout, so the renewal finds the lock gone quickly.
    "$RLOCK" exec --watchdog-timeout 900 --kill-on-lost "$name" -- sleep 30 \
        2>"$WORK/stderr" &
    holder=$!
    wait_locked "$name"
    [ "$(redis-cli -p "$owner" EXISTS "$name")" = 1 ] || fail "the lock is not on its master"
    "$RLOCK" status "$name" | tee "$WORK/text"
    grep -q "^$name: locked\$" "$WORK/text" || fail "status in the cluster does not say locked"
    grep -Eq '^  holder [0-9a-f-]{36}:[0-9]+: 1 hold$' "$WORK/text" || fail "no holder line"
    "$RLOCK" status --json "$name" >"$WORK/json"
    grep -q '"locked":true' "$WORK/json" || fail "json: not locked"
    # The first node given unreachable: the next one answers.
    RLOCK_CLUSTER_NODES="redis://127.0.0.1:1,redis://127.0.0.1:${nodes[0]}" \
        "$RLOCK" status "$name" >"$WORK/text2" || true
    grep -q "^$name: locked\$" "$WORK/text2" || fail "status with an unreachable first node"
    wait_line "$WORK/events" "$name: locked by [0-9a-f-]{36}:[0-9]+ \\(1 hold\\)\$"
    run "$RLOCK" unlock --force "$name"
    [ "$rc" -eq 0 ] || fail "unlock --force in the cluster gave $rc, not 0"
    run "$RLOCK" status "$name"
    [ "$rc" -eq 1 ] || fail "still locked after unlock --force"
    [ "$(redis-cli -p "$owner" EXISTS "$name")" = 0 ] || fail "the key is still on its master"
    run wait "$holder"
    cat "$WORK/stderr"
    [ "$rc" -eq 143 ] || fail "the holder's command ended with $rc, not 143 (SIGTERM)"
    # The force-unlock's message, SPUBLISHed, reached watch's SSUBSCRIBE.
    wait_line "$WORK/events" "$name: unlock message 0 on redisson_lock__channel:\\{$name\\}\$"
    wait_line "$WORK/events" "$name: unlocked\$"
    kill -INT "$watcher"
    run wait "$watcher"
    cat "$WORK/events" "$WORK/watch.err"
    [ "$rc" -eq 0 ] || fail "watch in the cluster stopped by SIGINT exited $rc, not 0"

    # --sharded-subscription off ($RLOCK_SHARDED_SUBSCRIPTION for watch):
    # watch SUBSCRIBEs on the lock's master, and exec's unlock PUBLISHes,
    # which only a classic subscriber hears.
    RLOCK_SHARDED_SUBSCRIPTION=off "$RLOCK" watch --timeout 20000 "$name" \
        >"$WORK/off.events" 2>"$WORK/off.err" &
    offwatcher=$!
    wait_line "$WORK/off.events" "$name: not locked\$"
    [ "$(redis-cli -p "$owner" PUBSUB NUMSUB "redisson_lock__channel:{$name}" | sed -n 2p)" = 1 ] ||
        fail "watch with sharded subscription off did not SUBSCRIBE on the lock's master"
    "$RLOCK" exec --sharded-subscription OFF "$name" -- true
    wait_line "$WORK/off.events" "$name: unlock message 0 on redisson_lock__channel:\\{$name\\}\$"
    kill -INT "$offwatcher"
    run wait "$offwatcher"
    cat "$WORK/off.err"
    [ "$rc" -eq 0 ] || fail "watch with sharded subscription off exited $rc, not 0"
    run "$RLOCK" status --sharded-subscription sometimes "$name" 2>"$WORK/mode.err"
    [ "$rc" -eq 64 ] || fail "--sharded-subscription sometimes gave $rc, not 64"
    grep -q 'is auto, on or off' "$WORK/mode.err" || fail "no word of the allowed values"

    # A slot given to another master: status asks a node that may not know
    # yet (then the old master answers MOVED, followed once), and exec
    # takes the lock at its new master. The slot goes to a master with a
    # higher config epoch, which the other nodes then learn.
    epoch() { redis-cli -p "$1" CLUSTER INFO | tr -d '\r' | sed -n 's/^cluster_my_epoch://p'; }
    if [ "$(epoch "${nodes[1]}")" -lt "$(epoch "${nodes[2]}")" ]; then
        from=${nodes[1]} to=${nodes[2]}
    else
        from=${nodes[2]} to=${nodes[1]}
    fi
    for i in $(seq 20); do
        moved="cli:moved:$i"
        [ "$(owner_of "$moved")" = "$from" ] && break
    done
    [ "$(owner_of "$moved")" = "$from" ] || fail "no name served by the master at $from"
    # A watch on the old master learns the slot left it (Redis
    # unsubscribes it) and stops with 69.
    "$RLOCK" watch --timeout 20000 "$moved" >"$WORK/moved.events" 2>"$WORK/moved.err" &
    mwatcher=$!
    wait_line "$WORK/moved.events" "$moved: not locked\$"
    slot=$(redis-cli -p "$from" CLUSTER KEYSLOT "$moved")
    to_id=$(redis-cli -p "$to" CLUSTER MYID)
    [ "$(redis-cli -p "$to" CLUSTER SETSLOT "$slot" NODE "$to_id")" = OK ] &&
        [ "$(redis-cli -p "$from" CLUSTER SETSLOT "$slot" NODE "$to_id")" = OK ] ||
        fail "cannot move slot $slot to the master at $to"
    run wait "$mwatcher"
    cat "$WORK/moved.err"
    [ "$rc" -eq 69 ] || fail "a watch whose slot moved away exited $rc, not 69"
    grep -q 'its slot moved to another master' "$WORK/moved.err" || fail "no word of the move"
    run "$RLOCK" status --cluster-nodes "redis://127.0.0.1:${nodes[0]}" "$moved"
    [ "$rc" -eq 1 ] || fail "status of a lock whose slot just moved gave $rc, not 1"
    "$RLOCK" exec "$moved" -- sh -c "redis-cli -p $to EXISTS '$moved' >'$WORK/moved'"
    [ "$(cat "$WORK/moved")" = 1 ] || fail "the lock is not on its slot's new master"

    # A latch and a semaphore's permit on a name another master serves.
    "$RLOCK" latch set "$name" 1 >/dev/null || fail "latch set in the cluster"
    [ "$(redis-cli -p "$owner" GET "$name")" = 1 ] || fail "the latch is not on its master"
    "$RLOCK" latch await --wait 10000 "$name" >/dev/null &
    waiter=$!
    sleep 0.3
    "$RLOCK" latch count-down "$name" >/dev/null
    run wait "$waiter"
    [ "$rc" -eq 0 ] || fail "latch await in the cluster gave $rc"
    run "$RLOCK" exec --semaphore "$name" --permits 1 -- \
        sh -c "redis-cli -p $owner GET '$name' >'$WORK/csem'"
    [ "$rc" -eq 0 ] && [ "$(cat "$WORK/csem")" = 0 ] || fail "exec --semaphore in the cluster"
    # rlock semaphore and status reach the master serving the name too.
    "$RLOCK" semaphore set "$name" 4 >/dev/null || fail "semaphore set in the cluster"
    [ "$(redis-cli -p "$owner" GET "$name")" = 4 ] || fail "the semaphore is not on its master"
    run "$RLOCK" status "$name" >"$WORK/cstatus"
    [ "$rc" -eq 2 ] && grep -q "semaphore or latch, value 4" "$WORK/cstatus" ||
        fail "status of a semaphore in the cluster: $rc $(cat "$WORK/cstatus")"

    # Not a cluster (with_redis's own server), nobody there, bad company.
    run "$RLOCK" status --cluster-nodes "$RLOCK_ADDRESS" "$name"
    [ "$rc" -eq 69 ] || fail "a node with cluster support disabled gave $rc, not 69"
    run "$RLOCK" status --cluster-nodes redis://127.0.0.1:1 "$name"
    [ "$rc" -eq 69 ] || fail "an unreachable node gave $rc, not 69"
    run "$RLOCK" exec --cluster-nodes redis://127.0.0.1:1 "$name" -- true
    [ "$rc" -eq 69 ] || fail "exec with an unreachable node gave $rc, not 69"
    run "$RLOCK" status --master-name clim --sentinels redis://127.0.0.1:1 "$name"
    [ "$rc" -eq 64 ] || fail "--cluster-nodes with --master-name gave $rc, not 64"
    run "$RLOCK" exec --tls-insecure "$name" -- true 2>"$WORK/tls.err"
    cat "$WORK/tls.err"
    [ "$rc" -eq 64 ] || fail "--cluster-nodes with --tls-insecure gave $rc, not 64"
    grep -q 'TLS is not supported with Redis Cluster' "$WORK/tls.err" ||
        fail "no word that TLS is not supported with Cluster"
    run "$RLOCK" --address rediss://127.0.0.1 watch "$name"
    [ "$rc" -eq 64 ] || fail "--cluster-nodes with a rediss:// address gave $rc, not 64"
    # The command has no socket of rlock's (any node's) and not the nodes'
    # password.
    for p in "${nodes[@]}"; do
        redis-cli -p "$p" CONFIG SET requirepass secretpw >/dev/null
    done
    exec_child_clean "redis://:secretpw@127.0.0.1"
    ;;
tls)
    # A TLS-only server of the case's own, with a CA and a certificate made
    # here: every command goes over rediss://.
    plain_port=${RLOCK_ADDRESS##*:} # with_redis's server, plain TCP
    (cd "$WORK" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
            -out ca.crt -days 2 -subj /CN=cli-ca &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key \
            -out srv.csr -subj /CN=127.0.0.1 &&
        printf 'subjectAltName=IP:127.0.0.1\n' >srv.ext &&
        openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
            -extfile srv.ext -out srv.crt) >"$WORK/openssl.log" 2>&1 ||
        fail "openssl: $(cat "$WORK/openssl.log")"
    start_tls_server srv
    export RLOCK_ADDRESS="rediss://127.0.0.1:$tport"
    out=$("$RLOCK" exec --tls-ca "$WORK/ca.crt" cli:tls -- echo inside)
    [ "$out" = inside ] || fail "exec over TLS printed \"$out\""
    RLOCK_TLS_CA="$WORK/ca.crt" "$RLOCK" exec cli:tls2 -- sh -c "sleep 3" &
    holder=$!
    held_tls2() {
        [ "$(redis-cli --tls --cacert "$WORK/ca.crt" -p "$tport" EXISTS cli:tls2)" = 1 ]
    }
    retry 100 held_tls2 || fail "exec over TLS (CA from RLOCK_TLS_CA) did not take the lock"
    export RLOCK_TLS_CA="$WORK/ca.crt"
    "$RLOCK" status cli:tls2 | grep -q '^cli:tls2: locked$' || fail "status over TLS"
    "$RLOCK" watch --timeout 500 cli:tls2 >"$WORK/events" || fail "watch over TLS"
    grep -q 'cli:tls2: locked by' "$WORK/events" || fail "watch over TLS showed no holder"
    run "$RLOCK" unlock --force cli:tls2
    [ "$rc" -eq 0 ] || fail "unlock --force over TLS gave $rc, not 0"
    run "$RLOCK" status cli:tls2
    [ "$rc" -eq 1 ] || fail "status over TLS after the unlock gave $rc, not 1"
    unset RLOCK_TLS_CA
    wait "$holder" || true
    # Not trusted (the system's CAs do not know the test CA): no lock.
    run "$RLOCK" exec --wait 1500 cli:tls3 -- true
    [ "$rc" -ne 0 ] || fail "exec trusted a certificate it should not"
    run "$RLOCK" exec --tls-insecure --wait 3000 cli:tls3 -- true
    [ "$rc" -eq 0 ] || fail "exec --tls-insecure gave $rc"
    run "$RLOCK" status cli:tls3
    [ "$rc" -eq 69 ] || fail "status with an untrusted certificate gave $rc, not 69"
    run "$RLOCK" status --tls-insecure cli:tls3
    [ "$rc" -eq 1 ] || fail "status --tls-insecure gave $rc, not 1"
    # No retry can make the certificate trusted: one attempt, with the reason.
    start=$(date +%s%N)
    run "$RLOCK" exec cli:tls3 -- true 2>"$WORK/untrusted.err"
    took=$((($(date +%s%N) - start) / 1000000))
    cat "$WORK/untrusted.err"
    [ "$rc" -eq 69 ] || fail "exec with an untrusted certificate gave $rc, not 69"
    [ "$took" -lt 3000 ] || fail "exec with an untrusted certificate took $took ms"
    grep -q 'certificate verification failed.*(after 1 attempt)' "$WORK/untrusted.err" ||
        fail "no reason, or more than one attempt"
    # rediss:// to a plain port: the handshake is never answered; say so.
    for cmd in status exec; do
        args=(cli:tls4)
        [ "$cmd" = exec ] && args+=(-- true)
        run "$RLOCK" --address "rediss://127.0.0.1:$plain_port" "$cmd" --redis-timeout 1000 \
            "${args[@]}" 2>"$WORK/plain.err"
        cat "$WORK/plain.err"
        [ "$rc" -eq 69 ] || fail "$cmd over rediss:// to a plain port gave $rc, not 69"
        grep -q 'did not answer the TLS handshake.*may not be a TLS port' "$WORK/plain.err" ||
            fail "$cmd over rediss:// to a plain port did not name the likely cause"
    done
    # TLS options with an address without TLS: refused, not ignored.
    for opt in "--tls-ca $WORK/ca.crt" --tls-insecure; do
        # shellcheck disable=SC2086 # opt is an option and its value
        run "$RLOCK" --address "redis://127.0.0.1:$plain_port" status $opt cli:tls5 \
            2>"$WORK/mix.err"
        cat "$WORK/mix.err"
        [ "$rc" -eq 64 ] || fail "$opt with redis:// gave $rc, not 64"
        grep -q 'is for a rediss:// (TLS) address' "$WORK/mix.err" || fail "no word why"
    done
    RLOCK_TLS_CA="$WORK/ca.crt" run "$RLOCK" --address "redis://127.0.0.1:$plain_port" \
        exec cli:tls5 -- true
    [ "$rc" -eq 64 ] || fail "RLOCK_TLS_CA with redis:// gave $rc, not 64"
    RLOCK_TLS_CA= run "$RLOCK" --address "redis://127.0.0.1:$plain_port" status cli:tls5
    [ "$rc" -eq 1 ] || fail "an empty RLOCK_TLS_CA with redis:// gave $rc, not 1"
    # A CA file that is not there: named.
    for cmd in status exec; do
        args=(cli:tls6)
        [ "$cmd" = exec ] && args+=(-- true)
        run "$RLOCK" "$cmd" --tls-ca "$WORK/no-such-ca.pem" "${args[@]}" 2>"$WORK/noca.err"
        cat "$WORK/noca.err"
        [ "$rc" -eq 64 ] || fail "$cmd with a missing CA file gave $rc, not 64"
        grep -q "$WORK/no-such-ca.pem.*No such file" "$WORK/noca.err" ||
            fail "$cmd did not name the missing CA file"
    done
    # The command has no socket of rlock's (TLS ones, the relay's) and not
    # the password.
    redis-cli --tls --cacert "$WORK/ca.crt" -p "$tport" CONFIG SET requirepass secretpw >/dev/null
    exec_child_clean "rediss://:secretpw@127.0.0.1:$tport" --tls-ca "$WORK/ca.crt"
    ;;
lease)
    # --lease -1 is the watchdog, as the library's RLOCK_LEASE_WATCHDOG and
    # Redisson's leaseTime -1: the lock outlives its watchdog timeout while
    # the command runs; a fixed lease of the same length does not.
    run "$RLOCK" exec --lease -1 --watchdog-timeout 1500 cli:lease -- \
        sh -c "sleep 2.5; '$RLOCK' status cli:lease"
    [ "$rc" -eq 0 ] || fail "--lease -1: the lock was not kept by the watchdog ($rc)"
    run "$RLOCK" exec --lease=-1 cli:lease -- "$RLOCK" status --json cli:lease
    [ "$rc" -eq 0 ] || fail "--lease=-1 gave $rc"
    run "$RLOCK" exec --lease 1500 cli:lease -- sh -c "sleep 2.5; '$RLOCK' status cli:lease"
    [ "$rc" -eq 1 ] || fail "--lease 1500: the lock did not expire ($rc)"
    for bad in 0 -0 x -1x; do
        run "$RLOCK" exec --lease "$bad" cli:lease -- true 2>"$WORK/err"
        cat "$WORK/err"
        [ "$rc" -eq 64 ] || fail "--lease $bad gave $rc, not 64"
        grep -q 'or -1 for the watchdog' "$WORK/err" || fail "--lease $bad: no word of -1"
    done
    ;;
redis_timeout)
    # --redis-timeout bounds the time spent on a Redis that does not
    # answer: a stopped (SIGSTOP) server, which accepts connections and
    # never replies, and a refused port. Each gives 69 well within 1 s.
    start_server stopped
    stopped=$server_pid
    trap 'kill -CONT $stopped 2>/dev/null; kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' \
        EXIT
    kill -STOP "$stopped"
    # Under ThreadSanitizer (RT_TSAN, set by tests/CMakeLists.txt) a signal
    # is handled only once the blocking call it interrupts returns, so the
    # SIGALRM backstop of --redis-timeout waits for the plain connection's
    # and the library's own per-step timeouts (each within --redis-timeout):
    # the bound there is three of them.
    bound=1500
    if [ "${RT_TSAN:-0}" = 1 ]; then bound=2500; fi
    # Runs rlock with "$@" and checks it exits 69 within 1.5 s (1 s and noise).
    bounded() {
        local start took
        start=$(date +%s%N)
        run "$RLOCK" "$@" 2>"$WORK/err"
        took=$((($(date +%s%N) - start) / 1000000))
        cat "$WORK/err"
        echo "rlock $*: status $rc after $took ms"
        [ "$rc" -eq 69 ] || fail "rlock $* exited $rc, not 69"
        [ "$took" -lt "$bound" ] || fail "rlock $* took $took ms, not under $bound"
    }
    for address in "redis://127.0.0.1:$sport" redis://127.0.0.1:1; do
        bounded --address "$address" status --redis-timeout 500 cli:rt
        bounded --address "$address" unlock --force --redis-timeout 500 cli:rt
        bounded --address "$address" watch --redis-timeout 500 cli:rt
        bounded --address "$address" exec --redis-timeout 500 cli:rt -- true
        bounded --address "$address" exec --redis-timeout 500 --wait 200 cli:rt -- true
        RLOCK_REDIS_TIMEOUT=500 bounded --address "$address" status cli:rt
        RLOCK_REDIS_TIMEOUT=500 bounded --address "$address" exec cli:rt -- true
    done
    grep -q 'within --redis-timeout (500 ms)' "$WORK/err" ||
        grep -q 'Connection refused' "$WORK/err" || fail "no reason given"
    run "$RLOCK" status --redis-timeout 0 cli:rt
    [ "$rc" -eq 64 ] || fail "--redis-timeout 0 gave $rc, not 64"
    RLOCK_REDIS_TIMEOUT=soon run "$RLOCK" status cli:rt
    [ "$rc" -eq 64 ] || fail "RLOCK_REDIS_TIMEOUT=soon gave $rc, not 64"
    # A server that answers: the bound changes nothing.
    run "$RLOCK" exec --redis-timeout 500 cli:rt -- true
    [ "$rc" -eq 0 ] || fail "exec with --redis-timeout on a live server gave $rc"
    ;;
redis_stalls)
    # --redis-timeout holds in every state, not only at the start: a server
    # stopped (SIGSTOP) while rlock waits for a message (latch await, exec
    # behind a holder) ends the wait with 69 within a bound, and one stopped
    # while exec holds the lock is reported (the lease can no longer be
    # known) within the watchdog's lease.
    start_server stalled
    stalled=$server_pid
    trap 'kill -CONT $stalled 2>/dev/null; kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' \
        EXIT
    export RLOCK_ADDRESS="redis://127.0.0.1:$sport"
    # Waits for background pid $1 to exit, at most $2 ms; sets rc to its
    # status and took to the ms it took from $3 (date +%s%N).
    ends_within() {
        local pid=$1 bound=$2 start=$3
        while kill -0 "$pid" 2>/dev/null; do
            took=$((($(date +%s%N) - start) / 1000000))
            [ "$took" -lt "$bound" ] || fail "still running after $took ms (bound $bound ms)"
            sleep 0.05
        done
        took=$((($(date +%s%N) - start) / 1000000))
        rc=0
        wait "$pid" || rc=$?
    }
    # 3 x --redis-timeout (1000), and 2 s for a slow machine.
    bound=5000
    # A latch await parked on its message.
    "$RLOCK" latch set cli:stall 1 >/dev/null
    "$RLOCK" latch await --redis-timeout 1000 cli:stall >"$WORK/await.out" 2>"$WORK/await.err" &
    waiter=$!
    sleep 0.5
    kill -0 "$waiter" || fail "latch await ended before the stop: $(cat "$WORK/await.err")"
    kill -STOP "$stalled"
    ends_within "$waiter" "$bound" "$(date +%s%N)"
    kill -CONT "$stalled"
    cat "$WORK/await.err"
    echo "latch await: status $rc $took ms after the stop"
    [ "$rc" -eq 69 ] || fail "latch await on a stopped server exited $rc, not 69"
    # exec waiting behind a holder whose lease outlasts the test.
    redis-cli -p "$sport" HSET cli:stall_lock other:1 1 >/dev/null
    redis-cli -p "$sport" PEXPIRE cli:stall_lock 60000 >/dev/null
    "$RLOCK" exec --redis-timeout 1000 cli:stall_lock -- true 2>"$WORK/exec.err" &
    waiter=$!
    sleep 0.5
    kill -0 "$waiter" || fail "exec ended before the stop: $(cat "$WORK/exec.err")"
    kill -STOP "$stalled"
    ends_within "$waiter" "$bound" "$(date +%s%N)"
    kill -CONT "$stalled"
    cat "$WORK/exec.err"
    echo "exec behind a holder: status $rc $took ms after the stop"
    [ "$rc" -eq 69 ] || fail "exec waiting on a stopped server exited $rc, not 69"
    # exec holding: the watchdog's renewals go unanswered; once the lease
    # (3 s) may have run out the lock is reported lost, and with
    # --kill-on-lost the command ends, and then rlock within --redis-timeout.
    "$RLOCK" exec --redis-timeout 1000 --watchdog-timeout 3000 --kill-on-lost cli:stall_hold \
        -- sleep 30 2>"$WORK/hold.err" &
    holder=$!
    wait_locked cli:stall_hold
    kill -STOP "$stalled"
    ends_within "$holder" 8000 "$(date +%s%N)"
    kill -CONT "$stalled"
    cat "$WORK/hold.err"
    echo "exec holding: status $rc $took ms after the stop"
    grep -q 'lost the lock "cli:stall_hold"' "$WORK/hold.err" || fail "the loss was not reported"
    [ "$rc" -ne 0 ] || fail "exec that lost its lock exited 0"
    ;;
usage)
    # Into a file first: grep -q would stop reading early, and with
    # pipefail the SIGPIPE rlock then gets would fail the pipeline.
    "$RLOCK" --help >"$WORK/help"
    grep -q '^Exit status:' "$WORK/help" || fail "--help has no exit statuses"
    run "$RLOCK" exec --bogus x -- true
    [ "$rc" -eq 64 ] || fail "a bad option gave $rc, not 64"
    run "$RLOCK" exec x
    [ "$rc" -eq 64 ] || fail "a missing command gave $rc, not 64"
    run "$RLOCK" unlock x
    [ "$rc" -eq 64 ] || fail "unlock without --force gave $rc, not 64"
    run "$RLOCK" --address redis://127.0.0.1:1 status x
    [ "$rc" -eq 69 ] || fail "an unreachable server gave $rc, not 69"
    # Bad input is told in the user's words: what was typed, the option
    # that set it, never the library's functions (rlock_get_lock) or
    # settings (rlock_config.address).
    words() { # want_status want_regex rlock-args...
        local want=$1 regex=$2
        shift 2
        run "$RLOCK" "$@" 2>"$WORK/err"
        cat "$WORK/err"
        [ "$rc" -eq "$want" ] || fail "rlock $* gave $rc, not $want"
        grep -Eq -- "$regex" "$WORK/err" || fail "rlock $*: no message matching $regex"
        ! grep -Eq 'rlock_[a-z]|timeout_ms' "$WORK/err" || fail "rlock $*: library names"
    }
    for cmd in status "unlock --force" watch; do
        # shellcheck disable=SC2086 # cmd is a command and its option
        words 64 'lock name "" is empty' $cmd ''
    done
    words 64 'lock name "" is empty' exec '' -- true
    words 64 'lock name "" is empty' exec --kind fenced '' -- true
    words 64 'lock name is 70000 bytes long' status "$(printf '%070000d' 0)"
    # the message names the object the command works on, not always a lock
    words 64 'latch name "" is empty: a latch needs a name' latch await ''
    words 64 'latch name "" is empty: a latch needs a name' latch set '' 3
    words 64 'semaphore name "" is empty: a semaphore needs a name' exec --semaphore '' -- true
    words 64 'semaphore name is 70000 bytes long' exec --semaphore "$(printf '%070000d' 0)" -- true
    words 64 '^rlock: --address: address "bogus"' --address bogus status x
    words 64 '^rlock: --address: .*port' --address redis://h:99999 exec x -- true
    words 64 '^rlock: --client-name: ' exec --client-name 'a b' x -- true
    words 64 '^rlock: --watchdog-timeout 2: must be at least 3' exec --watchdog-timeout 2 x -- true
    words 64 '^rlock: --sentinels: address "bogus"' status --master-name m --sentinels bogus x
    words 64 '^rlock: --sentinels: address "bogus"' exec --master-name m --sentinels bogus x \
        -- true
    words 64 '^rlock: --cluster-nodes: ' status --cluster-nodes unix:///x x
    words 69 'cannot take the lock "x": .*Connection refused' --address redis://127.0.0.1:1 \
        exec --redis-timeout 300 x -- true
    # Each number in its own unit and range (issue 38): permits are a
    # count, a latch's count a number (not an option), a timeout's bound
    # said.
    words 64 '^rlock: --permits wants a number of permits from 1 to [0-9]+, not "-3"' \
        exec --semaphore s --permits -3 -- true
    words 64 '^rlock: rlock latch set wants a count from 1 to [0-9]+, not "-1"' latch set n -1
    words 64 '^rlock: --redis-timeout wants a number of milliseconds from 1 to 31536000000, not "99999999999"' \
        status --redis-timeout 99999999999 x
    words 64 '^rlock: --wait wants a number of milliseconds from 0 to 31536000000, not "x"' \
        exec --wait x n -- true
    words 64 '^rlock: --limit wants a number of keys from 1 to [0-9]+, not "0"' ls --limit 0
    ;;
addresses)
    # One address parser (the library's) for every command: a password
    # with / @ : and %-escapes reaches the server by each of them, raw or
    # %-encoded, and a bad port, db or %-escape is refused by each with
    # the same message.
    port=${RLOCK_ADDRESS##*:}
    h=127.0.0.1
    redis-cli -p "$port" ACL SETUSER app on '>Zq7/Se@c:r%t' '~*' '&*' '+@all' >/dev/null ||
        fail "ACL SETUSER"
    # The right password, raw and %-encoded: each command gets through.
    for addr in "redis://app:Zq7/Se@c:r%25t@$h:$port" \
        "redis://app:Zq7%2FSe%40c%3Ar%25t@$h:$port/0"; do
        run "$RLOCK" exec --address "$addr" cli:sec -- true
        [ "$rc" -eq 0 ] || fail "exec with the password gave $rc"
        for cmd in status "latch count" "watch --timeout 200" "unlock --force"; do
            # shellcheck disable=SC2086 # cmd is a command and its options
            run "$RLOCK" $cmd --address "$addr" cli:sec 2>"$WORK/err"
            [ "$rc" -le 1 ] || fail "$cmd with the password gave $rc: $(cat "$WORK/err")"
        done
    done
    # A wrong password, and a user who may not run scripts: 77 (EX_NOPERM)
    # at once, not 69 after retrying like an unreachable server.
    redis-cli -p "$port" ACL SETUSER noeval on '>pw' '~*' '&*' '+@all' -eval -evalsha \
        >/dev/null || fail "ACL SETUSER noeval"
    for addr in "redis://app:wrong@$h:$port" "redis://noeval:pw@$h:$port"; do
        run "$RLOCK" exec --address "$addr" cli:sec -- true 2>"$WORK/err"
        [ "$rc" -eq 77 ] || fail "exec --address $addr gave $rc, not 77: $(cat "$WORK/err")"
    done
    for addr in "redis://$h:99999" "redis://$h:$port/abc" "redis://app:b%zz@$h:$port"; do
        for cmd in status "status --json" watch "unlock --force" exec "latch count"; do
            [ "$cmd" = exec ] && tail=(cli:sec -- true) || tail=(cli:sec)
            # shellcheck disable=SC2086 # cmd is a command and its options
            run "$RLOCK" $cmd --address "$addr" "${tail[@]}" 2>"$WORK/err"
            [ "$rc" -eq 64 ] || fail "$cmd --address $addr gave $rc, not 64"
            grep -Eq '^rlock: --address: address ".*": (the port|the database|bad %-escape)' \
                "$WORK/err" || fail "$cmd --address $addr said: $(cat "$WORK/err")"
        done
    done
    ;;
secrets)
    # No output of rlock holds a password: every failure below is run by
    # every command (with and without --json), and what it prints on stdout
    # and stderr is searched for the secret. Every password here has Zq7 in
    # it; the user name (app) is no secret.
    port=${RLOCK_ADDRESS##*:}
    h=127.0.0.1
    # A TCP port that accepts connections and never answers: timeouts.
    python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True); time.sleep(60)' >"$WORK/silent" &
    retry 50 test -s "$WORK/silent" || fail "no silent port"
    silent=$(cat "$WORK/silent")
    # Runs every command with the options "$@": each must fail, say why on
    # stderr, and show the secret nowhere.
    secret_free() {
        local cmd tail
        for cmd in status "status --json" "watch --timeout 300" "watch --timeout 300 --json" \
            "unlock --force" exec "latch count" "latch count --json" "latch set"; do
            case "$cmd" in
            exec) tail=(cli:sec -- true) ;;
            "latch set") tail=(cli:sec 1) ;;
            *) tail=(cli:sec) ;;
            esac
            # shellcheck disable=SC2086 # cmd is a command and its options
            run "$RLOCK" $cmd --redis-timeout 1500 "$@" "${tail[@]}" >"$WORK/out" 2>"$WORK/err"
            [ "$rc" -ne 0 ] || fail "rlock $cmd $* succeeded"
            [ -s "$WORK/err" ] || fail "rlock $cmd $* said nothing"
            if grep -q Zq7 "$WORK/out" "$WORK/err"; then
                cat "$WORK/out" "$WORK/err"
                fail "rlock $cmd $* printed the password"
            fi
        done
    }
    for addr in "redis://app:Zq7Secret@$h:1" "redis://app:Zq7/Secret@$h:1" \
        "redis://app:Zq7Wrong@$h:$port" "redis://Zq7Lone@$h:$port" \
        "redis://app:Zq7Secret@$h:$silent" "rediss://app:Zq7Secret@$h:$port" \
        "redis://app:Zq7Secret@$h:99999" "redis://app:Zq7Secret@$h:$port/abc" \
        "redis://app:Zq7Se%zzcret@$h:$port" "redis://app:Zq7Secret@" "app:Zq7Secret@$h:$port" \
        "redis://app:Zq7Secret@[::1" "redis://app:Zq7Secret@$h:$port/1/2" \
        "unix://app:Zq7Secret@/x"; do
        secret_free --address "$addr"
    done
    secret_free --address "redis://app:Zq7Secret@$h" --master-name m \
        --sentinels "redis://app:Zq7Secret@$h:1, redis://:Zq7Other@$h:$port"
    secret_free --address "redis://app:Zq7Secret@$h" --master-name m \
        --sentinels "redis://app:Zq7Secret@$h:99999"
    secret_free --address "rediss://app:Zq7Secret@$h" --master-name m --sentinels "redis://$h:1"
    secret_free --address "unix://app:Zq7Secret@/x" --master-name m --sentinels "redis://$h:1"
    secret_free --address "redis://app:Zq7Secret@$h" \
        --cluster-nodes "redis://app:Zq7Secret@$h:1, redis://:Zq7Other@$h:$port"
    secret_free --address "redis://app:Zq7Secret@$h" --cluster-nodes "rediss://app:Zq7Secret@$h:1"
    secret_free --address "redis://app:Zq7Secret@$h" --cluster-nodes "redis://app:Zq7Secret@$h:0"
    secret_free --address "unix://app:Zq7Secret@/x" --cluster-nodes "redis://$h:1"
    ;;
watch)
    # Events as they happen: a lock taken and released, a write lock's
    # message on its own channel, a fair lock's on its waiter's channel.
    "$RLOCK" watch --timeout 20000 cli:watch >"$WORK/events" 2>"$WORK/watch.err" &
    watcher=$!
    wait_line "$WORK/events" 'cli:watch: not locked$'
    "$RLOCK" exec cli:watch -- sleep 0.5
    wait_line "$WORK/events" 'cli:watch: unlocked$'
    "$RLOCK" exec --kind write cli:watch -- sleep 0.5
    wait_line "$WORK/events" 'unlock message 1 on redisson_rwlock:\{cli:watch\}$'
    "$RLOCK" exec --kind fair cli:watch -- sleep 1 &
    first=$!
    wait_locked cli:watch
    "$RLOCK" exec --kind fair cli:watch -- true
    wait "$first"
    wait_line "$WORK/events" 'unlock message 0 on redisson_lock__channel:\{cli:watch\}:[0-9a-f-]{36}:[0-9]+$'
    kill -INT "$watcher"
    run wait "$watcher"
    cat "$WORK/events" "$WORK/watch.err"
    [ "$rc" -eq 0 ] || fail "watch stopped by SIGINT exited $rc, not 0"
    events=$(sed -E 's/^[0-9:.]+ cli:watch: //' "$WORK/events")
    # In order: the plain lock's hold, its unlock message, then the write lock.
    echo "$events" | grep -Eq '^locked by [0-9a-f-]{36}:[0-9]+ \(1 hold\)$' ||
        fail "no 'locked by' event"
    echo "$events" | grep -q '^unlock message 0 on redisson_lock__channel:{cli:watch}$' ||
        fail "no unlock message on the lock's channel"
    echo "$events" | grep -q '^mode write (read/write lock)$' || fail "no write mode event"
    echo "$events" | grep -Eq '^locked by [0-9a-f-]{36}:[0-9]+:write \(1 hold\)$' ||
        fail "no write holder event"
    locked=$(echo "$events" | grep -n '^locked by' | head -1 | cut -d: -f1)
    unlocked=$(echo "$events" | grep -n '^unlocked$' | head -1 | cut -d: -f1)
    [ "$locked" -lt "$unlocked" ] || fail "unlocked came before locked"
    ;;
watch_json)
    # The same events as JSON objects, one per line, each one parseable.
    "$RLOCK" watch --json --timeout 20000 cli:wj >"$WORK/events" 2>"$WORK/watch.err" &
    watcher=$!
    wait_line "$WORK/events" '"event":"not_locked"'
    "$RLOCK" exec cli:wj -- sleep 0.5
    wait_line "$WORK/events" '"event":"unlocked"'
    kill -INT "$watcher"
    run wait "$watcher"
    cat "$WORK/events" "$WORK/watch.err"
    [ "$rc" -eq 0 ] || fail "watch --json stopped by SIGINT exited $rc, not 0"
    grep -Eq '^\{"time_ms":[0-9]+,"lock":"cli:wj","event":"locked","owner":"[0-9a-f-]{36}:[0-9]+","holds":1\}$' \
        "$WORK/events" || fail "no locked event"
    grep -Eq '^\{"time_ms":[0-9]+,"lock":"cli:wj","event":"message","payload":"0","channel":"redisson_lock__channel:\{cli:wj\}"\}$' \
        "$WORK/events" || fail "no unlock message event"
    # Every line is one object: starts with {"time_ms": and ends with }.
    bad=$(grep -cvE '^\{"time_ms":[0-9]+,.*\}$' "$WORK/events" || true)
    [ "$bad" -eq 0 ] || fail "$bad lines are not JSON objects"
    ;;
watch_timeout)
    # --timeout bounds it; a lock already held shows at once.
    "$RLOCK" exec cli:watch2 -- sleep 5 &
    holder=$!
    wait_locked cli:watch2
    start=$(date +%s%N)
    run "$RLOCK" watch --timeout 600 --interval 50 cli:watch2 >"$WORK/events"
    took=$((($(date +%s%N) - start) / 1000000))
    cat "$WORK/events"
    [ "$rc" -eq 0 ] || fail "watch --timeout exited $rc, not 0"
    [ "$took" -ge 550 ] && [ "$took" -lt 4000 ] || fail "stopped after $took ms, not ~600"
    grep -Eq 'cli:watch2: locked by [0-9a-f-]{36}:[0-9]+ \(1 hold\)$' "$WORK/events" ||
        fail "the held lock was not shown"
    kill -TERM "$holder"
    wait "$holder" || true
    run "$RLOCK" watch --kind fair cli:watch2
    [ "$rc" -eq 64 ] || fail "watch --kind gave $rc, not 64"
    run "$RLOCK" --address redis://127.0.0.1:1 watch --timeout 100 x
    [ "$rc" -eq 69 ] || fail "watch with an unreachable server gave $rc, not 69"
    ;;
semaphore)
    # exec --semaphore: four runs on a semaphore of two permits; at most two
    # commands run at once (each writes + on start and - on end), every one
    # runs, and each sees its permit's id in RLOCK_PERMIT_ID.
    log="$WORK/log"
    pids=()
    for who in a b c d; do
        "$RLOCK" exec --semaphore cli:sem --permits 2 -- sh -c \
            "echo + >>'$log'; echo \"\$RLOCK_NAME \$RLOCK_PERMIT_ID\" >>'$WORK/ids'; \
             sleep 0.4; echo - >>'$log'" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || fail "an exec --semaphore failed"
    done
    cat "$log"
    [ "$(wc -l <"$log")" -eq 8 ] || fail "expected 8 lines"
    max=$(awk '$1 == "+" { n++; if (n > m) m = n } $1 == "-" { n-- } END { print m }' "$log")
    [ "$max" -le 2 ] || fail "$max commands ran at once on 2 permits"
    [ "$(grep -cE '^cli:sem [0-9a-f]{32}$' "$WORK/ids")" -eq 4 ] ||
        fail "RLOCK_PERMIT_ID: $(cat "$WORK/ids")"
    [ "$(sort -u "$WORK/ids" | wc -l)" -eq 4 ] || fail "two runs had the same permit id"
    # The command's status comes back; --permits again changes nothing.
    run "$RLOCK" exec --semaphore cli:sem --permits 5 -- sh -c 'exit 3'
    [ "$rc" -eq 3 ] || fail "exit 3 came back as $rc"
    # Both permits held: --wait gives up with 75 and does not run the command.
    for _ in 1 2; do
        "$RLOCK" exec --semaphore cli:sem -- sh -c "echo >>'$WORK/held'; exec sleep 5" &
    done
    wait_line "$WORK/held" '^$'
    for _ in $(seq 100); do
        [ "$(wc -l <"$WORK/held")" -eq 2 ] && break
        sleep 0.1
    done
    [ "$(wc -l <"$WORK/held")" -eq 2 ] || fail "the two holders did not both start"
    run "$RLOCK" exec --semaphore cli:sem --wait 300 -- sh -c 'echo ran >"$0"' "$WORK/ran"
    [ "$rc" -eq 75 ] || fail "--wait ran out with status $rc, not 75"
    [ ! -e "$WORK/ran" ] || fail "the command ran without a permit"
    # Bad usage.
    run "$RLOCK" exec --permits 2 cli:sem -- true
    [ "$rc" -eq 64 ] || fail "--permits without --semaphore gave $rc, not 64"
    run "$RLOCK" exec --semaphore cli:sem --kind fair -- true
    [ "$rc" -eq 64 ] || fail "--semaphore with --kind gave $rc, not 64"
    run "$RLOCK" exec --semaphore cli:sem --permits 0 -- true
    [ "$rc" -eq 64 ] || fail "--permits 0 gave $rc, not 64"
    ;;
status_kinds)
    # status and watch on a semaphore's or a latch's name (issue 38): they
    # say what it is, in rlock ls's words; status exits 2 (not a lock, so
    # `if rlock status` is false), watch refuses with 64.
    port=${RLOCK_ADDRESS##*:}
    "$RLOCK" exec --semaphore cli:k:psem --permits 3 -- sh -c "echo ready >'$WORK/held'; exec sleep 20" &
    holder=$!
    wait_line "$WORK/held" ready
    "$RLOCK" latch set cli:k:latch 4 >/dev/null
    "$RLOCK" latch await --wait 20000 cli:k:latch >/dev/null &
    awaiter=$!
    redis-cli -p "$port" SET cli:k:n 7 >/dev/null
    kind_line() { # name want_regex
        run "$RLOCK" status "$1" >"$WORK/out" 2>"$WORK/err"
        cat "$WORK/out" "$WORK/err"
        [ "$rc" -eq 2 ] || fail "status $1 gave $rc, not 2"
        grep -Eq "$2" "$WORK/out" || fail "status $1: no line matching $2"
    }
    kind_line cli:k:psem '^cli:k:psem: permit semaphore, 2 permits left, 1 taken'
    for _ in $(seq 100); do # the awaiter subscribes (status exits 2: not a lock)
        { "$RLOCK" status cli:k:latch || true; } | grep -q '1 waiter' && break
        sleep 0.1
    done
    kind_line cli:k:latch '^cli:k:latch: latch, count 4, 1 waiter$'
    kind_line cli:k:n '^cli:k:n: semaphore or latch, value 7'
    run "$RLOCK" status --json cli:k:latch >"$WORK/out"
    [ "$rc" -eq 2 ] || fail "status --json on a latch gave $rc, not 2"
    python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["kind"]=="latch" and o["value"]==4, o' \
        "$WORK/out" || fail "status --json on a latch: $(cat "$WORK/out")"
    for name in cli:k:psem cli:k:latch; do
        run "$RLOCK" watch --timeout 300 "$name" >"$WORK/out" 2>"$WORK/err"
        cat "$WORK/out" "$WORK/err"
        [ "$rc" -eq 64 ] || fail "watch $name gave $rc, not 64"
        grep -q "is a .*, not a lock" "$WORK/err" || fail "watch $name did not say it is no lock"
    done
    # unlock --force deletes locks only: a semaphore or a latch is left as
    # it is (with --kind too), and the refusal says what the name is.
    for args in cli:k:n "--kind lock cli:k:n" cli:k:latch; do
        # shellcheck disable=SC2086 # args: options and a name
        run "$RLOCK" unlock --force $args 2>"$WORK/err"
        cat "$WORK/err"
        [ "$rc" -eq 64 ] || fail "unlock --force $args gave $rc, not 64"
        grep -q "is a .*, not a lock" "$WORK/err" || fail "unlock --force $args did not say it is no lock"
    done
    [ "$(redis-cli -p "$port" GET cli:k:n)" = 7 ] || fail "unlock --force changed a semaphore's value"
    # a lock is still a lock, and a free name still not locked
    run "$RLOCK" status cli:k:free
    [ "$rc" -eq 1 ] || fail "status of a free name gave $rc, not 1"
    "$RLOCK" latch count-down cli:k:latch >/dev/null
    "$RLOCK" latch count-down cli:k:latch >/dev/null
    "$RLOCK" latch count-down cli:k:latch >/dev/null
    "$RLOCK" latch count-down cli:k:latch >/dev/null
    wait "$awaiter" || fail "the awaiter failed"
    kill -TERM "$holder"
    wait "$holder" || true
    ;;
semaphore_cmd)
    # rlock semaphore: an operator's calls on the semaphore exec --semaphore
    # uses: available, add (any sign), set, release-if-exists, delete; text
    # and --json.
    sem() { # want_status want_regex args...
        local want=$1 regex=$2
        shift 2
        run "$RLOCK" semaphore "$@" >"$WORK/out" 2>"$WORK/err"
        cat "$WORK/out" "$WORK/err"
        [ "$rc" -eq "$want" ] || fail "semaphore $* gave $rc, not $want"
        [ -z "$regex" ] || grep -Eq -- "$regex" "$WORK/out" || fail "semaphore $*: no line matching $regex"
    }
    sem 0 '^cli:op: does not exist' available cli:op
    sem 1 '^cli:op: not released: does not exist' release-if-exists cli:op
    sem 0 '^cli:op: does not exist' available cli:op # release-if-exists made none
    sem 0 '^cli:op: set, 3 permits available, 0 taken$' set cli:op 3
    sem 0 '^cli:op: added, 5 permits available' add cli:op 2
    sem 0 '^cli:op: taken away, 4 permits available' add cli:op -1
    # a permit held by exec counts as taken
    "$RLOCK" exec --semaphore cli:op -- sh -c "echo ready >'$WORK/held'; exec sleep 20" &
    holder=$!
    wait_line "$WORK/held" ready
    sem 0 '^cli:op: 3 permits available, 1 taken$' available cli:op
    sem 0 '^cli:op: released, 5 permits available, 1 taken$' release-if-exists cli:op 2
    sem 0 '"available":5' available --json cli:op
    python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o=={"name":"cli:op","action":"available","exists":True,"available":5,"taken":1}, o' \
        "$WORK/out" || fail "available --json: $(cat "$WORK/out")"
    kill -TERM "$holder"
    wait "$holder" || true
    sem 0 '^cli:op: deleted$' delete cli:op
    sem 1 '^cli:op: did not exist$' delete cli:op
    sem 1 '"deleted":false' delete --json cli:op
    # bad usage, in the user's words
    sem 64 '' bogus cli:op
    grep -q 'wants available, add, set, release-if-exists or delete' "$WORK/err" || fail "bogus action"
    sem 64 '' set cli:op
    grep -q 'needs a name and a number of permits' "$WORK/err" || fail "set without N"
    sem 64 '' set cli:op -1
    grep -q 'set wants a number of permits from 0 to' "$WORK/err" || fail "set -1"
    sem 64 '' add cli:op 0
    grep -q 'other than 0' "$WORK/err" || fail "add 0"
    ;;
semaphore_hints)
    # exec --semaphore on a semaphore nobody set up waits (as Redisson's
    # acquire): it says so on stderr; a --permits other than the count the
    # semaphore has already is not applied (trySetPermits): it says so too.
    run "$RLOCK" exec --semaphore cli:never --wait 300 -- true 2>"$WORK/err"
    cat "$WORK/err"
    [ "$rc" -eq 75 ] || fail "a never-set semaphore gave $rc, not 75"
    grep -q 'semaphore "cli:never" does not exist' "$WORK/err" || fail "no hint that it does not exist"
    run "$RLOCK" exec --semaphore cli:five --permits 2 -- true 2>"$WORK/err"
    [ "$rc" -eq 0 ] && [ ! -s "$WORK/err" ] || fail "first --permits 2: $rc $(cat "$WORK/err")"
    run "$RLOCK" exec --semaphore cli:five --permits 2 -- true 2>"$WORK/err"
    [ "$rc" -eq 0 ] && [ ! -s "$WORK/err" ] || fail "the same --permits again: $rc $(cat "$WORK/err")"
    run "$RLOCK" exec --semaphore cli:five --permits 5 -- true 2>"$WORK/err"
    cat "$WORK/err"
    [ "$rc" -eq 0 ] || fail "--permits 5 on a semaphore of 2 gave $rc"
    grep -q 'has 2 permits already: --permits 5 is not applied' "$WORK/err" ||
        fail "no word that --permits 5 was not applied"
    run "$RLOCK" exec --semaphore cli:five -- true 2>"$WORK/err"
    [ "$rc" -eq 0 ] && [ ! -s "$WORK/err" ] || fail "a set semaphore: $rc $(cat "$WORK/err")"
    ;;
semaphore_watchdog)
    # Issue 38 §2: with the default lease (no --lease) the permit is held
    # for as long as the command runs, well past the watchdog timeout (30 s
    # by default; 3 s here, the command running 8 s): no other run gets it
    # meanwhile, and it is free once the command ends.
    "$RLOCK" exec --semaphore cli:semw --permits 1 --watchdog-timeout 3000 -- \
        sh -c "echo ready >'$WORK/ready'; sleep 8" 2>"$WORK/holder_err" &
    holder=$!
    wait_line "$WORK/ready" ready
    start=$(date +%s%N)
    probes=0
    while [ $((($(date +%s%N) - start) / 1000000)) -lt 6500 ]; do
        run "$RLOCK" exec --semaphore cli:semw --wait 0 -- true
        [ "$rc" -eq 75 ] ||
            fail "another run got the permit $((($(date +%s%N) - start) / 1000000)) ms into the hold ($rc, not 75)"
        probes=$((probes + 1))
        sleep 0.5
    done
    [ "$probes" -ge 5 ] || fail "only $probes probes"
    run wait "$holder"
    cat "$WORK/holder_err"
    [ "$rc" -eq 0 ] || fail "the holder ended with $rc"
    ! grep -q 'lost\|no longer held' "$WORK/holder_err" || fail "the holder lost its permit"
    run "$RLOCK" exec --semaphore cli:semw --wait 0 -- true
    [ "$rc" -eq 0 ] || fail "the permit was not given back ($rc)"
    ;;
semaphore_lease)
    # The permit is leased: renewed (every third of --watchdog-timeout)
    # while the command runs, so it outlives that timeout; a fixed --lease
    # is not renewed; and a killed rlock's permit frees itself.
    "$RLOCK" exec --semaphore cli:semr --permits 1 --watchdog-timeout 600 -- \
        sh -c "echo ready >'$WORK/r1'; sleep 2.5" &
    renewed=$!
    wait_line "$WORK/r1" ready
    run "$RLOCK" exec --semaphore cli:semr --wait 1500 -- true
    [ "$rc" -eq 75 ] || fail "a renewed permit was had by another run ($rc, not 75)"
    wait "$renewed" || fail "the renewed run failed"
    run "$RLOCK" exec --semaphore cli:semr --wait 0 -- true
    [ "$rc" -eq 0 ] || fail "the permit was not given back ($rc)"

    "$RLOCK" exec --semaphore cli:seml --permits 1 --lease 500 -- \
        sh -c "echo ready >'$WORK/r2'; sleep 2.5" 2>"$WORK/lease_err" &
    leased=$!
    wait_line "$WORK/r2" ready
    run "$RLOCK" exec --semaphore cli:seml --wait 2000 -- true
    [ "$rc" -eq 0 ] || fail "a --lease 500 permit was still held after its lease ($rc)"
    wait "$leased" || fail "the leased run failed"
    cat "$WORK/lease_err"
    grep -q 'no longer held' "$WORK/lease_err" || fail "the lapsed permit was not reported"

    "$RLOCK" exec --semaphore cli:semk --permits 1 --watchdog-timeout 1000 -- \
        sh -c "echo \$\$ >'$WORK/r3'; exec sleep 30" &
    killed=$!
    wait_line "$WORK/r3" '^[0-9]+$'
    kill -KILL "$killed"
    wait "$killed" || true
    kill -KILL "$(cat "$WORK/r3")" 2>/dev/null || true # the orphaned command
    start=$(date +%s%N)
    run "$RLOCK" exec --semaphore cli:semk --wait 5000 -- true
    took=$((($(date +%s%N) - start) / 1000000))
    [ "$rc" -eq 0 ] || fail "the killed holder's permit was not freed ($rc)"
    [ "$took" -lt 4000 ] || fail "the killed holder's permit took $took ms to free"

    # A permit found gone at a renewal is lost: reported, and with
    # --kill-on-lost the command gets SIGTERM.
    port=${RLOCK_ADDRESS##*:}
    "$RLOCK" exec --semaphore cli:semlost --permits 1 --watchdog-timeout 600 --kill-on-lost -- \
        sh -c "echo ready >'$WORK/r4'; exec sleep 20" 2>"$WORK/lost_err" &
    lost=$!
    wait_line "$WORK/r4" ready
    [ "$(redis-cli -p "$port" DEL '{cli:semlost}:timeout')" = 1 ] || fail "no timeout set to delete"
    for _ in $(seq 50); do
        kill -0 "$lost" 2>/dev/null || break
        sleep 0.1
    done
    run wait "$lost"
    cat "$WORK/lost_err"
    [ "$rc" -eq 143 ] || fail "a lost permit's command ended with $rc, not 143 (SIGTERM)"
    grep -q "lost the semaphore's permit \"cli:semlost\"" "$WORK/lost_err" ||
        fail "the lost permit was not reported"
    ;;
latch)
    # rlock latch: set, count, count down, await.
    run "$RLOCK" latch count cli:latch
    [ "$rc" -eq 0 ] || fail "count of a latch never set gave $rc"
    run "$RLOCK" latch count --json cli:latch >"$WORK/out"
    [ "$(cat "$WORK/out")" = '{"name":"cli:latch","count":0}' ] || fail "count --json: $(cat "$WORK/out")"
    run "$RLOCK" latch set cli:latch 2
    [ "$rc" -eq 0 ] || fail "set gave $rc"
    run "$RLOCK" latch set --json cli:latch 5 >"$WORK/out"
    [ "$rc" -eq 1 ] || fail "a second set gave $rc, not 1"
    [ "$(cat "$WORK/out")" = '{"name":"cli:latch","set":false,"count":2}' ] ||
        fail "set --json: $(cat "$WORK/out")"
    run "$RLOCK" latch await --wait 300 cli:latch
    [ "$rc" -eq 75 ] || fail "await of a count of 2 gave $rc, not 75"
    "$RLOCK" latch await --json cli:latch >"$WORK/awaited" &
    waiter=$!
    sleep 0.5
    run "$RLOCK" latch count-down --json cli:latch >"$WORK/out"
    [ "$(cat "$WORK/out")" = '{"name":"cli:latch","count":1}' ] ||
        fail "count-down --json: $(cat "$WORK/out")"
    sleep 0.3
    kill -0 "$waiter" 2>/dev/null || fail "await returned at count 1"
    "$RLOCK" latch count-down cli:latch
    for _ in $(seq 50); do
        kill -0 "$waiter" 2>/dev/null || break
        sleep 0.1
    done
    run wait "$waiter"
    [ "$rc" -eq 0 ] || fail "await gave $rc after the count reached zero"
    grep -Eq '^\{"name":"cli:latch","reached":true,"waited_ms":[0-9]+\}$' "$WORK/awaited" ||
        fail "await --json: $(cat "$WORK/awaited")"
    run "$RLOCK" latch await --wait 0 cli:latch
    [ "$rc" -eq 0 ] || fail "await at zero gave $rc"
    # A signal stops the wait: 128+N.
    "$RLOCK" latch set cli:latch2 1
    "$RLOCK" latch await cli:latch2 &
    waiter=$!
    sleep 0.5
    kill -TERM "$waiter"
    run wait "$waiter"
    [ "$rc" -eq 143 ] || fail "SIGTERM during await gave $rc, not 143"
    # Bad usage.
    for args in "bogus x" "set x" "set x 0" "set x y" "count" "count --wait 5 x"; do
        # shellcheck disable=SC2086
        run "$RLOCK" latch $args 2>/dev/null
        [ "$rc" -eq 64 ] || fail "latch $args gave $rc, not 64"
    done
    ;;
hostile_reply)
    # A broken or hostile server (or proxy) answering HGETALL with integers:
    # status, unlock and watch each say so and exit 69, never crash.
    redis-cli -u "$RLOCK_ADDRESS" HSET cli:hostile owner 1 >/dev/null
    start_reply_proxy HGETALL '*2\r\n:1\r\n:1\r\n'
    for cmd in "status" "unlock --force" "watch --timeout 2000"; do
        # shellcheck disable=SC2086
        run "$RLOCK" --address "$proxy" $cmd cli:hostile 2>"$WORK/err"
        cat "$WORK/err"
        [ "$rc" -eq 69 ] || fail "$cmd with integers for HGETALL exited $rc, not 69"
        grep -q 'unexpected reply' "$WORK/err" || fail "$cmd did not say what was wrong"
    done
    ;;
escape)
    # Bytes from Redis that would drive the terminal (an OSC 52 that sets
    # the clipboard, a CSI) reach it escaped: in a holder's name, an unlock
    # message, a fair lock's queue, a Redis error.
    evil=$(printf '\033]52;c;ZXZpbA==\a\302\233m\377')
    redis-cli -u "$RLOCK_ADDRESS" HSET cli:esc "$evil" 1 >/dev/null
    redis-cli -u "$RLOCK_ADDRESS" RPUSH 'redisson_lock_queue:{cli:esc}' "$evil" >/dev/null
    "$RLOCK" status cli:esc >"$WORK/status" 2>&1 || true
    cat -v "$WORK/status"
    no_control_bytes "$WORK/status" "status"
    grep -Fq 'holder \x1b]52;c;ZXZpbA==\x07\u009bm\xff: 1 hold' "$WORK/status" ||
        fail "the holder is not shown escaped"
    "$RLOCK" status --json cli:esc >"$WORK/json" 2>&1 || true
    no_control_bytes "$WORK/json" "status --json"
    "$RLOCK" watch --timeout 3000 cli:esc >"$WORK/events" 2>&1 &
    watcher=$!
    wait_line "$WORK/events" 'locked by'
    redis-cli -u "$RLOCK_ADDRESS" PUBLISH 'redisson_lock__channel:{cli:esc}' "$evil" >/dev/null
    wait_line "$WORK/events" 'unlock message'
    redis-cli -u "$RLOCK_ADDRESS" HSET cli:esc "$evil" 2 >/dev/null
    wait_line "$WORK/events" 'now has 2 holds'
    kill -TERM "$watcher"
    wait "$watcher" || true
    cat -v "$WORK/events"
    no_control_bytes "$WORK/events" "watch"
    # A Redis error's text, on stderr: a proxy answers TYPE with one.
    start_reply_proxy TYPE '-ERR \x1b]52;c;ZXZpbA==\x07\r\n'
    run "$RLOCK" --address "$proxy" status cli:esc 2>"$WORK/err"
    cat -v "$WORK/err"
    [ "$rc" -eq 69 ] || fail "status with an error for TYPE exited $rc, not 69"
    grep -Fq 'ERR \x1b]52' "$WORK/err" || fail "the error is not shown escaped"
    no_control_bytes "$WORK/err" "a Redis error"
    # One the library passes on: a latch's count read answered with it.
    start_reply_proxy GET '-ERR \x1b]52;c;ZXZpbA==\x07\r\n'
    run "$RLOCK" --address "$proxy" latch count cli:esc-latch 2>"$WORK/err"
    cat -v "$WORK/err"
    [ "$rc" -eq 69 ] || fail "latch count with an error for GET exited $rc, not 69"
    grep -Fq 'ERR \x1b]52' "$WORK/err" || fail "the library's error is not shown escaped"
    no_control_bytes "$WORK/err" "a Redis error through the library"
    ;;
watch_many)
    # A read lock with 50,000 holders: watch shows it, re-reads it every
    # 100 ms, and a SIGTERM ends it within seconds.
    redis-cli -u "$RLOCK_ADDRESS" EVAL "redis.call('hset', KEYS[1], 'mode', 'read')
        for i = 1, 50000 do redis.call('hset', KEYS[1], 'holder-' .. i, 1) end" 1 cli:many >/dev/null
    "$RLOCK" watch --interval 100 cli:many >"$WORK/events" 2>"$WORK/watch.err" &
    watcher=$!
    wait_line "$WORK/events" 'locked by holder-50000 '
    # Change one holder so each read has something to tell.
    redis-cli -u "$RLOCK_ADDRESS" HSET cli:many holder-1 2 >/dev/null
    wait_line "$WORK/events" 'holder-1 now has 2 holds'
    sleep 0.5 # a few more reads
    kill -TERM "$watcher"
    for _ in $(seq 100); do
        kill -0 "$watcher" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$watcher" 2>/dev/null; then
        kill -KILL "$watcher"
        fail "watch did not stop within 10 s of SIGTERM"
    fi
    run wait "$watcher"
    [ "$rc" -eq 0 ] || fail "watch stopped by SIGTERM exited $rc, not 0"
    ;;
exec_fds)
    # The command inherits none of rlock's connections (issue 37): no more
    # sockets in it than in the same command run without rlock (ctest's
    # own, if any), for a lock and for a semaphore's permit.
    count_sockets='ls -l /proc/self/fd | grep -c socket: || true'
    base=$(sh -c "$count_sockets")
    for args in "cli:fds" "--semaphore cli:fds-sem --permits 1"; do
        # shellcheck disable=SC2086
        n=$("$RLOCK" exec $args -- sh -c "$count_sockets")
        [ "$n" -eq "$base" ] || fail "exec $args: the command has $n sockets, not $base"
    done
    # A command left running in the background after rlock exits keeps
    # none of its connections open either.
    "$RLOCK" exec cli:fds -- sh -c "sleep 30 & echo \$! >'$WORK/bg'"
    bg=$(cat "$WORK/bg")
    n=$(ls -l "/proc/$bg/fd" | grep -c socket: || true)
    kill "$bg"
    [ "$n" -eq "$base" ] || fail "the background command kept $n sockets, not $base"
    # watch's connections (the command's own plain one, redis_direct.c,
    # and the library's) are closed on exec too: each socket of a running
    # watch has O_CLOEXEC (02000000) in its flags.
    "$RLOCK" watch --timeout 20000 cli:fds >"$WORK/events" &
    watcher=$!
    wait_line "$WORK/events" 'cli:fds: not locked$'
    socks=0
    for fd in /proc/"$watcher"/fd/*; do
        [[ "$(readlink "$fd")" == socket:* ]] || continue
        socks=$((socks + 1))
        flags=$(sed -n 's/^flags:[[:space:]]*//p' "/proc/$watcher/fdinfo/${fd##*/}")
        [ $((8#$flags & 8#2000000)) -ne 0 ] || fail "watch's socket ${fd##*/} is not close-on-exec"
    done
    kill -INT "$watcher"
    run wait "$watcher"
    [ "$socks" -ge 2 ] || fail "watch has $socks sockets: not connected?"
    ;;
exec_env)
    # The command's environment is rlock's with RLOCK_NAME added (issue
    # 37, docs/cli.md): no credential of --address, and what the user
    # exported passes through unchanged, as with env(1).
    port=${RLOCK_ADDRESS##*:}
    redis-cli -p "$port" CONFIG SET requirepass secretpw >/dev/null
    secret="redis://:secretpw@127.0.0.1:$port"
    out=$(env -u RLOCK_ADDRESS "$RLOCK" exec --address "$secret" cli:env -- env)
    ! echo "$out" | grep -q secretpw || fail "the command's environment holds the password"
    # Exported: the same variables as env(1) gives (bar "_", which each
    # shell sets itself), plus RLOCK_NAME.
    export RLOCK_ADDRESS="$secret"
    env | grep -v '^_=' | sort >"$WORK/env.plain"
    "$RLOCK" exec cli:env -- env | grep -v '^_=' | sort >"$WORK/env.rlock"
    added=$(comm -13 "$WORK/env.plain" "$WORK/env.rlock")
    missing=$(comm -23 "$WORK/env.plain" "$WORK/env.rlock")
    [ "$added" = "RLOCK_NAME=cli:env" ] || fail "rlock added: $added"
    [ -z "$missing" ] || fail "rlock removed: $missing"
    ;;
exec_group_signal)
    # A signal sent to rlock's whole process group (kill -- -PGID, timeout,
    # a supervisor) reaches the command once: directly, as a member of the
    # group, and rlock does not pass it on again. One sent to rlock alone
    # reaches it once too: rlock passes it on. The command ($RT_SIG_COUNT)
    # counts the SIGTERMs delivered to it in $WORK/count.
    [ -x "${RT_SIG_COUNT:-}" ] || fail "RT_SIG_COUNT names no program"
    # Not a group leader here, setsid runs rlock in place: $! is rlock,
    # leading a process group of its own.
    # On failure too, the command ends (it keeps running after SIGTERM).
    trap 'touch "$WORK/count.stop"; sleep 0.2; kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
    setsid "$RLOCK" exec cli:group -- "$RT_SIG_COUNT" "$WORK/count" &
    pid=$!
    wait_line "$WORK/count" '^0$'
    counted_at_least() { [ "$(cat "$WORK/count")" -ge "$1" ]; }
    # Waits (up to 10 s) until the command has counted at least $1.
    wait_count() {
        retry 100 counted_at_least "$1" ||
            fail "the command got no signal $1 (it counted $(cat "$WORK/count"))"
        sleep 0.2 # time for a second delivery, were one coming
    }
    [ "$(ps -o pgid= -p "$pid" | tr -d ' ')" = "$pid" ] || fail "rlock leads no group"
    # Ten rounds: a second delivery may merge with the first in the
    # kernel (one pending SIGTERM), so one round alone could miss it.
    for i in $(seq 10); do
        kill -TERM -- "-$pid"
        wait_count "$i"
        [ "$(cat "$WORK/count")" = "$i" ] ||
            fail "after $i signals to the group the command got $(cat "$WORK/count")"
    done
    kill -TERM "$pid"
    wait_count 11
    [ "$(cat "$WORK/count")" = 11 ] || fail "a signal to rlock alone came $(($(cat "$WORK/count") - 10)) times"
    touch "$WORK/count.stop"
    run wait "$pid"
    [ "$rc" -eq 0 ] || fail "rlock exited $rc"
    ;;
ls)
    # One of each kind, held or set up by rlock itself (a plain semaphore,
    # which rlock has no command for, by its trySetPermits' SET), each
    # with what rlock ls must say of it.
    port=${RLOCK_ADDRESS##*:}
    redis-cli -p "$port" MONITOR >"$WORK/monitor" &
    "$RLOCK" exec cli:ls:lock -- sleep 20 &
    "$RLOCK" exec --kind fair cli:ls:fair -- sleep 20 &
    wait_locked cli:ls:lock
    wait_locked cli:ls:fair
    "$RLOCK" exec --kind fair --wait 20000 cli:ls:fair -- true &
    "$RLOCK" exec --kind read cli:ls:rw -- sleep 20 &
    "$RLOCK" exec --kind read cli:ls:rw -- sleep 20 &
    "$RLOCK" exec --kind fenced cli:ls:fenced -- true
    "$RLOCK" exec --semaphore cli:ls:psem --permits 3 -- sleep 20 &
    "$RLOCK" latch set cli:ls:latch 2 >/dev/null
    "$RLOCK" latch await --wait 20000 cli:ls:latch >/dev/null &
    redis-cli -p "$port" SET cli:ls:sem 5 >/dev/null
    redis-cli -p "$port" SUBSCRIBE "redisson_sc:{cli:ls:sem}" >/dev/null &
    redis-cli -p "$port" SET cli:ls:counter 7 >/dev/null
    # Not rlock's: a hash of words, a string of words, a list.
    redis-cli -p "$port" HSET cli:ls:user name ann >/dev/null
    redis-cli -p "$port" SET cli:ls:text hello >/dev/null
    redis-cli -p "$port" RPUSH cli:ls:list a >/dev/null
    # A holder's name made to drive a terminal.
    redis-cli -p "$port" HSET cli:ls:evil "$(printf 'x\033]0;pwned\007')" 1 >/dev/null
    settled() {
        [ "$(redis-cli -p "$port" LLEN "redisson_lock_queue:{cli:ls:fair}")" = 1 ] &&
            [ "$(redis-cli -p "$port" HLEN cli:ls:rw)" = 3 ] &&
            [ "$(redis-cli -p "$port" ZCARD "{cli:ls:psem}:timeout")" = 1 ] &&
            [ "$(redis-cli -p "$port" PUBSUB NUMSUB "redisson_countdownlatch__channel__{cli:ls:latch}" | sed -n 2p)" = 1 ] &&
            [ "$(redis-cli -p "$port" PUBSUB NUMSUB "redisson_sc:{cli:ls:sem}" | sed -n 2p)" = 1 ]
    }
    retry 100 settled || fail "the objects were never all set up"
    "$RLOCK" ls >"$WORK/ls" || fail "rlock ls failed"
    cat "$WORK/ls"
    line() { grep -E "^$1" "$WORK/ls" >/dev/null || fail "no line matching $1"; }
    holder='[0-9a-f-]{36}:[0-9]+ \(1 hold\)'
    line "cli:ls:lock: lock, held by $holder, ttl [0-9]+ ms, 0 waiters\$"
    line "cli:ls:fair: fair lock, held by $holder, ttl [0-9]+ ms, 1 waiter queued\$"
    line "cli:ls:rw: read/write lock \\(read\\), held by $holder, $holder, ttl [0-9]+ ms, 0 waiters\$"
    line "cli:ls:fenced: fenced lock, not locked, 0 waiters, last token 1\$"
    line "cli:ls:psem: permit semaphore, 2 permits left, 1 taken, 0 waiters\$"
    line "cli:ls:latch: latch, count 2, 1 waiter\$"
    line "cli:ls:sem: semaphore, 5 permits left, 1 waiter\$"
    line "cli:ls:counter: semaphore or latch, value 7, 0 waiters\$"
    line 'cli:ls:evil: lock, held by x\\x1b\]0;pwned\\x07 \(1 hold\), 0 waiters$'
    no_control_bytes "$WORK/ls" "rlock ls"
    ! grep -Eq '^cli:ls:(user|text|list)|^redisson_|:timeout' "$WORK/ls" || fail "listed a key that is none of rlock's"
    # --json: each object, valid JSON.
    "$RLOCK" ls --json 'cli:ls:*' >"$WORK/json" || fail "rlock ls --json failed"
    python3 - "$WORK/json" <<'PY' || fail "ls --json"
import json, sys
doc = json.load(open(sys.argv[1]))
kinds = {o["name"]: o for o in doc["objects"]}
want = {"cli:ls:lock": "lock", "cli:ls:fair": "fair_lock", "cli:ls:rw": "read_write_lock",
        "cli:ls:psem": "permit_semaphore", "cli:ls:latch": "latch", "cli:ls:sem": "semaphore",
        "cli:ls:counter": "semaphore_or_latch"}
for name, kind in want.items():
    assert kinds[name]["kind"] == kind, (name, kinds[name])
assert kinds["cli:ls:fair"]["queue"] == 1 and kinds["cli:ls:fair"]["waiters"] == 1
assert kinds["cli:ls:rw"]["mode"] == "read" and len(kinds["cli:ls:rw"]["holders"]) == 2
assert kinds["cli:ls:psem"]["value"] == 2 and kinds["cli:ls:psem"]["taken"] == 1
assert kinds["cli:ls:latch"]["value"] == 2 and kinds["cli:ls:latch"]["waiters"] == 1
assert kinds["cli:ls:lock"]["ttl_ms"] > 0 and kinds["cli:ls:lock"]["holders"][0]["holds"] == 1
assert kinds["cli:ls:evil"]["holders"][0]["owner"] == "x\u001b]0;pwned\u0007"
assert doc["truncated"] is False and doc["keys_scanned"] > 0
PY
    # A pattern: only what it matches.
    "$RLOCK" ls 'cli:ls:l*' >"$WORK/some"
    cat "$WORK/some"
    [ "$(wc -l <"$WORK/some")" = 2 ] && grep -q '^cli:ls:lock:' "$WORK/some" &&
        grep -q '^cli:ls:latch:' "$WORK/some" || fail "the pattern cli:ls:l* did not pick the lock and the latch"
    # --limit: stops, says so, still lists what it saw.
    run "$RLOCK" ls --limit 2 >"$WORK/limited" 2>"$WORK/limit.err"
    [ "$rc" -eq 0 ] || fail "ls --limit 2 gave $rc"
    grep -q 'stopped after --limit 2 keys' "$WORK/limit.err" || fail "no word of the limit"
    "$RLOCK" ls --json --limit 2 | grep -q '"truncated":true' || fail "json: not truncated"
    run "$RLOCK" ls --limit 0
    [ "$rc" -eq 64 ] || fail "--limit 0 gave $rc, not 64"
    run "$RLOCK" ls --address redis://127.0.0.1:1
    [ "$rc" -eq 69 ] || fail "an unreachable server gave $rc, not 69"
    # SCAN, never KEYS.
    grep -q '"SCAN"' "$WORK/monitor" || fail "no SCAN seen"
    ! grep -qi '"KEYS"' "$WORK/monitor" || fail "rlock ls sent KEYS"
    # A server answering SCAN with an integer: refused, 69.
    start_reply_proxy SCAN ':1\r\n'
    run "$RLOCK" ls --address "$proxy" 2>"$WORK/hostile.err"
    [ "$rc" -eq 69 ] || fail "a SCAN answered with an integer gave $rc, not 69"
    grep -q 'unexpected reply to SCAN' "$WORK/hostile.err" || fail "no word of the bad reply"
    ;;
doctor)
    # A healthy server: every check ok, status 0.
    run "$RLOCK" doctor >"$WORK/out"
    cat "$WORK/out"
    [ "$rc" -eq 0 ] || fail "doctor of a healthy server gave $rc, not 0"
    for check in reachable authenticated tls server eval script_load evalsha noscript_fallback \
        pubsub replicas round_trip clock maxmemory_policy; do
        grep -q "^ok    $check: " "$WORK/out" || fail "no ok for $check"
    done
    grep -Eq '^ok    round_trip: p50 [0-9.]+ ms, p99 [0-9.]+ ms over 300 PINGs' "$WORK/out" ||
        fail "no round trip percentiles"
    grep -Eq '^ok    server: redis [0-9]+\.[0-9]+\.[0-9]+ \(standalone\), role master$' "$WORK/out" ||
        fail "no server version"
    "$RLOCK" doctor --json >"$WORK/json"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["worst"]=="ok"; assert all(c["verdict"]=="ok" and c["fix"] is None for c in d["checks"]), d' \
        "$WORK/json" || fail "doctor --json"
    # Unreachable, and a wrong password: fail, 69, the password hidden.
    run "$RLOCK" doctor --address redis://127.0.0.1:1 >"$WORK/down"
    [ "$rc" -eq 69 ] || fail "an unreachable server gave $rc, not 69"
    grep -q '^fail  reachable: ' "$WORK/down" || fail "no failed reachable check"
    port=${RLOCK_ADDRESS##*:}
    redis-cli -p "$port" ACL SETUSER cli-doc on '>right' '~*' '&*' +@all >/dev/null
    run "$RLOCK" doctor --address "redis://cli-doc:s3cr3t@127.0.0.1:$port" >"$WORK/auth" 2>&1
    cat "$WORK/auth"
    [ "$rc" -eq 69 ] || fail "a wrong password gave $rc, not 69"
    grep -q '^fail  authenticated: redis://cli-doc:\*\*\*@' "$WORK/auth" || fail "no failed authenticated check"
    ! grep -q s3cr3t "$WORK/auth" || fail "the password was shown"
    run "$RLOCK" doctor --address "redis://cli-doc:right@127.0.0.1:$port" >"$WORK/user"
    grep -q '^ok    authenticated: as user "cli-doc"$' "$WORK/user" || fail "not logged in as cli-doc"
    run "$RLOCK" doctor cli:name
    [ "$rc" -eq 64 ] || fail "doctor with a name gave $rc, not 64"
    # A server whose INFO holds terminal escapes: shown escaped.
    start_reply_proxy INFO '$44\r\nredis_version:7.0.0\x1b]0;pwned\x07\r\nrole:master\r\n\r\n'
    run "$RLOCK" doctor --address "$proxy" >"$WORK/hostile" 2>&1
    cat "$WORK/hostile"
    no_control_bytes "$WORK/hostile" "rlock doctor"
    grep -q 'server: redis 7.0.0\\x1b\]0;pwned\\x07' "$WORK/hostile" || fail "the version was not shown escaped"
    ;;
doctor_acl)
    # A user that may not run scripts: eval, evalsha and the NOSCRIPT
    # fallback fail (status 2); one with no channels: pubsub fails.
    port=${RLOCK_ADDRESS##*:}
    redis-cli -p "$port" ACL SETUSER u on '>pw' '~*' '&*' +@all -eval -evalsha >/dev/null
    run "$RLOCK" doctor --address "redis://u:pw@127.0.0.1:$port" >"$WORK/out"
    cat "$WORK/out"
    [ "$rc" -eq 2 ] || fail "a user without EVAL gave $rc, not 2"
    for check in eval evalsha noscript_fallback; do
        grep -q "^fail  $check: .*NOPERM" "$WORK/out" || fail "no failed $check"
    done
    grep -q '^      fix: let this user run scripts: ACL SETUSER' "$WORK/out" || fail "no fix"
    grep -q '^ok    pubsub: ' "$WORK/out" || fail "pubsub should pass for u"
    redis-cli -p "$port" ACL SETUSER nochan on '>pw' '~*' resetchannels +@all >/dev/null
    run "$RLOCK" doctor --json --address "redis://nochan:pw@127.0.0.1:$port" >"$WORK/json"
    [ "$rc" -eq 2 ] || fail "a user without channels gave $rc, not 2"
    python3 -c 'import json,sys; d={c["check"]:c for c in json.load(open(sys.argv[1]))["checks"]}; assert d["pubsub"]["verdict"]=="fail" and "NOPERM" in d["pubsub"]["reason"] and d["pubsub"]["fix"]; assert d["eval"]["verdict"]=="ok"' \
        "$WORK/json" || fail "pubsub did not fail for a user without channels"
    ;;
doctor_eviction)
    # A policy that evicts keys: warn, status 1; noeviction: ok.
    port=${RLOCK_ADDRESS##*:}
    for policy in allkeys-lru volatile-lru allkeys-random; do
        redis-cli -p "$port" CONFIG SET maxmemory-policy "$policy" >/dev/null
        run "$RLOCK" doctor >"$WORK/out"
        [ "$rc" -eq 1 ] || fail "maxmemory-policy $policy gave $rc, not 1"
        grep -q "^warn  maxmemory_policy: maxmemory-policy $policy " "$WORK/out" ||
            fail "no warning for $policy"
    done
    grep -q 'fix: CONFIG SET maxmemory-policy noeviction' "$WORK/out" || fail "no fix"
    redis-cli -p "$port" CONFIG SET maxmemory-policy noeviction >/dev/null
    run "$RLOCK" doctor >"$WORK/out"
    [ "$rc" -eq 0 ] || fail "noeviction gave $rc, not 0"
    ;;
doctor_clock)
    # A server whose clock is an hour ahead (TIME answered by the reply
    # proxy; the rest is the real server): the clock check warns.
    ahead=$(($(date +%s) + 3600))
    start_reply_proxy TIME "*2\\r\\n\$${#ahead}\\r\\n${ahead}\\r\\n\$1\\r\\n0\\r\\n"
    run "$RLOCK" doctor --address "$proxy" >"$WORK/out"
    cat "$WORK/out"
    [ "$rc" -eq 1 ] || fail "a clock an hour off gave $rc, not 1"
    grep -Eq '^warn  clock: the server.s clock is 3[56][0-9]{5}\.[0-9] ms ahead of this host.s' "$WORK/out" ||
        fail "no clock warning"
    ;;
doctor_replicas)
    # A replica of the private server: its lag and WAIT, as single-server
    # mode and through a sentinel; a replica given as the address; a
    # stopped replica (WAIT unanswered); a master without replicas behind
    # a sentinel.
    port=${RLOCK_ADDRESS##*:}
    # A sentinel monitoring the private server as "cdoc", on port $sport.
    start_sentinel cdoc "$port"
    sentinel=(--master-name cdoc --sentinels "redis://127.0.0.1:$sport")
    run "$RLOCK" doctor "${sentinel[@]}" >"$WORK/none"
    cat "$WORK/none"
    [ "$rc" -eq 1 ] || fail "a sentinel-monitored master without replicas gave $rc, not 1"
    grep -q "^ok    sentinel: the sentinels name redis://127.0.0.1:$port as master \"cdoc\"$" \
        "$WORK/none" || fail "no sentinel check"
    grep -q '^warn  replicas: none: when this master fails' "$WORK/none" || fail "no warning of no replica"
    run "$RLOCK" doctor >"$WORK/single"
    grep -q '^ok    replicas: none: single-server mode' "$WORK/single" || fail "single-server mode without replicas"
    # rlock ls through the sentinel.
    redis-cli -p "$port" SET cli:sent:sem 3 >/dev/null
    "$RLOCK" ls "${sentinel[@]}" 'cli:sent:*' >"$WORK/ls"
    grep -q '^cli:sent:sem: semaphore or latch, value 3, 0 waiters$' "$WORK/ls" || fail "ls through the sentinel"

    # A replica, in sync at once (no diskless sync delay).
    redis-cli -p "$port" CONFIG SET repl-diskless-sync-delay 0 >/dev/null
    up=0
    for _ in 1 2 3 4 5; do # a free port: another test may take it meanwhile
        rport=$(free_port)
        redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" \
            --replicaof 127.0.0.1 "$port" >"$WORK/replica.log" 2>&1 &
        replica=$!
        replica_answers() { [ "$(redis-cli -p "$rport" PING 2>/dev/null)" = PONG ]; }
        retry 50 replica_answers && up=1 && break
    done
    [ "$up" = 1 ] || fail "the replica did not start: $(tr '\n' ' ' <"$WORK/replica.log")"
    online() { redis-cli -p "$port" INFO replication | grep -q "port=$rport,state=online"; }
    retry 200 online || fail "the replica never came online: $(tr '\n' ' ' <"$WORK/replica.log")"
    run "$RLOCK" doctor "${sentinel[@]}" >"$WORK/one"
    cat "$WORK/one"
    [ "$rc" -eq 0 ] || fail "a master with a replica in sync gave $rc, not 0"
    grep -Eq "^ok    replicas: 1 connected, 1 online, largest lag [01] s; WAIT 1 1000 answered 1 in [0-9]+ ms: check_lock_synced_slaves' WAIT" \
        "$WORK/one" || fail "no replica check"
    run "$RLOCK" doctor --address "redis://127.0.0.1:$rport" >"$WORK/onreplica"
    [ "$rc" -eq 2 ] || fail "doctor of a replica gave $rc, not 2"
    grep -q '^fail  server: .*role slave$' "$WORK/onreplica" || fail "no failed server check for a replica"

    # The replica stopped: WAIT times out, the check warns.
    kill -STOP "$replica"
    run "$RLOCK" doctor "${sentinel[@]}" >"$WORK/stopped"
    kill -CONT "$replica"
    cat "$WORK/stopped"
    [ "$rc" -eq 1 ] || fail "a stopped replica gave $rc, not 1"
    grep -Eq '^warn  replicas: 1 connected, .*WAIT 1 1000 answered 0 in [0-9]+ ms: with check_lock_synced_slaves 1' \
        "$WORK/stopped" || fail "no warning of an unanswered WAIT"
    kill "$replica"
    ;;
doctor_cluster)
    # Redis 7: slots covered, masters reachable, sharded pub/sub picked by
    # auto; rlock ls finds objects on every master; then a master killed:
    # the slots and nodes checks fail.
    start_cluster redis-server --cluster-node-timeout 1000 # a killed node flagged fail soon
    run "$RLOCK" doctor >"$WORK/out"
    cat "$WORK/out"
    grep -q '^ok    cluster_slots: state ok, 16384 of 16384 slots assigned, 0 failing' "$WORK/out" ||
        fail "no ok for the slots"
    grep -q '^ok    cluster_nodes: 3 masters, 0 unreachable from here; 0 nodes flagged fail$' \
        "$WORK/out" || fail "no ok for the nodes"
    grep -q '^ok    sharded_pubsub: sharded pub/sub (SSUBSCRIBE, SPUBLISH) is supported; --sharded-subscription auto picks sharded$' \
        "$WORK/out" || fail "no word of sharded pub/sub"
    grep -q '^ok    sharded_pubsub_works: SSUBSCRIBE and SPUBLISH work$' "$WORK/out" ||
        fail "SSUBSCRIBE and SPUBLISH not checked"
    [ "$(grep -c '^warn  replicas: redis://127.0.0.1:[0-9]*: none: when this master fails' "$WORK/out")" = 3 ] ||
        fail "not one replicas warning per master"
    [ "$rc" -eq 1 ] || fail "a cluster without replicas gave $rc, not 1"
    # Objects on different masters, all listed, each with its master.
    for i in $(seq 12); do
        "$RLOCK" latch set "cli:cl:$i" "$i" >/dev/null
    done
    "$RLOCK" ls 'cli:cl:*' >"$WORK/ls"
    cat "$WORK/ls"
    [ "$(grep -c '^cli:cl:[0-9]*: semaphore or latch, value [0-9]*, 0 waiters, on redis://127.0.0.1:[0-9]*$' "$WORK/ls")" = 12 ] ||
        fail "not every latch of the cluster was listed"
    [ "$(sed 's/.* on //' "$WORK/ls" | sort -u | wc -l)" -ge 2 ] || fail "the latches are all on one master"
    # A master down: its slots fail, the node is flagged, and unreachable.
    kill -KILL "${node_pid[2]}"
    flagged() { redis-cli -p "${nodes[0]}" CLUSTER NODES | grep -q "127.0.0.1:${nodes[2]}.* master,fail "; }
    retry 200 flagged || fail "the killed master was never flagged fail"
    run "$RLOCK" doctor --json >"$WORK/down.json"
    [ "$rc" -eq 2 ] || fail "a cluster with a master down gave $rc, not 2"
    python3 - "$WORK/down.json" <<'PY' || fail "the slots and nodes checks did not fail"
import json, sys
checks = {c["check"]: c for c in json.load(open(sys.argv[1]))["checks"]}
assert checks["cluster_slots"]["verdict"] == "fail", checks["cluster_slots"]
assert checks["cluster_nodes"]["verdict"] == "fail", checks["cluster_nodes"]
assert "1 unreachable" in checks["cluster_nodes"]["reason"], checks["cluster_nodes"]
assert "1 nodes flagged fail" in checks["cluster_nodes"]["reason"], checks["cluster_nodes"]
PY
    ;;
doctor_cluster62)
    # Redis 6.2 (no sharded pub/sub): auto picks classic, on cannot work.
    # Its redis-server comes from $RT_REDIS62_SERVER; without it, skipped.
    if [ -z "${RT_REDIS62_SERVER:-}" ]; then
        echo "SKIP: RT_REDIS62_SERVER (a Redis 6.2 redis-server) is not set"
        exit 77
    fi
    "$RT_REDIS62_SERVER" --version | grep -q 'v=6\.2\.' || fail "$RT_REDIS62_SERVER is not Redis 6.2"
    start_cluster "$RT_REDIS62_SERVER" --cluster-node-timeout 1000
    run "$RLOCK" doctor >"$WORK/out"
    cat "$WORK/out"
    grep -q '^ok    sharded_pubsub: no sharded pub/sub (Redis < 7); --sharded-subscription auto picks classic SUBSCRIBE and PUBLISH$' \
        "$WORK/out" || fail "auto on Redis 6.2"
    grep -Eq '^ok    server: redis 6\.2\.[0-9]+ \(cluster\)' "$WORK/out" || fail "no Redis 6.2 server"
    ! grep -q 'sharded_pubsub_works' "$WORK/out" || fail "SSUBSCRIBE tried on Redis 6.2"
    grep -q '^ok    pubsub: SUBSCRIBE and PUBLISH work$' "$WORK/out" || fail "no classic pub/sub check"
    run "$RLOCK" doctor --sharded-subscription on >"$WORK/on"
    [ "$rc" -eq 2 ] || fail "--sharded-subscription on with Redis 6.2 gave $rc, not 2"
    grep -q '^fail  sharded_pubsub: .*--sharded-subscription on cannot work here$' "$WORK/on" ||
        fail "no failed sharded_pubsub"
    ;;
doctor_tls)
    # A TLS-only server of the case's own: a certificate good for a year
    # (ok, its expiry shown), one that expires in 2 days (warn),
    # --tls-insecure (warn), a CA it does not chain to (fail, 69).
    (cd "$WORK" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
            -out ca.crt -days 400 -subj /CN=cli-ca &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout other.key \
            -out other.crt -days 400 -subj /CN=other-ca &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key \
            -out srv.csr -subj /CN=127.0.0.1 &&
        printf 'subjectAltName=IP:127.0.0.1\n' >srv.ext &&
        openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
            -extfile srv.ext -out year.crt &&
        openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
            -extfile srv.ext -out short.crt) >"$WORK/openssl.log" 2>&1 ||
        fail "openssl: $(cat "$WORK/openssl.log")"
    start_tls_server year
    export RLOCK_ADDRESS="rediss://127.0.0.1:$tport"
    run "$RLOCK" doctor --tls-ca "$WORK/ca.crt" >"$WORK/year"
    cat "$WORK/year"
    [ "$rc" -eq 0 ] || fail "a certificate good for a year gave $rc, not 0"
    grep -Eq '^ok    tls: the server.s certificate chains to the CAs and names the host; it expires on [0-9-]+ [0-9:]+ UTC, in 36[45] days$' \
        "$WORK/year" || fail "no expiry shown"
    redis-cli --tls --cacert "$WORK/ca.crt" -p "$tport" CONFIG SET tls-cert-file "$WORK/short.crt" >/dev/null
    run "$RLOCK" doctor --tls-ca "$WORK/ca.crt" >"$WORK/short"
    cat "$WORK/short"
    [ "$rc" -eq 1 ] || fail "a certificate expiring in 2 days gave $rc, not 1"
    grep -Eq '^warn  tls: .* in [12] days?$' "$WORK/short" || fail "no warning of the expiry"
    grep -q '^      fix: renew the server.s certificate' "$WORK/short" || fail "no fix"
    run "$RLOCK" doctor --tls-insecure >"$WORK/insecure"
    [ "$rc" -eq 1 ] || fail "--tls-insecure gave $rc, not 1"
    grep -q '^warn  tls: the server.s certificate is not verified (--tls-insecure)' "$WORK/insecure" ||
        fail "no warning of --tls-insecure"
    run "$RLOCK" doctor --tls-ca "$WORK/other.crt" >"$WORK/other"
    cat "$WORK/other"
    [ "$rc" -eq 69 ] || fail "a certificate that does not chain to the CA gave $rc, not 69"
    grep -q '^fail  reachable: .*certificate verification failed' "$WORK/other" || fail "no failed verification"
    ;;
alloc_failures)
    # Memory running out at any allocation of a command (tests/cli/
    # fail_alloc.c makes every allocation from the Nth on fail): the
    # command ends with a status and a message of its own, never a crash
    # (a signal), uthash's silent exit(-1) (255) or no word on stderr.
    # Two libraries end the process themselves when memory runs out: libev
    # aborts (SIGABRT, "(libev) cannot allocate": it has no error path for
    # it), and hiredis 0.14 aborts or crashes in a connect or after a write
    # (it checks no allocation there). So an abort is let pass and counted,
    # and with hiredis 0.14 any signal; with hiredis 1.x a crash fails.
    # Not swept: exec and the commands on the library's pub/sub, where
    # hiredis 1.2 too can crash (a failed copy of a SUBSCRIBE's callback
    # leaves NULL in its channel table, which its disconnect reads).
    [ -n "${RT_FAIL_ALLOC:-}" ] || fail "RT_FAIL_ALLOC (the preload library) is not set"
    signals_pass=134
    [[ "${RT_HIREDIS_VERSION:-}" == 0.* ]] && signals_pass=all
    signals=0
    port=${RLOCK_ADDRESS##*:}
    "$RLOCK" exec cli:oom:lock -- sleep 60 &
    wait_locked cli:oom:lock
    "$RLOCK" latch set cli:oom:latch 2 >/dev/null
    "$RLOCK" exec --semaphore cli:oom:psem --permits 3 -- true
    for i in $(seq 8); do
        redis-cli -p "$port" HSET "cli:oom:h$i" "owner-$i" 1 >/dev/null
    done
    # Runs rlock "$@" failing from every allocation on, 1 in $1 of them;
    # its status with nothing failing (status of a semaphore: 2) is its own.
    sweep() {
        local step="$1" total n base
        shift
        run env RT_ALLOC_COUNT="$WORK/count" LD_PRELOAD="$RT_FAIL_ALLOC" "$RLOCK" "$@" >/dev/null
        base=$rc
        [ "$base" -lt 64 ] || fail "rlock $* gives $base with nothing failing"
        total=$(cat "$WORK/count")
        for ((n = 0; n <= total; n += step)); do
            run env RT_FAIL_ALLOC_AFTER="$n" LD_PRELOAD="$RT_FAIL_ALLOC" timeout 20 "$RLOCK" "$@" \
                >/dev/null 2>"$WORK/err"
            if [ "$rc" -gt 128 ] && [ "$rc" -lt 255 ] &&
                { [ "$signals_pass" = all ] || [ "$rc" = "$signals_pass" ]; }; then
                signals=$((signals + 1))
            elif [ "$rc" -ge 124 ] || { [ "$rc" -ne "$base" ] && [ ! -s "$WORK/err" ]; }; then
                cat "$WORK/err"
                fail "rlock $* with allocation $n on failing: status $rc"
            fi
        done
        echo "rlock $*: $total allocations, every ${step}th made to fail"
    }
    sweep 1 ls
    sweep 5 ls --json
    sweep 1 status cli:oom:lock
    sweep 3 status cli:oom:psem
    sweep 10 watch --timeout 1 --interval 20 cli:oom:lock
    echo "runs ended by libev's or hiredis's own abort (hiredis ${RT_HIREDIS_VERSION:-?}): $signals"
    ;;
*)
    fail "no such case"
    ;;
esac
echo "PASS ($CASE)"
