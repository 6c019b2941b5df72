# Helpers of the CI scripts (sourced by .ci/run, .ci/sanitizers.sh and
# .ci/releases.sh): timed steps recorded for one table, background lanes,
# the calibration line, and the README's command blocks.

# Every step of the run, one line each (start offset, seconds, status, lane,
# depth, name), shared by the scripts a run calls and by its lanes.
if [ -z "${CI_STEPS_FILE:-}" ]; then
    CI_STEPS_FILE=$(mktemp "${TMPDIR:-/tmp}/ci-steps.XXXXXX")
fi
: "${CI_START_EPOCH:=$(date +%s)}"
: "${CI_LANE:=main}"
: "${CI_DEPTH:=0}"
export CI_STEPS_FILE CI_START_EPOCH CI_LANE CI_DEPTH

# step [--budget ID] NAME COMMAND...: runs COMMAND, prints and records its
# duration and CPU seconds, and, with --budget, the step's budget: ID's line
# of .ci/budget (minutes on a day whose calibration is 1 s) scaled by this
# run's calibration (CI_CALIBRATION_S), and whether the step went over it.
# A failing step ends the script that runs it; in .ci/run's main lane it
# prints the table first. COMMAND is an external command, or a shell
# function whose commands are joined with && (bash ignores set -e inside a
# function called from a || list, so a function must carry its own
# failures).
step() {
    local budget=- name start status=0 cpu
    if [ "$1" = --budget ]; then
        budget=$2
        shift 2
        ci_budget_minutes "$budget" > /dev/null || return 1
    fi
    name=$1
    shift
    start=$(date +%s)
    ci_cpu_seconds
    cpu=$CI_CPU
    echo
    echo "== $name"
    CI_DEPTH=$((CI_DEPTH + 1))
    "$@" || status=$?
    CI_DEPTH=$((CI_DEPTH - 1))
    ci_cpu_seconds
    ci_record "$name" "$start" "$status" $(((CI_CPU - cpu + 500) / 1000)) "$budget"
    if [ "$status" -ne 0 ]; then
        echo "FAILED: $name (exit $status)" >&2
        if [ "$CI_LANE" = main ] && [ "$CI_DEPTH" = 0 ] && [ -n "${CI_TOP:-}" ]; then
            ci_table >&2
        fi
        exit "$status"
    fi
}

ci_record() {  # NAME START-EPOCH STATUS CPU-SECONDS BUDGET-ID
    local seconds=$(($(date +%s) - $2)) note=""
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' $(($2 - CI_START_EPOCH)) "$seconds" "$3" \
        "$CI_LANE" "$CI_DEPTH" "$1" "$4" "$5" >> "$CI_STEPS_FILE"
    if [ "$5" != - ]; then
        note="; $(ci_budget_note "$5" "$seconds")"
    fi
    if [ "$3" != 0 ]; then
        note="$note (exit $3)"
    fi
    echo "-- $1: $(ci_duration "$seconds"), $4 CPU-s$note"
}

# The budget (.ci/budget): minutes on a day whose calibration is 1 s, per
# step, each step in the lane that runs it. docs/building.md#ci says what
# each step proves; tests/test_ci.py checks that the budgets fit the run's.
CI_BUDGET_FILE=${CI_BUDGET_FILE:-$(dirname "${BASH_SOURCE[0]}")/budget}

ci_budget_minutes() {  # ID: its minutes; fails naming an ID the file lacks
    local minutes
    minutes=$(awk -v id="$1" '!/^#/ && $1 == id { print $3 }' "$CI_BUDGET_FILE")
    if [ -z "$minutes" ]; then
        echo "FAILED: no budget '$1' in $CI_BUDGET_FILE" >&2
        return 1
    fi
    echo "$minutes"
}

ci_scaled() {  # MINUTES: seconds at this run's calibration
    awk -v m="$1" -v c="${CI_CALIBRATION_S:-1}" 'BEGIN { printf "%d\n", m * 60 * c + 0.5 }'
}

ci_budget_note() {  # ID SECONDS: "budget B min x C s = M min SS s[, OVER]"
    local minutes scaled
    minutes=$(ci_budget_minutes "$1") || return 1
    scaled=$(ci_scaled "$minutes")
    printf 'budget %s min x %s = %s' "$minutes" "${CI_CALIBRATION_S:-1}" "$(ci_duration "$scaled")"
    if [ "$2" -gt "$scaled" ]; then
        printf ', OVER'
    fi
    echo
}

