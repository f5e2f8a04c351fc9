# puma.rb — cluster mode as production runs it: 2 workers of 5 threads, the app loaded in the
# master and forked (preload_app!), on 127.0.0.1 only.  env: RBI_APP_PORT, RBI_APP_DIR.
# Its files (the database, a worker's core) in RBI_APP_DIR: chroot starts it in /.
Dir.chdir(ENV.fetch("RBI_APP_DIR"))
workers 2
threads 5, 5
preload_app!
bind "tcp://127.0.0.1:#{ENV.fetch("RBI_APP_PORT")}"
pidfile File.join(ENV.fetch("RBI_APP_DIR"), "puma.pid")
on_worker_boot { ActiveRecord::Base.establish_connection }
