"""Compiled codecs kept between processes, as Python keeps bytecode.

``protocol.schema`` writes each codec as Python source and compiles it on its first use in a process. Compiling is
most of that cost (about 0.5 ms a codec): a fresh broker paid it again for every API its clients used, 3 ms of them
before its first ApiVersions answer. The codecs stay sans-IO: the broker hands this cache to the codec layer
(``install``, through ``schema.use_codec_compiler``). The code objects are kept in ``codecs`` where Python keeps
this package's bytecode
(``__pycache__``, or under ``PYTHONPYCACHEPREFIX``), one file per source: the source itself and its code,
marshalled. A file is used only when the source it holds is the one being compiled, so a new version of the
generator or of the descriptions, a hash collision or a damaged file can only cost a compile, never a wrong codec.
Nothing is written where Python would not write bytecode (``PYTHONDONTWRITEBYTECODE``, ``-B``) or cannot write (a
read-only installation): the cache is then read only, or not at all.
"""

from __future__ import annotations

import marshal
import os
import sys
from binascii import crc32
from functools import cache
from types import CodeType

from minibroker.protocol.schema import compile_source, use_codec_compiler


def bytecode_directory() -> str:
    """Where Python keeps this package's bytecode (``__pycache__``, or under ``PYTHONPYCACHEPREFIX`` when set), with
    ``codecs`` appended."""
    package = os.path.dirname(os.path.abspath(__file__))
    if sys.pycache_prefix:
        return os.path.join(sys.pycache_prefix + package, "codecs")
    return os.path.join(package, "__pycache__", "codecs")


class CodeCache:
    """Code objects compiled from codec source, by the source's checksum and length."""

    def __init__(self, directory: str | None = None) -> None:
        self.directory = directory or bytecode_directory()

    def compile(self, source: str, filename: str) -> CodeType:
        """The code of ``source``: from the cache when it holds this very source, else compiled (and kept)."""
        encoded = source.encode()
        path = os.path.join(self.directory, f"{crc32(encoded):08x}-{len(encoded)}.{sys.implementation.cache_tag}")
        try:
            with open(path, "rb") as stored:
                kept_source, code = marshal.loads(stored.read())
            if kept_source == source and isinstance(code, CodeType):
                return code
        except (OSError, ValueError, EOFError, TypeError):
            pass  # not kept yet, or unreadable: compiled below
        code = compile_source(source, filename)
        if not sys.dont_write_bytecode:
            self._keep(path, source, code)
        return code

    def _keep(self, path: str, source: str, code: CodeType) -> None:
        """Write the file whole under a name of this process, then rename it: a reader never sees half a file."""
        temporary = f"{path}.{os.getpid()}.tmp"
        try:
            os.makedirs(self.directory, exist_ok=True)
            with open(temporary, "wb") as out:
                out.write(marshal.dumps((source, code)))
            os.replace(temporary, path)
        except OSError:
            try:
                os.unlink(temporary)
            except OSError:
                pass


@cache
def install() -> None:
    """Compile the codecs of this process through a ``CodeCache`` (once; the broker calls it when it is made)."""
    use_codec_compiler(CodeCache().compile)
