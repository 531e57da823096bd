#!/usr/bin/env bash
# hot-code.sh: writes cpp-net/app/hot-code.txt, the list of the functions mmo-server runs, which
# the linker (gold, --section-ordering-file; cpp-net/CMakeLists.txt) lays out together at the
# end of the binary's code.
#
# Why: the kernel maps a program's code into a process 64 KiB at a time around each page it first
# runs (fault-around), and every mapped page counts in the process's resident memory. Laid out
# in link order, the few hundred kilobytes mmo-server runs are spread over most of its 2.6 MB
# of code (the Rust core and the standard library in among the code it never calls), so most
# of the binary ended up resident. Laid out together they fill a few windows.
#
# How: mmo-server runs under valgrind's callgrind, both engines (the Rust core with its economy
# durable and in memory), through short runs of every load-test scenario; every function of the
# binary that ran is listed. A function is named as its section is: `.text.NAME` (and the
# `.text.unlikely.` sections compilers put cold functions in, and for C and C++ the
# `.text.startup.` ones GCC puts start-up code in).
# Names that change from build to build are written as patterns: a Rust symbol's hash
# (`17h<16 hex digits>E`) and ThinLTO's `.llvm.<number>` suffix. Functions met by both engines
# come first, then those the Rust core met with its economy in memory, then those only its
# durable economy met (the commit log, redb), then the baseline's: so each way the server runs,
# its code is one stretch.
#
# Run it after a change that adds or renames much of what the server runs (a function missing
# from the list still works, it is only laid out with the cold code), and commit the list:
#   cpp-net/app/hot-code.sh [SERVER_BINARY]      (default build/cpp/mmo-server; about 3 minutes)
# Needs valgrind (make deps installs it) and a release build (make build).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

server=$(readlink -f "${1:-build/cpp/mmo-server}")
out=cpp-net/app/hot-code.txt
work=$(mktemp -d -t mmo-hot-code.XXXXXX)
trap 'rm -rf "$work"' EXIT

# with-server.sh starts this in the server's place; exec keeps the pid it stops.
cat >"$work/server.sh" <<EOF
#!/usr/bin/env bash
exec valgrind --tool=callgrind --dump-instr=no --demangle=no --callgrind-out-file=$work/cg.\$HOT_CODE_RUN.%p "$server" "\$@"
EOF
chmod +x "$work/server.sh"

scenarios=(
  "raid --players 100 --duration 12s --raid-every 4s --raid-objects 11000"
  "steady --players 100 --duration 5s"
  "economy --players 60 --duration 5s"
  "hostile --players 60 --duration 5s"
)
for row in rust rust-memory baseline; do
  engine=${row%-memory}
  extra=""
  [ "$row" = rust-memory ] && extra="--economy-store memory"
  for i in "${!scenarios[@]}"; do
    echo "hot-code.sh: $row: ${scenarios[$i]}"
    # shellcheck disable=SC2086 # the scenario is a list of flags
    HOT_CODE_RUN=$row-$i MMO_SERVER_ARGS="--max-players 1064 $extra" \
      loadtest/scripts/with-server.sh --engine "$engine" --server-bin "$work/server.sh" -- --scenario ${scenarios[$i]} --quiet >"$work/run.log" 2>&1 ||
      { cat "$work/run.log" >&2; exit 1; }
  done
done

