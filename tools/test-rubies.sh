#!/usr/bin/env bash
# test-rubies.sh — fetch and build the real CRuby interpreters the tests run against.
#
# usage: tools/test-rubies.sh [--binaries] [--dwarf] [--variants] [--apps] [--bench] [--list]
#                             [--list-variants] [--list-apps] [--list-bench] [--status]
#   --binaries  Debian's own (stripped) Rubies, each unpacked into a root dir used with chroot
#               or tools/run-in-ns.sh:  deb-2.7 (bullseye ruby2.7), deb-3.1 (bookworm ruby3.1),
#               deb-3.3 (trixie ruby3.3), deb-3.4 (sid + experimental ruby3.4).
#   --dwarf     Builds of Debian's source packages of the same four Rubies with full DWARF and
#               .symtab (not stripped), installed under dwarf-X.Y and run directly on the host.
#               About 8 minutes in total on 2 cores; run under nice.
#   --variants  Rubies as users build them, from the same source packages with Debian's own
#               compilers and libraries (see VARIANTS below). About 10 minutes on 2 cores.
#   --apps      apps-3.3: trixie's Rails, puma, Sinatra, Sidekiq and redis-server on its Ruby 3.3,
#               unpacked into a root dir like deb-3.3 (tests/integration/apps.sh). ~35 MB.
#   --bench     bench-3.3: trixie's rubocop and ActiveRecord on the same Ruby (bench/rubocop.sh
#               only; never made unless asked).
#   --list      Print the Rubies that are ready (see format below). Never downloads or builds.
#   --list-variants  The same for the variants.
#   --list-apps "apps VERSION ROOT" when apps-3.3 is ready.
#   --list-bench "bench VERSION ROOT" when bench-3.3 is ready.
#   --status    TAP: one line per Ruby this script makes, ok if ready, not ok with the reason its
#               last attempt failed. Never downloads or builds.
#   (none)      --binaries, --dwarf, --variants, then --apps.
#
# Cache: ${RBI_RUBIES:-$HOME/.cache/rbinspect/rubies}. Every Ruby gets a stamp file (.rbi-stamp,
# holding its RUBY_VERSION) only after it has been verified to run, and a recipe file
# (.rbi-recipe: the suites or source package and every configure argument that made it). A
# Ruby whose stamp is there and whose recipe is today's is not made again, so a second run
# finishes at once and a changed recipe rebuilds only what it changed. Delete a dir to redo it.
#
# A Ruby that cannot be fetched or built does not stop the others: its reason and the tail of
# its log go to $RBI_RUBIES/.failed/NAME, the script exits 1 at the end, and --status reports
# it (one TAP line per Ruby: tests/run counts a failed build as a failed test).
#
# --list output format (consumed by the tests; keep it stable). One line per ready Ruby,
# four fields separated by single spaces (so the cache path must not contain whitespace):
#
#   KIND VERSION ROOT RUBYCMD
#
#   KIND     "deb" (Debian binary in a root dir) or "dwarf" (source build with DWARF)
#   VERSION  RUBY_VERSION of that Ruby, e.g. 3.3.8
#   ROOT     absolute path: the root dir (deb) or the install prefix (dwarf)
#   RUBYCMD  deb:   "chroot:/usr/bin/ruby"  = run `chroot ROOT /usr/bin/ruby ARGS...`
#                   (or `tools/run-in-ns.sh ROOT /usr/bin/ruby ARGS...`); program files must
#                   be copied under ROOT (e.g. ROOT/tmp/...) and named by their in-root path.
#            dwarf: absolute path of bin/ruby, run directly on the host.
#
# example:
#   deb 3.3.8 /root/.cache/rbinspect/rubies/deb-3.3 chroot:/usr/bin/ruby
#   dwarf 3.3.8 /root/.cache/rbinspect/rubies/dwarf-3.3 /root/.cache/rbinspect/rubies/dwarf-3.3/bin/ruby
#
# VARIANTS.  Two builds, each listed as several Rubies (KIND names the variant; a KIND ending
# in "-stripped" has no DWARF or .symtab, every other one has both):
#   var-3.4-static  what ruby-build/rbenv/asdf make: --disable-shared (one static `ruby`, no
#                   libruby.so), --enable-yjit (Debian's rustc), gcc.
#                     static           bin/ruby
#                     static-stripped  bin/ruby-stripped (strip --strip-all of bin/ruby)
#                     yjit             bin/ruby-yjit: bin/ruby --yjit --yjit-call-threshold=1,
#                                      so every method the tests call is compiled
#   var-3.3-clang   CC=clang, --enable-shared --with-jemalloc --enable-yjit; libruby stripped
#                   after install, as a distribution ships it.
#                     clang-jemalloc-stripped       bin/ruby
#                     yjit-clang-jemalloc-stripped  bin/ruby-yjit
#   var-3.4-musl    what an Alpine image runs: CC=musl-gcc (Debian's musl-tools), static
#                   libruby; no YJIT (Debian's rustc targets glibc) and no extension that
#                   needs a library musl-gcc cannot link (openssl, zlib, readline, yaml,
#                   ffi, gdbm); -Wl,--build-id and -Wl,--eh-frame-hdr, which musl-gcc's
#                   link spec drops and Alpine's own gcc passes.
#                     musl             bin/ruby
#                     musl-stripped    bin/ruby-stripped
# The wrappers exec the interpreter, so the pid a test starts is the Ruby's.
#
# The Debian mirror is read from this machine's apt configuration (never hard-coded); apt runs
# with private state under $RBI_RUBIES/.apt and never touches the system's apt configuration.
set -euo pipefail

