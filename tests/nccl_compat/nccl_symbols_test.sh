#!/usr/bin/env bash
# Every function nccl.h declares is exported by the shim's libnccl.so.2, and the
# shim exports nothing else. The list comes from the header itself: the
# toolkit's nccl.h the shim was built against (recorded in CMakeCache.txt).
#
# Usage: nccl_symbols_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
BUILD=$(realpath "$1")
LIB="$BUILD/nccl/libnccl.so.2"
if [ ! -e "$LIB" ]; then
  echo "nccl_symbols_test: no $LIB (the shim needs the CUDA toolkit's nccl.h); skipping"
  exit 77
fi
include_dir=$(sed -n 's/^LOOM_NCCL_INCLUDE_DIR:PATH=//p' "$BUILD/CMakeCache.txt")
header="$include_dir/nccl.h"
[ -r "$header" ] || { echo "FAIL: cannot read $header" >&2; exit 1; }

# Declarations, not mentions: comments and string literals are dropped first,
# then every p?ncclXxx( that follows a return type (or NCCL_API( in headers
# that wrap declarations in that macro) is a declared function.
declared=$(perl -0777 -ne '
  s{/\*.*?\*/}{}gs; s{//[^\n]*}{}g; s{"(?:\\.|[^"\\])*"}{""}g;
  while (/(?:\b(?:ncclResult_t|void|const\s+char\s*\*|int)\s*\**\s*|NCCL_API\s*\(\s*\w+\s*,\s*)(p?nccl[A-Z]\w*)\s*\(/g) {
    print "$1\n";
  }' "$header" | sort -u)
# The host half of the device API (nccl_device/*.h, NCCL 2.28 and later): plain
# C functions that programs such as PyTorch link, without profiling aliases.
device_api=""
if [ -d "$include_dir/nccl_device" ]; then
  device_api=$(cat "$include_dir"/nccl_device/*.h | perl -0777 -ne '
    s{/\*.*?\*/}{}gs; s{//[^\n]*}{}g;
    while (/NCCL_EXTERN_C\s+__host__\s+\w+\s*\**\s*(nccl[A-Z]\w*)\s*\(/g) { print "$1\n"; }' |
    sort -u)
fi
# Functions of newer NCCL releases than the header that PyTorch links
# (src/nccl_compat/newer_api.txt), each with its profiling alias.
SRC=$(realpath "$2")
newer=$(grep -v '^#' "$SRC/src/nccl_compat/newer_api.txt" | sed '/^$/d' | sed 'p;s/^/p/')
header_names=$(printf '%s\n%s\n' "$declared" "$(grep -v '^p' <<<"$newer")" | sed '/^$/d' | sort -u)
declared=$(printf '%s\n%s\n%s\n' "$declared" "$device_api" "$newer" | sed '/^$/d' | sort -u)
exported=$(nm -D --defined-only "$LIB" | awk '{print $3}' | sort -u)

declared_count=$(wc -l <<<"$declared")
exported_count=$(wc -l <<<"$exported")
echo "$header and nccl_device/ declare $declared_count names (ncclXxx and pncclXxx);" \
  "libnccl.so.2 exports $exported_count"
[ "$declared_count" -ge 40 ] || { echo "FAIL: parsed suspiciously few declarations" >&2; exit 1; }

missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
status=0
if [ -n "$missing" ]; then
  echo "FAIL: declared in nccl.h but not exported:" >&2
  echo "  ${missing//$'\n'/$'\n'  }" >&2
  status=1
fi
if [ -n "$extra" ]; then
  echo "FAIL: exported but not declared in nccl.h:" >&2
  echo "  ${extra//$'\n'/$'\n'  }" >&2
  status=1
fi

# Every ncclXxx has its pncclXxx profiling alias, at the same address.
while read -r addr _ name; do
  case "$name" in
    nccl*)
      grep -qx "$name" <<<"$header_names" || continue
      alias_addr=$(nm -D --defined-only "$LIB" | awk -v n="p$name" '$3 == n {print $1}')
      if [ "$alias_addr" != "$addr" ]; then
        echo "FAIL: p$name is not an alias of $name" >&2
        status=1
      fi
      ;;
  esac
done < <(nm -D --defined-only "$LIB")

[ "$status" -eq 0 ] && echo "nccl_symbols_test: all $declared_count declared names exported, nothing else"
exit "$status"
