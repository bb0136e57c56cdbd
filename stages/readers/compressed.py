"""What a compressed input needs apart from its lines: its decompressed stream (by
extension, bounded), and the decompressed size a reader plans it by.

The size: a local file's is stated by its zstd headers or counted once (kept by its stamp,
`inflated_size`); a remote file's (`hf://`, `s3://`) comes from a few ranged reads, a
zstd header's stated size or an estimate from the file's first 64 KiB (`remote_sizes`);
either stops at the bomb cap (`bomb_cap`, `MAX_RATIO`). `MAX_PARTS` is what cutting one
file into units costs.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import io
import json
import lzma
import os
from pathlib import Path
from typing import IO, Any

import fsspec

from .common import SourceInfo, stamp

COMPRESSED = (".gz", ".zst", ".zstd", ".bz2", ".xz", ".lzma")
"""The extensions read as compressed."""
PIECE = 1 << 16
"""Bytes read at a time from a stream."""


MAX_RATIO = 1000
"""Decompressed bytes a compressed jsonl may take per compressed byte. Text and code
compress 3-10x, and gzip cannot pass 1032x; beyond this the file is mostly one repeated
run, a decompression bomb (34 KB of zstd that inflate to GBs of lines)."""

MAX_PARTS = 32
"""Most units a compressed file is cut into. There is no index into a gzip or zstd
stream, so unit k decompresses the k ranges before its own and drops them: a file of n
units costs n(n+1)/2 ranges of decompression, (n+1)/2 times the file (16.5x at 32),
decompression being the cheap part of a read (zstd ~1 GB/s, gzip ~0.3 GB/s per core;
parsing JSON into rows is slower). A file past 32x `shard.max_bytes` decompressed (8 GiB
with the default 256 MiB) gets 32 larger units instead: its memory follows its size."""


def inflated_size(path: str, compressed: int, max_doc_bytes: int) -> tuple[int, bool]:
    """(decompressed bytes to plan, True if cut at the bomb cap) for a compressed file.

    A zstd file whose frames all state their content size (the `zstd` CLI and most
    writers do) is sized from its frame and block headers alone; libzstd checks each
    frame's stated size as it decompresses, so a lie is a read error. Other files (gzip,
    whose ISIZE is only the last member's size mod 2**32; bz2; xz; zstd without sizes)
    are decompressed once here and counted, the count kept by the file's stamp
    (`_count_cache`) for the next `plan` or resume. Either way the size stops at `MAX_RATIO`
    times the compressed size (at least 2x max_doc_bytes, one line at the limit): the
    count never decompresses more, and a file found longer when read has one record
    saying what was not read."""
    cap = bomb_cap(compressed, max_doc_bytes)
    stated = _zstd_stated_size(path) if path.endswith((".zst", ".zstd")) else None
    if stated is not None:
        return min(stated, cap), stated > cap
    cache = _count_cache(path, cap)
    if cache is not None and cache.is_file():
        with contextlib.suppress(OSError, ValueError):
            counted = int(json.loads(cache.read_text())["counted"])
            return min(counted, cap), counted > cap
    counted = 0
    try:
        with fsspec.open(path, "rb") as raw, \
                decompressed(Bounded(raw, None), path, max_doc_bytes) as handle:
            # read1: what decompresses before an error counts (a truncated file's lines)
            while counted <= cap and (chunk := handle.read1(min(1 << 20, cap + 1 - counted))):
                counted += len(chunk)
    except Exception:  # noqa: BLE001 - corrupt: planned up to the error, which the read names
        pass
    if cache is not None:  # a convenience: a read-only cache folder costs the count again
        with contextlib.suppress(OSError):
            cache.parent.mkdir(parents=True, exist_ok=True)
            temporary = cache.with_name(f".tmp-{os.getpid()}-{cache.name}")
            temporary.write_text(json.dumps({"path": path, "counted": counted}))
            os.replace(temporary, cache)
    return min(counted, cap), counted > cap


def _count_cache(path: str, cap: int) -> Path | None:
    """Where a local file's decompressed count is kept, keyed by its path, its stamp
    (size, modification and change times, inode: any rewrite changes it) and the cap the
    count stopped at; None for a file that cannot be stamped. `$LEMUR_DATA_CACHE/
    jsonl-counts/`, else `~/.cache/lemur-data/jsonl-counts/`: `plan`, `build` and every
    resume of a gzip, bz2 or xz input count it once, not each time."""
    if "://" in path:
        return None
    mark = stamp(path)
    if mark[0] is None:
        return None
    key = hashlib.sha256(json.dumps([os.path.realpath(path), mark, cap]).encode())
    return _cache_root() / "jsonl-counts" / f"{key.hexdigest()[:32]}.json"


def bomb_cap(compressed: int, max_doc_bytes: int) -> int:
    """Most decompressed bytes a compressed file is read to: `MAX_RATIO` times its size,
    and never less than a line at the limit (2x max_doc_bytes)."""
    return max(MAX_RATIO * compressed, 2 * max_doc_bytes)


_SAMPLE = 1 << 16
"""Compressed bytes read from the head of a remote file that states no size, to estimate
its decompressed size (exact for a file this small)."""
_SAMPLE_MORE = 1 << 20
"""The sample of a file whose first 64 KiB decompress to nothing: a bz2 block holds up to
900 kB of input, a zstd block up to 128 KiB, before their first output."""
_HEADER = 18
"""The largest zstd frame header: magic (4), descriptor (1), window (1), dictionary id
(up to 4), content size (up to 8) (RFC 8878 section 3.1.1)."""
_FETCHES = 32
"""Ranged reads at once for a filesystem without an async client (HfFileSystem)."""


def remote_sizes(files: list[tuple[str, int]], max_doc_bytes: int,
                  ) -> dict[str, tuple[int, bool]]:
    """{path: (decompressed bytes to plan, True if only estimated)} for remote compressed
    files, never reading one whole: one batch of ranged reads of each zstd file's first
    18 bytes, whose frame header states the content size (the `zstd` CLI and
    `ZstdCompressor.compress` write one frame that does), then one batch of the first
    64 KiB of every other file, decompressed to estimate: the whole file if it is that
    small, else twice the sample's ratio times the compressed size (text compresses
    better further in, where the window holds more). A first frame stating less than 2x
    the file's compressed size is taken for one of several frames (pzstd) and sampled
    instead. A file whose head cannot be read (or gives no output from its first MiB)
    is planned at 0 bytes: one unit, which names the failure when it reads. None of this
    is a limit: a file found larger when read is read to its end (or the bomb cap) by
    more units (JsonlReader.read_more). Files already sized in this process (another
    source of the same files) are not read again, nor files whose stamps are all as
    when they were last sized (`_sizes_cache`)."""
    sized = {path: _SIZED[(path, size, max_doc_bytes)] for path, size in files
             if (path, size, max_doc_bytes) in _SIZED}
    files = [(path, size) for path, size in files if path not in sized]
    cache = _sizes_cache(files, max_doc_bytes)
    if files and cache is not None and cache.is_file():
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            kept = json.loads(cache.read_text())
            sized |= {path: (int(kept[path][0]), bool(kept[path][1])) for path, _ in files}
            files = []
    read, failed = _read_heads(files, max_doc_bytes)
    sized |= read
    if read and cache is not None and not failed:  # a failed read is not kept
        with contextlib.suppress(OSError):
            cache.parent.mkdir(parents=True, exist_ok=True)
            temporary = cache.with_name(f".tmp-{os.getpid()}-{cache.name}")
            temporary.write_text(json.dumps(read, sort_keys=True))
            os.replace(temporary, cache)
    _SIZED.update({(path, size, max_doc_bytes): sized[path] for path, size in files})
    return sized


def _read_heads(files: list[tuple[str, int]], max_doc_bytes: int,
                ) -> tuple[dict[str, tuple[int, bool]], bool]:
    """`remote_sizes` read from the files' heads, and True if a read failed."""
    sized: dict[str, tuple[int, bool]] = {}
    zstd = [(path, size) for path, size in files if path.endswith((".zst", ".zstd"))]
    for (path, size), head in zip(zstd, _heads(zstd, _HEADER), strict=True):
        stated = _first_frame_size(head)
        if stated is not None and stated >= 2 * size:
            sized[path] = (stated, False)
    rest = [(path, size) for path, size in files if path not in sized]
    failed = False
    for length in (_SAMPLE, _SAMPLE_MORE):
        again: list[tuple[str, int]] = []
        for (path, size), head in zip(rest, _heads(rest, length), strict=True):
            failed |= bool(size) and not head
            planned = _sampled_size(path, head, size, max_doc_bytes)
            if planned is None:
                again.append((path, size))
            else:
                sized[path] = planned
        rest = again
    for path, _ in rest:  # no output from its first MiB: one unit of nothing, which
        sized[path] = (0, True)  # reads on (or names the failure), as a failed read
    return sized, failed


