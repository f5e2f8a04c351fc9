# late-threads.rb — a process that starts threads after a debugger attached: for the test that
# a session's thread count is not the one it saw at attach (tests/integration/late-threads.sh).
# Ruby 2.7 to 3.4, no gems.
#
# usage: ruby late-threads.rb   (env: RBI_TRUTH=FILE, RBI_LATE=N threads, default 2)
#   Prints "READY <pid>" with its main thread alone, waits until the file FILE.go exists,
#   starts N threads that sleep, writes FILE.started holding the number of threads Ruby
#   has (Thread.list.size), and sleeps forever.
$stdout.sync = true
truth = ENV.fetch("RBI_TRUTH")
late = Integer(ENV.fetch("RBI_LATE", "2"))

puts "READY #{Process.pid}"
sleep 0.05 until File.exist?("#{truth}.go")
q = Queue.new
late.times { |i| Thread.new(i) { q.pop } }
sleep 0.01 until Thread.list.size == late + 1 && Thread.list.all? { |t| t == Thread.current || t.stop? }
File.write("#{truth}.started.tmp", "#{Thread.list.size}\n")
File.rename("#{truth}.started.tmp", "#{truth}.started")
sleep
