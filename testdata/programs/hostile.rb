# hostile.rb — a large heap of hostile content for `rbinspect heap-dump`: RBI_HEAP_OBJECTS
# (default 1000000) objects in units of three: a 7-bit String of control, escape, quote,
# backslash and NUL bytes (dump_all shows such a value), a binary String of random bytes
# 0-255 and an invalid UTF-8 one in turn (no value shown), and an Array that holds the
# unit's Strings and the next unit's Array: one cycle through every unit, held by a global
# from its first Array.  Same bytes every run (a seeded Random).  Writes to
# ENV["RBI_TRUTH"], one JSON object a line, the first 300 units' Strings ("address",
# "kind" seven/binary/broken, "bytesize", their bytes as "hex") and the first
# ten Arrays of the cycle ("ring", its index); then, after a full GC and with GC off,
# prints "READY <pid>" and sleeps.  Ruby 2.7 to 3.4, no gems.
require "objspace"
require "json"
$stdout.sync = true

units = Integer(ENV.fetch("RBI_HEAP_OBJECTS", "1000000")) / 3
rng = Random.new(17)
hostile = ["\e[2J", "\e]0;title\a", "\"", "\\", "\0", "\x7f", "\t\r\n", "</script>", "\b\f",
           "%s%n", "\x01\x1f"]

def rbi_address(obj)
  JSON.parse(ObjectSpace.dump(obj))["address"]
end

ring = Array.new(units) do |i|
  seven = +""
  (1 + rng.rand(6)).times { seven << hostile[rng.rand(hostile.size)] << "u#{i}" }
  # Made, not copied: a copy would share its bytes, and dump_all shows no bytesize
  # of a shared String.
  other = if i.even?
            rng.bytes(1 + rng.rand(40))
          else
            "\xff\xfe broken #{i}".force_encoding(Encoding::UTF_8)
          end
  [seven, other, nil]
end
ring.each_with_index { |a, i| a[2] = ring[(i + 1) % units] } if units > 0
$rbi_hostile = ring.first
ring = nil

File.open(ENV.fetch("RBI_TRUTH"), "w") do |f|
  a = $rbi_hostile
  [units, 300].min.times do |i|
    f.puts JSON.generate("address" => rbi_address(a[0]), "kind" => "seven",
                         "bytesize" => a[0].bytesize, "hex" => a[0].unpack1("H*"))
    f.puts JSON.generate("address" => rbi_address(a[1]), "kind" => i.even? ? "binary" : "broken",
                         "bytesize" => a[1].bytesize, "hex" => a[1].unpack1("H*"))
    f.puts JSON.generate("address" => rbi_address(a), "ring" => i) if i < 10
    a = a[2]
  end
end
GC.start
GC.disable
$stdout.write("READY #{Process.pid}\n")
sleep
