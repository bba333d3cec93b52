"""Images told by their first bytes: format and size of the four formats, limits, tokens."""

from __future__ import annotations

import base64
import io
import struct

import pytest

from helpers.images import (
    MAX_IMAGE_BYTES,
    MODEL_SIDE,
    ImageInfo,
    ImageRefused,
    check,
    data_url_tokens,
    for_model,
    image_tokens,
    keep_in_chat,
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
    with pytest.raises(ImageRefused, match="at most 50 million pixels"):
        check(png(10_000, 6_000), "bomb.png")  # a decompression bomb's header
    assert check(png(8, 8), "ok.png") == ImageInfo("image/png", 8, 8)
    # Past what a provider takes, yet taken: it is shrunk before it is sent.
    assert check(png(9_000, 2), "long.png") == ImageInfo("image/png", 9_000, 2)


def encoded(picture, fmt: str) -> bytes:
    out = io.BytesIO()
    picture.save(out, fmt)
    return out.getvalue()


def test_an_image_that_fits_goes_to_the_model_as_it_is():
    data = png(640, 480)
    assert for_model(data, check(data, "a.png"), "a.png") == (data, check(data, "a.png"))


def test_a_large_image_is_shrunk_to_the_models_side_keeping_its_shape_and_transparency():
    from PIL import Image

    picture = Image.new("RGBA", (6000, 1500), (255, 0, 0, 128))
    data = encoded(picture, "PNG")
    sent, info = for_model(data, check(data, "wide.png"), "wide.png")
    assert info == ImageInfo("image/png", MODEL_SIDE, MODEL_SIDE // 4) == sniff(sent)
    assert Image.open(io.BytesIO(sent)).getpixel((10, 10)) == (255, 0, 0, 128)


def test_a_photo_too_heavy_for_a_provider_is_sent_as_a_smaller_jpeg():
    from PIL import Image

    noise = Image.effect_noise((2000, 1500), 80).convert("RGB")  # hard to compress
    data = encoded(noise, "PNG")
    assert len(data) > MAX_IMAGE_BYTES
    sent, info = for_model(data, check(data, "noise.png"), "noise.png")
    assert info == ImageInfo("image/jpeg", 2000, 1500) == sniff(sent)
    assert len(sent) <= MAX_IMAGE_BYTES


def test_an_image_whose_body_is_damaged_is_refused_clearly():
    data = png(3000, 3000)[:60]  # its header says 3000x3000; its pixels are cut off
    with pytest.raises(ImageRefused, match="cut.png could not be read as an image"):
        for_model(data, check(data, "cut.png"), "cut.png")


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


def test_a_shrunk_phone_photo_keeps_the_way_up_its_camera_recorded():
    """A phone stores a portrait photo as landscape pixels plus an EXIF orientation; the
    shrunk copy carries no EXIF, so it must be turned first or the model sees it sideways."""
    from PIL import Image

    picture = Image.new("RGB", (3000, 1000), (0, 0, 255))
    picture.paste((255, 0, 0), (0, 0, 1500, 1000))  # left half red: the top once turned
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90° clockwise to show
    out = io.BytesIO()
    picture.save(out, "JPEG", exif=exif)
    data = out.getvalue()
    sent, info = for_model(data, check(data, "photo.jpg"), "photo.jpg")
    assert info == sniff(sent)
    assert info.height == MODEL_SIDE and abs(info.width - MODEL_SIDE / 3) < 2  # upright
    red, green, blue = Image.open(io.BytesIO(sent)).getpixel((info.width // 2, 10))
    assert red > 200 and blue < 60  # the red half is on top, as the phone showed it


def test_two_images_of_one_name_are_both_kept(tmp_path):
    first, second = png(10, 10), png(20, 20)
    one = keep_in_chat(tmp_path, "../shot.png", first, sniff(first))
    two = keep_in_chat(tmp_path, "shot.png", second, sniff(second))
    assert (one.path, two.path) == ("images/shot.png", "images/shot-1.png")
    assert (tmp_path / one.path).read_bytes() == first
    assert (tmp_path / two.path).read_bytes() == second
    assert (one.name, two.name) == ("../shot.png", "shot.png")  # as each was called
