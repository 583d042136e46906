#!/usr/bin/env bash
# Regenerates testdata/bookkeeper/: bookie dirs written by a real Apache BookKeeper
# 4.17.4 bookie (../shared/bookkeeper, its README says how it was built), with the
# ZooKeeper dataDir that held their ledger metadata and a manifest of what the real
# Java client wrote and read back (the oracle the Go tests compare with).
#
# Each scenario gets its own Debian ZooKeeper (as testutil/zkserver.go starts
# it: loopback, free port, preAllocSize=64), `bk init-cluster`, and its own bookies:
#
#   sorted/       3 SortedLedgerStorage bookies, ensemble 3/2/2: one ledger per digest
#                 type (CRC32C, CRC32, MAC with a password, DUMMY), an empty entry, a
#                 12 KiB entry; a ledger left OPEN by a killed writer and then
#                 closed by a recovery open (fence records, recovery adds);
#                 stopped with SIGTERM (storage flushed).
#   interleaved/  3 InterleavedLedgerStorage bookies, logSizeLimit=8192 (rotated entry
#                 logs with ledgers maps), ensemble 3/2/2; an OPEN ledger left by a
#                 writer killed with kill -9 (`bk tool write --hold`); SIGTERM, a
#                 restart (new journal, the unused preallocated log stays), one more
#                 ledger, SIGTERM.
#   pulsarconf/   b1 InterleavedLedgerStorage, b2 SortedLedgerStorage with the journal
#                 and index settings of Pulsar's conf/bookkeeper.conf (journal format
#                 5, journalAlignmentSize=4096, FileInfo format 0); SIGTERM.
#   killed/       b1 SortedLedgerStorage, b2 InterleavedLedgerStorage, ensemble 2/2/2,
#                 both killed with kill -9 a second after the writes: the entries are
#                 only in the journals.
#
# Per scenario: b1..bN/{journal,ledgers}/current as the bookie left them (bk's own
# bookie.conf is not copied: it names this run's temp dirs), zk/version-2 (the
# ZooKeeper dataDir after SIGTERM), manifest.json.
#
# One change to the bookies' files: a journal is preallocated to 16 MiB of zeros
# (journalPreAllocSizeMB) and would check out as 16 MiB each; its zero tail after the
# last written 512-byte sector is cut, and manifest.json's "journal_sizes" records
# each journal's real size, so tests extend the copy back to it (a copy of a real
# bookie has the zeros). Nothing else is edited.
#
# Usage: testdata/bookkeeper/regenerate.sh   (needs java 17, Debian's zookeeper,
# python3, jq; BK=path/to/bk overrides ../shared/bookkeeper/bk)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BK=${BK:-$REPO/../shared/bookkeeper/bk}
[ -x "$BK" ] || BK=/work/shared/bookkeeper/bk
[ -x "$BK" ] || { echo "no bk (set BK=)" >&2; exit 2; }
ZKJAR=/usr/share/java/zookeeper.jar
ZKCONF=/etc/zookeeper/conf
for c in java jq python3 ss; do command -v "$c" >/dev/null || { echo "need $c" >&2; exit 2; }; done
[ -f "$ZKJAR" ] || { echo "need Debian's zookeeper ($ZKJAR)" >&2; exit 2; }

WORK=$(mktemp -d /tmp/bk-regen.XXXXXX)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

log() { echo "== $*" >&2; }

free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 30000))
    ss -ltnH "sport = :$p" | grep -q . || { echo "$p"; return; }
  done
}

# four-letter word to ZooKeeper; prints the answer
fourletter() { # port word
  timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "%s" "$2" >&3 && cat <&3' _ "$1" "$2"
}

ZK_PID="" ZK_PORT="" ZK_DATA=""
start_zk() { # dir
  ZK_DATA=$1/zkdata
  ZK_PORT=$(free_port)
  mkdir -p "$ZK_DATA"
  cat > "$1/zoo.cfg" <<EOF
tickTime=2000
dataDir=$ZK_DATA
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok
preAllocSize=64
EOF
  java -Xmx128m -Dzookeeper.log.dir="$1" -cp "$ZKCONF:$ZKJAR" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$1/zoo.cfg" > "$1/zk.log" 2>&1 &
  ZK_PID=$!
  PIDS+=("$ZK_PID")
  local i
  for i in $(seq 1 150); do
    fourletter "$ZK_PORT" srvr 2>/dev/null | grep -q 'Mode:' && return 0
    kill -0 "$ZK_PID" 2>/dev/null || { cat "$1/zk.log" >&2; return 1; }
    sleep 0.2
  done
  echo "zookeeper did not start" >&2
  return 1
}

