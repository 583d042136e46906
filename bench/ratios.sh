#!/usr/bin/env bash
# Regenerates the figures of docs/benchmarks.md: each section runs the benchmark
# (or memory test) a table there comes from, with the same flags, and prints the
# machine load (uptime) before and after it, as the doc reports with every figure.
# Ratios are always taken within one run against the baseline in the same run.
#
#   bench/ratios.sh                 every section (takes about an hour)
#   bench/ratios.sh scan check-tty  only these sections
#   bench/ratios.sh -l              list the sections
#
# BENCH_DIR is the 1.5M-entry fixture the scan, report and verify figures use
# (`fixtures generate --topics 50 --ledgers 20 --entries 1000`); it is generated
# there when missing. LOGDIR (default: a new temp dir) keeps every section's output.
set -euo pipefail
cd "$(dirname "$0")/.."
bench_dir=${BENCH_DIR:-/tmp/ledgermedic-bench-1.5m}
logs=${LOGDIR:-$(mktemp -d)}
mkdir -p "$logs"
bin="$logs/ledgermedic"

sections=(scan entryscan check-tty check-memory find-offset backfill-throughput backfill-memory backfill-memory-plan
  zkdata offline-memory bookie zk-live report etcd verify live live-pinned bk journal million fixtures-big)

fixture() {
  [ -e "$bench_dir/fixture-manifest.json" ] && return
  go build -o "$bin" .
  "$bin" fixtures generate --out "$bench_dir" --topics 50 --ledgers 20 --entries 1000 >/dev/null
}

# The back-fill memory fixtures (MEM_DIR, default /tmp/ledgermedic-backfill-mem):
# t100k, 100,000 topics (157,144 managed ledgers, 471,432 ledgers), and t1m, ten
# times as many (4.7M ledgers; about 9 GB). Apply runs on a copy beside each.
mem_dir=${MEM_DIR:-/tmp/ledgermedic-backfill-mem}
memfixtures() {
  go build -o "$bin" .
  mkdir -p "$mem_dir"
  [ -e "$mem_dir/t100k/fixture-manifest.json" ] ||
    "$bin" fixtures generate --out "$mem_dir/t100k" --topics 100000 --ledgers 3 --entries 2 >/dev/null
  [ -e "$mem_dir/t1m/fixture-manifest.json" ] ||
    "$bin" fixtures generate --out "$mem_dir/t1m" --topics 1000000 --ledgers 3 --entries 2 >/dev/null
}

run() { # name, then the command
  local name=$1
  shift
  echo "## $name: $*"
  echo "load before: $(uptime)"
  "$@" 2>&1 | tee "$logs/$name.log"
  echo "load after: $(uptime)"
  echo
}

# check on a terminal and piped, alternately, three times each (wall seconds).
check_tty() {
  go build -o "$bin" .
  for i in 1 2 3; do
    /usr/bin/time -f "piped: %e s" "$bin" -d "$bench_dir" check >/dev/null 2>"$logs/piped.err" || true
    tail -1 "$logs/piped.err"
    script -qfec "/usr/bin/time -f 'tty: %e s' $bin -d $bench_dir check >/dev/null" /dev/null | tr '\r' '\n' | grep '^tty:' || true
  done
}

# Peak memory of the check binary (VmHWM from /usr/bin/time).
check_memory() {
  go build -o "$bin" .
  /usr/bin/time -f "check: %M KB peak RSS, %e s" "$bin" -d "$bench_dir" check >/dev/null || true
  /usr/bin/time -f "check --skip-message-scan: %M KB peak RSS, %e s" "$bin" -d "$bench_dir" check --skip-message-scan >/dev/null || true
}

# BIG_DIR holds the 100,000- and 1,000,000-topic fixtures of the million section
# (`fixtures generate --topics N --ledgers 3 --entries 2`, about 1 and 9 GB);
# they are generated there when missing.
big_dir=${BIG_DIR:-/tmp/ledgermedic-big}

big_fixture() { # topics, dir
  [ -e "$2/fixture-manifest.json" ] && return
  rm -rf "$2"
  /usr/bin/time -f "fixtures generate --topics $1: %e s wall, %U s user, %M KB peak RSS" \
    "$bin" fixtures generate --out "$2" --topics "$1" --ledgers 3 --entries 2 --seed 1 >/dev/null
}

