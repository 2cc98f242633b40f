#!/usr/bin/env python3
"""Generate golden Metal kernel sources with MLX 0.32.4 (`mx.fast.metal_kernel`).

Regenerate everything (from the repository root):

    python3 tools/mlx_golden.py crates/kernelkit/tests/golden/metal crates/kernelkit/tests/golden/metal/quirks

Check that the stored files still match what MLX produces (writes nothing, exits 1 on a difference):

    python3 tools/mlx_golden.py --check crates/kernelkit/tests/golden/metal crates/kernelkit/tests/golden/metal/quirks

Requirements: `pip install mlx==0.32.4 mlx-cpu==0.32.4 numpy` (Linux, no Metal device
needed). The script refuses to run with any other MLX version.

How it works
------------
On Linux MLX has no Metal back end, so a `metal_kernel` call normally throws
"[metal_kernel] No Metal back-end.". Inside `mx.export_function(...)` tracing it is
allowed instead: the kernel is recorded in the exported graph on a placeholder GPU
stream, and with `verbose=True` the generated source is printed by C++ code
(`std::cout`) to file descriptor 1 as

    Generated source code for `<name>`:\\n
    ```\\n
    <SOURCE>\\n
    ```\\n

(`std::endl` after each piece, so the source is followed by ONE extra "\\n" that is
not part of it; SOURCE itself already ends with "\\n").

Each spec runs in its own child process (this same script with `--child`), whose fd 1
is a pipe read by the parent; nothing else in the child writes to fd 1. The parent
checks that the whole of stdout is exactly the prefix above + SOURCE + "\\n```\\n" and
writes SOURCE, byte for byte, to NAME.metal (NAME = the spec file's stem, not the
"name" field). The header line, the ``` fences and the newline that precedes the
closing fence are stripped.

The kernel (host) name is taken from the exported `.mlxfn` file: the CustomKernel
primitive is serialised there as the string "CustomKernel" followed by
u64-length-prefixed kernel name and kernel source. The source stored there must
equal the printed one (checked). When MLX raises after printing (float64 inputs or
outputs: "float64 is not supported on the GPU"), no usable .mlxfn exists and the kernel name
is read from the "[[kernel]] void <kernel_name>(" line of the source instead.

Files written next to each SPEC.json (stale ones from an earlier run are removed):
  NAME.metal                exact source bytes MLX printed (well-formed signature)
  NAME.mlx_malformed.metal  instead of NAME.metal when MLX's signature is broken:
                            more than one parameter line ends with ") {"
  NAME.kernel_name          the kernel/host name, no trailing newline
  NAME.mlx_error            the exception MLX raised, "Type: message\\n"; can exist
                            together with NAME.metal when MLX printed the source first

Spec format: {"name", "inputs": [[name, dtype, shape]...], "outputs": [[name, dtype,
shape]...], "source", "header"="", "ensure_row_contiguous"=true,
"atomic_outputs"=false, "template"=[[name, value]...]}; a template value that is a
JSON string is a dtype, a number an int, true/false a bool. dtype names are MLX's
("bool" for mx.bool_).
"""

import json
import os
import re
import struct
import subprocess
import sys
import tempfile

MLX_VERSION = "0.32.4"
OUTPUT_SUFFIXES = (".metal", ".mlx_malformed.metal", ".kernel_name", ".mlx_error")