RBI_RUBIES=${RBI_RUBIES:-$HOME/.cache/rbinspect/rubies}
STAMP=.rbi-stamp
RECIPE=.rbi-recipe
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# Which Debian suites carry each Ruby. 3.4 lives in experimental only, and its libruby needs
# sid's libc6/libssl, so both suites are listed.
declare -A BIN_SUITES=(
	[2.7]="bullseye"
	[3.1]="bookworm"
	[3.3]="trixie"
	[3.4]="sid experimental"
)
# Source package specs for `apt-get source`, tried in order. The mirror's current ruby3.4
# source (3.4.11) returns 404; 3.4.5-1~exp1 is the newest one that downloads. The mirror keeps
# only current versions, so if that pin disappears, fall back to whatever experimental has.
declare -A SRC_SPEC=(
	[2.7]="ruby2.7/bullseye"
	[3.1]="ruby3.1/bookworm"
	[3.3]="ruby3.3/trixie"
	[3.4]="ruby3.4=3.4.5-1~exp1 ruby3.4/experimental"
)
VERSIONS=(2.7 3.1 3.3 3.4)
# Runtime closure of /usr/bin/rubyX.Y and libruby (DT_NEEDED), plus libgcc-s1 which glibc
# loads for pthread cancellation unwinding. Enough for Thread, Queue, Mutex, ObjectSpace, json.
RUNTIME_PKGS=(libc6 libgcc-s1 libcrypt1 libgmp10 zlib1g)
BUILD_DEPS="gcc make autoconf libssl-dev libyaml-dev libffi-dev zlib1g-dev libgmp-dev"
# Smoke test every Ruby must pass before it is stamped.
SMOKE='q = Queue.new; m = Mutex.new
t = Thread.new { m.synchronize { q.pop } }
Thread.pass until t.status == "sleep"; q << 1; t.join
GC.start; n = ObjectSpace.count_objects[:TOTAL]; c = ObjectSpace.each_object(Class).count
raise "ObjectSpace" unless n > 0 && c > 0
print RUBY_VERSION'

log() { printf '%s\n' "test-rubies: $*" >&2; }
# In a Ruby's job (BUILDING set), the reason is also kept for --status.
die() {
	log "error: $*"
	[[ -z ${BUILDING:-} ]] || printf '%s\n' "$*" >> "$RBI_RUBIES/.failed/$BUILDING"
	exit 1
}

# ready NAME RECIPE: Ruby NAME was verified to run and was made by RECIPE.
ready() {
	[[ -s $RBI_RUBIES/$1/$STAMP && $(cat "$RBI_RUBIES/$1/$RECIPE" 2> /dev/null) == "$2" ]]
}

