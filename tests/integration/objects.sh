# objects.sh: `rbinspect objects` (heap walk: counts by type and by class) on every test Ruby
# (Debian's stripped binaries and DWARF builds), live and from a core, against the target's
# own ObjectSpace.count_objects and ObjectSpace.each_object(Object).
#
# The target is testdata/programs/objects.rb: ~60,000 objects of every common type and of its
# own classes (named, nested, anonymous). Three comparisons:
#
# 1. Against the truth file's "count" and "class" records (lib/truth.rb). They are taken after
#    a GC.start, but the heap at READY is not quite that heap. The truth writer (a) still holds
#    its records at the count: one [thread, record] Array per thread it recorded plus the
#    records array (N arrays, N = thread records in the file) and N+1 Strings (the records, its
#    own record, the file's text so far); (b) after the count runs code for the first time:
#    each_object, sort_by, File.open/write/rename, GC.start, the READY line. From Ruby 3.0 a
#    call site's method cache is an object (imemo callcache) made on its first call, so several
#    hundred T_IMEMO appear (2.7 keeps them inside the iseq: at most a few); Symbols new to the
#    symbol table (count_objects' own keys, when it is the program's first count) add hidden
#    fstrings; a File and its write lock come and go; 3.3+ creates a Fiber object and a Mutex it
#    keeps. (c) A new heap page may be added for those allocations (TOTAL grows by a page).
#    Nothing else allocates. So every type the writer never allocates is compared exactly
#    (T_OBJECT, T_CLASS, T_MODULE, T_FLOAT, T_REGEXP, T_STRUCT, T_BIGNUM, T_FILE, T_MATCH,
#    T_COMPLEX, T_RATIONAL, T_SYMBOL, T_ICLASS and every type absent from the truth), and so is
#    every class but String, Array, Hash, Fiber and Thread::Mutex; those and T_STRING, T_ARRAY,
#    T_HASH, T_DATA, T_IMEMO, TOTAL and FREE are bounded by what (a)-(c) can do (see BOUNDS).
# 2. Exactly, every key including TOTAL and FREE, and every class, against counts the program
#    takes on SIGUSR1 at a moment when nothing allocates until they are read (objects.rb
#    explains how), live, with --pause, and from a core of that moment; and live on a heap
#    twelve times as big (more batches than the heap reader's ring: its threads read apart).
# 3. A moving heap (testdata/programs/churn.rb: allocating and compacting without pause):
#    every walk ends, in bounded time, with a result; --pause gives exact (not approximate)
#    counts and leaves the process running; Ctrl-C during a paused walk resumes it.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

