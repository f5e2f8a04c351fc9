# record-early.sh: a process opened while Ruby grows its symbol table.  record starts sampling
# a command as it boots; Ruby adds a chunk to the table's ids array a moment after its
# last_id passes a multiple of 512 (symbol.c set_id_entry), and a table read in between looks
# implausible.  A table not found when the process was opened must be looked for again
# (rbi_vm_symbols_again), or no ID has a name for the process's life: on <= 3.1 no class path,
# so every label of the program unqualified (CI saw `spin` for `Before.spin`).  On each DWARF
# test Ruby, gdb stops exec.rb in set_id_entry at such a serial (2048 or the next), record -p
# opens it there and follows it across its exec: the first program's labels are qualified.
set -u
. "$(dirname "$0")/../tap.sh"
. "$(dirname "$0")/../rubies.sh"

if ! command -v gdb >/dev/null; then
	skip "no gdb to stop Ruby in the middle of its symbol table's growth"
	tap_done
	exit
fi
T=$RB_TMP/early
mkdir -p "$T"
while read -r kind ver root cmd; do
	[ "$kind" = dwarf ] || continue
	R="$kind $ver"
	gdb -q -batch -ex 'set breakpoint pending on' \
		-ex 'break set_id_entry if num % 512 == 0 && num >= 2048' -ex run \
		-ex 'printf "STOPPED %d\n", num' -ex 'shell sleep 4' -ex delete -ex continue \
		--args "$cmd" "$here/testdata/programs/exec.rb" 1 >"$T/gdb.out" 2>&1 &
	gdb_pid=$!
	for _ in $(seq 1 100); do
		grep -q '^STOPPED\|exited' "$T/gdb.out" && break
		sleep 0.1
	done
	pid=$(pgrep -f "^$cmd $here/testdata/programs/exec.rb" | head -n 1)
	if ! grep -q '^STOPPED' "$T/gdb.out" || [ -z "$pid" ]; then
		skip "$R: gdb did not stop Ruby in set_id_entry (no such function or argument here)"
		wait "$gdb_pid"
		continue
	fi
	"$RBINSPECT" record -p "$pid" --rate 200 --no-lines --format folded -o "$T/out.folded" \
		-q 2>"$T/err"
	rc=$?
	wait "$gdb_pid"
	if [ "$rc" = 0 ] && grep -q 'Before.spin' "$T/out.folded" && grep -q 'After.spin' "$T/out.folded" &&
	   ! grep -q ';spin (' "$T/out.folded"; then
		ok "$R: opened at symbol serial $(sed -n 's/^STOPPED //p' "$T/gdb.out") (its chunk not stored yet): both programs' labels qualified"
	else
		not_ok "$R: opened at symbol serial $(sed -n 's/^STOPPED //p' "$T/gdb.out"): exit $rc"
		diag "$(cut -c1-150 "$T/out.folded" 2>/dev/null | tail -4)"; diag "$(head -3 "$T/err")"
	fi
done < <(rubies_list)
tap_done
