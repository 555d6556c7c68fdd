#!/usr/bin/env bash
# loom-topo on the reference topology files and on this machine: the rings it
# prints (NVLink only on the DGX-1, one crossing per host on the cluster), the
# --simulate table, --dump round trips and --json parses.
set -uo pipefail
BUILD=$(realpath "$1")
SOURCE=$(realpath "$2")
TOPO=$(find "$BUILD" -maxdepth 3 -name loom-topo -type f -perm -u+x | head -1)
if [ -z "$TOPO" ]; then
  echo "loom_topo_test: no loom-topo binary under $BUILD; skipping"
  exit 77
fi
DATA="$SOURCE/tests/data/topo"
work=$(mktemp -d /tmp/loom_topo_test.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# run NAME ARGS...: runs loom-topo, keeps its output in $work/NAME.
run() {
  local name=$1
  shift
  if ! timeout 120 "$TOPO" "$@" > "$work/$name" 2>&1; then
    fail "loom-topo $* exited non-zero:"
    cat "$work/$name"
  fi
}

# expect NAME COUNT REGEX: exactly COUNT lines of $work/NAME match.
expect() {
  local got
  got=$(grep -cE -e "$3" "$work/$1")
  [ "$got" -eq "$2" ] || fail "$1: $got lines match '$3', expected $2"
}

# Rings are Loom's channels, each capped at what one kernel block moves
# (9.35 GB/s, docs/tuner.md): the DGX-1's six NVLinks per GPU (150 GB/s)
# carry 14 of them, every hop on NVLink.
run dgx1 --file "$DATA/dgx1-v100.xml"
expect dgx1 1 '^Rings: 14 channel\(s\), 130.9 GB/s'
expect dgx1 14 '^  ring [0-9]+ \(9.3 GB/s, worst hop NVL\)'
expect dgx1 0 'worst hop (PIX|PXB|PHB|SYS)'
expect dgx1 1 '^Path classes'

run pcie --file "$DATA/pcie-4gpu-2socket.xml"
# One ring order, crossing the sockets twice; an x16 link holds 3 channels.
expect pcie 1 '^Rings: 3 channel\(s\)'
expect pcie 3 'worst hop SYS\): gpu0 > gpu1 > gpu2 > gpu3 >'

run bridged --file "$DATA/pcie-4gpu-nvlink-bridges.xml"
expect bridged 4 '^  ring [0-3] \(9.3 GB/s, worst hop NVL\)'

run h100 --file "$DATA/dgx-h100.xml"
# The NVSwitch's 450 GB/s wants 48 channels at 9.35; the search stops at 16.
expect h100 1 '^Rings: 16 channel\(s\), 149.6 GB/s'
expect h100 1 'ring 0 \(9.3 GB/s, worst hop NVL\)'

run cluster --file "$DATA/cluster-16x-h100.xml"
expect cluster 1 '^Ranks: 128 on 16 host\(s\)'
expect cluster 1 '^Rings: 16 channel\(s\)'
# Every ring crosses each of the 16 hosts exactly once, through a NIC.
for k in $(seq 0 15); do
  crossings=$(grep -E "^  ring $k " "$work/cluster" | grep -oE '=\[node[0-9]+/nic[0-9]\]=>' | wc -l)
  [ "$crossings" -eq 16 ] || fail "cluster ring $k crosses hosts $crossings times, expected 16"
done
expect cluster 2 '^  tree [01] \(root '
# Each channel's two trees leave host 0 through two NICs; all eight are used.
expect cluster 1 "^  NICs of host 0's tree heads, by channel: 0:node00/nic0\+node00/nic1 .*\(8 of the host's 8 NICs\)"

run simulate --file "$DATA/cluster-16x-h100.xml" --simulate allreduce --bytes 1G
expect simulate 8 '^ +[0-9]+ ranks'
expect simulate 1 '^  1024 ranks  128 host\(s\):.*-> Ringx16'
expect simulate 1 '^     8 ranks +1 host\(s\):.*-> Direct'
# A one-host file: the default sizes it cannot place give way to its 8 GPUs,
# with a note (asking for more by --ranks is refused, below).
run onehost --file "$DATA/dgx-h100.xml" --simulate allreduce
expect onehost 1 '^     8 ranks +1 host\(s\):'
expect onehost 1 '^# one host of 8 GPU\(s\): world sizes up to it'
run small --file "$DATA/cluster-16x-h100.xml" --simulate allreduce --bytes 8 --ranks 16,256
# 2 hosts: the hierarchical ring (8 fast local hops + 1 exchange) beats the
# trees; 32 hosts: a tree among the hosts' first ranks, chains inside, wins.
expect small 1 '^    16 ranks.*-> Hierarchical'
expect small 1 '^   256 ranks.*-> HostTree'
run checked --file "$DATA/dgx1-v100.xml" --simulate allreduce --bytes 64M --ranks 8 --check 8
expect checked 1 '\[sim [0-9.]+ (us|ms)\].*-> Ringx14'

# A GB200 NVL72 rack: 18 trays, one NVLink domain, so one island of 72 ranks
# whose rings never touch the network; the shared switch trays are listed.
run nvl72 --file "$DATA/gb200-nvl72.xml"
expect nvl72 1 '^Ranks: 72 on 1 host\(s\)'
expect nvl72 1 '^  ring 0 \([0-9.]+ GB/s, worst hop NVL\): rack0/tray00/gpu0 > '
expect nvl72 9 '^nvswitch rack0/nvswitch[0-8] .*shared: 72 nvlink\(s\)'
expect nvl72 1 '^    gpu rack0/tray17/gpu3 "B200" .*\[nvlink-c2c 450 GB/s\]'

# Every shipped file prints matrices whose columns stay apart: in each table
# every line is as wide as its header and holds one field per column (a
# value as wide as its column would run into its neighbour, "450.0450.0").
for f in "$DATA"/*.xml; do
  name=$(basename "$f" .xml)
  "$TOPO" --file "$f" > "$work/all-$name" 2>&1 || fail "$name: loom-topo failed"
  awk -v name="$name" '
    /^(Path classes|Bottleneck bandwidth)/ { table = 1; header = 0; next }
    table && /^$/ { table = 0; next }
    table && !header { header = 1; width = length($0); columns = NF; next }
    table && (length($0) != width || NF != columns + 1) {
      printf "%s: matrix row \"%s\" is misaligned\n", name, substr($0, 1, 60); bad = 1
    }
    END { exit bad }' "$work/all-$name" || fail "$name: matrices are not aligned"
done
# And one file's matrices exactly as reviewed (tests/data/topo/golden).
sed -n '/^Path classes/,/^CPU affinity/p' "$work/all-dgx-h100" | sed '$d' > "$work/matrices"
diff -u "$DATA/golden/dgx-h100-matrices.txt" "$work/matrices" ||
  fail "dgx-h100 matrices differ from tests/data/topo/golden/dgx-h100-matrices.txt"

# --dump writes a file that loads back to the same dump.
for f in dgx1-v100 dgx-h100 pcie-4gpu-2socket pcie-4gpu-nvlink-bridges cpu-2socket \
  cluster-16x-h100 gb200-nvl72; do
  "$TOPO" --file "$DATA/$f.xml" --dump > "$work/$f.xml" || fail "--dump of $f failed"
  "$TOPO" --file "$work/$f.xml" --dump > "$work/$f.again.xml" || fail "reload of $f failed"
  cmp -s "$work/$f.xml" "$work/$f.again.xml" || fail "$f: --dump does not round-trip"
done

run json --json --file "$DATA/dgx-h100.xml"
if command -v python3 > /dev/null; then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["nodes"]' "$work/json" ||
    fail "--json output does not parse"
fi
# --simulate with --json: the table as JSON, the same picks as the text.
run simjson --file "$DATA/cluster-16x-h100.xml" --simulate allreduce --bytes 1G --ranks 8,1024 --json
python3 - "$work/simjson" << 'PY' || fail "--simulate --json: $(head -c 300 "$work/simjson")"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert [r["ranks"] for r in rows] == [8, 1024], rows
assert rows[0]["pick"]["name"] == "Direct" and rows[1]["pick"]["name"] == "Ringx16", rows
assert all(c["us"] is None or c["us"] > 0 for r in rows for c in r["candidates"])
PY

# This machine: detection works without GPUs or RDMA NICs and says so.
run here
expect here 1 '^Ranks: [0-9]+ on 1 host\(s\)'
expect here 1 '^Rings: '
run here_dump --dump
grep -q '<loom_topology' "$work/here_dump" || fail "--dump of this machine is not a topology file"

if timeout 60 "$TOPO" --file "$DATA/dgx-h100.xml" --simulate allreduce --ranks 16 > "$work/bad" 2>&1; then
  fail "16 ranks on a one-host file should be refused"
fi
grep -q 'places up to 8 ranks, and a file of two or more hosts scales beyond (--ranks' "$work/bad" ||
  fail "refusal does not say why or what fits"

if [ "$failures" -ne 0 ]; then
  echo "loom_topo_test: $failures failure(s)"
  exit 1
fi
echo "loom_topo_test: all checks passed"
