//! Correct kernels that use every form a checked view serves (indexing,
//! `*(a + k)`, `(a + k)[j]`, atomics' `&out[i]`, templates, a strided
//! view, 0-d and 1-element inputs, helpers that take raw pointers,
//! threadgroup arrays): checked, each must run clean with the results it
//! has unchecked.

use super::cases::{Case, Expect, Group};

const fn control(name: &'static str, body: &'static str) -> Case {
    Case {
        name,
        group: Group::A,
        held_out: false,
        cuda_body: false,
        header: "",
        body,
        inputs: &[("inp", &[64])],
        strided: &[],
        outputs: &[("out", &[64], false)],
        grid: [64, 1, 1],
        tg: [32, 1, 1],
        template: &[],
        atomic: false,
        row_contiguous: true,
        expect: Expect::Guard("", ""),
    }
}

pub fn controls() -> Vec<Case> {
    vec![
        control(
            "ok_copy",
            "uint i = thread_position_in_grid.x;\nout[i] = inp[i];",
        ),
        control(
            "ok_pointer_arithmetic",
            "uint i = thread_position_in_grid.x;\n\
             out[i] = *(inp + i) + (inp + 0)[i] + *inp;\n*(out + i) += 1.0f;",
        ),
        Case {
            atomic: true,
            outputs: &[("out", &[8], true)],
            ..control(
                "ok_atomic_histogram",
                "uint i = thread_position_in_grid.x;\nint b = int(inp[i]) / 8;\n\
                 atomic_fetch_add_explicit(&out[b], 1, memory_order_relaxed);",
            )
        },
        Case {
            template: &[("OFFSET", 3)],
            outputs: &[("out", &[61], false)],
            grid: [61, 1, 1],
            ..control(
                "ok_template_offset",
                "uint i = thread_position_in_grid.x;\nout[i] = inp[i + OFFSET];",
            )
        },
        Case {
            inputs: &[("inp", &[32])],
            strided: &["inp"],
            row_contiguous: false,
            outputs: &[("out", &[32], false)],
            grid: [32, 1, 1],
            ..control(
                "ok_strided_view",
                "uint i = thread_position_in_grid.x;\nout[i] = inp[i * inp_strides[0]];",
            )
        },
        Case {
            inputs: &[("inp", &[64]), ("s", &[1])],
            ..control(
                "ok_one_element_input",
                "uint i = thread_position_in_grid.x;\nout[i] = inp[i] * s[0];",
            )
        },
        Case {
            inputs: &[("inp", &[64]), ("s", &[])],
            ..control(
                "ok_scalar_input",
                "uint i = thread_position_in_grid.x;\nout[i] = inp[i] + s;",
            )
        },
        Case {
            header: "float load(const device float* p, uint i) { return p[i]; }\n\
                     template <typename T> T twice(const device T* p, uint i) { return 2 * p[i]; }",
            ..control(
                "ok_helpers_take_raw_pointers",
                "uint i = thread_position_in_grid.x;\nout[i] = load(inp, i) + twice(inp, i);",
            )
        },
        Case {
            inputs: &[("inp", &[8, 8])],
            outputs: &[("out", &[8, 8], false)],
            grid: [8, 8, 1],
            tg: [8, 2, 1],
            ..control(
                "ok_transpose_2d",
                "uint2 p = thread_position_in_grid.xy;\n\
                 out[p.x * inp_shape[0] + p.y] = inp[p.y * inp_shape[1] + p.x];",
            )
        },
        control(
            "ok_threadgroup_reverse",
            "threadgroup float tile[32];\nuint l = thread_position_in_threadgroup.x;\n\
             tile[l] = inp[thread_position_in_grid.x];\n\
             threadgroup_barrier(mem_flags::mem_threadgroup);\n\
             out[thread_position_in_grid.x] = tile[31 - l];",
        ),
    ]
}
