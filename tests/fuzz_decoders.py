"""Coverage-guided fuzzing of the request decoder, frame splitter and record batch validator with atheris.

    python -m tests.fuzz_decoders CORPUS_DIR -runs=100000      # any libFuzzer flags after the directory

The first byte of an input picks the target (see ``tests.fuzzing.run_target``); seeds written to CORPUS_DIR
are a valid request of every served API version and a few valid batches. Any exception other than the
protocol's own errors is reported by libFuzzer as a crash, with the input that caused it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["protocol"]):
    from minibroker.protocol.frames import encode_request
    from minibroker.protocol.records import build_batch

    from tests.fuzzing import API_VERSIONS, run_target

TARGETS = 3


def one_input(data: bytes) -> None:
    if data:
        run_target(data[0] % TARGETS, data[1:])


def write_seeds(corpus: Path) -> None:
    corpus.mkdir(parents=True, exist_ok=True)
    for api_key, version in API_VERSIONS:
        (corpus / f"request-{api_key}-{version}").write_bytes(b"\0" + encode_request(api_key, version, 1, "seed", {})[4:])
    for codec in range(5):
        batch = build_batch([(b"key", b"value" * 8, (("h", b"v"),), 1_700_000_000_000)] * 2, compression=codec)
        (corpus / f"batch-{codec}").write_bytes(b"\1" + batch)
    (corpus / "frames").write_bytes(b"\2" + bytes(8) + b"\0\0\0\3abc\0\0\0\0")


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1].startswith("-"):
        sys.exit("usage: python -m tests.fuzz_decoders CORPUS_DIR [libFuzzer flags]")
    write_seeds(Path(argv[1]))
    atheris.Setup([argv[0], *argv[2:], argv[1]], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
