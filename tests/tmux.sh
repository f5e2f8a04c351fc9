# tmux.sh: a terminal for integration tests (sourced after tap.sh and rubies.sh).
# tmux_start WHAT: a tmux server on a socket of this test's own, killed at exit, or, when
# there is no tmux or no pty, one SKIP saying why WHAT cannot run, and the test ends.
# tm ARGS...: tmux on that socket.
tmux_start() {
	local why
	if ! command -v tmux >/dev/null; then
		skip "tmux is not installed (tools/install-deps.sh --test)"
		tap_done
		exit
	fi
	if why=$(no_pty); then
		skip "$why: $1"
		tap_done
		exit
	fi
	TMUX_SOCK=rbi-$(basename "$0" .sh)-$$
	trap 'tm kill-server 2>/dev/null; rubies_cleanup' EXIT
	unset TMUX
}
tm() { tmux -L "$TMUX_SOCK" "$@"; }
