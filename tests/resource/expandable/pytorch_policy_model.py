#!/usr/bin/env python3
"""A host model of PyTorch's expandable segments (PYTORCH_CUDA_ALLOC_CONF=
expandable_segments:True, every other setting at its default), to replay the
same traces as replay_trace.cpp and print what PyTorch's placement would
hold: at each run's peak, the bytes mapped against the bytes in use.

The rules, as c10/cuda/CUDACachingAllocator.cpp has them (DeviceCaching
Allocator::malloc, get_free_block, find_expandable_block, map_block,
free_block, release_blocks):
- a request is rounded up to a multiple of 512 B (round_size: no
  roundup_power2_divisions by default);
- rounded sizes up to 1 MiB (kSmallSize) are the small pool's, the others
  the large pool's; each pool has its own expandable segment per stream
  (the traces have one stream), mapped in 2 MiB pages (small) or 20 MiB
  pages (large, kLargeBuffer); a pool never serves the other's requests;
- get_free_block: the smallest free block of the pool that fits (by size,
  then address), except that a free block followed by unmapped space counts
  as that much larger (it could grow), so the smallest block that is not at
  the end of the mapped part wins when one fits;
- no free block fits: find_expandable_block takes the lowest-address
  unmapped piece (with the free block before it, if any) whose free and
  unmapped space together fits the request, and maps the pages it lacks
  (the request's bytes rounded up to whole pages, at the start of the
  unmapped piece); the mapped block merges with free neighbours;
- the block found is split when the rest is at least 512 B (should_split
  with expandable segments: the rest stays free in the pool);
- a freed block merges with its free neighbours at once (one stream, no
  events);
- nothing is unmapped but on out of memory (never, on a 140 GB H200 with
  these trainings) and by empty_cache, the trace's "trim": the whole pages
  inside each free block are unmapped, and a segment left with nothing
  mapped goes.
The model maps from a fresh segment per pool and does not model out of
memory. Threads in the trace are ignored: PyTorch's allocator has no
per-thread part, and every request is on the default stream.

Usage: pytorch_policy_model.py TRACE.gz [--large-page BYTES] [--small-page
BYTES] [--breakdown-at LINE]. Prints one line per run, as replay_trace
does: held / in use at the peaks, and the run's additions (above what was
held and in use at the run's start: what bench/python/memory_harness.py
reads on the GPU). On the traces of traces/ the additions of run 1 come to
MLP 1.0145, GPT-2 1.0022, ResNet-50 1.0100, where PyTorch's expandable
segments read 1.014, 1.002 and 1.011 on the H200 (bench/README.md, runs E
and G): the model holds what PyTorch held. Held / in use (what the replay's
thresholds check): 1.0224, 1.0068, 1.0169 in both runs. The two differ
because after the trim PyTorch keeps the partly used 20 MiB pages of what
stays in use (0.12 GiB for GPT-2's 0.06 GiB), which the additions leave out.
"""
import argparse
import bisect
import gzip
import sys

KMIN = 512
SMALL_SIZE = 1 << 20          # kSmallSize
SMALL_PAGE = 2 << 20          # kSmallBuffer: the small pool's pages
LARGE_PAGE = 20 << 20         # kLargeBuffer: the large pool's pages
GiB = float(1 << 30)


class Block:
    __slots__ = ("ptr", "size", "prev", "next", "allocated", "mapped", "pool")

    def __init__(self, ptr, size, pool, mapped=True):
        self.ptr, self.size, self.pool, self.mapped = ptr, size, pool, mapped
        self.prev = self.next = None
        self.allocated = False


class Pool:
    """One pool (small or large) on one stream: its segment's blocks."""

    def __init__(self, page, base, space):
        self.page = page
        self.free = []        # (size, ptr, block): free mapped blocks
        self.unmapped = []    # (ptr, block): unmapped pieces, by address
        self.base, self.space = base, space
        self.segments = 0
        self.mapped = 0

    # The sorted sets.
    def add_free(self, b):
        bisect.insort(self.free, (b.size, b.ptr, id(b), b))

    def drop_free(self, b):
        i = bisect.bisect_left(self.free, (b.size, b.ptr, id(b)))
        assert self.free[i][3] is b
        del self.free[i]

    def add_unmapped(self, b):
        bisect.insort(self.unmapped, (b.ptr, id(b), b))

    def drop_unmapped(self, b):
        i = bisect.bisect_left(self.unmapped, (b.ptr, id(b)))
        assert self.unmapped[i][2] is b
        del self.unmapped[i]

    def new_segment(self):
        base = self.base + self.segments * self.space
        self.segments += 1
        b = Block(base, self.space, self, mapped=False)
        self.add_unmapped(b)
        return b


