"""Chromium's own requests, refused without a word to the agent.

A page with a form makes Chromium ask Google's autofill service about it
(content-autofill.googleapis.com); other services of the browser itself (safe
browsing, optimisation hints, updates) may ask as well. These requests go
through the chat's checking proxy like a page's, but they are not the page's:
told to the agent (and shown to the person) as refused requests of the page,
they read as if the page had failed. Online, the outbound policy would let
them through: the browser would tell Google about the forms an agent opened.

So the proxy's policy refuses them first, with a refusal of their own kind
that the browser's guard keeps to the log. Only hosts no web page asks for
are listed here. (Chromium's features could be switched off at launch, but a
`--disable-features` of ours would replace Playwright's own list of them.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from helpers.outbound import OutboundPolicy, OutboundRefused

#: Services of Chromium itself, asked by the browser, never by a page.
CHROMIUM_SERVICES = frozenset({
    "content-autofill.googleapis.com",
    "optimizationguide-pa.googleapis.com",
    "passwordsleakcheck-pa.googleapis.com",
    "safebrowsing.googleapis.com",
    "update.googleapis.com",
    "clientservices.googleapis.com",
    "clients2.google.com",
})  # fmt: skip


class OwnRequestRefused(OutboundRefused):
    """A request of Chromium's own, not the page's."""


#: How such a refusal begins, so that the guard, told only its text, knows it.
OWN_REQUEST = "Chromium's own request to "


def is_own_request(refusal: str) -> bool:
    return refusal.startswith(OWN_REQUEST)


@dataclass(frozen=True)
class BrowserPolicy(OutboundPolicy):
    """The chat's outbound policy (`inner`), with Chromium's own requests refused first."""

    inner: OutboundPolicy = field(default_factory=OutboundPolicy)

    def check_url(self, url: str) -> list[str]:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
        if host in CHROMIUM_SERVICES:
            raise OwnRequestRefused(f"{OWN_REQUEST}{host}, refused (not the page's)")
        return self.inner.check_url(url)

    def check_address(self, address: str, url: str = "", port: int | None = None) -> None:
        self.inner.check_address(address, url, port)

    def check_file(self, url: str) -> Path:
        return self.inner.check_file(url)
