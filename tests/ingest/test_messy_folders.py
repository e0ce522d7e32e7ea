"""Folders as agents leave them: unfinished last lines, foreign files, copies, compressed files, BOMs."""
from __future__ import annotations

import gzip
import shutil
import zlib
from pathlib import Path

import polars as pl
import pytest
import zstandard
from click.testing import CliRunner
from conftest import DATA, FIXTURES

import panto_analytics as pa
from panto_analytics.cli import main
from panto_analytics.errors import STRAY, IngestReport, InputError, UnknownFormatError
from panto_analytics.formats import detect_format
from panto_analytics.formats.session_files import TRUNCATED

#: One real-looking file per format.
ONE_PER_FORMAT = {
    "canonical": sorted(DATA.glob("*.jsonl"))[0],
    "pi": FIXTURES / "pi" / "v1.jsonl",
    "claude-code": FIXTURES / "claude_code" / "blocks.jsonl",
    "codex": FIXTURES / "codex" / "calls.jsonl",
}


def copy(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst


def last_line(path: Path) -> bytes:
    return path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]


@pytest.mark.parametrize("fmt", sorted(ONE_PER_FORMAT))
def test_an_unfinished_last_line_is_skipped_with_a_note_in_every_format(tmp_path, fmt):
    original = ONE_PER_FORMAT[fmt]
    f = copy(original, tmp_path / "live.jsonl")
    with f.open("ab") as out:
        out.write(last_line(original)[: len(last_line(original)) // 2])  # being written: no newline yet
    report = IngestReport()
    got = pa.read_sessions([f], report=report)  # no skip_invalid needed
    want = pa.read_sessions([original])
    assert got.drop("file").equals(want.drop("file"))
    assert report.skipped == {(str(f), TRUNCATED): 1}
    assert detect_format(f) == fmt


@pytest.mark.parametrize("fmt", sorted(ONE_PER_FORMAT))
def test_a_bad_line_before_the_end_still_stops_the_read(tmp_path, fmt):
    original = ONE_PER_FORMAT[fmt]
    f = copy(original, tmp_path / "bad.jsonl")
    with f.open("ab") as out:
        out.write(b"{not json\n")
    with pytest.raises(InputError) as e:
        pa.read_sessions([f])
    assert e.value.path == str(f) and e.value.line is not None and e.value.skippable


SANITIZED = ('{"type":"sanitization_notice","note":"secrets removed"}\n'
             '{"type":"message","role":"user","content":[{"type":"text","text":"hi"}]}\n'
             '{"text":"a sanitized record"}\n')


def test_a_file_of_no_session_format_is_refused_by_detection(tmp_path):
    f = tmp_path / "export.jsonl"
    f.write_text(SANITIZED)
    with pytest.raises(InputError, match="unknown session format"):
        pa.read_sessions([f])


def test_skip_invalid_skips_a_named_foreign_file_whole_and_names_it(tmp_path):
    good = copy(ONE_PER_FORMAT["canonical"], tmp_path / "good.jsonl")
    (tmp_path / "export.jsonl").write_text(SANITIZED)
    report = IngestReport()
    df = pa.read_sessions([good, tmp_path / "export.jsonl"], skip_invalid=True, report=report)
    assert df["file"].unique().to_list() == [str(good)]
    [(path, reason)] = report.skipped
    assert path == str(tmp_path / "export.jsonl") and reason.startswith("whole file skipped: unknown session format")


@pytest.mark.parametrize("stray", [SANITIZED, '{"hook": "PreToolUse", "tool": "Bash"}\n', '{\n  "export": []\n}\n'])
def test_a_foreign_file_found_in_a_folder_is_skipped_and_counted_without_skip_invalid(tmp_path, stray):
    copy(ONE_PER_FORMAT["canonical"], tmp_path / "good.jsonl")
    copy(ONE_PER_FORMAT["pi"], tmp_path / "sub" / "pi.jsonl")
    (tmp_path / "sub" / "hooks.jsonl").write_text(stray)
    report = IngestReport()
    df = pa.read_sessions([tmp_path], report=report)
    assert sorted(df["file"].unique().to_list()) == [str(tmp_path / "good.jsonl"), str(tmp_path / "sub" / "pi.jsonl")]
    assert report.skipped == {(str(tmp_path / "sub" / "hooks.jsonl"), STRAY): 1} and report.files == 2
    with pytest.raises(InputError, match="unknown session format|not JSONL"):  # named, it is still an error
        pa.read_sessions([tmp_path, tmp_path / "sub" / "hooks.jsonl"])


def test_a_file_in_a_folder_whose_first_line_is_broken_is_still_an_error(tmp_path):
    copy(ONE_PER_FORMAT["canonical"], tmp_path / "good.jsonl")
    (tmp_path / "cut.jsonl").write_text('{"type": "message", "role"\n{"type":"message"}\n')
    with pytest.raises(InputError, match="cut.jsonl:1"):
        pa.read_sessions([tmp_path])


def test_the_library_says_format_and_the_command_line_says_dash_dash_format(tmp_path):
    f = tmp_path / "export.jsonl"
    f.write_text(SANITIZED)
    with pytest.raises(UnknownFormatError) as e:
        pa.read_sessions([f])
    assert "format=" in str(e.value) and "--format" not in str(e.value)
    done = CliRunner().invoke(main, ["ingest", str(f), "--no-cache", "-q"])
    assert done.exit_code == 1 and "use --format to force one" in done.output and "format=" not in done.output


def test_the_command_line_skips_a_stray_in_a_folder_with_one_note(tmp_path):
    copy(ONE_PER_FORMAT["canonical"], tmp_path / "good.jsonl")
    (tmp_path / "a-hooks.jsonl").write_text('{"hook": "PreToolUse"}\n')
    (tmp_path / "b-export.jsonl").write_text(SANITIZED)
    for extra in ([], ["--skip-invalid"]):
        done = CliRunner().invoke(main, ["ingest", str(tmp_path), "--no-cache", "-q", *extra])
        assert done.exit_code == 0, done.output
        notes = [line for line in done.stderr.splitlines() if "known session format" in line]
        assert len(notes) == 1 and "2 files" in notes[0] and "a-hooks.jsonl" in notes[0], done.stderr
        assert "skipped" not in done.stderr.replace(notes[0], ""), done.stderr
    named = CliRunner().invoke(main, ["ingest", str(tmp_path / "good.jsonl"), str(tmp_path / "a-hooks.jsonl"),
                                      "--no-cache", "-q"])
    assert named.exit_code == 1 and "a-hooks.jsonl" in named.stderr


@pytest.mark.parametrize("forced,actual", [("pi", "claude-code"), ("codex", "canonical"), ("canonical", "pi")])
def test_a_forced_format_on_another_formats_file_names_the_detected_one(tmp_path, forced, actual):
    f = copy(ONE_PER_FORMAT[actual], tmp_path / "s.jsonl")
    with pytest.raises(InputError, match=f"this is a {actual} file, not {forced}"):
        pa.read_sessions([f], format=forced)


def test_the_same_session_in_two_files_is_one_error(tmp_path):
    copy(ONE_PER_FORMAT["pi"], tmp_path / "a" / "s.jsonl")
    copy(ONE_PER_FORMAT["pi"], tmp_path / "b" / "s-backup.jsonl")
    with pytest.raises(InputError, match=r"b/s-backup\.jsonl: session id .* is also the id of .*a/s\.jsonl"):
        pa.read_sessions([tmp_path])


def test_skip_invalid_keeps_the_first_copy_of_a_session_and_names_both(tmp_path):
    first = copy(ONE_PER_FORMAT["pi"], tmp_path / "a" / "s.jsonl")
    second = copy(ONE_PER_FORMAT["pi"], tmp_path / "b" / "s-backup.jsonl")
    alone = IngestReport()
    want = pa.read_sessions([first], report=alone)
    report = IngestReport()
    got = pa.read_sessions([tmp_path], skip_invalid=True, report=report)
    assert got.equals(want)
    [((path, reason), n)] = report.skipped.items()
    assert path == str(second) and str(first) in reason and "first one kept" in reason and n == 1
    assert (report.sessions, report.messages, report.api_calls) == (alone.sessions, alone.messages, alone.api_calls)


def compress(path: Path, suffix: str) -> Path:
    data = path.read_bytes()
    out = path.with_name(path.name + suffix)
    out.write_bytes(gzip.compress(data) if suffix == ".gz" else zstandard.ZstdCompressor().compress(data))
    path.unlink()
    return out


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
@pytest.mark.parametrize("fmt", sorted(ONE_PER_FORMAT))
def test_compressed_files_are_found_read_and_cached_like_jsonl(tmp_path, fmt, suffix):
    original = ONE_PER_FORMAT[fmt]
    packed = compress(copy(original, tmp_path / "in" / original.name), suffix)
    want = pa.read_sessions([original])
    for _ in range(2):  # cold, then from the cache
        got = pa.read_sessions([tmp_path / "in"], cache=tmp_path / "cache", jobs=1)
        assert got.drop("file").equals(want.drop("file"))
        assert got["file"].unique().to_list() == [str(packed)]
    assert pa.ingest.sessions([tmp_path / "in"])["session_id"].to_list() == pa.ingest.sessions([original])["session_id"].to_list()


@pytest.mark.parametrize("fmt", sorted(ONE_PER_FORMAT))
def test_a_utf8_bom_is_stripped(tmp_path, fmt):
    original = ONE_PER_FORMAT[fmt]
    f = tmp_path / "bom.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + original.read_bytes())
    assert detect_format(f) == fmt
    assert pa.read_sessions([f]).drop("file").equals(pa.read_sessions([original]).drop("file"))



def cut_compressed(lines: list[bytes], suffix: str, keep: int) -> tuple[bytes, bytes]:
    """``lines`` compressed with a flush after the first ``keep``, cut halfway through the rest; and the whole
    lines a decompressor gives of what is left (the reference: zlib's and zstd's own one-shot decoders)."""
    head, rest = b"".join(lines[:keep]), b"".join(lines[keep:])
    if suffix == ".gz":
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
        second = c.compress(rest) + c.flush()
    else:
        z = zstandard.ZstdCompressor().compressobj()
        first = z.compress(head) + z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        second = z.compress(rest) + z.flush()
    cut = first + second[: len(second) // 2]
    if suffix == ".gz":
        out = zlib.decompressobj(31).decompress(cut)
    else:
        out = zstandard.ZstdDecompressor().decompressobj().decompress(cut)
    assert out.startswith(head)
    return cut, out[: out.rfind(b"\n") + 1]


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
@pytest.mark.parametrize("fmt", sorted(ONE_PER_FORMAT))
def test_a_truncated_compressed_file_is_one_error_or_its_whole_lines_and_a_counted_skip(tmp_path, fmt, suffix):
    lines = ONE_PER_FORMAT[fmt].read_bytes().splitlines(keepends=True)
    cut, whole = cut_compressed(lines, suffix, keep=len(lines) // 2)
    name = ONE_PER_FORMAT[fmt].name
    f = tmp_path / "in" / (name + suffix)
    f.parent.mkdir()
    f.write_bytes(cut)
    with pytest.raises(InputError) as e:
        pa.read_sessions([f], jobs=1)
    assert e.value.path == str(f) and "truncated" in e.value.reason and "\n" not in str(e.value)
    report = IngestReport()
    got = pa.read_sessions([f], skip_invalid=True, report=report, jobs=1)
    want = pa.read_sessions([copy_bytes(whole, tmp_path / "want" / name)])
    assert got.drop("file").equals(want.drop("file"))
    assert [(p, "truncated" in r, n) for (p, r), n in report.skipped.items()] == [(str(f), True, 1)]


def copy_bytes(data: bytes, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(data)
    return dst


def test_damaged_compressed_files_on_the_command_line(tmp_path):
    from click.testing import CliRunner

    from panto_analytics.cli import main

    original, other = sorted(DATA.glob("*.jsonl"))[:2]
    folder = tmp_path / "in"
    gz = copy_bytes(cut_compressed(original.read_bytes().splitlines(keepends=True), ".gz", 10)[0],
                    folder / "cut-a.jsonl.gz")
    zst = copy_bytes(cut_compressed(other.read_bytes().splitlines(keepends=True), ".zst", 10)[0],
                     folder / "cut-b.jsonl.zst")
    corrupt = bytearray(zstandard.ZstdCompressor().compress(original.read_bytes()))
    corrupt[len(corrupt) // 2: len(corrupt) // 2 + 32] = bytes(32)
    bad_zst = copy_bytes(bytes(corrupt), folder / "corrupt.jsonl.zst")
    bad_gz = copy_bytes(b"not gzip at all\n", folder / "corrupt.jsonl.gz")
    for f, what in [(gz, "truncated gzip"), (zst, "truncated zstd"), (bad_zst, "corrupt zstd"),
                    (bad_gz, "corrupt gzip")]:
        result = CliRunner().invoke(main, ["ingest", str(f), "--no-cache", "-q"])
        assert result.exit_code == 1, result.output
        [line] = result.output.splitlines()
        assert line.startswith(f"error: {f}: {what}"), line
    # Under --skip-invalid each is counted and named; the cut ones keep their whole lines.
    for f in (bad_zst, bad_gz):
        f.unlink()
    result = CliRunner().invoke(main, ["ingest", str(folder), "--no-cache", "-q", "--skip-invalid", "--format",
                                       "canonical", "--sessions", str(tmp_path / "s.csv")])
    assert result.exit_code == 0, result.output
    assert f"{gz}: 1 line\n" in result.output and f"{zst}: 1 line\n" in result.output
    sessions = pl.read_csv(tmp_path / "s.csv")
    assert sessions.height == 2 and (sessions["messages"] >= 9).all()  # 10 lines before the flush: a header, 9 messages
