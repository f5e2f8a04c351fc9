# alloc.rb — a program that spends a good share of its time collecting garbage: the main thread
# allocates short-lived Strings and Arrays as fast as it can (Alloc.churn), never keeping them.
# For the sampler's GC frame. Ruby 2.7 to 3.4, no gems.
#
# usage: ruby alloc.rb
#   Prints "READY <pid>" and runs until killed.
$stdout.sync = true

module Alloc
  def self.churn
    i = 0
    while true
      a = Array.new(64) { |j| "s#{i + j}" }
      i += a.size
    end
  end
end

$stdout.write("READY #{Process.pid}\n")
Alloc.churn
