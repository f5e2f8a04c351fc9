# apps.sh: the applications of testdata/apps run from Debian's packages, for the tests and
# benches that drive them (sourced after tap.sh and rubies.sh).  Two stacks: bookworm's
# packages on the host (stack_bookworm) and trixie's in the root tools/test-rubies.sh --apps
# makes (stack_trixie), each started as its users start it (puma_start, sidekiq_start).
app=$here/testdata/apps
masters=

# apps_stop: every app started, with its children.
apps_stop() {
	local m
	for m in $masters; do kill -9 "$m" $(pgrep -P "$m") 2>/dev/null; done
}

# The stack under test: what runs its commands (nothing, or chroot into its root), its root
# ("" on the host), where the apps' files are as it sees them, and its name in the checks.
run=() sys= app_in= stack=
# app_dir NAME: the directory of one app's files, $dir as the test sees it, and the truths'
# prefix exported as the app sees it.
app_dir() {
	dir=$sys$work/$1
	mkdir -p "$dir"
	export RBI_APP_DIR=$work/$1 RBI_APP_TRUTH=$work/$1/truth
}

# puma_start NAME CONFIG RACKUP: puma serving RACKUP on a free loopback port, in app_dir NAME
# (its pid in $master, its port in $port); 1 if it did not answer.
puma_start() {
	local p
	app_dir "$1"
	port=
	for _ in $(seq 20); do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
	done
	export RBI_APP_PORT=$port
	(ulimit -c unlimited && exec "${run[@]}" puma -C "$app_in/$2" "$app_in/$3") \
		>"$dir/puma.log" 2>&1 &
	disown "$!"     # killed at the end: no job report
	for _ in $(seq 1 120); do
		curl -sf "http://127.0.0.1:$port/work" >/dev/null && break
		sleep 0.5
	done
	master=$(cat "$dir/puma.pid" 2>/dev/null)
	masters="$masters $master"
	[ -n "$master" ]
}

# sidekiq_start: redis-server on a unix socket and Sidekiq on it, in app_dir sidekiq
# (Sidekiq's pid in $master); 1 if Sidekiq did not start its 5 processor threads (Thread#name,
# their names in /proc too: 6.4's "processor", 7's "sidekiq.default/processor" cut to 15 bytes).
sidekiq_start() {
	app_dir sidekiq
	export RBI_REDIS_SOCK=$RBI_APP_DIR/redis.sock
	"${run[@]}" redis-server --port 0 --unixsocket "$RBI_REDIS_SOCK" --save '' --appendonly no \
		--dir "$RBI_APP_DIR" >"$dir/redis.log" 2>&1 &
	masters="$masters $!"
	disown "$!"
	"${run[@]}" sidekiq -r "$app_in/sidekiq-app.rb" -c 5 >"$dir/sidekiq.log" 2>&1 &
	master=$!
	masters="$masters $master"
	disown "$master"
	for _ in $(seq 1 120); do
		[ "$(cat /proc/"$master"/task/*/comm 2>/dev/null |
			grep -cE '^(processor|sidekiq\.default)$')" = 5 ] && return 0
		sleep 0.5
	done
	return 1
}

# stack_bookworm: bookworm's packages on the host, or 1 with why not in $stack_why.
stack_bookworm() {
	local c p missing=
	for c in puma ab curl sidekiq redis-server; do command -v "$c" >/dev/null || missing="$missing $c"; done
	for p in ruby-rails ruby-sqlite3 ruby-sinatra; do
		dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		stack_why="not installed:$missing (tools/install-deps.sh --test)"; return 1
	fi
	run=() sys= app_in=$app work=$RB_TMP stack="bookworm $(ruby -e 'print RUBY_VERSION')"
}

# stack_trixie: trixie's packages in their root, with the apps and the truths' library copied
# where its Ruby finds them; or 1 with why not in $stack_why.
stack_trixie() {
	local ver root
	read -r _ ver root < <(bash "$here/tools/test-rubies.sh" --list-apps)
	if [ -z "${root:-}" ] || ! command -v ab >/dev/null || ! command -v curl >/dev/null; then
		stack_why="no root of its packages (tools/test-rubies.sh --apps) or no ab/curl"; return 1
	fi
	root_tmp "$root"
	work=$RB_RUN app_in=$RB_RUN/testdata/apps
	mkdir -p "$root$app_in" "$root$RB_RUN/testdata/programs"
	cp "$app"/* "$root$app_in/"
	cp -r "$here/testdata/programs/lib" "$root$RB_RUN/testdata/programs/"
	# (No PWD: puma stats the one it inherits, a path outside the root.)
	run=(env -u PWD LANG=C.UTF-8 chroot "$root") sys=$root stack="trixie $ver"
}
