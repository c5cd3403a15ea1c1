"""CraigslistBargain's corpus: its title, folder names and official release."""

from __future__ import annotations

from dialogue_gym.data.fetch import Download, Release

__all__ = ["FOLDER_NAMES", "RELEASE", "TITLE"]
TITLE = "CraigslistBargain"
"""The corpus's title."""

FOLDER_NAMES = ("craigslist_bargain", "craigslist_bargains", "craigslistbargain", "cb")
"""The accepted names of its folder under a data root (compared case-insensitively); the first
is canonical."""

_CODALAB = "https://worksheets.codalab.org/rest/bundles"

RELEASE = Release(
    downloads=(
        Download(
            f"{_CODALAB}/0xd34bbbc5fb3b4fccbd19e10756ca8dd7/contents/blob/parsed.json",
            "craigslist_bargain/cocoa/train.json",
        ),
        Download(
            f"{_CODALAB}/0x15c4160b43d44ee3a8386cca98da138c/contents/blob/parsed.json",
            "craigslist_bargain/cocoa/dev.json",
        ),
        Download(
            f"{_CODALAB}/0x54d325bbcfb2463583995725ed8ca42b/contents/blob/",
            "craigslist_bargain/cocoa/test.json",
        ),
    ),
    licence="no stated data licence (treat as research use); the CoCoA code is MIT.",
    homepage="https://stanfordnlp.github.io/cocoa/",
)
"""The official release (``dialogue-gym data fetch cb``)."""
