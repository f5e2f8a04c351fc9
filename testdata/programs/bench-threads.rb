# bench-threads.rb: a benchmark target: 10 threads, each parked 50 Ruby
# frames deep (recursion plus a block), then "READY <pid>".  Ruby 2.7-3.4.
$stdout.sync = true
DEPTH = Integer(ENV.fetch("DEPTH", "50"))

def descend(n, q)
  return [1].each { q.pop } if n <= 2
  descend(n - 1, q)
end

queues = Array.new(10) { Queue.new }
threads = queues.each_with_index.map do |q, i|
  Thread.new { descend(DEPTH, q) }.tap { |t| t.name = "worker-#{i}" }
end
Thread.pass until threads.all? { |t| t.status == "sleep" }
puts "READY #{Process.pid}"
sleep