# wait_size FILE N: until FILE holds at least N bytes.
wait_size() {
	for _ in $(seq 1 300); do
		[ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# counts_of JSON: "KEY N" lines of .counts, sorted.
counts_of() { jq -r '.counts | to_entries[] | "\(.key) \(.value)"' "$1" | sort; }

# classes_of JSON: "NAME<TAB>N" lines of .classes, sorted.
classes_of() { jq -r '.classes[] | "\(.name)\t\(.count)"' "$1" | sort; }

# exact_taken PID EXACT: objects.rb (started with RBI_EXACT=EXACT) counts itself and parks;
# true once it has and every task sleeps.
exact_taken() { kill -USR1 "$1"; wait_size "$2.ack" 2 && wait_parked "$1"; }

# exact_written PID EXACT: it writes that count: "KEY N" lines into $RB_TMP/exact.txt,
# "NAME<TAB>N" lines into $RB_TMP/exact-classes.txt, both sorted.
exact_written() {
	kill -USR2 "$1"
	wait_size "$2.ack" 3
	grep -v -e '^end$' -e '^class'$'\t' "$2" | tr '\t' ' ' | sort >"$RB_TMP/exact.txt"
	awk -F'\t' '$1 == "class" { print $2 "\t" $3 }' "$2" | sort >"$RB_TMP/exact-classes.txt"
	rm -f "$2" "$2.ack"
}

# exact_path KIND ROOT: sets EXACT_IN (the path objects.rb writes, in its root) and EXACT
# (the same file from here).
exact_path() {
	if [ "$1" = deb ]; then
		root_tmp "$2"
		EXACT_IN=$RB_RUN/objects.$RANDOM.exact; EXACT=$2$EXACT_IN
	else
		EXACT=$RB_TMP/objects.$RANDOM.exact; EXACT_IN=$EXACT
	fi
}

EXACT_TYPES="T_OBJECT T_CLASS T_MODULE T_FLOAT T_REGEXP T_STRUCT T_BIGNUM T_FILE T_MATCH
T_COMPLEX T_RATIONAL T_SYMBOL T_ICLASS"
NOISY_CLASSES="String Array Hash Fiber Thread::Mutex"

# check_truth LABEL JSON BYCLASS_JSON VER: comparison 1.
check_truth() {
	local label=$1 json=$2 bc=$3 ver=$4 n bad="" t want got pre30 align
	n=$(grep -c '^thread'$'\t' "$RB_TRUTH")
	pre30=0; [ "$(printf '%s\n' "$ver" 3.0 | sort -V | head -1)" != 3.0 ] && pre30=1
	align=16384; [ "$(printf '%s\n' "$ver" 3.3 | sort -V | head -1)" = 3.3 ] && align=65536
	declare -A truth=() mine=()
	while read -r k v; do truth[$k]=$v; done < <(awk -F'\t' '$1 == "count" { print $2, $3 }' "$RB_TRUTH")
	while read -r k v; do mine[$k]=$v; done < <(counts_of "$json")
	# Exact: the types the truth writer never allocates, and types it has none of.
	for t in $EXACT_TYPES; do
		[ "${mine[$t]:-0}" = "${truth[$t]:-0}" ] || bad+=" $t: ${mine[$t]:-0} (truth ${truth[$t]:-0})"
	done
	for t in "${!mine[@]}"; do
		case " TOTAL FREE T_STRING T_ARRAY T_HASH T_DATA T_IMEMO " in *" $t "*) continue ;; esac
		[ -n "${truth[$t]:-}" ] || bad+=" $t: ${mine[$t]} (truth none)"
	done
	if [ -z "$bad" ]; then ok "$label: exact counts of the types the truth writer does not touch"
	else not_ok "$label: exact counts of the types the truth writer does not touch"; diag "$bad"; fi

	# BOUNDS (got - truth), from (a)-(c) in the header:
	#   T_ARRAY  -N (the writer's N record arrays), give or take what the conservative scan
	#            of its machine stack kept alive at one GC and not the other (-3 .. +2):
	#            Ruby 3.4 keeps one more array at the count than at READY
	#   T_STRING -(N+1) (its strings) .. +40 (new symbol-name fstrings, at most one per
	#            count_objects key, and the READY line)
	#   T_HASH   -2 .. +4 (its hashes, made after the count, all garbage: a few may survive
	#            in hidden form)          T_DATA  0 .. +2 (3.3+: a Fiber, a Mutex)
	#   T_IMEMO  2.7: -2 .. +4; 3.0+: 0 .. +700 (one method cache per call site run first
	#            after the count; about 480-530 with today's truth.rb)
	#   TOTAL    0 .. two pages of 40-byte slots (a page added for those allocations)
	#   FREE     TOTAL - the sum of all types (checked exactly)
	local d lo hi imlo=0 imhi=700 sum=0
	[ $pre30 = 1 ] && imlo=-2 imhi=4
	bad=""
	for spec in "T_ARRAY $((-n - 3)) $((-n + 2))" "T_STRING $((-n - 1)) 40" "T_HASH -2 4" "T_DATA 0 2" \
		"T_IMEMO $imlo $imhi" "TOTAL 0 $((2 * align / 40))"; do
		read -r t lo hi <<<"$spec"
		d=$(( ${mine[$t]:-0} - ${truth[$t]:-0} ))
		{ [ "$d" -ge "$lo" ] && [ "$d" -le "$hi" ]; } || bad+=" $t: $d not in [$lo, $hi]"
		diag "$label: $t ${mine[$t]:-0} - truth ${truth[$t]:-0} = $d in [$lo, $hi]"
	done
	if [ -z "$bad" ]; then ok "$label: T_ARRAY, T_STRING, T_HASH, T_DATA, T_IMEMO, TOTAL within the writer's bounds"
	else not_ok "$label: T_ARRAY, T_STRING, T_HASH, T_DATA, T_IMEMO, TOTAL within the writer's bounds"; diag "$bad"; fi
	for t in "${!mine[@]}"; do [ "$t" = TOTAL ] || [ "$t" = FREE ] || sum=$((sum + ${mine[$t]})); done
	is "${mine[FREE]:-0}" "$(( ${mine[TOTAL]:-0} - sum ))" "$label: FREE is TOTAL minus the live objects"

	# Classes: every truth record (the top 40), exactly but for the noisy ones.
	declare -A cls=()
	while IFS=$'\t' read -r k v; do cls[$k]=$v; done < <(jq -r '.classes[] | "\(.name)\t\(.count)"' "$bc")
	bad=""
	local checked=0
	while IFS=$'\t' read -r k v; do
		case " $NOISY_CLASSES " in
		*" $k "*) d=$(( ${cls[$k]:-0} - v ))
			{ [ "$d" -ge $((-n - 45)) ] && [ "$d" -le 2 ]; } || bad+=" $k: $d"
			continue ;;
		esac
		checked=$((checked + 1))
		[ "${cls[$k]:-0}" = "$v" ] || bad+=" $k: ${cls[$k]:-none} (truth $v)"
	done < <(awk -F'\t' '$1 == "class" { print $2 "\t" $3 }' "$RB_TRUTH")
	if [ -z "$bad" ]; then ok "$label: by class: $checked classes exact (names included), noisy ones bounded"
	else not_ok "$label: by class: every class of the truth"; diag "$bad"; fi
}

