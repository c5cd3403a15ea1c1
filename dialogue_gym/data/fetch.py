"""Downloading the official corpus releases (where a network is available).

:func:`fetch` downloads each corpus's official files with :mod:`urllib` into
``DEST/<corpus folder>/`` in a layout the loaders read. It fails at once — a short connection
timeout, no retries — on any network error, with a message listing every URL and where to put
the file by hand. Files already present are kept (``force=True`` downloads them again).

``$DIALOGUE_GYM_FETCH_BASE`` replaces every official URL with ``BASE/<destination path>``
(e.g. ``BASE/esconv/ESConv.json``), for a local mirror laid out like a data root.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

from dialogue_gym.data.corpora import TITLES, LoaderFacts, corpus_name

__all__ = ["BASE_ENV_VAR", "RELEASES", "TIMEOUT_S", "Download", "FetchError", "Release", "fetch"]

BASE_ENV_VAR = "DIALOGUE_GYM_FETCH_BASE"
"""Environment variable that redirects every download to ``BASE/<destination path>``."""

TIMEOUT_S = 5.0
"""Socket timeout of every network operation, in seconds."""

_USER_AGENT = "dialogue-gym-data-fetch/0.1 (+urllib)"


class FetchError(RuntimeError):
    """A download failed; the message says which files to put where by hand."""


@dataclasses.dataclass(frozen=True)
class Download:
    """One file to download.

    Attributes:
        url: The official URL.
        dest: Where it goes, relative to the data root (for an archive: where its members go).
        members: For a ``.tar.gz`` archive, ``(member path, destination relative to the data
            root)`` pairs to extract; empty for a plain file.
    """

    url: str
    dest: str
    members: tuple[tuple[str, str], ...] = ()

    def targets(self) -> tuple[str, ...]:
        """The files this download produces, relative to the data root."""
        return tuple(d for _, d in self.members) if self.members else (self.dest,)


@dataclasses.dataclass(frozen=True)
class Release:
    """A corpus's official release.

    Attributes:
        downloads: The files.
        licence: The licence in short, shown after a download.
        homepage: Where the release is described.
    """

    downloads: tuple[Download, ...]
    licence: str
    homepage: str


RELEASES: Mapping[str, Release] = LoaderFacts[Release]("RELEASE")
"""Corpus name → its official release (each loader module's ``RELEASE``)."""


def _url(download: Download) -> str:
    base = os.environ.get(BASE_ENV_VAR, "").strip()
    return f"{base.rstrip('/')}/{download.dest}" if base else download.url


def _manual_steps(release: Release, dest: Path) -> str:
    lines = []
    for d in release.downloads:
        if d.members:
            extracted = ", ".join(f"{m} -> {dest / target}" for m, target in d.members)
            lines.append(f"  {d.url}  (a .tar.gz: extract {extracted})")
        else:
            lines.append(f"  {d.url}  ->  {dest / d.dest}")
    return "\n".join(lines)


def _download(url: str, target: Path, timeout: float) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with (
            os.fdopen(handle, "wb") as sink,
            urllib.request.urlopen(request, timeout=timeout) as response,
        ):
            shutil.copyfileobj(response, sink, length=1 << 20)
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def _extract(archive: Path, members: tuple[tuple[str, str], ...], dest: Path) -> None:
    with tarfile.open(archive, "r:*") as tar:
        for member_name, target in members:
            member = tar.getmember(member_name)
            source = tar.extractfile(member)
            if source is None:
                raise FetchError(f"{archive}: {member_name} is not a regular file")
            out = dest / target
            out.parent.mkdir(parents=True, exist_ok=True)
            with source, out.open("wb") as sink:
                shutil.copyfileobj(source, sink)


def fetch(
    name: str,
    dest: str | Path,
    *,
    force: bool = False,
    timeout: float = TIMEOUT_S,
    log: Callable[[str], None] | None = None,
) -> list[Path]:
    """Downloads a corpus's official release into ``dest`` (a data root).

    Args:
        name: ``p4g``, ``esconv``, ``ed`` or ``cb`` (or an alias).
        dest: The data root; files go to ``dest/<corpus folder>/...``.
        force: Download files that are already present again.
        timeout: Socket timeout per network operation, in seconds.
        log: Called with one line per step (default: silent).

    Returns:
        The files now present.

    Raises:
        FetchError: A download failed (offline, HTTP error, timeout, bad archive); nothing
            half-written is left behind and the message lists what to put where by hand.
    """
    name = corpus_name(name)
    release = RELEASES[name]
    dest = Path(dest).expanduser()
    say = log or (lambda line: None)
    produced: list[Path] = []
    for download in release.downloads:
        targets = [dest / t for t in download.targets()]
        if not force and all(t.is_file() for t in targets):
            say(f"present  {', '.join(str(t) for t in targets)}")
            produced.extend(targets)
            continue
        url = _url(download)
        say(f"get      {url}")
        archive = dest / download.dest
        made = [p for p in (archive.parent, *archive.parent.parents) if not p.exists()]
        try:
            archive.parent.mkdir(parents=True, exist_ok=True)
            _download(url, archive, timeout)
            if download.members:
                _extract(archive, download.members, dest)
                archive.unlink()
        except (OSError, urllib.error.URLError, tarfile.TarError, KeyError, FetchError) as exc:
            reason = getattr(exc, "reason", None) or exc
            for folder in made:  # leave no empty folders behind (innermost first)
                with contextlib.suppress(OSError):
                    folder.rmdir()
            raise FetchError(
                f"could not download {TITLES[name]}: {url}: {reason}. No network, or the "
                f"server is unreachable (timeout {timeout:g} s). Download these files by hand "
                f"and put them here:\n{_manual_steps(release, dest)}\n"
                f"(see {release.homepage})"
            ) from None
        produced.extend(targets)
        say(f"saved    {', '.join(str(t) for t in targets)}")
    say(f"{TITLES[name]} licence: {release.licence}")
    return produced