# make_one NAME RECIPE FUNCTION ARGS...: unless NAME is ready by RECIPE, run FUNCTION ARGS... as
# a job of its own (a failure ends the job, not this script; and in a `||` list bash would
# switch off `set -e` inside it), then stamp NAME with RECIPE and the version FUNCTION printed.
# A failure leaves its reason in .failed/NAME and is counted in FAILED.
make_one() {
	local name=$1 recipe=$2 ver
	shift 2
	ready "$name" "$recipe" && return 0
	mkdir -p "$RBI_RUBIES/.failed"
	rm -f "$RBI_RUBIES/.failed/$name"
	SECONDS=0
	(
		BUILDING=$name
		# Any command that fails ends the job with its reason kept.
		set -E
		trap 'die "line $LINENO: $BASH_COMMAND failed"' ERR
		"$@" > "$RBI_RUBIES/.$name.version"
	) &
	wait $! && ver=$(tail -n 1 "$RBI_RUBIES/.$name.version") || ver=
	rm -f "$RBI_RUBIES/.$name.version"
	if [[ -n $ver ]]; then
		echo "$ver" > "$RBI_RUBIES/$name/$STAMP"
		printf '%s\n' "$recipe" > "$RBI_RUBIES/$name/$RECIPE"
		log "$name: ruby $ver ready (${SECONDS}s, $(du -sh "$RBI_RUBIES/$name" | cut -f1))"
	else
		[[ -s $RBI_RUBIES/.failed/$name ]] || echo "failed without a reason" > "$RBI_RUBIES/.failed/$name"
		log "$name: FAILED after ${SECONDS}s: $(head -n 1 "$RBI_RUBIES/.failed/$name")"
		FAILED+=("$name")
	fi
}
FAILED=()

# First archive URI in the machine's apt configuration whose path ends in /debian (so not
# debian-security, debian-debug, or a third-party repository). Reads one-line `deb` entries and
# deb822 `URIs:` fields in apt's own order: sources.list, then sources.list.d in lexical order.
find_mirror() {
	local f files=() uri
	[[ -f /etc/apt/sources.list ]] && files+=(/etc/apt/sources.list)
	for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] && files+=("$f")
	done
	[[ ${#files[@]} -gt 0 ]] || die "no apt sources found"
	uri=$(for f in $(printf '%s\n' "${files[@]}" | sort); do
		case $f in
		*.sources) awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }' "$f" ;;
		*) sed -E 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" || $1 == "deb-src" { print $2 }' ;;
		esac
	done | sed 's:/*$::' | grep -E '^[a-z+]+://[^ ]*/debian$' | head -n 1) || true
	[[ -n $uri ]] || die "no Debian archive (URI ending in /debian) in the apt configuration"
	printf '%s\n' "$uri"
}

# Options for a private apt state in dir $1; sets the global APTO array. The empty status
# file keeps the host's installed packages out of resolution, and the expired sid/experimental
# Release files need Check-Valid-Until=false. Running as the _apt user would fail to write
# into a root-only cache dir, hence Sandbox::User=root.
apt_opts() {
	local a=$1
	APTO=(-o "Dir::Etc::sourcelist=$a/sources.list" -o "Dir::Etc::sourceparts=$a/empty"
		-o "Dir::Etc::preferencesparts=$a/empty" -o "Dir::Etc::preferences=$a/empty/none"
		-o "Dir::State::Lists=$a/lists" -o "Dir::State::status=$a/status"
		-o "Dir::Cache=$a/cache" -o Debug::NoLocking=1 -o APT::Get::List-Cleanup=0
		-o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root)
}

# Create the private apt state in $1 with the sources.list lines on stdin, and update it.
# Callers piping into it must call apt_opts themselves afterwards (subshell).
apt_setup() {
	local a=$1
	mkdir -p "$a/empty" "$a/lists/partial" "$a/cache/archives/partial"
	cat > "$a/sources.list"
	: > "$a/status"
	apt_opts "$a"
	apt-get "${APTO[@]}" -qq update >&2
}

# unpack_root ROOT DEB...: a root dir of the .debs' files, as Debian lays them out (merged /usr:
# PT_INTERP is /lib64/ld-linux-x86-64.so.2, and bullseye's libc6 ships /lib), without running
# maintainer scripts.
unpack_root() {
	local root=$1 d
	shift
	mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/usr/lib64" "$root/usr/sbin" "$root/proc"
	mkdir -m 1777 "$root/tmp"
	for d in bin lib lib64 sbin; do ln -s "usr/$d" "$root/$d"; done
	for d in "$@"; do
		dpkg-deb --fsys-tarfile "$d" | tar -x --keep-directory-symlink -C "$root"
	done
}

# suite_sources VERSION MIRROR: the sources.list lines of the suites that carry Ruby VERSION.
suite_sources() {
	local s
	for s in ${BIN_SUITES[$1]}; do
		echo "deb [signed-by=$KEYRING] $2 $s main"
	done
}

