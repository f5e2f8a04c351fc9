# puma-single.rb — single mode (no forked workers: the application runs in puma's own process),
# 5 threads, on 127.0.0.1 only.  env: RBI_APP_PORT, RBI_APP_DIR.
# Its files (the database, a worker's core) in RBI_APP_DIR: chroot starts it in /.
Dir.chdir(ENV.fetch("RBI_APP_DIR"))
threads 5, 5
bind "tcp://127.0.0.1:#{ENV.fetch("RBI_APP_PORT")}"
pidfile File.join(ENV.fetch("RBI_APP_DIR"), "puma.pid")