# lazy_sweep KIND VER ROOT CMD: 4. A heap marked and not yet swept (lazy-sweep.rb: 1000 live
# Junk among garbage Junk on pages the lazy sweep has not reached, as a server's heap is after
# a burst of requests): --by-class and heap-dump count the live ones only, as each_object and
# dump_all would (they finish the sweep first), live with --pause and from a core, and say how
# many garbage slots they left out.  The truth is the program's own: the Junk its GC marked (1000,
# or one more a stale machine-stack word kept), counted by each_object in a child it forks.
lazy_sweep() {
	local kind=$1 ver=$2 root=$3 cmd=$4 live core where j=$RB_TMP/lazy klass
	if ! ruby_start "$kind" "$root" "$cmd" lazy-sweep.rb; then
		not_ok "$kind $ver: lazy-sweep.rb did not start"; return
	fi
	live=$(truth_get live)
	wait_parked "$RB_PID" || diag "$kind $ver: not every task sleeps"
	core=$(core_of "$RB_PID") || core=
	for where in "live --pause" core; do
		set -- -p "$RB_PID" objects --by-class --pause --top 0
		if [ "$where" = core ]; then
			[ -n "$core" ] || { not_ok "$kind $ver lazy sweep: no core"; continue; }
			set -- "$core" objects --by-class --top 0
		fi
		"$RBINSPECT" --json "$@" >"$j.json" 2>"$j.err"
		is "$(jq -r '[(.classes[] | select(.name == "Junk") | .count), (.garbage > 0)] | @tsv' "$j.json")" \
			"$(printf '%s\ttrue' "$live")" \
			"$kind $ver lazy sweep, $where: --by-class counts the $live live Junk, not the garbage ($(jq .garbage "$j.json") slots left out)"
		klass=$(jq -r '.classes[] | select(.name == "Junk") | .class' "$j.json")
		if [ "$where" = core ]; then
			"$RBINSPECT" "$core" heap-dump -o "$j.dump" 2>"$j.err"
		else
			"$RBINSPECT" -p "$RB_PID" heap-dump --pause -o "$j.dump" 2>"$j.err"
		fi
		is "$(jq -r --arg k "$klass" 'select(.type == "OBJECT" and .class == $k) | .address' "$j.dump" 2>/dev/null | wc -l)" \
			"$live" "$kind $ver lazy sweep, $where: heap-dump writes the $live live Junk only"
	done
	[ -n "$core" ] && rm -f "$core"
	kill -9 "$RB_PID"
}

