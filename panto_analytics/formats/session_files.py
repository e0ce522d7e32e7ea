"""Session files opened for reading: plain, gzip or zstd, a damaged compressed file said in one line.

A ``.jsonl`` file is read as it is, a ``.jsonl.gz`` or ``.jsonl.zst`` one decompressed on the fly
(:func:`open_session_file`); :func:`session_stem` is a file's session name whatever its suffixes.
"""
from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from ..errors import InputError
from ..pathnames import file_name, path_stem, path_string, path_suffix

__all__ = ["BOM", "COMPRESSED_SUFFIXES", "DamagedFileError", "OnDamage", "TRUNCATED", "open_session_file", "session_stem"]


#: Compressed session files read like ``.jsonl`` (the suffix after ``.jsonl``).
COMPRESSED_SUFFIXES = (".gz", ".zst")


#: Why the last line of a file was skipped: it has no newline and is not JSON (the agent is still writing it).
TRUNCATED = "truncated final line (the session is still being written?)"


#: The UTF-8 byte order mark, skipped where a file starts with it.
BOM = b"\xef\xbb\xbf"


class _Decompressed(io.BufferedReader):
    """A decompressed stream: no ``fileno`` (so nobody maps the compressed bytes by mistake)."""

    def fileno(self) -> int:
        raise io.UnsupportedOperation("a decompressed stream has no file descriptor")


def session_stem(path: str | Path) -> str:
    """A session file's name without ``.jsonl`` and a compression suffix: its session id by default.

    >>> session_stem("a/b.jsonl"), session_stem("b.jsonl.gz"), session_stem("b.jsonl.zst")
    ('b', 'b', 'b')
    """
    name = file_name(path)
    for suffix in COMPRESSED_SUFFIXES:
        name = name.removesuffix(suffix)
    return path_stem(name)


class DamagedFileError(InputError):
    """A ``.gz`` or ``.zst`` file whose compressed data is cut short or corrupt (one line: file and problem)."""

    def __init__(self, path: str | Path, reason: str):
        super().__init__(path, None, reason)


#: What a reader does when a compressed file turns out damaged: raise (the default), or count it and stop there.
OnDamage = Callable[[str], None]


_CHUNK = 1 << 16


def _gzip_chunks(raw: IO[bytes]) -> Iterator[bytes]:
    """Decompressed chunks of a gzip stream (every member); :class:`_Damage` where it is cut or corrupt."""
    with gzip.GzipFile(fileobj=raw, mode="rb") as g:
        while True:
            try:
                chunk = g.read1(_CHUNK)
            except EOFError:
                raise _Damage("truncated gzip data: the file ends before its compressed stream does") from None
            except (gzip.BadGzipFile, zlib.error) as e:
                raise _Damage(f"corrupt gzip data ({e})") from None
            if not chunk:
                return
            yield chunk


def _zstd_chunks(raw: IO[bytes]) -> Iterator[bytes]:
    """Decompressed chunks of a zstd stream (every frame); :class:`_Damage` where it is cut or corrupt."""
    import zstandard

    new = zstandard.ZstdDecompressor().decompressobj
    dobj, pending = new(), False  # pending: a frame was begun and has not ended
    while data := raw.read(_CHUNK):
        while data:
            try:
                out = dobj.decompress(data)
            except zstandard.ZstdError as e:
                raise _Damage(f"corrupt zstd data ({e})") from None
            pending = not dobj.eof
            data = dobj.unused_data if dobj.eof else b""
            if dobj.eof:
                dobj = new()
            if out:
                yield out
    if pending:
        raise _Damage("truncated zstd data: the file ends before its compressed frame does")


class _Damage(Exception):
    """Raised by the chunk readers: the compressed data is damaged (the reason, for the one-line error)."""


class _Decoded(io.RawIOBase):
    """Decompressed bytes that stop at a damaged stream's last whole line.

    Bytes after the last newline are held back until more data (or the
    stream's clean end) shows the line whole, so where the data is cut or
    corrupt a reader sees only whole lines; then ``on_damage`` is called with
    the reason (it raises, or counts the file and lets the read end there).
    """

    def __init__(self, raw: IO[bytes], chunks: Iterator[bytes], on_damage: OnDamage):
        self._raw, self._chunks, self._on_damage = raw, chunks, on_damage
        self._out, self._pos, self._tail, self._done = b"", 0, b"", False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        while self._pos >= len(self._out) and not self._done:
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self._out, self._pos, self._tail, self._done = self._tail, 0, b"", True
            except _Damage as e:
                self._out, self._pos, self._tail, self._done = b"", 0, b"", True
                self._on_damage(str(e))
            else:
                cut = chunk.rfind(b"\n") + 1
                if cut:
                    self._out, self._pos, self._tail = self._tail + chunk[:cut], 0, chunk[cut:]
                else:
                    self._tail += chunk
        n = min(len(buffer), len(self._out) - self._pos)
        buffer[:n] = self._out[self._pos:self._pos + n]
        self._pos += n
        return n

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def open_session_file(path: str | Path, on_damage: OnDamage | None = None) -> IO[bytes]:
    """``path`` opened for reading bytes: ``.gz`` and ``.zst`` decompressed, a UTF-8 BOM skipped.

    A compressed file that is cut short or corrupt reads as its whole lines
    before the damage, then ``on_damage(reason)`` is called; by default it
    raises :class:`DamagedFileError` (file and problem, one line).

    >>> import tempfile, pathlib, gzip
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl.gz"
    >>> _ = p.write_bytes(gzip.compress(b"\\xef\\xbb\\xbf{}\\n"))
    >>> with open_session_file(p) as f: f.read()
    b'{}\\n'
    >>> _ = p.write_bytes(gzip.compress(b'{"a": 1}\\n{"b": 2}\\n{"c"')[:-9])
    >>> with open_session_file(p, on_damage=print) as f: f.read()
    truncated gzip data: the file ends before its compressed stream does
    b'{"a": 1}\\n{"b": 2}\\n'
    """
    name = path_string(path)

    def damaged(reason: str) -> None:
        raise DamagedFileError(name, reason)

    f: io.BufferedReader
    suffix = path_suffix(name)
    if suffix in COMPRESSED_SUFFIXES:
        raw = open(name, "rb")
        chunks = _gzip_chunks(raw) if suffix == ".gz" else _zstd_chunks(raw)
        f = _Decompressed(_Decoded(raw, chunks, on_damage or damaged))
    else:
        f = open(name, "rb")
    try:
        if f.peek(3)[:3] == BOM:
            f.read(3)
    except BaseException:
        f.close()
        raise
    return f