def _dtype(mx, name):
    if name == "bool":
        return mx.bool_
    dt = getattr(mx, name, None)
    if not isinstance(dt, mx.Dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dt


def _template_value(mx, value):
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return _dtype(mx, value)
    return value  # e.g. a JSON float: passed on so that MLX's own error is recorded


def child(spec_path, mlxfn_path, result_path):
    """Run one spec. Only MLX's C++ code may write to fd 1."""
    # Keep Python-level output away from fd 1.
    sys.stdout = sys.stderr
    import mlx.core as mx

    result = {"error": None}
    try:
        if mx.__version__ != MLX_VERSION:
            raise RuntimeError(f"need mlx {MLX_VERSION}, found {mx.__version__}")
        with open(spec_path, encoding="utf-8") as f:
            spec = json.load(f)
        inputs = spec["inputs"]
        outputs = spec["outputs"]
        template = [(n, _template_value(mx, v)) for n, v in spec.get("template", [])]
        example = [mx.zeros(tuple(shape), dtype=_dtype(mx, dt)) for _, dt, shape in inputs]
        out_shapes = [tuple(shape) for _, _, shape in outputs]
        out_dtypes = [_dtype(mx, dt) for _, dt, _ in outputs]
        try:
            kernel = mx.fast.metal_kernel(
                name=spec["name"],
                input_names=[n for n, _, _ in inputs],
                output_names=[n for n, _, _ in outputs],
                source=spec["source"],
                header=spec.get("header", ""),
                ensure_row_contiguous=spec.get("ensure_row_contiguous", True),
                atomic_outputs=spec.get("atomic_outputs", False),
            )

            def fun(*args):
                return kernel(
                    inputs=list(args),
                    output_shapes=out_shapes,
                    output_dtypes=out_dtypes,
                    grid=(1, 1, 1),
                    threadgroup=(1, 1, 1),
                    template=template,
                    verbose=True,
                )

            mx.export_function(mlxfn_path, fun, *example)
        except Exception as e:  # MLX's own error: record it
            result["error"] = f"{type(e).__name__}: {e}\n"
    finally:
        sys.__stdout__.flush()
        with open(result_path, "w", encoding="utf-8") as f:
            json.dump(result, f)


def parse_mlxfn(path):
    """Return (kernel_name, source) bytes of the CustomKernel in an .mlxfn file."""
    data = open(path, "rb").read()
    tag = struct.pack("<Q", 12) + b"CustomKernel"
    i = data.find(tag)
    if i < 0:
        raise RuntimeError(f"no CustomKernel in {path}")
    i += len(tag)
    (n,) = struct.unpack_from("<Q", data, i)
    name = data[i + 8 : i + 8 + n]
    i += 8 + n
    (n,) = struct.unpack_from("<Q", data, i)
    source = data[i + 8 : i + 8 + n]
    return name, source


def kernel_name_from_source(spec, source):
    rest = source[len(spec.get("header", "").encode("utf-8")) :]
    if spec.get("template"):
        rest = rest[rest.index(b"\n") + 1 :]
    head = b"[[kernel]] void "
    if not rest.startswith(head):
        raise RuntimeError("cannot find the kernel signature")
    return rest[len(head) : rest.index(b"(\n")]


def is_malformed(source):
    """MLX closes the parameter list more than once (see RULES.md)."""
    closers = re.findall(rb"^  .*\[\[[a-z_]+(\(\d+\))?\]\]\) \{$", source, re.M)
    return len(closers) > 1


def run_spec(spec_path):
    """Return {suffix: bytes} for one spec."""
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        mlxfn = os.path.join(tmp, "k.mlxfn")
        res = os.path.join(tmp, "result.json")
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", spec_path, mlxfn, res],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        if proc.returncode != 0 or not os.path.exists(res):
            raise RuntimeError(f"{spec_path}: child failed:\n{proc.stderr.decode(errors='replace')}")
        with open(res, encoding="utf-8") as f:
            result = json.load(f)
        out = proc.stdout
        files = {}
        if result["error"] is not None:
            files[".mlx_error"] = result["error"].encode("utf-8")
        if not out:
            if result["error"] is None:
                raise RuntimeError(f"{spec_path}: MLX printed nothing and raised nothing")
            return files
        prefix = b"Generated source code for `" + spec["name"].encode("utf-8") + b"`:\n```\n"
        suffix = b"\n```\n"
        if not (out.startswith(prefix) and out.endswith(suffix)):
            raise RuntimeError(f"{spec_path}: unexpected verbose output:\n{out!r}")
        source = out[len(prefix) : -len(suffix)]
        if result["error"] is None:
            name, stored = parse_mlxfn(mlxfn)
            if stored != source:
                raise RuntimeError(f"{spec_path}: printed source differs from exported one")
            if name != kernel_name_from_source(spec, source):
                raise RuntimeError(f"{spec_path}: kernel name mismatch")
        else:
            name = kernel_name_from_source(spec, source)
        files[".mlx_malformed.metal" if is_malformed(source) else ".metal"] = source
        files[".kernel_name"] = name
        return files


def main(argv):
    if len(argv) == 4 and argv[0] == "--child":
        child(*argv[1:])
        return 0
    check = False
    if argv and argv[0] == "--check":
        check, argv = True, argv[1:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    import mlx.core as mx

    if mx.__version__ != MLX_VERSION:
        print(f"need mlx {MLX_VERSION}, found {mx.__version__}", file=sys.stderr)
        return 2
    failures = 0
    count = 0
    for d in argv:
        for fn in sorted(os.listdir(d)):
            if not fn.endswith(".json"):
                continue
            spec_path = os.path.join(d, fn)
            stem = os.path.join(d, fn[: -len(".json")])
            files = run_spec(spec_path)
            count += 1
            for suf in OUTPUT_SUFFIXES:
                path = stem + suf
                want = files.get(suf)
                if check:
                    have = open(path, "rb").read() if os.path.exists(path) else None
                    if have != want:
                        print(f"DIFF {path}", file=sys.stderr)
                        failures += 1
                elif want is None:
                    if os.path.exists(path):
                        os.remove(path)
                else:
                    with open(path, "wb") as f:
                        f.write(want)
            tags = ",".join(s.lstrip(".") for s in OUTPUT_SUFFIXES if s in files)
            print(f"{spec_path}: {tags}")
    print(f"{count} specs, {failures} differences" if check else f"{count} specs")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