while read -r kind ver root cmd; do
	exact_path "$kind" "$root"
	if ! RBI_EXACT=$EXACT_IN ruby_start "$kind" "$root" "$cmd" objects.rb; then
		not_ok "$kind $ver: objects.rb did not start"; continue
	fi
	wait_parked "$RB_PID" || diag "$kind $ver: not every task sleeps"

	# 1. Live, against the truth records.
	"$RBINSPECT" --json -p "$RB_PID" objects >"$RB_TMP/live.json"
	"$RBINSPECT" --json -p "$RB_PID" objects --by-class --top 0 >"$RB_TMP/live-bc.json"
	check_truth "$kind $ver live" "$RB_TMP/live.json" "$RB_TMP/live-bc.json" "$ver"
	is "$(jq -r '.approximate' "$RB_TMP/live.json")" false "$kind $ver live: a parked heap is not marked approximate"
	for c in Objs::Point Objs::Deep::Leaf Objs::Pair; do
		check "$kind $ver live: $c listed with slot bytes" test \
			"$(jq --arg c "$c" '[.classes[] | select(.name == $c) | .bytes] | first' "$RB_TMP/live-bc.json")" -gt 0
	done

	# What Arrays own outside the heap: at least the 58,700 elements of the kept arrays
	# (objects.rb), at most a few times that (capacity grows geometrically).
	heap=$(jq '[.classes[] | select(.name == "Array") | .heap_bytes] | first' "$RB_TMP/live-bc.json")
	check "$kind $ver live: Array heap bytes (capacity) $heap cover the kept elements" \
		test "$heap" -ge $((58700 * 8)) -a "$heap" -le $((58700 * 8 * 4 + 1000000))

	# 2. Exact: the program counts itself while nothing runs.
	if exact_taken "$RB_PID" "$EXACT"; then
		"$RBINSPECT" --json -p "$RB_PID" objects >"$RB_TMP/exact-live.json"
		"$RBINSPECT" --json -p "$RB_PID" objects --pause >"$RB_TMP/exact-pause.json"
		states=$(task_states "$RB_PID")
		"$RBINSPECT" --json -p "$RB_PID" objects --by-class --top 0 >"$RB_TMP/live-bc2.json"
		core=$(core_of "$RB_PID")
		exact_written "$RB_PID" "$EXACT"
		check "$kind $ver: the program's exact count is there" test -s "$RB_TMP/exact.txt"
		is "$(counts_of "$RB_TMP/exact-live.json")" "$(cat "$RB_TMP/exact.txt")" \
			"$kind $ver live: every count exact (TOTAL, FREE and each type)"
		is "$(counts_of "$RB_TMP/exact-pause.json")" "$(cat "$RB_TMP/exact.txt")" \
			"$kind $ver --pause: every count exact"
		d=$(diff <(classes_of "$RB_TMP/live-bc2.json") "$RB_TMP/exact-classes.txt")
		if [ -z "$d" ] && [ "$(wc -l <"$RB_TMP/exact-classes.txt")" -gt 40 ]; then
			ok "$kind $ver live: by class, every class exact ($(wc -l <"$RB_TMP/exact-classes.txt") classes, names included)"
		else
			not_ok "$kind $ver live: by class, every class exact"; diag "$d"
		fi
		is "$(jq -r '[.snapshot, .approximate] | join(" ")' "$RB_TMP/exact-pause.json")" "paused false" \
			"$kind $ver --pause: snapshot paused, not approximate"
		is "$(grep -c T <<<"$states")" 0 "$kind $ver --pause: the process runs again afterwards (no task stopped: $states)"
		if [ -n "$core" ]; then
			"$RBINSPECT" --json "$core" objects >"$RB_TMP/core.json"
			"$RBINSPECT" --json "$core" objects --by-class --top 0 >"$RB_TMP/core-bc.json"
			is "$(counts_of "$RB_TMP/core.json")" "$(cat "$RB_TMP/exact.txt")" \
				"$kind $ver core: every count exact"
			is "$(jq -c '[.classes[] | [.name, .count, .bytes]]' "$RB_TMP/core-bc.json")" \
				"$(jq -c '[.classes[] | [.name, .count, .bytes]]' "$RB_TMP/live-bc2.json")" \
				"$kind $ver core: by class as live"
			is "$(jq -r .snapshot "$RB_TMP/core.json")" core "$kind $ver core: snapshot core"
			"$RBINSPECT" "$core" objects >"$RB_TMP/core.txt"
			is "$(awk '$1 == "T_OBJECT" { print $2 }' "$RB_TMP/core.txt")" \
				"$(awk '$1 == "T_OBJECT" { print $2 }' "$RB_TMP/exact.txt")" "$kind $ver core: text output"
			# A core missing one heap page's bytes (the page of a class of the
			# program's; pages are 16 KiB up to 3.1, 64 KiB from 3.2): the counts
			# leave it out, and the command says so and fails (exit 8).
			klass=$(jq -r '[.classes[] | select(.name == "Objs::Point") | .class] | first' "$RB_TMP/core-bc.json")
			case $ver in 2.* | 3.[01].*) page=16384 ;; *) page=65536 ;; esac
			if python3 "$here/tests/core-hole.py" "$core" "$klass" "$page"; then
				"$RBINSPECT" --json "$core" objects >"$RB_TMP/hole.json" 2>"$RB_TMP/hole.err"
				is "$? $(jq .pages_skipped "$RB_TMP/hole.json") $(grep -c '^rbinspect: objects: 1 heap page could not be read' "$RB_TMP/hole.err")" \
					"8 1 1" "$kind $ver core missing a heap page: objects leaves it out, says so, exits 8"
				"$RBINSPECT" "$core" heap-dump -o "$RB_TMP/hole.dump" 2>"$RB_TMP/hole.err"
				is "$? $(grep -c '^rbinspect: heap-dump: 1 heap page could not be read' "$RB_TMP/hole.err")" \
					"8 1" "$kind $ver core missing a heap page: heap-dump says so, exits 8"
			else
				not_ok "$kind $ver: a heap page in the core"
			fi
			rm -f "$core"
		else
			not_ok "$kind $ver: no core"
		fi
	else
		not_ok "$kind $ver: the program did not take its exact count"
	fi
	rm -f "$EXACT" "$EXACT.ack"
	kill -9 "$RB_PID"

	# 2b. A heap of more batches than the reader's ring holds (32 batches of 256 KiB), where
	# its two threads read half a ring apart: live, still exact.
	exact_path "$kind" "$root"
	if SCALE=12 RBI_EXACT=$EXACT_IN ruby_start "$kind" "$root" "$cmd" objects.rb &&
		wait_parked "$RB_PID" && exact_taken "$RB_PID" "$EXACT"; then
		"$RBINSPECT" --json -p "$RB_PID" objects >"$RB_TMP/big.json"
		"$RBINSPECT" --json -p "$RB_PID" objects --by-class --top 0 >"$RB_TMP/big-bc.json"
		exact_written "$RB_PID" "$EXACT"
		mb=$(jq '.bytes_read / 1048576 | floor' "$RB_TMP/big.json")
		is "$(counts_of "$RB_TMP/big.json")" "$(cat "$RB_TMP/exact.txt")" \
			"$kind $ver live, $mb MiB of heap: every count exact"
		is "$(classes_of "$RB_TMP/big-bc.json")" "$(cat "$RB_TMP/exact-classes.txt")" \
			"$kind $ver live, $mb MiB of heap: by class, every class exact"
		check "$kind $ver: the big heap is more than the ring ($mb MiB read)" test "$mb" -gt 16
	else
		not_ok "$kind $ver: objects.rb (SCALE=12) did not take its exact count"
	fi
	rm -f "$EXACT" "$EXACT.ack"
	kill -9 "$RB_PID"

	# 3. A moving heap.
	if ! KEEP=200000 ruby_start "$kind" "$root" "$cmd" churn.rb; then
		not_ok "$kind $ver: churn.rb did not start"; continue
	fi
	fails=0 approx=0 slow=0
	for i in $(seq 1 10); do
		start=$(date +%s%N)
		if timeout 20 "$RBINSPECT" --json -p "$RB_PID" objects >"$RB_TMP/churn.json" &&
			jq -e '.counts.TOTAL > 0' "$RB_TMP/churn.json" >/dev/null; then
			[ "$(jq -r .approximate "$RB_TMP/churn.json")" = true ] && approx=$((approx + 1))
		else
			fails=$((fails + 1))
		fi
		[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 5000 ] || slow=$((slow + 1))
	done
	is "$fails $slow" "0 0" "$kind $ver churn: 10 walks of a moving heap, each ending with counts in < 5 s ($approx marked approximate)"
	fails=0
	for i in 1 2 3; do
		timeout 20 "$RBINSPECT" --json -p "$RB_PID" objects --pause >"$RB_TMP/churn-p.json" &&
			[ "$(jq -r .approximate "$RB_TMP/churn-p.json")" = false ] || fails=$((fails + 1))
	done
	sleep 0.2
	is "$fails $(task_states "$RB_PID" | grep -c T)" "0 0" \
		"$kind $ver churn --pause: 3 exact walks, and the process runs afterwards"
	# Ctrl-C in the middle of a paused walk: the target must run again.
	"$RBINSPECT" -p "$RB_PID" objects --pause --by-class >/dev/null 2>&1 &
	rbi=$!
	sleep 0.03
	kill -INT "$rbi" 2>/dev/null
	wait "$rbi"; rc=$?
	sleep 0.2
	is "$(task_states "$RB_PID" | grep -c T)" 0 "$kind $ver churn: SIGINT to a paused walk (exit $rc) leaves the process running"
	kill -9 "$RB_PID"

	lazy_sweep "$kind" "$ver" "$root" "$cmd"
done < <(rubies_list)

# Usage errors.
"$RBINSPECT" -p $$ objects --top x >/dev/null 2>&1
is "$?" 2 "objects --top x: usage error"
tap_done