stop_pid() { # pid signal
  kill -"$2" "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

declare -A BPORT BPID BSTORAGE BSETS
start_bookie() { # scenario-dir name storage [--set k=v ...]
  local dir=$1/$2 storage=$3
  shift 3
  local port=${BPORT[$dir]:-$(free_port)}
  BPORT[$dir]=$port BSTORAGE[$dir]=$storage BSETS[$dir]="$*"
  "$BK" bookie --zk "127.0.0.1:$ZK_PORT" --port "$port" --dir "$dir" --storage "$storage" "$@" \
    >> "$dir.log" 2>&1 &
  BPID[$dir]=$!
  PIDS+=("${BPID[$dir]}")
  local i
  for i in $(seq 1 300); do
    grep -q 'Started component bookie-server' "$dir.log" 2>/dev/null && return 0
    kill -0 "${BPID[$dir]}" 2>/dev/null || { tail -50 "$dir.log" >&2; return 1; }
    sleep 0.2
  done
  echo "bookie $dir did not start" >&2
  return 1
}

# wait until exactly n bookies are writable
wait_bookies() { # n
  local i
  for i in $(seq 1 100); do
    [ "$("$BK" tool bookies --zk "127.0.0.1:$ZK_PORT" | jq '.writable | length')" = "$1" ] && return 0
    sleep 0.3
  done
  echo "bookies not listed" >&2
  return 1
}

# restart marker: a bookie log line count so a restart waits for its own start line
restart_bookie() { # scenario-dir name storage [--set ...]
  local dir=$1/$2
  mv "$dir.log" "$dir.log.1"
  start_bookie "$@"
}

hex() { od -An -tx1 -v | tr -d ' \n'; }
# deterministic bytes: n bytes of SHA-256 chain seeded by a label
pseudo() { # label n
  python3 -c 'import hashlib,sys
l, n = sys.argv[1].encode(), int(sys.argv[2]); out = b""; h = l
while len(out) < n:
    h = hashlib.sha256(h).digest(); out += h
sys.stdout.write(out[:n].hex())' "$1" "$2"
}

# write a ledger; entries as hex lines in FILE (an empty line is an empty entry);
# appends {"write":..., "written":[hex...]} to $1/writes.jsonl
write_ledger() { # scenario-dir entries-file ensemble wq aq digest password [--meta k=v ...]
  local sd=$1 ef=$2 e=$3 w=$4 a=$5 d=$6 pw=$7
  shift 7
  local args=() line
  while IFS= read -r line || [ -n "$line" ]; do args+=(--entry-hex "$line"); done < "$ef"
  local out
  out=$("$BK" tool write --zk "127.0.0.1:$ZK_PORT" --ensemble "$e" --write-quorum "$w" --ack-quorum "$a" \
    --digest "$d" --password "$pw" "$@" "${args[@]}")
  echo "$out" | jq -e '.closed == true' >/dev/null || { echo "write: $out" >&2; return 1; }
  jq -cn --argjson w "$out" --rawfile f "$ef" --arg pw "$pw" \
    '{write: $w, password: $pw, written: ($f | rtrimstr("\n") | split("\n"))}' >> "$sd/writes.jsonl"
  echo "$out" | jq -r .ledger_id
}

# the Java client's read-only view of every ledger, and its metadata: the oracle
record_ledgers() { # scenario-dir
  local sd=$1 id pw
  : > "$sd/reads.jsonl"
  for id in $("$BK" tool list --zk "127.0.0.1:$ZK_PORT" | jq -r .ledger_id); do
    pw=$(jq -r --argjson id "$id" 'select(.write.ledger_id == $id) | .password' "$sd/writes.jsonl")
    "$BK" tool read --zk "127.0.0.1:$ZK_PORT" --ledger "$id" --password "$pw" --no-recovery |
      jq -cs --argjson id "$id" '{ledger_id: $id, entries: [.[] | select(has("entry_id")) | {entry_id, payload_hex}],
        read: (.[] | select(has("last_add_confirmed")) | del(.metadata))}' >> "$sd/reads.jsonl"
    "$BK" tool meta --zk "127.0.0.1:$ZK_PORT" --ledger "$id" | jq -c '{meta: .}' >> "$sd/reads.jsonl"
  done
}

