"""Build hook for the optional C scanner; all project metadata lives in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kafkatx.formats._batchscan",
            ["kafkatx/formats/_batchscan.c", "kafkatx/formats/_recordfmt.c",
             "kafkatx/formats/_recordcols.c", "kafkatx/formats/_dumpfmt.c",
             "kafkatx/formats/_dumptable.c", "kafkatx/formats/_replaytable.c"],
            depends=["kafkatx/formats/_varint.h", "kafkatx/formats/_recordfmt.h",
                     "kafkatx/formats/_dumpcols.h"],
            optional=True,
            extra_compile_args=["-O3"],
        )
    ]
)
