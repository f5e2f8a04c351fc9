# gvl.rb — two threads that both want the GVL all the time ("left" and "right", each spinning
# in Ruby code), next to a main thread asleep: one of them runs while the other waits for the
# GVL. For the sampler's thread states (--idle, --gvl, --threads). Ruby 2.7 to 3.4, no gems.
#
# usage: ruby gvl.rb
#   Prints "READY <pid>" once both spinners run, then runs until killed.
$stdout.sync = true

module Busy
  def self.left
    i = 0
    while true do i += 1 end
  end

  def self.right
    i = 0
    while true do i += 1 end
  end
end

left = Thread.new { Busy.left }
left.name = "left"
right = Thread.new { Busy.right }
right.name = "right"
Thread.pass until left.status == "run" && right.status == "run"
$stdout.write("READY #{Process.pid}\n")
sleep
