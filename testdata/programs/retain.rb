# retain.rb — objects kept alive through known chains of references, for `heap retainers`
# and `heap top`.  A Leaf held by a Box's instance variable, in an Array, in a Hash, in a
# global variable; an Array held only through three nested Arrays in another global; a
# Big holding an Array of 100 Strings of its own, a list of 50 Links, each the only
# reference to the next, and a Captured held only by a local a Proc in a global captured
# (through the Proc's environment).  Writes the chains' addresses (ObjectSpace.dump's) to
# ENV["RBI_TRUTH"], one "name 0x..." a line, and what the Links retain, the sum of their
# ObjectSpace.memsize_of ("links_retained N"),
# then the program's own ObjectSpace.dump_all to ENV["RBI_TRUTH"].dump (with its ROOT
# lines), prints "READY <pid>" and sleeps with GC off.  Everything is built by a thread
# that then ends and held by globals only, and the truth is taken by a forked child, so
# no stack, the machine stack Ruby scans conservatively included, keeps another path to
# any of it.  Ruby 2.7 to 3.4.
require "objspace"
require "json"
$stdout.sync = true

module RbiRetain
  class Leaf; end
  class Captured; end

  class Box
    def initialize(item)
      @item = item
    end
  end

  class Big
    attr_reader :items

    def initialize(items)
      @items = items
    end
  end

  class Link
    attr_reader :after

    def initialize(after)
      @after = after
    end
  end
end

def rbi_address(obj)
  JSON.parse(ObjectSpace.dump(obj))["address"]
end

# A Proc whose environment alone holds ITEM.
def rbi_capture(item)
  proc { item }
end

def rbi_build
  $rbi_closure = rbi_capture(RbiRetain::Captured.new)
  $rbi_retain = { "chain" => [RbiRetain::Box.new(RbiRetain::Leaf.new)] }
  $rbi_nested = [[[["array leaf"]]]]
  $rbi_big = RbiRetain::Big.new(Array.new(100) { |i| "x" * 1000 + i.to_s })
  $rbi_links = nil
  50.times { $rbi_links = RbiRetain::Link.new($rbi_links) }
end

def rbi_links_size
  size = 0
  link = $rbi_links
  while link
    size += ObjectSpace.memsize_of(link)
    link = link.after
  end
  size
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
    f.puts "big #{rbi_address($rbi_big)}"
    f.puts "closure #{rbi_address($rbi_closure)}"
    f.puts "captured #{rbi_address($rbi_closure.call)}"
    f.puts "links_retained #{rbi_links_size}"
  end
end

Thread.new { rbi_build }.join
GC.start
GC.disable
Process.wait(fork { rbi_truth(ENV.fetch("RBI_TRUTH")) })
File.open(ENV.fetch("RBI_TRUTH") + ".dump", "w") { |f| ObjectSpace.dump_all(output: f) }
$stdout.write("READY #{Process.pid}\n")
sleep