# Unpack Debian's rubyX.Y into the root dir $2.
fetch_binary() {
	local v=$1 root=$2 mirror=$3 a
	a=$RBI_RUBIES/.apt/deb-$v
	rm -rf "$root" "$a"
	suite_sources "$v" "$mirror" | apt_setup "$a"
	apt_opts "$a"  # apt_setup ran in the pipeline's subshell
	mkdir -p "$a/debs"
	(cd "$a/debs" && apt-get "${APTO[@]}" -qq download "ruby$v" "libruby$v" "${RUNTIME_PKGS[@]}")
	unpack_root "$root" "$a"/debs/*.deb
	ln -sf "ruby$v" "$root/usr/bin/ruby"
	rm -rf "$a"  # ~30 MB of lists and .debs per root; refetching takes seconds
}

# Run the smoke test in a root; print RUBY_VERSION.
smoke_binary() {
	chroot "$1" /usr/bin/ruby -e "$SMOKE"
}

binary_recipe() {
	echo "suites ${BIN_SUITES[$1]}; packages ruby$1 libruby$1 ${RUNTIME_PKGS[*]}"
}

# Unpack and verify deb-$1; print its RUBY_VERSION.
binary_one() {
	local v=$1 root=$RBI_RUBIES/deb-$1 mirror
	mirror=$(find_mirror)
	log "deb-$v: downloading ruby$v from ${BIN_SUITES[$v]} ($mirror)"
	fetch_binary "$v" "$root" "$mirror"
	smoke_binary "$root" || die "deb-$v: smoke test failed in $root"
}

do_binaries() {
	local v
	for v in "${VERSIONS[@]}"; do
		make_one "deb-$v" "$(binary_recipe "$v")" binary_one "$v"
	done
}

# The application stack of the suite that carries another Ruby than the host's (trixie: Rails
# 7.2, puma 6.6, Sinatra 4.1, Sidekiq 7.3 and redis-server on Ruby 3.3), for
# tests/integration/apps.sh: every package and its dependencies unpacked into the root dir
# apps-X.Y, run with chroot like deb-X.Y.  libc-bin brings the C.UTF-8 locale the apps' UTF-8
# sources need, and rubygems opens /dev/null.
APPS_VERSION=3.3
APPS_NAME=apps-$APPS_VERSION
APPS_PKGS=(ruby-rails puma ruby-sinatra ruby-sidekiq ruby-sqlite3 redis-server libc-bin)
APPS_SMOKE='require "rails"; require "active_record"; require "sqlite3"; require "puma"
require "sinatra/base"; require "sidekiq"; print RUBY_VERSION'

# The bench's stack, made only by --bench (no test needs it): trixie's rubocop on the same Ruby,
# with ActiveRecord's sources (ruby-activerecord) as its input: deep, busy stacks of many
# small methods (bench/rubocop.sh).
BENCH_NAME=bench-$APPS_VERSION
BENCH_PKGS=(rubocop ruby-activerecord libc-bin)
BENCH_SMOKE='require "rubocop"; require "active_record"; print RUBY_VERSION'

# stack_recipe PKGS...: the recipe of a stack of PKGS from the suite of Ruby $APPS_VERSION.
stack_recipe() {
	echo "suite ${BIN_SUITES[$APPS_VERSION]}; packages $* and their dependencies; /dev/null"
}

# stack_one NAME SMOKE PKGS...: unpack PKGS and their dependencies from the suite of Ruby
# $APPS_VERSION into the root dir NAME and check that SMOKE (Ruby code printing RUBY_VERSION)
# runs there; print its RUBY_VERSION.
stack_one() {
	local name=$1 smoke=$2 root=$RBI_RUBIES/$1 a=$RBI_RUBIES/.apt/$1 mirror
	shift 2
	mirror=$(find_mirror)
	log "$name: downloading $* from ${BIN_SUITES[$APPS_VERSION]} ($mirror)"
	rm -rf "$root" "$a"
	suite_sources "$APPS_VERSION" "$mirror" | apt_setup "$a"
	apt_opts "$a"
	apt-get "${APTO[@]}" -qq -o APT::Install-Recommends=false install -y --download-only \
		"$@" >&2
	unpack_root "$root" "$a"/cache/archives/*.deb
	rm -rf "$a"
	mkdir -p "$root/dev"
	mknod -m 666 "$root/dev/null" c 1 3
	LANG=C.UTF-8 chroot "$root" /usr/bin/ruby -e "$smoke" ||
		die "$name: the stack does not load in $root"
}

do_apps() {
	make_one "$APPS_NAME" "$(stack_recipe "${APPS_PKGS[@]}")" \
		stack_one "$APPS_NAME" "$APPS_SMOKE" "${APPS_PKGS[@]}"
}

do_bench() {
	make_one "$BENCH_NAME" "$(stack_recipe "${BENCH_PKGS[@]}")" \
		stack_one "$BENCH_NAME" "$BENCH_SMOKE" "${BENCH_PKGS[@]}"
}

# Install missing build dependencies with the system apt (packages only, config untouched).
ensure_build_deps() {
	local missing=() p
	for p in $BUILD_DEPS; do
		[[ $(dpkg-query -W -f '${Status}' "$p" 2> /dev/null) == *"ok installed" ]] || missing+=("$p")
	done
	command -v dpkg-source > /dev/null || missing+=(dpkg-dev)
	[[ ${#missing[@]} -eq 0 ]] && return
	log "installing build dependencies: ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends "${missing[@]}" \
		> /dev/null
}

# apt-get source (patches applied by dpkg-source) of Ruby $1 into $RBI_RUBIES/.src/$3 (default
# $1); print the tree's path.
fetch_source() {
	local v=$1 mirror=$2 a=$RBI_RUBIES/.apt/src srcdir s spec dir
	srcdir=$RBI_RUBIES/.src/${3:-$v}
	# One update serves all builds of a run; stale lists would name files the mirror dropped.
	if [[ -z $(find "$a/.updated" -mmin -60 2> /dev/null) ]]; then
		for s in bullseye bookworm trixie experimental; do
			echo "deb-src [signed-by=$KEYRING] $mirror $s main"
		done | apt_setup "$a"
		touch "$a/.updated"
	fi
	apt_opts "$a"
	for spec in ${SRC_SPEC[$v]}; do
		rm -rf "$srcdir" && mkdir -p "$srcdir"
		(cd "$srcdir" && apt-get "${APTO[@]}" -qq source "$spec" > /dev/null) && break
		log "dwarf-$v: apt-get source $spec failed"
	done
	dir=$(find "$srcdir" -mindepth 1 -maxdepth 1 -type d -name "ruby$v-*" | head -n 1)
	[[ -n $dir && -f $dir/configure ]] || die "dwarf-$v: no source tree in $srcdir"
	# A release tarball ships the generated parser, so neither bison nor a base ruby is needed.
	[[ -f $dir/parse.c ]] || log "dwarf-$v: warning: no generated parse.c; build may need bison"
	# Debian's patches edit configure.ac (as Debian's build, we regenerate with autoconf);
	# the Makefile would otherwise try the same in the middle of make, after configure ran.
	if [[ $dir/configure.ac -nt $dir/configure ]]; then
		(cd "$dir" && autoconf -o configure) >&2 || die "dwarf-$v: autoconf failed"
	fi
	printf '%s\n' "$dir"
}

# configure_args VERSION ARGS...: configure's arguments for a build of Ruby VERSION whose own
# arguments are ARGS, one a line (the prefix aside). They are the build's recipe.
configure_args() {
	local v=$1
	shift
	printf '%s\n' --disable-install-doc optflags=-O2 debugflags=-g "$@"
	# Ruby 2.7's openssl extension does not build against OpenSSL 3 (the host's).
	[[ $v != 2.7 ]] || echo --with-out-ext=openssl
}

# source_recipe VERSION ARGS...: what a source build of VERSION with ARGS is made of.
source_recipe() {
	local v=$1
	shift
	echo "source ${SRC_SPEC[$v]}; configure $(configure_args "$v" "$@" | tr '\n' ' ')"
}

# Configure and make Ruby $1 from source tree $2 (out of tree, in $RBI_RUBIES/.build/NAME) under
# nice, install into $3; $4 is the build's name, the rest configure's own arguments.  A failure
# keeps the end of the log that says why in .failed/NAME.
build_source() {
	local v=$1 src=$2 prefix=$3 name=$4 b step args
	shift 4
	mapfile -t args < <(configure_args "$v" "$@")
	b=$RBI_RUBIES/.build/$name
	rm -rf "$b" "$prefix" && mkdir -p "$b"
	for step in configure make install; do
		if ! (cd "$b" && build_step "$step" "$v" "$src" "$prefix" "${args[@]}") > "$b/$step.log" 2>&1; then
			{ echo "$step failed; the end of $b/$step.log:"; tail -n 25 "$b/$step.log"; } \
				>> "$RBI_RUBIES/.failed/$name"
			die "$name: $step failed (log: $b/$step.log)"
		fi
	done
}

# build_step STEP VERSION SRC PREFIX ARGS...: one step of build_source, in the build dir.
build_step() {
	local step=$1 v=$2 src=$3 prefix=$4
	shift 4
	case $step in
	configure) nice -n 19 "$src/configure" --prefix="$prefix" "$@" ;;
	make) nice -n 19 make -j2 ;;
	install) install_built "$v" ;;
	esac
}

# `make install`, which never strips. For 2.7 on the bookworm host the gem step fails (the
# default gems need the openssl extension that was left out), so rbinstall.rb is told to skip
# its "gem" install type (default and bundled gems): the interpreter, libruby, the standard
# library, extensions and headers are all still installed. The option is appended from a
# makefile fragment: a command-line INSTRUBY_ARGS= override would also land in MAKEFLAGS,
# which rbinstall.rb receives inside a quoted argument that the shell then cannot parse.
install_built() {
	if [[ $1 == 2.7 ]]; then
		printf 'include GNUmakefile\nINSTRUBY_ARGS += --exclude=gem\n' > rbi-install.mk
		nice -n 19 make -f rbi-install.mk install-nodoc
	else
		nice -n 19 make install
	fi
}

# Fetch, build and verify one DWARF Ruby; print its RUBY_VERSION.
dwarf_one() {
	local v=$1 prefix=$RBI_RUBIES/dwarf-$1 src mirror
	mirror=$(find_mirror)
	ensure_build_deps
	log "dwarf-$v: fetching source ${SRC_SPEC[$v]}"
	src=$(fetch_source "$v" "$mirror")
	log "dwarf-$v: building $(basename "$src") into $prefix"
	build_source "$v" "$src" "$prefix" "dwarf-$v" --enable-shared
	"$prefix/bin/ruby" -e "$SMOKE" > /dev/null || die "dwarf-$v: smoke test failed"
	check_dwarf "$v" "$prefix"
	# The instruction tables' sources, for tests/integration/insn-tables.sh.
	rm -rf "$RBI_RUBIES/.insns/$v" && mkdir -p "$RBI_RUBIES/.insns/$v"
	(cd "$src" && cp --parents version.h include/ruby/version.h insns.inc insns_info.inc \
		"$RBI_RUBIES/.insns/$v/") || true
	rm -rf "$RBI_RUBIES/.build/dwarf-$v" "$RBI_RUBIES/.src/$v" # 100-600 MB each
	"$prefix/bin/ruby" -e 'print RUBY_VERSION'
}

do_dwarf() {
	local v
	for v in "${VERSIONS[@]}"; do
		make_one "dwarf-$v" "$(source_recipe "$v" --enable-shared)" dwarf_one "$v"
	done
	rm -rf "$RBI_RUBIES/.apt/src" # ~60 MB of source indexes, only needed while building
}

# The point of these builds: libruby must keep .symtab and DWARF.
check_dwarf() {
	local lib sections
	lib=$(find "$2/lib" -maxdepth 1 -name "libruby.so.$1*" -type f | head -n 1)
	[[ -n $lib ]] || die "dwarf-$1: no libruby.so.$1* in $2/lib"
	# Read the whole list first: `readelf | grep -q` fails under pipefail when grep exits early.
	sections=$(readelf -S -W "$lib")
	[[ $sections == *" .symtab "* ]] || die "dwarf-$1: $lib has no .symtab"
	[[ $sections == *" .debug_info "* ]] || die "dwarf-$1: $lib has no DWARF"
}

# ---- Variants (see VARIANTS at the top) ------------------------------------------------

VARIANT_DEPS="clang rustc libjemalloc-dev musl-tools"

# bin/ruby-yjit in prefix $1: the interpreter with every method compiled at its first call.
yjit_wrapper() {
	printf '#!/bin/sh\nexec "%s/bin/ruby" --yjit --yjit-call-threshold=1 "$@"\n' "$1" \
		> "$1/bin/ruby-yjit"
	chmod +x "$1/bin/ruby-yjit"
	[[ $("$1/bin/ruby-yjit" -e 'print RubyVM::YJIT.enabled?') == true ]] ||
		die "$(basename "$1"): YJIT is not enabled by --yjit"
}

# Build variant $1 (var-VERSION-WHAT) of Ruby $2 with configure arguments $3...; print its
# RUBY_VERSION.
variant_one() {
	local name=$1 v=$2 prefix=$RBI_RUBIES/$1 src ver lib mirror
	shift 2
	mirror=$(find_mirror)
	ensure_build_deps
	log "$name: fetching source ${SRC_SPEC[$v]}"
	src=$(fetch_source "$v" "$mirror" "$name")
	log "$name: building $(basename "$src") ($*) into $prefix"
	build_source "$v" "$src" "$prefix" "$name" "$@"
	ver=$("$prefix/bin/ruby" -e "$SMOKE") || die "$name: smoke test failed"
	case $name in
	*-static | *-musl)
		[[ -z $(find "$prefix/lib" -maxdepth 1 -name 'libruby.so*') ]] ||
			die "$name: a static build installed libruby.so"
		strip --strip-all -o "$prefix/bin/ruby-stripped" "$prefix/bin/ruby"
		"$prefix/bin/ruby-stripped" -e "$SMOKE" > /dev/null || die "$name: stripped ruby fails"
		;;&
	*-musl)
		[[ $("$prefix/bin/ruby" -e 'print RUBY_PLATFORM') == *-linux-musl ]] ||
			die "$name: not a musl Ruby"
		;;
	*-clang)
		lib=$(find "$prefix/lib" -maxdepth 1 -name "libruby.so.$v*" -type f | head -n 1)
		[[ -n $lib ]] || die "$name: no libruby.so.$v* in $prefix/lib"
		readelf -p .comment "$lib" | grep -q clang || die "$name: $lib was not built by clang"
		strip --strip-unneeded "$lib"
		"$prefix/bin/ruby" -e "$SMOKE" > /dev/null || die "$name: stripped libruby fails"
		;;
	esac
	[[ $name == *-musl ]] || yjit_wrapper "$prefix"
	rm -rf "$RBI_RUBIES/.build/$name" "$RBI_RUBIES/.src/$name"
	printf '%s' "$ver"
}

# variant NAME VERSION ARGS...: make variant NAME of Ruby VERSION with configure arguments ARGS.
variant() {
	local name=$1 v=$2
	shift 2
	make_one "$name" "$(source_recipe "$v" "$@")" variant_one "$name" "$v" "$@"
}

do_variants() {
	local p missing=()
	for p in $VARIANT_DEPS; do
		[[ $(dpkg-query -W -f '${Status}' "$p" 2> /dev/null) == *"ok installed" ]] ||
			missing+=("$p")
	done
	if [[ ${#missing[@]} -gt 0 ]]; then
		log "installing the variants' build dependencies: ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends \
			"${missing[@]}" > /dev/null
	fi
	variant var-3.4-static 3.4 --disable-shared --enable-yjit
	# GNU ar and ranlib load every plugin in /usr/lib/bfd-plugins, where lldb-14's LLVM 14
	# gold plugin aborts on the YJIT object rustc's newer LLVM wrote ("LLVM ERROR: Invalid
	# encoding"); gcc's wrappers load only gcc's own plugin.
	variant var-3.3-clang 3.3 --enable-shared --with-jemalloc --enable-yjit CC=clang \
		AR=gcc-ar RANLIB=gcc-ranlib
	variant var-3.4-musl 3.4 --disable-shared --disable-yjit CC=musl-gcc \
		LDFLAGS="-Wl,--build-id -Wl,--eh-frame-hdr" \
		--with-out-ext=openssl,zlib,readline,psych,fiddle,gdbm,dbm,nkf
	rm -rf "$RBI_RUBIES/.apt/src"
}

do_list_variants() {
	local d=$RBI_RUBIES/var-3.4-static
	if [[ -s $d/$STAMP ]]; then
		echo "static $(< "$d/$STAMP") $d $d/bin/ruby"
		echo "static-stripped $(< "$d/$STAMP") $d $d/bin/ruby-stripped"
		echo "yjit $(< "$d/$STAMP") $d $d/bin/ruby-yjit"
	fi
	d=$RBI_RUBIES/var-3.3-clang
	if [[ -s $d/$STAMP ]]; then
		echo "clang-jemalloc-stripped $(< "$d/$STAMP") $d $d/bin/ruby"
		echo "yjit-clang-jemalloc-stripped $(< "$d/$STAMP") $d $d/bin/ruby-yjit"
	fi
	d=$RBI_RUBIES/var-3.4-musl
	if [[ -s $d/$STAMP ]]; then
		echo "musl $(< "$d/$STAMP") $d $d/bin/ruby"
		echo "musl-stripped $(< "$d/$STAMP") $d $d/bin/ruby-stripped"
	fi
	return 0
}

# "apps VERSION ROOT" (or "bench ..." with --list-bench): a stack's root, when ready.
do_list_stack() {
	local d=$RBI_RUBIES/$2
	[[ -s $d/$STAMP ]] && echo "$1 $(< "$d/$STAMP") $d"
	return 0
}

# TAP, one line per Ruby this script makes: ready, or why its last attempt failed.
do_status() {
	local names=() name n=0 f
	for name in "${VERSIONS[@]}"; do names+=("deb-$name"); done
	for name in "${VERSIONS[@]}"; do names+=("dwarf-$name"); done
	names+=(var-3.4-static var-3.3-clang var-3.4-musl "$APPS_NAME")
	echo "1..${#names[@]}"
	for name in "${names[@]}"; do
		n=$((n + 1))
		f=$RBI_RUBIES/.failed/$name
		if [[ -s $RBI_RUBIES/$name/$STAMP ]]; then
			echo "ok $n - $name: ruby $(< "$RBI_RUBIES/$name/$STAMP") ready"
		elif [[ -s $f ]]; then
			echo "not ok $n - $name: $(head -n 1 "$f")"
			sed 's/^/# /' "$f"
		else
			echo "not ok $n - $name: not made (tools/test-rubies.sh makes it)"
		fi
	done
}

do_list() {
	local v d
	for v in "${VERSIONS[@]}"; do
		d=$RBI_RUBIES/deb-$v
		[[ -s $d/$STAMP ]] && echo "deb $(< "$d/$STAMP") $d chroot:/usr/bin/ruby"
	done
	for v in "${VERSIONS[@]}"; do
		d=$RBI_RUBIES/dwarf-$v
		[[ -s $d/$STAMP ]] && echo "dwarf $(< "$d/$STAMP") $d $d/bin/ruby"
	done
	return 0
}

usage() {
	sed -n '3,24s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

main() {
	local bin=0 dwarf=0 variants=0 apps=0 bench=0 list=0 list_variants=0 list_apps=0
	local list_bench=0 status=0 arg
	for arg in "$@"; do
		case $arg in
		--binaries) bin=1 ;;
		--dwarf) dwarf=1 ;;
		--variants) variants=1 ;;
		--apps) apps=1 ;;
		--bench) bench=1 ;;
		--list) list=1 ;;
		--list-apps) list_apps=1 ;;
		--list-bench) list_bench=1 ;;
		--list-variants) list_variants=1 ;;
		--status) status=1 ;;
		*) usage ;;
		esac
	done
	[[ $# -eq 0 ]] && bin=1 dwarf=1 variants=1 apps=1
	mkdir -p "$RBI_RUBIES"
	RBI_RUBIES=$(cd "$RBI_RUBIES" && pwd -P)
	# Concurrent runs (several test suites at once) wait for each other instead of unpacking
	# or building into the same dirs; --list alone never waits.
	if [[ $bin -eq 1 || $dwarf -eq 1 || $variants -eq 1 || $apps -eq 1 || $bench -eq 1 ]]; then
		exec 9> "$RBI_RUBIES/.lock"
		flock 9
	fi
	[[ $bin -eq 1 ]] && do_binaries
	[[ $dwarf -eq 1 ]] && do_dwarf
	[[ $variants -eq 1 ]] && do_variants
	[[ $apps -eq 1 ]] && do_apps
	[[ $bench -eq 1 ]] && do_bench
	[[ $list -eq 1 ]] && do_list
	[[ $list_variants -eq 1 ]] && do_list_variants
	[[ $list_apps -eq 1 ]] && do_list_stack apps "$APPS_NAME"
	[[ $list_bench -eq 1 ]] && do_list_stack bench "$BENCH_NAME"
	[[ $status -eq 1 ]] && do_status
	[[ ${#FAILED[@]} -eq 0 ]] || { log "not made: ${FAILED[*]} (tools/test-rubies.sh --status)"; return 1; }
	return 0
}

main "$@"