# Peak RSS and wall time of each read command at 100k and 1M topics, and the
# ratios the issue sets (1M <= 1.3x the peak at 100k and <= 512 MB; wall <= 11x).
million() {
  go build -o "$bin" .
  big_fixture 100000 "$big_dir/t100k"
  big_fixture 1000000 "$big_dir/t1m"
  local cmd
  for cmd in "check" "check --skip-message-scan" "inspect topics -o json" "schema capture -o $logs/capture.jsonl" \
    "report -o $logs/report.html"; do
    million_pair "$cmd" "-d $big_dir/t100k" "-d $big_dir/t1m"
  done
  # The same clusters in other programs' stores, when BIG_DIR holds them: zk100k/data and zk1m/data, the
  # dataDirs of a ZooKeeper that t100k and t1m were generated into (--metadata zk://), and etcd100k/data and
  # etcd1m/data of an etcd that t100k-e and t1m-e were generated into (docs/benchmarks.md says how).
  if [ -d "$big_dir/zk1m/data" ]; then
    million_pair "check (zk-data:)" "-d $big_dir/t100k --metadata zk-data:$big_dir/zk100k/data" \
      "-d $big_dir/t1m --metadata zk-data:$big_dir/zk1m/data"
  fi
  if [ -d "$big_dir/etcd1m/data" ]; then
    million_pair "check (etcd-db:)" "-d $big_dir/t100k-e --metadata etcd-db:$big_dir/etcd100k/data/member/snap/db" \
      "-d $big_dir/t1m-e --metadata etcd-db:$big_dir/etcd1m/data/member/snap/db"
  fi
}

# million_pair NAME ARGS100K ARGS1M: one command (NAME's words, "check" when it
# has a parenthesis) at both sizes, and the ratios. Each run reads its stores'
# files first (warm_stores): the 1M stores and the others do not all fit in the
# page cache together, and a run that found its store evicted by the one before
# took up to half again as long (an etcd-db: check at 1M: 106 s cold, 71 s warm).
million_pair() {
  local cmd=$1 kb=() s=() a
  case $cmd in *"("*) cmd=check ;; esac
  for a in "$2" "$3"; do
    rm -f "$logs/capture.jsonl" "$logs/report.html" # capture refuses to overwrite
    warm_stores $a
    # shellcheck disable=SC2086 # a and cmd are words
    /usr/bin/time -f "%M %e" -o "$logs/time" "$bin" $a $cmd >/dev/null 2>"$logs/err" || true
    read -r k w < <(tail -1 "$logs/time") # after "Command exited with non-zero status" when it did
    kb+=("$k")
    s+=("$w")
  done
  awk -v c="$1" -v a="${kb[0]}" -v b="${kb[1]}" -v x="${s[0]}" -v y="${s[1]}" 'BEGIN {
    printf "%-28s peak RSS %4.0f / %4.0f MB (x%.2f)   wall %6.1f / %7.1f s (x%.1f)\n", c, a/1024, b/1024, b/a, x, y, y/x }'
}

# warm_stores ARGS...: reads every file of the data dirs and stores that ARGS
# name (-d DIR, --metadata SCHEME:PATH), so that they are in the page cache.
warm_stores() {
  local w
  for w in "$@"; do
    case $w in zk-data:* | etcd-db:*) w=${w#*:} ;; esac
    [ -e "$w" ] && find "$w" -type f -exec cat {} + >/dev/null
  done
  return 0
}

# fixtures generate of many topics (FIXTURES_BIG_TOPICS, default 100,000 and a million): wall, CPU and peak
# RSS. A million topics takes about 17 GB of disk in LOGDIR while it runs (8.6 GB when done); each is removed after.
fixtures_big() {
  go build -o "$bin" .
  for n in ${FIXTURES_BIG_TOPICS:-100000 1000000}; do
    rm -rf "$logs/fixtures-$n"
    /usr/bin/time -f "$n topics: %e s wall, %U s user + %S s sys CPU, %M KB peak RSS" \
      "$bin" fixtures generate --out "$logs/fixtures-$n" --topics "$n" --ledgers 3 --entries 2 --seed 1 >/dev/null
    rm -rf "$logs/fixtures-$n"
  done
}

