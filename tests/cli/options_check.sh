#!/usr/bin/env bash
# Keeps the three descriptions of the rlock command's options in step:
# `rlock --help`, the manual page (tools/rlock.1) and docs/cli.md.
#
#   options_check.sh RLOCK_BINARY RLOCK_1 CLI_MD
#
# From each it extracts which options each command (exec, status, unlock,
# watch) takes: an option described under a command is that command's, one
# described for every command (--help's "Every command:", the man page's
# .SS "Every command", cli.md's "Every command" and "Redis Sentinel and
# Redis Cluster") is every command's. Exits 1 listing each command and
# option that one of them has and another lacks.
#
# What counts as describing an option:
# - --help: a line "  --opt ..." (two spaces) in a section, an option on
#   the line that starts a command's section ("unlock   --force ..."), and
#   the usage lines ("rlock watch [--timeout MS] ...").
# - rlock.1: the tag line after .TP under .SH OPTIONS, and the SYNOPSIS.
# - cli.md: an option in `backquotes` that start with the option or with
#   "rlock " (`--wait MS`, `rlock status [--json] NAME`) in the section,
#   or in its heading;
#   in a shared section only options no command's section has (those are
#   mentions of a command's own option).
set -euo pipefail

RLOCK="$1"
MAN="$2"
MD="$3"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
COMMANDS="exec status unlock watch latch semaphore ls doctor"

# Reads "SECTION --opt" lines (SECTION a command or "all") on stdin and
# writes "COMMAND --opt" for every command, sorted and unique.
spread() {
    awk -v commands="$COMMANDS" '
        { pairs[NR] = $0; if ($1 != "all") own[$2] = 1 }
        END {
            n = split(commands, cmd, " ")
            for (i = 1; i <= NR; i++) {
                split(pairs[i], p, " ")
                if (p[1] != "all") {
                    print p[1], p[2]
                } else if (!(p[2] in own) || p[3] == "defined") {
                    for (j = 1; j <= n; j++) print cmd[j], p[2]
                }
            }
        }' | sort -u
}

# --help: sections start at a command's name or "Every command:".
"$RLOCK" --help >"$WORK/help.txt"
awk '
    /^Exit status:/ { section = ""; next }
    /^Every command:/ { section = "all"; next }
    /^(usage:| ) *rlock / {
        cmd = $0; sub(/^(usage:)? *rlock /, "", cmd); split(cmd, w, " ")
        s = (w[1] ~ /^--/) ? "all" : w[1]
        line = $0
        while (match(line, /--[a-z][a-z-]*[a-z]/)) {
            print s, substr(line, RSTART, RLENGTH), "defined"
            line = substr(line, RSTART + RLENGTH)
        }
        next
    }
    /^(exec|status|unlock|watch|latch|semaphore|ls|doctor) / {
        section = $1
        line = $0
        while (match(line, /--[a-z][a-z-]*[a-z]/)) {
            print section, substr(line, RSTART, RLENGTH)
            line = substr(line, RSTART + RLENGTH)
        }
        next
    }
    section != "" && /^  --[a-z]/ {
        match($0, /--[a-z][a-z-]*[a-z]/)
        print section, substr($0, RSTART, RLENGTH), "defined"
    }' "$WORK/help.txt" | spread >"$WORK/help"

# The man page: "\-" is "-".
sed 's/\\-/-/g' "$MAN" | awk '
    /^\.SH/ { part = $2; section = ""; tag = 0; next }
    part == "SYNOPSIS" && /^\.B rlock/ {
        section = ($3 == "" || $3 ~ /^--/) ? "all" : $3
    }
    part == "OPTIONS" && /^\.SS/ {
        section = ($0 ~ /Every command/) ? "all" : $2; next
    }
    part == "OPTIONS" && /^\.TP/ { tag = 1; next }
    (part == "SYNOPSIS" || (part == "OPTIONS" && tag)) && section != "" {
        line = $0
        while (match(line, /--[a-z][a-z-]*[a-z]/)) {
            print section, substr(line, RSTART, RLENGTH), "defined"
            line = substr(line, RSTART + RLENGTH)
        }
        tag = 0
    }' | spread >"$WORK/man"

