"""Images the models may look at: told by their bytes, sized from their headers, bounded.

The four formats every vision model takes (PNG, JPEG, GIF, WebP) say their width
and height in their first bytes, which is all Cadre needs to refuse what it will
not hold and to count an image's tokens without decoding it. An image file may be
up to `MAX_FILE_BYTES` and `MAX_PIXELS`; what a model is sent is shrunk (with
Pillow, only when needed) to at most `MODEL_SIDE` pixels on its longest side and
`MAX_IMAGE_BYTES`, so a phone photo or a long page's screenshot reaches any
provider. The chat keeps the original: the user opens it full size.

An image a chat holds is an `ImageRef`: a file in the chat's own folder
(`attachments/` for the user's, `images/` for the ones `vision_load` copied in),
so the chat's images travel with it (save, restore, export) whatever happens
to the file it came from.
"""

from __future__ import annotations

import base64
import io
import math
import struct
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from helpers.confine import PathRefused, read_inside

#: The chat's folders an image may live in (relative to the chat's folder).
IMAGE_FOLDERS = ("attachments", "images")
#: Largest image file a chat takes (a phone's photo is 2-12 MB).
MAX_FILE_BYTES = 25 * 1024 * 1024
#: Most pixels an image file may have: decoding one costs 4 bytes a pixel, so this
#: bounds the memory a shrink takes (200 MB) and refuses decompression bombs.
MAX_PIXELS = 50_000_000
#: Largest image sent to a model: Anthropic's API limit per image (OpenAI takes 20 MB).
MAX_IMAGE_BYTES = 5 * 1024 * 1024
#: Longest side sent to a model: OpenAI fits a high-detail image in 2048 px anyway, and
#: Anthropic refuses sides past 8,000 px; a larger image is shrunk to this first.
MODEL_SIDE = 2048
#: Bytes of a `data:` URL's image decoded to find its size (a JPEG's frame header follows
#: its EXIF and colour-profile blocks, most often well within this; else all is decoded).
HEADER_BYTES = 128 * 1024

MIME = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}


class ImageRefused(ValueError):
    """Not an image a model can be shown; the message says why, for the model or the user."""


@dataclass(frozen=True)
class ImageInfo:
    """What an image's first bytes say."""

    mime: str
    width: int
    height: int


@dataclass(frozen=True)
class ImageRef:
    """An image held in a chat's folder, as a message carries it."""

    #: Relative to the chat's folder: `attachments/<name>` or `images/<name>`.
    path: str
    mime: str
    width: int
    height: int
    size: int
    #: What the user or the agent called it (the file name, or the path vision_load got).
    name: str = ""

    @property
    def tokens(self) -> int:
        return image_tokens(self.width, self.height)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ImageRef:
        return cls(
            path=str(data["path"]),
            mime=str(data["mime"]),
            width=int(data["width"]),
            height=int(data["height"]),
            size=int(data["size"]),
            name=str(data.get("name", "")),
        )


def has_image_magic(head: bytes) -> bool:
    """`head` (a file's first 16 bytes) starts one of the four formats."""
    return head.startswith((b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"\xff\xd8\xff")) or (
        head[:4] == b"RIFF" and head[8:12] == b"WEBP"
    )


def sniff(data: bytes) -> ImageInfo | None:
    """The format and size of the image `data` begins with; None if it is none of the four."""
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
            width, height = struct.unpack(">II", data[16:24])
            return ImageInfo(MIME["png"], width, height)
        if data[:6] in (b"GIF87a", b"GIF89a"):
            width, height = struct.unpack("<HH", data[6:10])
            return ImageInfo(MIME["gif"], width, height)
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp(data)
        if data[:2] == b"\xff\xd8":
            return _jpeg(data)
    except struct.error:  # cut short: not an image we can read
        return None
    return None


