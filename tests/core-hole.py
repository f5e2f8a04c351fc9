"""core-hole.py CORE ADDRESS SIZE: zero the SIZE bytes (a power of two) of CORE's memory
around ADDRESS (hex), aligned to SIZE, as a core missing a heap page's bytes has them.
Exit 1 if no PT_LOAD of CORE holds them all."""
import struct
import sys

PT_LOAD = 1


def main():
    path, addr, size = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3])
    base = addr & ~(size - 1)
    with open(path, "r+b") as f:
        ehdr = f.read(64)
        phoff, = struct.unpack_from("<Q", ehdr, 32)
        phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            p_type, _, off, vaddr, _, filesz, _, _ = struct.unpack("<IIQQQQQQ", f.read(56))
            if p_type == PT_LOAD and vaddr <= base and base + size <= vaddr + filesz:
                f.seek(off + base - vaddr)
                f.write(bytes(size))
                return 0
    print("no PT_LOAD of %s holds %#x..%#x" % (path, base, base + size), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