def _sizes_cache(files: list[tuple[str, int]], max_doc_bytes: int) -> Path | None:
    """Where the sizes of these remote files are kept between processes (the next
    `plan`, `build` or resume), keyed by every file's stamp (size, time, ETag or blob
    id: from the listing, no request) and the line bound; None if a file has no stamp."""
    marks = [[path, stamp(path)] for path, _ in files]
    if not marks or any(mark[1][0] is None for mark in marks):
        return None
    key = hashlib.sha256(json.dumps([marks, max_doc_bytes]).encode()).hexdigest()[:32]
    return _cache_root() / "jsonl-counts" / f"remote-{key}.json"


def _cache_root() -> Path:
    return Path(os.environ.get("LEMUR_DATA_CACHE") or Path.home() / ".cache" / "lemur-data")


_SIZED: dict[tuple[str, int, int], tuple[int, bool]] = {}
"""Remote sizes already read in this process, by (path, compressed size, max_doc_bytes):
sources reading the same files (lemur-90b's three SlimPajama parts) read them once."""


def _heads(files: list[tuple[str, int]], length: int) -> list[bytes]:
    """The first `length` bytes of each file (b"" where the read fails: the file's unit
    names the failure when it reads), by the filesystem's batched `cat_ranges` where its
    client is async (s3fs, gcsfs: concurrent requests), else `_FETCHES` threads."""
    from concurrent.futures import ThreadPoolExecutor

    from fsspec.core import url_to_fs

    heads = [b""] * len(files)
    groups: dict[int, tuple[Any, list[tuple[int, str, int]]]] = {}
    for index, (path, size) in enumerate(files):
        fs, bare = url_to_fs(path)
        groups.setdefault(id(fs), (fs, []))[1].append((index, bare, min(size, length)))
    for fs, items in groups.values():
        bare, ends = [b for _, b, _ in items], [e for _, _, e in items]
        if getattr(fs, "async_impl", False):
            got = fs.cat_ranges(bare, [0] * len(items), ends, on_error="return")
        else:
            def one(item: tuple[str, int], fs: Any = fs) -> bytes | Exception:
                try:
                    return fs.cat_file(item[0], start=0, end=item[1])
                except Exception as error:  # noqa: BLE001 - named when the unit reads
                    return error
            with ThreadPoolExecutor(_FETCHES) as pool:
                got = list(pool.map(one, zip(bare, ends, strict=True)))
        for (index, _, _), data in zip(items, got, strict=True):
            heads[index] = data if isinstance(data, bytes) else b""
    return heads


