"""Run one fuzz target under atheris (libFuzzer): ``python -m tests.fuzz.run TARGET [libFuzzer
options] [CORPUS_DIR...]``, e.g. ``python -m tests.fuzz.run segment -max_total_time=600
/tmp/new tests/fuzz/corpus/segment``. kafkatx's modules are imported inside
``atheris.instrument_imports`` so the fuzzer sees their coverage; a failing input is written
where ``-artifact_prefix`` says and the process exits non-zero.
"""

from __future__ import annotations

import sys

import atheris


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    name = argv[1]
    with atheris.instrument_imports(include=["kafkatx"]):
        from tests.fuzz import targets

        targets.preload()
    target = targets.TARGETS[name]
    atheris.Setup([argv[0], *argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
