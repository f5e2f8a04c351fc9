# retain.rb — objects kept alive through known chains of references, for `heap retainers`.
# A Leaf held by a Box's instance variable, in an Array, in a Hash, in a global variable;
# and an Array held only through three nested Arrays in another global.  Writes the
# chains' addresses (ObjectSpace.dump's) to ENV["RBI_TRUTH"], one "name 0x..." a line,
# then the program's own ObjectSpace.dump_all to ENV["RBI_TRUTH"].dump (with its ROOT
# lines), prints "READY <pid>" and sleeps with GC off.  Everything is built in methods
# and held by globals only, so no local variable keeps a shorter path.  Ruby 2.7 to 3.4.
require "objspace"
require "json"
$stdout.sync = true

module RbiRetain
  class Leaf; end

  class Box
    def initialize(item)
      @item = item
    end
  end
end

def rbi_address(obj)
  JSON.parse(ObjectSpace.dump(obj))["address"]
end

def rbi_build
  $rbi_retain = { "chain" => [RbiRetain::Box.new(RbiRetain::Leaf.new)] }
  $rbi_nested = [[[["array leaf"]]]]
end

def rbi_truth(path)
  array = $rbi_retain["chain"]
  box = array[0]
  File.open(path, "w") do |f|
    f.puts "hash #{rbi_address($rbi_retain)}"
    f.puts "array #{rbi_address(array)}"
    f.puts "box #{rbi_address(box)}"
    f.puts "leaf #{rbi_address(box.instance_variable_get(:@item))}"
    n1 = $rbi_nested
    f.puts "outer #{rbi_address(n1)}"
    f.puts "middle #{rbi_address(n1[0])}"
    f.puts "inner #{rbi_address(n1[0][0])}"
    f.puts "aleaf #{rbi_address(n1[0][0][0])}"
  end
end

rbi_build
GC.start
GC.disable
rbi_truth(ENV.fetch("RBI_TRUTH"))
File.open(ENV.fetch("RBI_TRUTH") + ".dump", "w") { |f| ObjectSpace.dump_all(output: f) }
$stdout.write("READY #{Process.pid}\n")
sleep
