"""``python -m benchmarks.doc_images`` redraws docs/img: the report's top in headless Chromium, and its plots."""
import struct

import pytest

from benchmarks import doc_images

#: Redraws two reports and a billed replay of data/, and starts Chromium.
pytestmark = pytest.mark.slow


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_the_doc_images_are_redrawn_in_the_size_class_of_the_committed_ones(tmp_path):
    try:
        doc_images.chromium(tmp_path / "probe").quit()
    except (ImportError, RuntimeError) as missing:
        pytest.skip(str(missing))
    paths = doc_images.redraw(tmp_path / "img")
    assert sorted(p.name for p in paths) == sorted(p.name for p in (doc_images.ROOT / "docs" / "img").glob("*.png"))
    for path in paths:
        width, height = png_size(path.read_bytes())
        assert 600 <= width <= 1200 and 300 <= height <= 1600, (path.name, width, height)
        assert path.stat().st_size < 400_000, path.name
    assert png_size((tmp_path / "img" / "report.png").read_bytes())[0] == doc_images.SHOT_WIDTH
