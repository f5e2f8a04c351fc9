# lib/required.rb — loaded by threads.rb's "requirer" thread with require_relative. Its
# top-level code blocks, so that thread's stack keeps a "<top (required)>" frame; the main
# thread later parks in Required.park_main, a method defined here.

module Required
  def self.park_main(q)
    RbiTruth.parking!
    q.pop
  end

  def self.block_in_require(q)
    RbiTruth.parking!
    q.pop
  end
end

Required.block_in_require(PARKED) unless Thread.current == Thread.main
