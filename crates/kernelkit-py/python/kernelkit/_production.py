"""Production without JIT: record what a process runs, precompile it for
every architecture on a machine without a GPU, import it in the image, and
forbid compiles in serving (docs/production.md).
"""

import contextlib
import os

from ._kernelkit import (
    _record_start,
    _record_stop,
    import_bundle,
    jit_policy,
    keygen,
    precompile,
    set_jit,
)


@contextlib.contextmanager
def record(path):
    """Records every variant this process resolves inside the ``with``
    block into the manifest ``path`` (JSON lines, each variant once; the
    file is appended to), for ``kk.precompile``:

    >>> with kk.record("manifest.jsonl"):
    ...     run_the_workload()

    Only the first call of each variant writes; warm calls cost nothing.
    Recording also starts with ``KERNELKIT_RECORD=FILE``.
    """
    _record_start(os.fspath(path))
    try:
        yield path
    finally:
        _record_stop()


__all__ = ["record", "precompile", "import_bundle", "keygen", "set_jit", "jit_policy"]
