# tempname.rb — methods of classes and modules without a permanent name, the way Ruby 3.4
# labels them: an anonymous class named with Module#set_temporary_name (3.3+), a class under
# an anonymous module (its temporary path "#<Module:0x...>::Inner"), and a singleton method of
# a temporarily named module.  Ruby 3.4 labels these frames with the bare method name; a
# permanently named class beside them keeps "Named#wait".  Ruby 2.7 to 3.4, no gems (before
# 3.3 the temporary name is left out).
#
# usage: ruby tempname.rb            (env: RBI_TRUTH=FILE)
#   Prints "READY <pid>" once its thread is parked and the truth file is written, then stays
#   parked forever without allocating.  The truth file format is at the top of lib/truth.rb.
#
# Threads: main     <main> > Named#wait > (temp)#step > (temp).hop > Inner#park > Kernel#sleep
#          rbi-truth, rbi-truth-helper   the truth writer (lib/truth.rb), parked in Queue#pop
$stdout.sync = true
require_relative "lib/truth"

temp = Class.new do
  def step
    self.class.const_get(:HOP).hop
  end
end
hop = Module.new do
  def self.hop
    outer = Module.new
    outer.const_set(:Inner, Class.new do
      def park
        RbiTruth.parking!
        sleep
      end
    end)
    outer::Inner.new.park
  end
end
if temp.respond_to?(:set_temporary_name)
  temp.set_temporary_name("fake_name")
  hop.set_temporary_name("<hop>")
end
temp.const_set(:HOP, hop)

class Named
  def wait(temp)
    temp.new.step
  end
end

RbiTruth.start("tempname")
Named.new.wait(temp)
