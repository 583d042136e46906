#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME (default 600s), two at a time,
# one worker each, at the lowest CPU priority, and prints a Markdown table of the
# results (docs/reliability.md, "The 10-minute campaign").
#   bench/fuzz.sh [LOGDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
logs=${1:-$(mktemp -d)}
fuzztime=${FUZZTIME:-600s}
mkdir -p "$logs"
grep -rno '^func Fuzz[A-Za-z0-9_]*' --include='*_test.go' . |
  awk -F: '{d=$1; sub(/\/[^\/]*$/,"",d); f=$3; sub(/func /,"",f); print d" "f}' | sort > "$logs/targets.txt"
run_one() {
  local d=$1 f=$2 log
  log="$LOGS/$(echo "$d" | tr '/.' '__')-$f.log"
  nice -n 19 go test "$d" -run '^$' -fuzz "^$f\$" -fuzztime "$FUZZTIME" -parallel 1 >"$log" 2>&1
  echo "rc=$?" >>"$log"
}
export -f run_one
export LOGS=$logs FUZZTIME=$fuzztime
xargs -P 2 -L 1 bash -c 'run_one "$0" "$1"' <"$logs/targets.txt" || true
echo "| package | target | time | executions | new corpus entries | result |"
echo "|---|---|---|---|---|---|"
for f in "$logs"/*.log; do
  b=$(basename "$f" .log)
  last=$(grep '^fuzz: elapsed' "$f" | tail -1 || true)
  rc=$(grep '^rc=' "$f" | sed 's/rc=//')
  res=pass; [ "$rc" != 0 ] && res="FAIL (see $f)"
  echo "| ${b%-Fuzz*} | ${b##*-} | $(echo "$last" | sed -n 's/fuzz: elapsed: \([^,]*\),.*/\1/p') |" \
    "$(echo "$last" | sed -n 's/.*execs: \([0-9]*\).*/\1/p') | $(echo "$last" | sed -n 's/.*new interesting: \([0-9]*\).*/\1/p') | $res |"
done