# docs/cli.md: options in backquotes, by "## " section.
awk '
    /^## / {
        section = ""
        if ($0 ~ /^## rlock (exec|status|unlock|watch|latch|semaphore|ls|doctor)/) section = $3
        else if ($0 ~ /^## (Every command|Redis Sentinel and Redis Cluster)/) section = "all"
        line = $0
        while (section != "" && match(line, /--[a-z][a-z-]*[a-z]/)) {
            print section, substr(line, RSTART, RLENGTH)
            line = substr(line, RSTART + RLENGTH)
        }
        next
    }
    /^```/ { code = !code; next }
    section != "" && !code {
        line = $0
        while (match(line, /`[^`]*`/)) {
            span = substr(line, RSTART, RLENGTH)
            line = substr(line, RSTART + RLENGTH)
            if (span !~ /^`(--|rlock )/) continue # not `cmake --install`
            while (match(span, /--[a-z][a-z-]*[a-z]/)) {
                if (substr(span, RSTART + RLENGTH, 1) != "-") # not `--tls-*`
                    print section, substr(span, RSTART, RLENGTH)
                span = substr(span, RSTART + RLENGTH)
            }
        }
    }' "$MD" | spread >"$WORK/md"

sort -u "$WORK/help" "$WORK/man" "$WORK/md" >"$WORK/all"
status=0
while read -r cmd opt; do
    missing=()
    grep -qxF "$cmd $opt" "$WORK/help" || missing+=("rlock --help")
    grep -qxF "$cmd $opt" "$WORK/man" || missing+=("$MAN")
    grep -qxF "$cmd $opt" "$WORK/md" || missing+=("$MD")
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "rlock $cmd $opt: not in $(printf '%s, ' "${missing[@]}" | sed 's/, $//')" >&2
        status=1
    fi
done <"$WORK/all"

# What exec's command gets, in step in the manual page and docs/cli.md:
# each variable the binary puts in an environment ("RLOCK_...=") is in
# the man page's ENVIRONMENT and in cli.md; each signal cli.md's exec
# section names is named in the man page too.
sed 's/\\-/-/g' "$MAN" | awk '/^\.SH/ { env = ($2 == "ENVIRONMENT") } env' >"$WORK/man.env"
awk '/^## / { s = ($0 ~ /^## rlock exec/) } s' "$MD" >"$WORK/md.exec"
vars=$(grep -ao 'RLOCK_[A-Z_]*=' "$RLOCK" | tr -d = | sort -u || true)
[ -n "$vars" ] || { echo "$RLOCK: no RLOCK_...= found (RLOCK_NAME=, at least)" >&2 && status=1; }
for var in $vars; do
    grep -qw "$var" "$WORK/man.env" || { echo "$var: not in $MAN's ENVIRONMENT" >&2 && status=1; }
    grep -qw "$var" "$MD" || { echo "$var: not in $MD" >&2 && status=1; }
done
for sig in $(grep -o 'SIG[A-Z0-9]*' "$WORK/md.exec" | sort -u); do
    grep -qw "$sig" "$MAN" || { echo "$sig: in $MD's rlock exec, not in $MAN" >&2 && status=1; }
done
# Every command described in all three: --help's section, the man page's
# .SS, cli.md's "## rlock COMMAND" (a command with no option of its own
# would otherwise go unnoticed).
for cmd in $COMMANDS; do
    grep -q "^$cmd " "$WORK/help.txt" || { echo "rlock $cmd: no section in rlock --help" >&2; status=1; }
    grep -q "^\.SS $cmd\b" "$MAN" || { echo "rlock $cmd: no .SS in $MAN" >&2; status=1; }
    grep -q "^## rlock $cmd\b" "$MD" || { echo "rlock $cmd: no section in $MD" >&2; status=1; }
done
if [ "$status" -eq 0 ]; then
    echo "PASS: $(wc -l <"$WORK/all") command options, the same in all three;" \
        "exec's environment and signals in both"
fi
exit "$status"