# ci_cpu_seconds: sets CI_CPU to the user+system CPU time, in milliseconds,
# of every child this shell has waited for (bash's `times`, second line): a
# step's CPU seconds are the difference across it. The run is CPU-bound on
# few cores, so a step's wall time alone hides what it costs the other lane.
# (`times` must run in this shell, not in a $(...) subshell, whose children
# start from zero.)
ci_cpu_seconds() {
    local file=$CI_STEPS_FILE.times.$BASHPID
    times > "$file"
    read -r CI_CPU < <(awk 'NR == 2 {
        split($1, u, /[ms]/); split($2, s, /[ms]/)
        printf "%d\n", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 }' "$file")
    rm -f "$file"
}

ci_duration() {  # SECONDS -> "M min SS s"
    printf '%d min %02d s' $(($1 / 60)) $(($1 % 60))
}

# lane_start NAME STEP-NAME COMMAND...: `step STEP-NAME COMMAND...` in the
# background, in a session and process group of its own (lane_stop ends all
# of it), its output streamed with a `[NAME]` prefix on every line. The lane
# is not a child of this shell (a subshell starts it and exits): bash would
# otherwise add the whole lane's CPU seconds to whichever step of this shell
# runs when it reaps the lane. It writes its exit status to a file that
# lane_wait reads.
declare -A CI_LANE_FILES=()
lane_start() {
    local lane=$1 file=$CI_STEPS_FILE.lane.$1
    shift
    rm -f "$file" "$file.pid"
    (
        CI_LANE=$lane setsid bash -c '
            echo $$ > "$0.pid"
            status=0
            bash -c "set -euo pipefail; source .ci/lib.sh; step \"\$@\"" lane "$@" || status=$?
            echo "$status" > "$0"' "$file" "$@" > >(sed -u "s/^/[$lane] /") 2>&1 &
    )
    CI_LANE_FILES[$lane]=$file
}

# ci_scripts "SCRIPT [ARG...]"...: each script in turn (`bash SCRIPT
# ARG...`, its steps timed by itself), stopping at the first that fails: a
# lane's jobs.
ci_scripts() {
    local script
    for script in "$@"; do
        # shellcheck disable=SC2086 # a script and its words
        bash $script || return $?
    done
}

# lane_wait NAME: waits for the lane; its exit status (1 when it ended
# without one: killed).
lane_wait() {
    local file=${CI_LANE_FILES[$1]} pid
    while [ ! -s "$file" ]; do
        pid=$(cat "$file.pid" 2> /dev/null || true)
        if [ -n "$pid" ] && ! kill -0 "$pid" 2> /dev/null && [ ! -s "$file" ]; then
            echo "FAILED: lane $1 ended without an exit status" >&2
            unset "CI_LANE_FILES[$1]"
            return 1
        fi
        sleep 1
    done
    unset "CI_LANE_FILES[$1]"
    return "$(cat "$file")"
}

lane_stop() {  # ends every lane still running (the run failed or was stopped)
    local file pid
    for file in "${CI_LANE_FILES[@]}"; do
        pid=$(cat "$file.pid" 2> /dev/null || true)
        if [ -n "$pid" ]; then
            kill -- "-$pid" 2> /dev/null || true
        fi
    done
}

# ci_calibrate: CI_CALIBRATION_LINE, the calibration line below, and
# CI_CALIBRATION_S, its seconds, for the budgets' scale (exported: the lanes
# and the scripts a run calls use the run's), unless the environment sets
# it. Call it in the shell that needs them, not in a $(...) subshell.
ci_calibrate() {
    CI_CALIBRATION_LINE=$(ci_calibration "$@")
    if [ -z "${CI_CALIBRATION_S:-}" ]; then
        CI_CALIBRATION_S=$(sed -E 's/.*\)" ([0-9.]+) s .*/\1/' <<< "$CI_CALIBRATION_LINE")
        export CI_CALIBRATION_S
    fi
}

# The time of a fixed piece of pure Python, and the cores: two runs on
# different days compare through it.
ci_calibration() {
    local python=${1:-python3}
    "$python" -c '
import os, platform, time
start = time.perf_counter()
sum(range(10**8))
seconds = time.perf_counter() - start
print(f"calibration: python -c \"sum(range(10**8))\" {seconds:.2f} s "
      f"(Python {platform.python_version()}), nproc {os.cpu_count()}")'
}