def _first_frame_size(head: bytes) -> int | None:
    """The content size a zstd frame header states, or None (unstated, or not zstd)."""
    import zstandard

    if len(head) < 6 or int.from_bytes(head[:4], "little") != _ZSTD_MAGIC:
        return None
    try:
        stated = zstandard.get_frame_parameters(head).content_size
    except zstandard.ZstdError:
        return None
    return None if stated == zstandard.CONTENTSIZE_UNKNOWN else stated


def _sampled_size(path: str, head: bytes, size: int, max_doc_bytes: int,
                  ) -> tuple[int, bool] | None:
    """(decompressed bytes to plan, estimated?) from a file's first bytes: what they
    decompress to if they are the whole file, else twice their ratio times its size;
    at most the bomb cap either way (a sample past it counts no further). None if part
    of a file decompresses to nothing: a larger sample is needed."""
    cap = bomb_cap(size, max_doc_bytes)
    if size and not head:  # not readable now: one unit of nothing planned, which reads
        return 0, True     # on (the rest is planned once read) or names the failure
    out, ended = 0, False
    try:
        with decompressed(Bounded(io.BytesIO(head), None), path, max_doc_bytes) as handle:
            while out <= cap and (chunk := handle.read1(min(1 << 20, cap + 1 - out))):
                out += len(chunk)
            ended = out <= cap
    except Exception:  # noqa: BLE001 - the sample ends mid-stream: what it gave counts
        pass
    if ended and len(head) == size:
        return out, False
    if not out:
        return None
    return min(cap, 2 * -(-out * size // max(1, len(head)))), True


_ZSTD_MAGIC, _SKIPPABLE = 0xFD2FB528, 0x184D2A50


def _zstd_stated_size(path: str) -> int | None:
    """The sum of a zstd file's frame content sizes, read from its frame and block
    headers (RFC 8878 section 3.1), or None if a frame does not state it or the headers
    do not parse (the file is then counted by decompressing it)."""
    import zstandard

    total, position = 0, 0
    try:
        with fsspec.open(path, "rb") as raw:
            while head := (raw.seek(position), raw.read(18))[1]:
                magic = int.from_bytes(head[:4], "little")
                if magic & 0xFFFFFFF0 == _SKIPPABLE:  # skippable frame: 4 + 4 + its size
                    position += 8 + int.from_bytes(head[4:8], "little")
                    continue
                if magic != _ZSTD_MAGIC:
                    return None
                frame = zstandard.get_frame_parameters(head)
                if frame.content_size == zstandard.CONTENTSIZE_UNKNOWN:
                    return None
                position += zstandard.frame_header_size(head)
                while True:  # 3-byte block headers: last flag, type, size
                    raw.seek(position)
                    block = int.from_bytes(raw.read(3).ljust(3, b"\xff"), "little")
                    kind, size = (block >> 1) & 3, block >> 3
                    if kind == 3:  # reserved (or the file ended): not a valid frame
                        return None
                    position += 3 + (1 if kind == 1 else size)
                    if block & 1:
                        break
                position += 4 if frame.has_checksum else 0
                total += frame.content_size
    except Exception:  # noqa: BLE001 - not parseable as zstd frames: counted instead
        return None
    return total



class Bounded(io.RawIOBase):
    """The first `limit` bytes of a file (all of it if None): a file that grows after
    planning is read as large as it was planned, never whole."""

    def __init__(self, raw: IO[bytes] | io.BufferedIOBase, limit: int | None) -> None:
        self._raw, self._left = raw, limit

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._raw.seekable()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        before = self._raw.tell()
        after = self._raw.seek(offset, whence)
        if self._left is not None:
            self._left += before - after
        return after

    def tell(self) -> int:
        return self._raw.tell()

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = len(view) if self._left is None else max(0, min(len(view), self._left))
        data = self._raw.read(want) if want else b""
        view[:len(data)] = data
        if self._left is not None:
            self._left -= len(data)
        return len(data)


def decompressed(raw: io.RawIOBase, path: str,
                  max_doc_bytes: int = SourceInfo.max_doc_bytes) -> io.BufferedIOBase:
    """A line-iterable stream of the decompressed bytes, by file extension."""
    buffered = io.BufferedReader(raw, buffer_size=PIECE)
    if path.endswith(".gz"):
        return gzip.GzipFile(fileobj=buffered)
    if path.endswith((".zst", ".zstd")):
        import zstandard

        # The frame's window is memory the decompressor fills: bounded like a line
        # (2x max_doc_bytes; at least 8 MiB, the window of zstd levels 1-19), not
        # libzstd's 128 MiB default, so a `--long`/`--ultra` frame past it is refused.
        window = max(1 << 23, 2 * max_doc_bytes)
        return io.BufferedReader(zstandard.ZstdDecompressor(max_window_size=window)
                                 .stream_reader(buffered, read_across_frames=True),
                                 buffer_size=PIECE)
    if path.endswith(".bz2"):
        return bz2.BZ2File(buffered)
    if path.endswith((".xz", ".lzma")):
        return lzma.LZMAFile(buffered)
    return buffered