section() {
  case $1 in
  scan)
    fixture
    # one -cpu value per invocation: a -cpu list runs every label at its last value (docs/benchmarks.md)
    run scan-2cores env LEDGERMEDIC_BENCH_DIR="$bench_dir" go test ./inspect -run '^$' -bench '^BenchmarkScanRatio$' -benchtime 3x -cpu 2
    run scan-1core env LEDGERMEDIC_BENCH_DIR="$bench_dir" go test ./inspect -run '^$' -bench '^BenchmarkScanRatio$' -benchtime 3x -cpu 1 ;;
  entryscan)
    run entryscan env LEDGERMEDIC_BENCH_ENTRIES=1000000 LEDGERMEDIC_BENCH_DIR="$logs/bench1m" go test ./inspect -run '^$' -bench 'EntryScan/ratio' -benchtime 1x ;;
  check-tty)
    fixture
    run check-tty check_tty ;;
  check-memory)
    fixture
    run check-memory check_memory ;;
  find-offset)
    run find-offset go test ./index -run '^$' -bench '^BenchmarkFindOffset$' -benchtime 3000x ;;
  backfill-throughput)
    run backfill-throughput go test ./index -run '^$' -bench '^BenchmarkBackfillThroughput$' -benchtime 1x -count 2 ;;
  backfill-memory)
    memfixtures
    run backfill-memory env LEDGERMEDIC_MEMBENCH=1 LEDGERMEDIC_MEMBENCH_DIRS="$mem_dir/t100k,$mem_dir/t1m" LEDGERMEDIC_MEMBENCH_MODES=apply \
      go test ./index -run '^TestMemoryFlat$' -v -count=1 -timeout 120m ;;
  backfill-memory-plan)
    memfixtures
    run backfill-memory-plan env LEDGERMEDIC_MEMBENCH=1 LEDGERMEDIC_MEMBENCH_DIRS="$mem_dir/t100k,$mem_dir/t1m" LEDGERMEDIC_MEMBENCH_MODES=plan \
      go test ./index -run '^TestMemoryFlat$' -v -count=1 -timeout 120m ;;
  zkdata)
    run zkdata go test ./formats/zkdisk -run '^$' -bench ZKDataRead -benchtime 5x ;;
  offline-memory)
    # N and 4N nodes generated; ZKDATA_URLS / ETCDDB_URLS (zk-data:DIR,... / etcd-db:PATH,...) measure those
    # instead: the 100k- and 1M-topic stores of docs/benchmarks.md (fixtures generate into a real server).
    run offline-memory env LEDGERMEDIC_ZKDATA_MEM_URLS="${ZKDATA_URLS:-}" LEDGERMEDIC_ETCDDB_MEM_URLS="${ETCDDB_URLS:-}" \
      go test ./store/zkdata ./store/etcddb -run '^TestOpenWalkMemoryFlat$' -v -count=1 -timeout 60m ;;
  bookie)
    run bookie go test ./store/bookie -run XXX -bench BenchmarkBookie -benchtime 5x ;;
  zk-live)
    run zk-live go test ./store/zk -run '^$' -bench 'BenchmarkZKWalk|BenchmarkZKCompareAndSetNodes' -benchtime 100x ;;
  report)
    fixture
    run report env LEDGERMEDIC_BENCH_DIR="$bench_dir" go test ./app -run '^$' -bench BenchmarkReport -benchtime 3x -count 2 ;;
  etcd)
    run etcd go test ./store/etcddb ./store/etcd -run XXX -bench 'EtcdDBRead|EtcdLiveWalk|EtcdCAS' -benchtime 5x ;;
  verify)
    fixture
    run verify env LEDGERMEDIC_BENCH_DIR="$bench_dir" go test ./store/badgerdir -run '^$' -bench VerifyOpen -benchtime 3x -count 3 ;;
  live)
    run live-topics go test ./app/ -run '^$' -bench 'BenchmarkLive(ZK|Etcd)InspectTopics$' -benchtime 1x -count 2
    run live-backfill go test ./app/ -run '^$' -bench 'BenchmarkLive(ZK|Etcd)Backfill$' -benchtime 10x -count 2 ;;
  live-pinned)
    # the server on CPU 0 (the benchmark pins it), the client on CPU 1 (taskset here: the test binary inherits it);
    # run in app/, as go test runs it
    go test -c -o "$logs/app.test" ./app/
    run live-backfill-pinned env -C app LEDGERMEDIC_BENCH_SERVER_CPU=0 taskset -c 1 "$(cd "$logs" && pwd)/app.test" -test.run '^$' \
      -test.bench 'BenchmarkLive(ZK|Etcd)Backfill$' -test.benchtime 10x -test.count 2 ;;
  bk)
    run bk go test ./app/ -run '^$' -bench 'BenchmarkBK(InspectEntries|Check)$' -benchtime 2x -timeout 60m ;;
  fixtures-big)
    run fixtures-big fixtures_big ;;
  million)
    run million million ;;
  journal)
    run journal go test ./mutate -run '^$' -bench 'BenchmarkReadRuns$|BenchmarkReadRunsListed$|BenchmarkList$' -benchmem -count 3 ;;
  *)
    echo "unknown section $1 (bench/ratios.sh -l lists them)" >&2
    exit 2 ;;
  esac
}

if [ "${1:-}" = "-l" ]; then
  printf '%s\n' "${sections[@]}"
  exit 0
fi
[ $# -gt 0 ] && sections=("$@")
for s in "${sections[@]}"; do
  section "$s"
done
echo "logs: $logs"