# The table of every step (children indented under the step that ran them),
# in the order they started (a step before the steps it ran), each with its
# CPU seconds and its budget scaled by the run's calibration (OVER where it
# took longer); then each lane's time against the sum of its steps' budgets,
# the whole run against the run's budget (.ci/budget's `run` line), and the
# calibration lines.
ci_table() {
    local offset seconds status lane depth name cpu budget indent scaled over
    echo
    echo "== CI steps (start: minutes into the run; lanes run side by side; CPU-s: user+system of the step's processes; budget: .ci/budget x calibration ${CI_CALIBRATION_S:-1} s)"
    printf '%6s  %-9s %-66s %12s %7s %12s  %s\n' start lane step time CPU-s budget status
    sort -s -t $'\t' -k1,1n -k5,5n "$CI_STEPS_FILE" |
        while IFS=$'\t' read -r offset seconds status lane depth name cpu budget; do
            indent=$(printf '%*s' $((2 * depth)) '')
            scaled="" over=""
            if [ "${budget:--}" != - ]; then
                scaled=$(ci_scaled "$(ci_budget_minutes "$budget")")
                [ "$seconds" -gt "$scaled" ] && over=", OVER budget"
                scaled=$(ci_duration "$scaled")
            fi
            printf '%3d:%02d  %-9s %-66s %12s %7s %12s  %s\n' $((offset / 60)) $((offset % 60)) \
                "$lane" "$indent$name" "$(ci_duration "$seconds")" "$cpu" "$scaled" \
                "$([ "$status" = 0 ] && echo ok || echo "FAILED ($status)")$over"
        done
    # Each lane: from its first step's start to its last step's end, and
    # the sum of its budgeted steps' budgets.
    awk -F '\t' -v file="$CI_BUDGET_FILE" -v c="${CI_CALIBRATION_S:-1}" '
        BEGIN { while ((getline line < file) > 0) if (line !~ /^#/) { split(line, f, /[ \t]+/); minutes[f[1]] = f[3] } }
        { first[$4] = ($4 in first && first[$4] < $1) ? first[$4] : $1
          if ($1 + $2 > last[$4]) last[$4] = $1 + $2
          if ($8 != "-" && $8 != "") budget[$4] += minutes[$8] * 60 * c }
        END { for (l in first) {
                t = last[l] - first[l]; b = int(budget[l] + 0.5)
                printf "%6s  %-9s %-66s %4d min %02d s %7s %5d min %02d s  %s\n", "", l, "the lane, first step to last",
                    t / 60, t % 60, "", b / 60, b % 60, (t > b ? "OVER budget" : "ok") } }' "$CI_STEPS_FILE" | sort -k1,1
    ci_cpu_seconds
    local whole=$(($(date +%s) - CI_START_EPOCH))
    scaled=$(ci_scaled "$(ci_budget_minutes run)")
    printf '%6s  %-9s %-66s %12s %7s %12s  %s\n' "" "" "the whole run" \
        "$(ci_duration "$whole")" $(((CI_CPU + 500) / 1000)) "$(ci_duration "$scaled")" \
        "$([ "$whole" -gt "$scaled" ] && echo "OVER budget" || echo ok)"
    local line
    for line in "${CI_CALIBRATION[@]}"; do
        echo "$line"
    done
}

# readme_block NAME: the command lines of the README's ```bash block between
# `<!-- ci: NAME -->` and `<!-- /ci: NAME -->` (fences and blank lines left
# out). Fails when the markers are missing or the block holds no command.
readme_block() {
    local name=$1 text
    text=$(awk -v first="<!-- ci: $name -->" -v last="<!-- /ci: $name -->" '
        $0 == first { inside = 1; next }
        $0 == last { inside = 0; found = 1; next }
        inside && !/^```/ && NF { print }
        END { exit found ? 0 : 1 }' README.md) || {
        echo "FAILED: README.md has no block between '<!-- ci: $name -->' and '<!-- /ci: $name -->'" >&2
        return 1
    }
    if [ -z "$text" ]; then
        echo "FAILED: README.md's '$name' block holds no command" >&2
        return 1
    fi
    printf '%s\n' "$text"
}

# run_line LINE: one README command line, in this shell (so an activated venv
# stays active); its status is the line's (a failure anywhere in an && list).
run_line() {
    echo "\$ $1"
    eval "$1"
}
