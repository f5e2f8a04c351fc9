# simple.rb — the smallest test target: the main thread sleeping inside two nested methods.
# Ruby 2.7 to 3.4, no gems. Used for `info` and bad-input tests.
#
# usage: ruby simple.rb              (env: RBI_TRUTH=FILE)
#   Prints "READY <pid>" once main is parked and the truth file is written, then stays parked
#   forever without allocating. The truth file format is documented at the top of lib/truth.rb.
#
# Threads: main           <main> > outer > inner > Kernel#sleep
#          rbi-truth, rbi-truth-helper   the truth writer (lib/truth.rb), parked in Queue#pop
$stdout.sync = true
require_relative "lib/truth"

def inner
  RbiTruth.parking!
  sleep
end

def outer
  inner
end

RbiTruth.start("simple")
outer