def _webp(data: bytes) -> ImageInfo | None:
    chunk = data[12:16]
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return ImageInfo(MIME["webp"], width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return ImageInfo(MIME["webp"], (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return ImageInfo(MIME["webp"], width, height)
    return None


#: JPEG frame headers (SOF0-SOF15 but DHT, JPG and DAC, which share the range).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg(data: bytes) -> ImageInfo | None:
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # padding
            at += 1
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return ImageInfo(MIME["jpeg"], width, height)
        at += 2 + length
    return None


def image_tokens(width: int, height: int) -> int:
    """Tokens an image costs a model, as OpenAI counts one at high detail (the dearest of
    the providers' rules for a typical image): fitted in 2048 px, its short side to 768 px,
    85 tokens plus 170 per 512 px tile."""
    if width <= 0 or height <= 0:
        return 85
    scale = min(1.0, MODEL_SIDE / max(width, height))
    width, height = width * scale, height * scale
    scale = min(1.0, 768 / min(width, height))
    width, height = width * scale, height * scale
    return 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)


def check(data: bytes, name: str) -> ImageInfo:
    """The image `data` holds, or ImageRefused saying why a chat cannot take it."""
    info = sniff(data)
    if info is None:
        raise ImageRefused(f"{name} is not a PNG, JPEG, GIF or WebP image")
    if len(data) > MAX_FILE_BYTES:
        raise ImageRefused(
            f"{name} is larger than {_mb(MAX_FILE_BYTES)}, the most an image may be"
            " (make a smaller copy first)"
        )
    if info.width * info.height > MAX_PIXELS or min(info.width, info.height) < 1:
        raise ImageRefused(
            f"{name} is {info.width}x{info.height} pixels; an image may have at most"
            f" {MAX_PIXELS // 1_000_000} million pixels (make a smaller copy first)"
        )
    return info


def for_model(data: bytes, info: ImageInfo, name: str) -> tuple[bytes, ImageInfo]:
    """The image as a model is sent it: as it is when it fits `MODEL_SIDE` and
    `MAX_IMAGE_BYTES`, else shrunk (PNG kept for pictures with transparency or few
    colours, JPEG for the rest; an animated GIF gives its first frame)."""
    if max(info.width, info.height) <= MODEL_SIDE and len(data) <= MAX_IMAGE_BYTES:
        return data, info
    from PIL import Image, ImageOps, UnidentifiedImageError  # only here: most need no shrink

    try:
        with Image.open(io.BytesIO(data)) as opened:
            opened.draft("RGB", (MODEL_SIDE, MODEL_SIDE))  # a JPEG decodes smaller, faster
            picture = opened.convert("RGBA" if _has_alpha(opened) else "RGB")
            # A phone's photo is stored turned, with an EXIF orientation saying which way is
            # up; the shrunk copy carries no EXIF, so its pixels are turned upright here.
            picture = ImageOps.exif_transpose(picture)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise ImageRefused(f"{name} could not be read as an image ({exc})") from None
    picture.thumbnail((MODEL_SIDE, MODEL_SIDE), Image.Resampling.LANCZOS)
    for fmt in ("PNG", "JPEG") if info.mime in (MIME["png"], MIME["gif"]) else ("JPEG",):
        if fmt == "JPEG" and picture.mode == "RGBA":
            picture = _on_white(picture)
        out = io.BytesIO()
        picture.save(out, fmt, **({"optimize": True} if fmt == "PNG" else {"quality": 85}))
        if out.tell() <= MAX_IMAGE_BYTES:
            shrunk = out.getvalue()
            return shrunk, ImageInfo(MIME[fmt.lower()], picture.width, picture.height)
    raise ImageRefused(f"{name} is still larger than {_mb(MAX_IMAGE_BYTES)} when shrunk")


def _has_alpha(picture: Any) -> bool:
    return picture.mode in ("RGBA", "LA", "PA") or "transparency" in picture.info


def _on_white(picture: Any) -> Any:
    """An RGBA picture flattened on white (JPEG has no transparency)."""
    from PIL import Image

    background = Image.new("RGB", picture.size, (255, 255, 255))
    background.paste(picture, mask=picture.getchannel("A"))
    return background


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def read_image(path: Path, roots: list[Path], name: str) -> tuple[bytes, ImageInfo]:
    """The bytes of the image file `path` (confined to `roots`), checked by `check`."""
    try:
        data = read_inside(path, roots, MAX_FILE_BYTES)
    except FileNotFoundError:
        raise ImageRefused(f"{name} does not exist") from None
    except IsADirectoryError:
        raise ImageRefused(f"{name} is a folder, not an image") from None
    except PathRefused as exc:
        raise ImageRefused(str(exc)) from None
    return data, check(data, name)


def ref_in_chat(chat_folder: Path, relative: str, name: str = "") -> ImageRef:
    """An ImageRef for the image file `relative` in one of the chat's image folders."""
    relative_path = PurePosixPath(relative)
    if len(relative_path.parts) != 2 or relative_path.parts[0] not in IMAGE_FOLDERS:
        raise ImageRefused(f"{relative} is not in the chat's {' or '.join(IMAGE_FOLDERS)} folder")
    roots = [chat_folder / folder for folder in IMAGE_FOLDERS]
    data, info = read_image(chat_folder / relative_path, roots, name or relative)
    return ImageRef(relative, info.mime, info.width, info.height, len(data), name or relative)


def data_url(chat_folder: Path, ref: ImageRef) -> str:
    """The image as a `data:` URL, read again from the chat's folder (the file may be gone:
    ImageRefused)."""
    path = chat_folder / ref.path
    try:
        stat = path.stat()
    except OSError:
        raise ImageRefused(f"{ref.name or ref.path} is no longer in the chat's folder") from None
    return _encoded(str(chat_folder), ref.path, stat.st_size, stat.st_mtime_ns)


# A chat's images go with every step of its run: shrinking and encoding them once per
# file version saves that work (and megabytes) per step. At most 8 x 7 MB are held.
@lru_cache(maxsize=8)
def _encoded(chat_folder: str, relative: str, size: int, mtime_ns: int) -> str:
    folder = Path(chat_folder)
    roots = [folder / name for name in IMAGE_FOLDERS]
    data, info = for_model(*read_image(folder / relative, roots, relative), relative)
    return f"data:{info.mime};base64,{base64.b64encode(data).decode('ascii')}"


def data_url_tokens(url: str) -> int:
    """Tokens of an image given as a `data:` URL (its header read from the first bytes)."""
    encoded = url.split(",", 1)[-1]
    head = encoded[: HEADER_BYTES * 4 // 3]
    info = None
    for part in (head[: len(head) - len(head) % 4], encoded):
        try:
            info = sniff(base64.b64decode(part))
        except ValueError:
            return image_tokens(0, 0)
        if info is not None or len(part) == len(encoded):
            break
    return image_tokens(info.width, info.height) if info else image_tokens(0, 0)


def keep_in_chat(chat_folder: Path, name: str, data: bytes, info: ImageInfo) -> ImageRef:
    """Copy a checked image into the chat's `images/` folder (a new name, never over another):
    the chat keeps what its agent looked at, whatever becomes of the original."""
    folder = chat_folder / "images"
    folder.mkdir(parents=True, exist_ok=True)
    stem = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in PurePosixPath(name).stem)
    suffix = "." + info.mime.split("/")[1].replace("jpeg", "jpg")
    stem = stem[:80] or "image"
    target, counter = folder / f"{stem}{suffix}", 1
    while True:
        try:
            with open(target, "xb") as handle:
                handle.write(data)
            break
        except FileExistsError:
            target, counter = folder / f"{stem}-{counter}{suffix}", counter + 1
    relative = f"images/{target.name}"
    return ImageRef(relative, info.mime, info.width, info.height, len(data), name)