# copy a stopped scenario into testdata, cutting journals' preallocated zero tails
collect() { # scenario-dir name description
  local sd=$1 name=$2 dest=$HERE/$2
  rm -rf "$dest"
  mkdir -p "$dest/zk"
  cp -a "$ZK_DATA/version-2" "$dest/zk/"
  local b sizes="{}"
  for b in "$sd"/b*/; do
    b=$(basename "$b")
    mkdir -p "$dest/$b"
    cp -a "$sd/$b/journal" "$sd/$b/ledgers" "$dest/$b/"
  done
  sizes=$(cd "$dest" && python3 - <<'EOF'
import json, os, glob
sizes = {}
for p in sorted(glob.glob("b*/journal/current/*.txn")):
    size = os.path.getsize(p)
    with open(p, "rb") as f:
        data = f.read()
    end = len(data.rstrip(b"\0"))
    keep = min(size, (end + 511) // 512 * 512 + 512)  # the data, then one zero sector
    os.truncate(p, keep)
    sizes[p] = size
print(json.dumps(sizes))
EOF
)
  local bookies="{}" d
  for d in "${!BPORT[@]}"; do
    case "$d" in "$sd"/*) ;; *) continue ;; esac
    bookies=$(jq -c --arg n "$(basename "$d")" --arg s "${BSTORAGE[$d]}" --argjson p "${BPORT[$d]}" \
      --arg stop "$(cat "$d.stopped")" --arg sets "${BSETS[$d]}" '. + {($n): {bookie_id: "127.0.0.1:\($p)",
        storage: $s, stopped: $stop, settings: ($sets | split(" ") | map(select(. != "--set" and . != "")))}}' <<< "$bookies")
  done
  jq -n --arg name "$name" --arg desc "$3" --argjson sizes "$sizes" --argjson bookies "$bookies" \
    --slurpfile w "$sd/writes.jsonl" --slurpfile r "$sd/reads.jsonl" '
    {scenario: $name, description: $desc, bookkeeper: "4.17.4", bookies: $bookies, journal_sizes: $sizes,
     ledgers: [ $w[] | . as $x | ($r | map(select(.ledger_id == $x.write.ledger_id)) | first) as $rd
       | ($r | map(select(.meta.ledger_id? == $x.write.ledger_id)) | first | .meta) as $m
       | {ledger_id: $x.write.ledger_id, digest_type: $m.digest_type, password: $x.password,
          state: $m.state, ensemble: [$m.ensemble_size, $m.write_quorum_size, $m.ack_quorum_size],
          written: [$x.written | to_entries[] | {entry_id: .key, payload_hex: .value}],
          read_no_recovery: $rd.entries, last_add_confirmed: $rd.read.last_add_confirmed,
          metadata: $m} ]}' > "$dest/manifest.json"
  # the Java client read back exactly what it wrote (up to the LAC of an open ledger)
  jq -e '[.ledgers[] | (.read_no_recovery | map(.payload_hex)) as $r
          | ($r == (.written | map(.payload_hex))[0:($r | length)])] | all' "$dest/manifest.json" >/dev/null ||
    { echo "$name: read back differs from written" >&2; return 1; }
  log "$name: $(du -sh --apparent-size "$dest" | cut -f1)"
}

stop_bookie() { # scenario-dir name signal
  local dir=$1/$2
  stop_pid "${BPID[$dir]}" "$3"
  echo "SIG$3" > "$dir.stopped"
}

# an OPEN ledger, 3/2/2 CRC32C: a writer (`bk tool write --hold`) writes the first
# entry, adds the others from stdin, and is killed with kill -9 (as a crashed
# broker); appends its record to $1/writes.jsonl and prints the ledger id
open_ledger() { # scenario-dir first-hex more-hex...
  local sd=$1 first=$2 i
  shift 2
  rm -f "$sd/hold.in" "$sd/hold.out"
  mkfifo "$sd/hold.in"
  "$BK" tool write --zk "127.0.0.1:$ZK_PORT" --ensemble 3 --write-quorum 2 --ack-quorum 2 --digest CRC32C \
    --password "" --hold --entry-hex "$first" < "$sd/hold.in" > "$sd/hold.out" &
  local hpid=$!
  PIDS+=("$hpid")
  exec 4> "$sd/hold.in"
  for i in $(seq 1 100); do grep -q '"open"' "$sd/hold.out" 2>/dev/null && break; sleep 0.2; done
  printf '%s\n' "$@" >&4
  for i in $(seq 1 100); do [ "$(grep -c '"entry_id"' "$sd/hold.out" || true)" = $# ] && break; sleep 0.2; done
  [ "$(grep -c '"entry_id"' "$sd/hold.out" || true)" = $# ] || { cat "$sd/hold.out" >&2; return 1; }
  stop_pid "$hpid" 9
  exec 4>&-
  jq -cn --argjson w "$(head -1 "$sd/hold.out")" --arg f "$first" '$ARGS.positional as $m |
    {write: $w, password: "", written: ([$f] + $m)}' --args "$@" >> "$sd/writes.jsonl"
  head -1 "$sd/hold.out" | jq -r .ledger_id
}

lines() { # file hex...
  local f=$1
  shift
  printf '%s\n' "$@" > "$f"
}

# ---------------------------------------------------------------- sorted
scenario_sorted() {
  local sd=$WORK/sorted
  mkdir -p "$sd"
  log "sorted: zookeeper"
  start_zk "$sd"
  "$BK" init-cluster --zk "127.0.0.1:$ZK_PORT" >/dev/null
  local b
  for b in b1 b2 b3; do start_bookie "$sd" $b sorted; done
  wait_bookies 3
  lines "$sd/e1" 68656c6c6f 776f726c64 00ff10 "" "$(pseudo sorted-crc32c 12288)" "$(printf '{"k":"v"}' | hex)"
  write_ledger "$sd" "$sd/e1" 3 2 2 CRC32C "" >/dev/null
  lines "$sd/e2" "$(pseudo sorted-crc32-0 100)" "$(pseudo sorted-crc32-1 1)" "$(pseudo sorted-crc32-2 700)" 00
  write_ledger "$sd" "$sd/e2" 3 2 2 CRC32 "" >/dev/null
  lines "$sd/e3" "$(pseudo sorted-mac-0 64)" "$(pseudo sorted-mac-1 300)" "" "$(pseudo sorted-mac-3 33)"
  write_ledger "$sd" "$sd/e3" 3 2 2 MAC "s3cret" >/dev/null
  lines "$sd/e4" "$(pseudo sorted-dummy-0 50)" "$(pseudo sorted-dummy-1 51)" "$(pseudo sorted-dummy-2 52)"
  write_ledger "$sd" "$sd/e4" 3 2 2 DUMMY "" >/dev/null
  lines "$sd/e5" "$(pseudo sorted-mac-empty-0 10)" "$(pseudo sorted-mac-empty-1 20)"
  write_ledger "$sd" "$sd/e5" 3 2 2 MAC "" >/dev/null
  # a ledger left OPEN by a killed writer, then recovered by a reader's recovery open
  # (as a broker opens it): the bookies journal a fence and the recovery's adds
  local rec
  rec=$(open_ledger "$sd" "$(pseudo sorted-recovered-0 90)" "$(pseudo sorted-recovered-1 91)" "$(pseudo sorted-recovered-2 92)")
  "$BK" tool read --zk "127.0.0.1:$ZK_PORT" --ledger "$rec" --password "" | tail -1 |
    jq -e '.recovery_open and .last_add_confirmed == 2' >/dev/null
  record_ledgers "$sd"
  for b in b1 b2 b3; do stop_bookie "$sd" $b TERM; done
  stop_pid "$ZK_PID" TERM
  collect "$sd" sorted "3 SortedLedgerStorage bookies, ensemble 3/2/2, each digest type, stopped with SIGTERM"
}

# ---------------------------------------------------------------- interleaved
scenario_interleaved() {
  local sd=$WORK/interleaved
  mkdir -p "$sd"
  log "interleaved: zookeeper"
  start_zk "$sd"
  "$BK" init-cluster --zk "127.0.0.1:$ZK_PORT" >/dev/null
  local b i set=(--set logSizeLimit=8192)
  for b in b1 b2 b3; do start_bookie "$sd" $b interleaved "${set[@]}"; done
  wait_bookies 3
  : > "$sd/e1"
  for i in $(seq 0 19); do pseudo "interleaved-crc32c-$i" $((400 + 37 * i)) >> "$sd/e1"; echo >> "$sd/e1"; done
  write_ledger "$sd" "$sd/e1" 3 2 2 CRC32C "" >/dev/null
  : > "$sd/e2"
  for i in $(seq 0 9); do pseudo "interleaved-mac-$i" $((900 + i)) >> "$sd/e2"; echo >> "$sd/e2"; done
  write_ledger "$sd" "$sd/e2" 3 2 2 MAC "pa55" >/dev/null
  lines "$sd/e3" "$(pseudo interleaved-crc32-0 2000)" "$(pseudo interleaved-crc32-1 3000)"
  write_ledger "$sd" "$sd/e3" 3 2 2 CRC32 "" >/dev/null

  log "interleaved: open ledger"
  open_ledger "$sd" "$(pseudo interleaved-open-0 200)" "$(pseudo interleaved-open-1 201)" "$(pseudo interleaved-open-2 202)" >/dev/null

  log "interleaved: restart"
  for b in b1 b2 b3; do stop_bookie "$sd" $b TERM; done
  for b in b1 b2 b3; do restart_bookie "$sd" $b interleaved "${set[@]}"; done
  wait_bookies 3
  lines "$sd/e4" "$(pseudo interleaved-after-restart-0 500)" "$(pseudo interleaved-after-restart-1 600)"
  write_ledger "$sd" "$sd/e4" 3 2 2 CRC32C "" >/dev/null
  record_ledgers "$sd"
  for b in b1 b2 b3; do stop_bookie "$sd" $b TERM; done
  stop_pid "$ZK_PID" TERM
  collect "$sd" interleaved "3 InterleavedLedgerStorage bookies, logSizeLimit=8192, ensemble 3/2/2, an OPEN ledger (writer killed), SIGTERM, restart, SIGTERM"
}

# ---------------------------------------------------------------- killed
scenario_killed() {
  local sd=$WORK/killed
  mkdir -p "$sd"
  log "killed: zookeeper"
  start_zk "$sd"
  "$BK" init-cluster --zk "127.0.0.1:$ZK_PORT" >/dev/null
  start_bookie "$sd" b1 sorted
  start_bookie "$sd" b2 interleaved
  wait_bookies 2
  lines "$sd/e1" "$(pseudo killed-0 100)" "$(pseudo killed-1 200)" "" "$(pseudo killed-3 300)"
  write_ledger "$sd" "$sd/e1" 2 2 2 CRC32C "" >/dev/null
  lines "$sd/e2" "$(pseudo killed-mac-0 128)" "$(pseudo killed-mac-1 129)"
  write_ledger "$sd" "$sd/e2" 2 2 2 MAC "k1ll" >/dev/null
  record_ledgers "$sd"
  stop_bookie "$sd" b1 KILL
  stop_bookie "$sd" b2 KILL
  stop_pid "$ZK_PID" TERM
  collect "$sd" killed "b1 SortedLedgerStorage, b2 InterleavedLedgerStorage, ensemble 2/2/2, kill -9 right after the writes"
}

# ---------------------------------------------------------------- pulsarconf
scenario_pulsarconf() {
  local sd=$WORK/pulsarconf
  mkdir -p "$sd"
  log "pulsarconf: zookeeper"
  start_zk "$sd"
  "$BK" init-cluster --zk "127.0.0.1:$ZK_PORT" >/dev/null
  # the journal and index settings of Pulsar's conf/bookkeeper.conf
  local set=(--set journalFormatVersionToWrite=5 --set fileInfoFormatVersionToWrite=0 --set journalAlignmentSize=4096)
  start_bookie "$sd" b1 interleaved "${set[@]}"
  start_bookie "$sd" b2 sorted "${set[@]}"
  wait_bookies 2
  lines "$sd/e1" "$(pseudo pulsarconf-0 300)" "" "$(pseudo pulsarconf-2 5000)" "$(pseudo pulsarconf-3 1)"
  write_ledger "$sd" "$sd/e1" 2 2 2 CRC32C "" >/dev/null
  lines "$sd/e2" "$(pseudo pulsarconf-crc32-0 64)" "$(pseudo pulsarconf-crc32-1 65)"
  write_ledger "$sd" "$sd/e2" 2 2 1 CRC32 "" >/dev/null
  record_ledgers "$sd"
  stop_bookie "$sd" b1 TERM
  stop_bookie "$sd" b2 TERM
  stop_pid "$ZK_PID" TERM
  collect "$sd" pulsarconf "b1 InterleavedLedgerStorage, b2 SortedLedgerStorage, ensemble 2/2/2 and 2/2/1, Pulsar's journal settings (journalFormatVersionToWrite=5, journalAlignmentSize=4096, fileInfoFormatVersionToWrite=0), SIGTERM"
}

scenarios=${*:-sorted interleaved killed pulsarconf}
for s in $scenarios; do "scenario_$s"; done
du -sh --apparent-size "$HERE"
