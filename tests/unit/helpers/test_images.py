"""Images told by their first bytes: format and size of the four formats, limits, tokens."""

from __future__ import annotations

import base64
import struct

import pytest

from helpers.images import (
    MAX_IMAGE_SIDE,
    ImageInfo,
    ImageRefused,
    check,
    data_url_tokens,
    image_tokens,
    sniff,
)
from tests.support.images import jpeg_header, png


def webp_vp8x(width: int, height: int) -> bytes:
    chunk = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00"
    chunk += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


@pytest.mark.parametrize(
    ("data", "info"),
    [
        (png(640, 480), ImageInfo("image/png", 640, 480)),
        (jpeg_header(1024, 768), ImageInfo("image/jpeg", 1024, 768)),
        (b"GIF89a" + struct.pack("<HH", 32, 16) + b"\x00" * 8, ImageInfo("image/gif", 32, 16)),
        (webp_vp8x(3000, 2000), ImageInfo("image/webp", 3000, 2000)),
    ],
)
def test_the_four_formats_say_their_size(data, info):
    assert sniff(data) == info


@pytest.mark.parametrize("data", [b"", b"hello", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"<svg/>"])
def test_other_bytes_are_no_image(data):
    assert sniff(data) is None


def test_check_refuses_what_no_provider_takes():
    with pytest.raises(ImageRefused, match="is not a PNG, JPEG, GIF or WebP image"):
        check(b"%PDF-1.7", "doc.png")
    with pytest.raises(ImageRefused, match=f"at most {MAX_IMAGE_SIDE} pixels on a side"):
        check(png(MAX_IMAGE_SIDE + 1, 2), "tall.png")
    assert check(png(8, 8), "ok.png") == ImageInfo("image/png", 8, 8)


@pytest.mark.parametrize(
    ("size", "tokens"),
    [((64, 48), 255), ((1024, 1024), 765), ((2048, 4096), 1105), ((0, 0), 85)],
)
def test_image_tokens_as_openai_counts_them_at_high_detail(size, tokens):
    assert image_tokens(*size) == tokens


def test_a_data_url_is_counted_by_the_size_its_header_says():
    url = "data:image/png;base64," + base64.b64encode(png(1024, 1024)).decode()
    assert data_url_tokens(url) == 765


def test_a_jpeg_whose_size_follows_large_profile_blocks_is_still_read():
    app2 = b"\xff\xe2" + struct.pack(">H", 60_002) + b"\x00" * 60_000  # an ICC profile part
    header = jpeg_header(1024, 1024)
    data = header[:2] + app2 * 3 + header[2:]  # the frame header 180 KB in
    assert check(data, "photo.jpg") == ImageInfo("image/jpeg", 1024, 1024)
    assert data_url_tokens("data:image/jpeg;base64," + base64.b64encode(data).decode()) == 765
