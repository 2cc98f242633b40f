"""What a corpus entry (crates/kernelkit-cli/tests/corpus/<entry>/case.py) is made of.

A `case.py` is plain Python that defines, at module level:

    WHAT      one line: what the kernel computes
    FEATURES  the Metal features the body uses (see FEATURE_NAMES)
    ORIGIN    Origin(...): where the body was published and how to get its exact text
    KERNEL    Kernel(...): the `mx.fast.metal_kernel(...)` arguments other than the text
    CALL      Call(...): the call (outputs, template, grid, threadgroup, init_value)
    RULES     {output name: rule} (see `exact`, `ulp`, `close`, `multiset`)
    make_inputs(rng) -> {input name: np.ndarray}   (0-d arrays for scalar inputs)
    reference(inputs) -> {output name: np.ndarray} (NumPy, written from the math,
                                                    never from running the kernel)

`tools/corpus_gen.py` turns each case into the files the Rust test reads.

The body and header texts are third-party code. They are not committed with the
corpus; `Text` records where they come from (repository, path, commit, and which
Python expression of that file is the string MLX received) and the SHA-256 of the
exact string, so that `corpus_gen.py --extract` can rebuild them from a snapshot
of the repository and the test can prove that the text it runs is the published
one, byte for byte.
"""

from __future__ import annotations

import ast
import hashlib
import subprocess
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

#: dtype names as MLX (and kernelkit's spec files) spell them.
DTYPES: dict[str, Any] = {
    "bool": np.bool_,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float64": np.float64,
}

#: The feature tags the README's table uses.
FEATURE_NAMES = {
    "barrier": "threadgroup_barrier / simdgroup_barrier",
    "threadgroup": "threadgroup memory",
    "simd": "SIMD-group functions (simd_sum, simd_max, simd_shuffle, ...)",
    "atomic": "atomics (atomic_outputs or atomic types through pointer casts)",
    "vector": "vector types (float2/float4/half4, ...)",
    "half": "float16 arithmetic",
    "bfloat": "bfloat16 arithmetic",
    "template": "template arguments",
    "header": "a header (helper functions outside the body)",
    "strides": "shape/strides/ndim parameters or elem_to_loc",
    "metal_math": "metal:: / metal::fast:: / metal::precise:: math",
    "int_bits": "bit manipulation on unsigned / 8-bit / 16-bit integers",
    "scalar_input": "0-d inputs (passed as `constant T&`)",
    "init_value": "init_value fills outputs before the launch",
}


def dtype_of(name: str):
    return np.dtype(DTYPES[name])


def name_of(dtype) -> str:
    dtype = np.dtype(dtype)
    for name, t in DTYPES.items():
        if np.dtype(t) == dtype:
            return name
    raise ValueError(f"no MLX name for {dtype}")


# --------------------------------------------------------------------------
# Where a text comes from


@dataclass(frozen=True)
class Text:
    """One string MLX received (`source=` or `header=`).

    `expr` picks a Python expression in the published file:
      ("assign", NAME, N)  the value of the N-th assignment `NAME = ...` in
                           source order (0-based), at any nesting depth;
      ("kwarg", KW, N)     the value of keyword `KW=` of the N-th call that
                           has such a keyword (e.g. the 2nd `source=` given to
                           any call);
      ("file", None, 0)    the whole file (a body kept in its own file and
                           read with `Path.read_text()`).
    `block` (for .rst/.md files) is the index of the ```python / code-block
    that holds the code; the expression is looked up in that block.
    `env` gives the names an f-string or a concatenation refers to, with the
    values the publishing code computes for the call this entry makes (the
    case documents why); a plain literal needs none. A value that is itself
    a `Text` is extracted first (an f-string built from another f-string). The expression is
    evaluated with `env` as its only namespace.
    """

    expr: tuple
    sha256: str
    env: dict = field(default_factory=dict)
    block: int | None = None

    def extract(self, file_text: str) -> str:
        if self.expr[0] == "file":
            return file_text
        code = file_text if self.block is None else code_blocks(file_text)[self.block]
        node = find_expr(ast.parse(code), self.expr)
        env = {k: v.extract(file_text) if isinstance(v, Text) else v for k, v in self.env.items()}
        value = eval(  # noqa: S307 - one string expression, names from `env` only
            compile(ast.Expression(body=node), "<corpus text>", "eval"),
            {"__builtins__": {}},
            env,
        )
        if not isinstance(value, str):
            raise ValueError(f"{self.expr} is not a string")
        return value


