"""Huge pages for the processes that fork many children (grader/sandbox/hugepages.py)."""

from __future__ import annotations

from grader.sandbox import hugepages

MAPS = """\
55d4a2a00000-55d4a6e37000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000a00000 rw-p 00000000 00:00 0
7f0000a00000-7f0000a01000 rw-p 00000000 00:00 0
7f1000000000-7f1000400000 r--p 00000000 08:01 123                        /usr/lib/libtorch.so
7f2000100000-7f2000500000 rw-p 00000000 08:01 124                        /usr/lib/libc.so
7f3000000000-7f3000400000 r--p 00000000 08:01 125                        /srv/odd\r7f4000000000-7f4000400000 rw-p 0 00:00 0
7ffc00000000-7ffc00400000 rw-p 00000000 00:00 0                          [stack]
"""


def test_only_the_heap_and_anonymous_writable_memory_is_chosen_in_whole_huge_pages():
    regions = hugepages.anonymous_regions(MAPS)
    assert regions == [(0x55D4A2A00000, 0x55D4A6E00000), (0x7F0000000000, 0x7F0000A00000)]
    assert all(start % hugepages.HUGE == 0 and end % hugepages.HUGE == 0 for start, end in regions)


def test_collapsing_this_process_is_harmless():
    import torch

    before = torch.arange(10.0).sum()
    done = hugepages.collapse()
    assert done >= 0 and done % hugepages.HUGE == 0
    assert torch.arange(10.0).sum() == before
