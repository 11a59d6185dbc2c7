# shellcheck shell=bash
# The step runner of the GPU check scripts (gpu-check.sh, gpu2-check.sh),
# which source it after setting
#   LOGS    the log folder (made here; its old *.log removed)
#   BUDGET  seconds for all steps
# and, from the caller's environment,
#   STEPS      the names of the steps to run (unset: every step)
#   STEPS_DRY  1: print each step's limit and command instead of running it
#
# step NAME CAP CMD: runs the shell command string CMD (functions used in
# it are exported) under min(CAP, budget left) seconds, if NAME is in
# STEPS; output to the console and to LOGS/NAME.log. Returns CMD's status
# (124: timed out; 0 for a step not picked), 1 when the budget is spent.
# steps_summary TITLE: prints the summary (the last lines: each step's
# result, then "TITLE: PASS" or "TITLE: FAIL"), copies the logs to $OUT
# when it is a folder (summary.log + gpu-logs.tar.gz), returns 0 only if every step passed.
mkdir -p "$LOGS"
rm -f "$LOGS"/*.log
T0=$(date +%s)
FAILED=0
SUMMARY=()

left() { echo $((BUDGET - ($(date +%s) - T0))); }

step() {
  local name=$1 cap=$2 cmd=$3 limit t rc
  if [ -n "${STEPS:-}" ]; then
    case " $STEPS " in *" $name "*) ;; *) return 0 ;; esac
  fi
  limit=$(left)
  [ "$limit" -gt "$cap" ] && limit=$cap
  if [ "$limit" -le 5 ]; then
    SUMMARY+=("$name: SKIPPED (time budget spent)")
    FAILED=1
    return 1
  fi
  echo "=== $name (limit ${limit}s)"
  if [ "${STEPS_DRY:-0}" = 1 ]; then
    printf '%s\n' "$cmd" | sed 's/^/  | /'
    SUMMARY+=("$name: dry run")
    return 0
  fi
  t=$(date +%s)
  timeout --kill-after=10 "$limit" bash -c "$cmd" 2>&1 | tee -a "$LOGS/$name.log"
  rc=${PIPESTATUS[0]}
  t=$(($(date +%s) - t))
  case $rc in
    0) SUMMARY+=("$name: ok (${t}s)") ;;
    124) SUMMARY+=("$name: TIMED OUT after ${t}s") ;;
    *) SUMMARY+=("$name: FAILED rc=$rc (${t}s)") ;;
  esac
  [ "$rc" -eq 0 ] || FAILED=1
  return "$rc"
}

steps_summary() {
  {
    echo "=== summary ($(($(date +%s) - T0))s)"
    printf '%s\n' "${SUMMARY[@]}"
    [ "$FAILED" -eq 0 ] && echo "$1: PASS" || echo "$1: FAIL"
  } | tee "$LOGS/summary.log"
  # The device tool returns at most 8 files from $OUT: the summary, and
  # every log in one archive.
  if [ -d "${OUT:-}" ]; then
    cp "$LOGS/summary.log" "$OUT"/ 2>/dev/null
    tar -czf "$OUT/gpu-logs.tar.gz" -C "$LOGS" . 2>/dev/null
  fi
  return "$FAILED"
}