def allocatable(b):
    return b is not None and not b.allocated


def try_merge(dst, src):
    """try_merge_blocks: src (a neighbour of dst) joins dst when it is free
    (or unmapped) like dst."""
    if src is None or src.allocated or dst.mapped != src.mapped:
        return 0
    pool = dst.pool
    if src.mapped:
        pool.drop_free(src)
    else:
        pool.drop_unmapped(src)
    if dst.prev is src:
        dst.ptr = src.ptr
        dst.prev = src.prev
        if dst.prev:
            dst.prev.next = dst
    else:
        dst.next = src.next
        if dst.next:
            dst.next.prev = dst
    dst.size += src.size
    return src.size


def splice_after(b, n):
    """n goes right after b."""
    n.prev, n.next = b, b.next
    if b.next:
        b.next.prev = n
    b.next = n


class Model:
    def __init__(self, small_page, large_page, total=140 << 30):
        space = total + total // 8
        self.small = Pool(small_page, 1 << 48, (space + small_page - 1) // small_page * small_page)
        self.large = Pool(large_page, 1 << 49, (space + large_page - 1) // large_page * large_page)

    def mapped(self):
        return self.small.mapped + self.large.mapped

    @staticmethod
    def round_size(size):
        return KMIN if size < KMIN else (size + KMIN - 1) // KMIN * KMIN

    def get_free_block(self, pool, size):
        i = bisect.bisect_left(pool.free, (size,))
        if i == len(pool.free):
            return None

        def expandable(b):
            return b.size + (b.next.size if b.next is not None and not b.next.mapped else 0)

        while i + 1 < len(pool.free) and expandable(pool.free[i + 1][3]) < expandable(pool.free[i][3]):
            i += 1
        b = pool.free[i][3]
        del pool.free[i]
        return b

    def find_expandable_block(self, pool, size):
        def room(b):
            n = 0
            while n < size and allocatable(b):
                n += b.size
                b = b.next
            return n >= size

        for _, _, u in pool.unmapped:
            c = u.prev if allocatable(u.prev) else u
            if room(c):
                return c
        return pool.new_segment()

    def map_block(self, b, size):
        pool = b.pool
        page = pool.page
        start = b.ptr - pool.base
        assert start % page == 0
        mapped = (size + page - 1) // page * page
        assert mapped <= b.size
        pool.drop_unmapped(b)
        b.mapped = True
        if mapped < b.size:
            rest = Block(b.ptr + mapped, b.size - mapped, pool, mapped=False)
            splice_after(b, rest)
            pool.add_unmapped(rest)
            b.size = mapped
        pool.mapped += mapped
        try_merge(b, b.prev)
        try_merge(b, b.next)
        pool.add_free(b)

    def alloc_expandable(self, pool, size):
        c = self.find_expandable_block(pool, size)
        if not c.mapped:
            self.map_block(c, min(c.size, size))
        while c.size < size:
            n = c.next
            self.map_block(n, min(size - c.size, n.size))
            c = n
        pool.drop_free(c)
        return c

    def malloc(self, orig):
        size = self.round_size(orig)
        pool = self.small if size <= SMALL_SIZE else self.large
        b = self.get_free_block(pool, size)
        if b is None:
            b = self.alloc_expandable(pool, size)
        if b.size - size >= KMIN:  # should_split, expandable segments
            rest = Block(b.ptr + size, b.size - size, pool)
            splice_after(b, rest)
            b.size = size
            pool.add_free(rest)
        b.allocated = True
        return b

    def free(self, b):
        b.allocated = False
        try_merge(b, b.prev)
        try_merge(b, b.next)
        b.pool.add_free(b)

    def empty_cache(self):
        for pool in (self.small, self.large):
            for _, _, _, b in list(pool.free):
                self.unmap_block(b)

    def unmap_block(self, b):
        pool = b.pool
        page = pool.page
        off = b.ptr - pool.base
        lo = (off + page - 1) // page * page
        hi = (off + b.size) // page * page
        if lo >= hi:
            return
        pool.drop_free(b)
        if lo > off:
            before = Block(b.ptr, lo - off, pool)
            before.prev, before.next = b.prev, b
            if b.prev:
                b.prev.next = before
            b.prev = before
            pool.add_free(before)
        if off + b.size > hi:
            after = Block(pool.base + hi, off + b.size - hi, pool)
            splice_after(b, after)
            pool.add_free(after)
        b.ptr, b.size, b.mapped = pool.base + lo, hi - lo, False
        pool.mapped -= hi - lo
        try_merge(b, b.prev)
        try_merge(b, b.next)
        pool.add_unmapped(b)
        if b.prev is None and b.next is None:
            pool.drop_unmapped(b)  # release_expandable_segment


def breakdown(m, line):
    MiB = float(1 << 20)
    print(f"line {line}: mapped {m.mapped() / MiB:.1f} MiB")
    for name, pool in (("small", m.small), ("large", m.large)):
        free = [b.size for _, _, _, b in pool.free]
        tail = sum(b.size for _, _, _, b in pool.free
                   if b.next is not None and not b.next.mapped)
        print(f"  {name} pool: mapped {pool.mapped / MiB:.1f} MiB, free {sum(free) / MiB:.1f} MiB "
              f"in {len(free)} (before unmapped space {tail / MiB:.1f}; "
              f"<=1M {sum(x for x in free if x <= 1 << 20) / MiB:.1f}, "
              f"<16M {sum(x for x in free if 1 << 20 < x < 16 << 20) / MiB:.1f}, "
              f">=16M {sum(x for x in free if x >= 16 << 20) / MiB:.1f})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--small-page", type=int, default=SMALL_PAGE)
    ap.add_argument("--large-page", type=int, default=LARGE_PAGE)
    ap.add_argument("--breakdown-at", type=int, default=0,
                    help="after this trace line, print each pool's free blocks")
    args = ap.parse_args()
    m = Model(args.small_page, args.large_page)
    blocks = []
    sizes = []
    in_use = 0
    runs = [dict(peak_held=0, peak_in_use=0, end=0, base_held=0, base_in_use=0)]
    opener = gzip.open if args.trace.endswith(".gz") else open
    with opener(args.trace, "rt") as f:
        for number, line in enumerate(f, 1):
            if args.breakdown_at and number == args.breakdown_at + 1:
                breakdown(m, number - 1)
            if not line.strip() or line[0] == "#":
                continue
            w = line.split()
            run = runs[-1]
            if w[0] == "a":
                size = int(w[1])
                blocks.append(m.malloc(size))
                sizes.append(size)
                in_use += size
                run["peak_in_use"] = max(run["peak_in_use"], in_use)
                run["peak_held"] = max(run["peak_held"], m.mapped())
            elif w[0] == "f":
                k = int(w[1])
                m.free(blocks[k])
                blocks[k] = None
                in_use -= sizes[k]
            elif w[0] == "trim":
                m.empty_cache()
                runs[-1] = dict(peak_held=m.mapped(), peak_in_use=in_use, end=0,
                                base_held=m.mapped(), base_in_use=in_use)
            elif w[0] == "run":
                run["end"] = m.mapped()
                runs.append(dict(peak_held=m.mapped(), peak_in_use=in_use, end=0,
                                 base_held=m.mapped(), base_in_use=in_use))
            else:
                sys.exit(f"cannot read {line!r}")
    runs.pop()
    for i, r in enumerate(runs):
        grew = r["peak_in_use"] - r["base_in_use"]
        added = (r["peak_held"] - r["base_held"]) / grew if grew > 0 else 0
        print(f"run {i + 1}: peak held {r['peak_held'] / GiB:.3f} GiB, peak in use "
              f"{r['peak_in_use'] / GiB:.3f} GiB, held / in use "
              f"{r['peak_held'] / r['peak_in_use']:.4f} (the run's additions {added:.4f}), end "
              f"{r['end'] / GiB:.3f} GiB "
              f"(small pool {m.small.mapped / GiB:.3f} at the trace's end)")


if __name__ == "__main__":
    main()
