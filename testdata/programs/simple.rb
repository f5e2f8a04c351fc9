# simple.rb — the smallest test target: the main thread sleeping inside two nested methods and
# a block, with local variables of every kind. Ruby 2.7 to 3.4, no gems. Used for `info`,
# bad-input and `frame` (locals) tests.
#
# usage: ruby simple.rb              (env: RBI_TRUTH=FILE)
#   Prints "READY <pid>" once main is parked and the truth file is written, then stays parked
#   forever without allocating. The truth file format is documented at the top of lib/truth.rb.
#
# Threads: main           <main> > outer > inner > Array#each > block in inner > Kernel#sleep
#                         (frames 5..0). "local" truth records: frame 1 (the block: its own
#                         variables and inner's), 3 (inner: one of each kind of value, its
#                         variables on the VM stack) and 4 (outer: its variables moved to the
#                         heap by a Binding); "param" records: inner's parameters (frame 3);
#                         "expr" records (frame 3): main's instance variables (self of
#                         frames 1-5, more than fit in its slot), globals and constants.
#          rbi-truth, rbi-truth-helper   the truth writer (lib/truth.rb), parked in Queue#pop
$stdout.sync = true
require_relative "lib/truth"

class Thing
  LIMIT = 99
  NAME = "thing"
  module Inner
    DEEP = :deep_sym
  end

  def initialize(n)
    @n = n
  end
end

# main's instance variables: six, more than its slot holds (on the heap from 2.7 to 3.4).
@top_int = 7
@top_str = "top ivar"
@top_sym = :top_sym
@top_nil = nil
@top_float = 2.5
@top_obj = Thing.new([Thing.new("deep ivar")])  # p steps: @top_obj.@n[0].@n
$rbi_global = "global value"
$rbi_int = -12

def inner(count, label, *rest, key: :kw)
  a_nil = nil
  a_true = true
  a_false = false
  small = 42
  negative = -7
  big_fixnum = 2**61
  bignum = 2**70
  flo = 1.5
  zero = 0.0
  heap_float = 1.0e300
  sym = :static_sym
  dsym = "dyn_#{count}_sym".to_sym
  str = "hello"
  esc = "tab\tnl\n\e[31mred\u00e9\"q\\\u202e"
  long = "x" * 600
  arr = [1, 2]
  obj = Thing.new(count)
  RbiTruth.locals(3, local_variables,
                  { count: count, label: label, rest: rest, key: key, a_nil: a_nil,
                    a_true: a_true, a_false: a_false, small: small, negative: negative,
                    big_fixnum: big_fixnum, bignum: bignum, flo: flo, zero: zero,
                    heap_float: heap_float, sym: sym, dsym: dsym, str: str, esc: esc,
                    long: long, arr: arr, obj: obj, later: nil })
  RbiTruth.params(3, method(__method__).parameters)
  RbiTruth.exprs(3, instance_variables.map { |iv| [iv, instance_variable_get(iv)] } +
                    [["$rbi_global", $rbi_global], ["$rbi_int", $rbi_int],
                     ["$rbi_unset", $rbi_unset], ["$,", $,],
                     ["Thing", Thing], ["Thing::LIMIT", Thing::LIMIT],
                     ["Thing::NAME", Thing::NAME], ["Thing::Inner::DEEP", Thing::Inner::DEEP],
                     ["obj.@n", obj.instance_variable_get(:@n)],
                     ["@top_obj.@n.length", @top_obj.instance_variable_get(:@n).length],
                     ["@top_obj.@n[0].@n", @top_obj.instance_variable_get(:@n)[0]
                                                   .instance_variable_get(:@n)],
                     ["::Thing::Inner", ::Thing::Inner], ["Comparable", Comparable]])
  [1].each do |x|
    blk = "in block"
    RbiTruth.locals(1, local_variables,
                    { x: x, blk: blk, count: count, label: label, rest: rest, key: key,
                      a_nil: a_nil, a_true: a_true, a_false: a_false, small: small,
                      negative: negative, big_fixnum: big_fixnum, bignum: bignum, flo: flo,
                      zero: zero, heap_float: heap_float, sym: sym, dsym: dsym, str: str,
                      esc: esc, long: long, arr: arr, obj: obj, later: nil })
    RbiTruth.parking!
    sleep
  end
  later = 1 # never reached: nil while parked
  later
end

def outer
  o_str = "outer"
  o_int = 1
  b = binding
  RbiTruth.locals(4, local_variables, { o_str: o_str, o_int: o_int, b: b })
  inner(3, "lbl", :r1, 2)
end

RbiTruth.start("simple")
outer
