"""How much the person asking may upload at once: the lower of the server's limit and the
one an admin set on them (accounts/limits.py), and the words of the 413 when an upload is
over it. Used by the routes that take files: a message's attachments (the page's and
Agent Zero's API) and the file panel."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import IO

from flask import request

from accounts.limits import Limits, upload_limit, upload_refusal
from server.run_limits import current
from server.security import identity

log = logging.getLogger(__name__)

#: Room for the multipart framing around the files of one upload.
FORM_OVERHEAD = 1024 * 1024


@dataclass(frozen=True)
class UploadCap:
    """The limits of one upload of the person asking."""

    #: Their own limits (0: none).
    own: Limits
    #: The server's limit for this kind of upload, in bytes (0: none but the app's).
    server: int

    @property
    def bytes(self) -> int:
        """The most bytes the upload may send (0: no limit of theirs nor the server's)."""
        return upload_limit(self.own, self.server)

    def refusal(self, size: int) -> str:
        """Why `size` bytes are too many for their own limit ('' they are not); said in
        the server's log too."""
        why = upload_refusal(self.own, size)
        if why:
            log.info("an upload of %s was refused: %s", identity.viewer(), why)
        return why

    def cap_request(self) -> None:
        """Read no more of the request's body than the upload may send (a body that says
        it is larger is refused before it is read: werkzeug's RequestEntityTooLarge)."""
        if self.bytes:
            request.max_content_length = self.bytes + FORM_OVERHEAD


def upload_cap(server_limit: int = 0) -> UploadCap:
    """The upload limits of the person asking, with the server's `server_limit` bytes."""
    return UploadCap(current().limits_of(identity.viewer()), server_limit)


def file_size(stream: IO[bytes]) -> int:
    """The bytes of an uploaded file (werkzeug keeps it in memory or spooled to disk)."""
    stream.seek(0, os.SEEK_END)
    size = stream.tell()
    stream.seek(0)
    return size