# Every function of the server binary that ran, per engine. In callgrind's files a name is
# given once with its number and later by number alone; `cob` names the object of the next
# `cfn` only (without it the callee is in the caller's object); "'N" marks recursion depth.
for row in rust rust-memory baseline; do
  awk -v bin="$server" '
    function id_name(s, parts) { s = substr(s, index(s, "=") + 1); parts[1] = s; sub(/\).*/, "", parts[1]); sub(/^\(/, "", parts[1])
                                 parts[2] = (index(s, ") ") ? substr(s, index(s, ") ") + 2) : ""); return parts[1] SUBSEP parts[2] }
    FNR == 1 { delete obs; delete fns; ob = ""; cob = "" }
    /^ob=/  { split(id_name($0), p, SUBSEP); if (p[2] != "") obs[p[1]] = p[2]; ob = obs[p[1]]; next }
    /^cob=/ { split(id_name($0), p, SUBSEP); if (p[2] != "") obs[p[1]] = p[2]; cob = obs[p[1]]; next }
    /^c?fn=/ {
      callee = ($0 ~ /^cfn=/)
      split(id_name($0), p, SUBSEP); if (p[2] != "") fns[p[1]] = p[2]
      object = callee ? (cob != "" ? cob : ob) : ob
      if (callee) cob = ""
      name = fns[p[1]]; sub(/'"'"'[0-9]+$/, "", name)
      if (object == bin && name !~ /^0x/ && name !~ /[ (]/) print name
    }' "$work"/cg."$row"-* | sort -u >"$work/ran-$row"
done

# Lock slow paths run only when a lock is contended, which callgrind (one thread at a time)
# never makes happen, so they are not among what ran; under load they run, and each left with
# the cold code cost a 64 KiB window of it in the server's resident memory (seen with
# `perf record -e page-faults -d`: dashmap's lock_exclusive_slow and unlock_exclusive_slow,
# two windows). They are listed with the Rust core's code: the baseline's locks are glibc's.
nm --defined-only "$server" | awk '$2 ~ /^[tTwW]$/ { print $1, $3 }' | sort >"$work/symbols"
cut -d ' ' -f 2 "$work/symbols" | sort -u >"$work/defined"
c++filt <"$work/defined" | paste -d '\t' "$work/defined" - | awk -F '\t' '
  $2 ~ /^dashmap::lock::RawRwLock::[a-z_]*_slow/ ||
  $2 ~ /^parking_lot::raw_(mutex|rwlock)::Raw[A-Za-z]*::[a-z_]*_slow/ || $2 ~ /^parking_lot_core::/ ||
  $2 ~ /^<std(\[[0-9a-f]+\])?::sys::sync::[a-z]+::futex::[A-Za-z]+>::([a-z]+_contended|wake)/ ||
  $2 ~ /^std(\[[0-9a-f]+\])?::sys::pal::unix::futex::futex_/ { print $1 }' >"$work/contended"
[ -s "$work/contended" ] || { echo "hot-code.sh: no lock slow path found in $server" >&2; exit 1; }
for row in rust rust-memory; do
  sort -u "$work/ran-$row" "$work/contended" -o "$work/ran-$row"
done

# Aliases (a C++ constructor's C1 and C2, identical code folded) share an address; the section
# is named after one of them, so each name brings every name at its address ($work/symbols,
# above: address and name of every function of the binary).
sort -u "$work/ran-rust" "$work/ran-rust-memory" >"$work/ran-rust-any"
comm -12 "$work/ran-rust-any" "$work/ran-baseline" >"$work/group-1"
comm -23 "$work/ran-rust-memory" "$work/ran-baseline" >"$work/group-2"
comm -23 "$work/ran-rust" "$work/ran-rust-memory" | comm -23 - "$work/ran-baseline" >"$work/group-3"
comm -13 "$work/ran-rust-any" "$work/ran-baseline" >"$work/group-4"
for group in 1 2 3 4; do
  awk 'NR == FNR { names[$1] = names[$1] " " $2; address[$2] = $1; next }
       { print $1; if ($1 in address) { n = split(names[address[$1]], all, " "); for (i = 1; i <= n; ++i) print all[i] } }' \
    "$work/symbols" "$work/group-$group"
done | awk '
  BEGIN { hash = "17h"; for (i = 0; i < 16; ++i) hash = hash "[0-9a-f]"; hash = hash "E(\\.llvm\\.[0-9]+)?$" }  # no {16}: mawk
  function pattern(name) {
    if (name ~ /^_ZN/ && match(name, hash)) return substr(name, 1, RSTART + 2) "*"
    sub(/\.llvm\.[0-9]+$/, ".llvm.*", name)
    return name
  }
  { p = pattern($0); if (p in seen) next; seen[p] = 1
    print ".text." p; print ".text.unlikely." p
    if (p !~ /^_R/ && p !~ /17h\*$/) print ".text.startup." p  # GCC start-up code; never Rust
    if (p ~ /\.cold$/) { base = p; sub(/\.cold$/, "", base); print ".text.unlikely." base } }' >"$work/hot-code.txt"

[ -s "$work/hot-code.txt" ] || { echo "hot-code.sh: no function of $server ran" >&2; exit 1; }
mv "$work/hot-code.txt" "$out"
echo "hot-code.sh: $(wc -l <"$work/ran-rust-any") functions ran with the Rust core ($(wc -l <"$work/ran-rust-memory") with its economy in memory), $(wc -l <"$work/ran-baseline") with the baseline; $(grep -vc -e '^\.text\.unlikely\.' -e '^\.text\.startup\.' "$out") names and patterns -> $out"
