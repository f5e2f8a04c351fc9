# recurse.rb — a stack that never stands still, for the sampler's torn-read detection: the main
# thread calls and returns all the time (Object#r recursing 0 to 59 levels, over and over), so a
# reader that is not careful sees frames that are half pushed or already popped. Ruby 2.7 to
# 3.4, no gems, no allocation in the loop.
#
# usage: ruby recurse.rb
#   Prints "READY <pid>" and runs until killed. Every real stack is
#   <main> > [Kernel#loop >] block in <main> > Object#r x N [> Integer#zero? ...]; a sampled
#   stack with anything else in it was made up.
$stdout.sync = true

def r(n)
  n.zero? ? 0 : r(n - 1) + 1
end

$stdout.write("READY #{Process.pid}\n")
i = 0
loop do
  r(i % 60)
  i += 7
end