def code_blocks(text: str) -> list[str]:
    """The Python code blocks of an .rst (`.. code-block:: python`) or Markdown
    (```python) file, dedented, in order."""
    lines = text.split("\n")
    blocks: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith(".. code-block:: python"):
            i += 1
            body: list[str] = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                body.append(lines[i])
                i += 1
            blocks.append(textwrap.dedent("\n".join(body)).strip("\n") + "\n")
            continue
        if stripped.startswith("```python") or stripped.startswith("```py"):
            indent = line[: len(line) - len(line.lstrip())]
            i += 1
            body = []
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
                i += 1
            blocks.append("\n".join(body) + "\n")
        i += 1
    return blocks


def find_expr(tree: ast.AST, expr: tuple) -> ast.expr:
    kind, name, nth = expr
    found: list[tuple[int, int, ast.expr]] = []
    for node in ast.walk(tree):
        if kind == "assign" and isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(
                isinstance(t, ast.Name) and t.id == name for t in targets
            ):
                found.append((node.lineno, node.col_offset, node.value))
        elif kind == "kwarg" and isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == name:
                    found.append((kw.value.lineno, kw.value.col_offset, kw.value))
    if kind not in ("assign", "kwarg"):
        raise ValueError(f"unknown expression kind {kind!r}")
    found.sort(key=lambda f: (f[0], f[1]))
    if nth >= len(found):
        raise ValueError(f"{expr}: only {len(found)} found")
    return found[nth][2]


@dataclass(frozen=True)
class Origin:
    """Where the kernel was published."""

    repo: str  # owner/name on GitHub
    path: str  # file in the repository
    commit: str  # a commit whose tree has the file with this text
    license: str  # as stated by the repository ("not stated" if none)
    source: Text
    header: Text | None = None

    def read(self, mirror_root: Path) -> str:
        """The published file, from a bare snapshot under mirror_root
        (`<owner>+<name>/repo`, as the search tool's `fetch` lays them out)."""
        git_dir = mirror_root / self.repo.replace("/", "+") / "repo"
        return subprocess.run(
            ["git", "--git-dir", str(git_dir), "show", f"{self.commit}:{self.path}"],
            check=True,
            capture_output=True,
        ).stdout.decode("utf-8")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------
# The call


@dataclass(frozen=True)
class Kernel:
    """The arguments of `mx.fast.metal_kernel(...)` other than the texts."""

    name: str
    inputs: list[str]
    outputs: list[str]
    ensure_row_contiguous: bool = True
    atomic_outputs: bool = False


@dataclass(frozen=True)
class Call:
    """The arguments of the kernel call. `outputs` is [(name, dtype, shape)];
    `template` is [(name, value)] with dtypes as MLX names (str), ints, bools."""

    outputs: list[tuple[str, str, tuple]]
    grid: tuple
    threadgroup: tuple
    template: list[tuple[str, Any]] = field(default_factory=list)
    init_value: float | None = None
    #: per input: a view (or list of views) in the spec format, applied to
    #: the generated data before the call ({"slice": ...}, {"transpose": ...})
    views: dict = field(default_factory=dict)


# --------------------------------------------------------------------------
# Comparison rules (documented in the corpus README; applied by tests/corpus.rs)


def exact() -> dict:
    """Bit for bit (integers, bools; floats that are pure copies)."""
    return {"kind": "exact"}


def ulp(n: int = 2, why: str | None = None) -> dict:
    """float32: within n units in the last place (NaN equals NaN). More than
    2 needs a `why`."""
    if n > 2 and not why:
        raise ValueError("ulp(n > 2) needs a why")
    rule = {"kind": "ulp", "max_ulp": n}
    if why:
        rule["why"] = why
    return rule


def close(rtol: float, atol: float, why: str) -> dict:
    """|got - expected| <= atol + rtol * |expected| elementwise. `why` says
    why this entry needs it (reduction order, approximate exp/log, ...)."""
    return {"kind": "close", "rtol": rtol, "atol": atol, "why": why}


def half(atol: float = 1e-3) -> dict:
    """float16 / bfloat16: within 1e-2 relative (atol for values near 0)."""
    return close(1e-2, atol, "float16/bfloat16 output: 1e-2 relative")


def multiset(inner: dict, why: str) -> dict:
    """The output's elements in any order (e.g. slots filled by atomic
    appends): both sides are sorted, then compared by `inner`."""
    return {"kind": "multiset", "inner": inner, "why": why}


# --------------------------------------------------------------------------
# Helpers for references


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def bf16(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).astype(ml_dtypes.bfloat16)
