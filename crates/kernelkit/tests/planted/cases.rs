//! The planted bugs: each a kernel with one out-of-bounds mistake, the
//! launch that triggers it and the report expected of a checked call.
//!
//! Groups (reported apart):
//! - `A`: accesses through the argument's name (`a[i]`, `*(a + k)`,
//!   `(a + k)[j]`, `&out[i]` for atomics), caught by the views: the
//!   report must name the argument and an index the bug reaches;
//! - `B`: writes through raw pointers and casts into buffers kernelkit
//!   allocated, caught by the guard regions: named by argument;
//! - `C`: what the mode does not claim to see (reads through aliases,
//!   threadgroup arrays): reported as caught or not.
//!
//! Cases marked `held_out` were written with the others, before the
//! checker first ran, and set aside: none was changed after a run.
//!
//! Every input is f32 (element `k` holds `k`) unless named in `ints`;
//! shapes are given per argument.

use std::ops::RangeInclusive;

/// Which net a case is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    A,
    B,
    C,
}

/// What a checked call must report.
#[derive(Clone, Debug)]
pub enum Expect {
    /// A view's record: role, argument, indices the bug reaches outside.
    View(&'static str, &'static str, &'static [RangeInclusive<i64>]),
    /// A guard region: role, argument.
    Guard(&'static str, &'static str),
    /// Group C: the role and the name (argument or threadgroup array)
    /// that a catch would name.
    Unseen(&'static str, &'static str),
}

/// One planted bug.
pub struct Case {
    pub name: &'static str,
    pub group: Group,
    pub held_out: bool,
    /// The body is CUDA C++ (runs on CUDA devices only).
    pub cuda_body: bool,
    pub header: &'static str,
    pub body: &'static str,
    /// (name, shape); an input listed in `strided` is passed as every
    /// second element of an array twice as long (a view with stride 2).
    pub inputs: &'static [(&'static str, &'static [usize])],
    pub strided: &'static [&'static str],
    /// (name, shape, int32): outputs are f32 unless marked.
    pub outputs: &'static [(&'static str, &'static [usize], bool)],
    pub grid: [u64; 3],
    pub tg: [u64; 3],
    pub template: &'static [(&'static str, i32)],
    pub atomic: bool,
    pub row_contiguous: bool,
    pub expect: Expect,
}

const fn case(name: &'static str, group: Group, body: &'static str, expect: Expect) -> Case {
    Case {
        name,
        group,
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
        expect,
    }
}

use Expect::{Guard, Unseen, View};
use Group::{A, B, C};

pub fn cases() -> Vec<Case> {
    vec![
        // ---- (a) through the argument's name ----
        case(
            "a_one_past_end_write",
            A,
            "uint i = thread_position_in_grid.x;\nout[i + 1] = inp[i];",
            View("output", "out", &[64..=64]),
        ),
        case(
            "a_one_past_end_read",
            A,
            "uint i = thread_position_in_grid.x;\nout[i] = inp[i + 1];",
            View("input", "inp", &[64..=64]),
        ),
        case(
            "a_negative_read",
            A,
            "int i = int(thread_position_in_grid.x);\nout[i] = inp[i - 1];",
            View("input", "inp", &[-1..=-1]),
        ),
        case(
            "a_negative_write",
            A,
            "int i = int(thread_position_in_grid.x);\nout[i - 2] = inp[i];",
            View("output", "out", &[-2..=-1]),
        ),
        Case {
            inputs: &[("inp", &[60])],
            ..case(
                "a_grid_past_the_input",
                A,
                "uint i = thread_position_in_grid.x;\nout[i] = inp[i];",
                View("input", "inp", &[60..=63]),
            )
        },
        Case {
            inputs: &[("inp", &[8, 6])],
            outputs: &[("out", &[8, 6], false)],
            grid: [6, 8, 1],
            tg: [6, 2, 1],
            ..case(
                "a_wrong_row_stride",
                A,
                "uint r = thread_position_in_grid.y, c = thread_position_in_grid.x;\n\
                 out[r * 6 + c] = inp[r * 7 + c];",
                View("input", "inp", &[48..=54]),
            )
        },
        Case {
            inputs: &[("inp", &[4, 16])],
            outputs: &[("out", &[4, 16], false)],
            grid: [16, 4, 1],
            tg: [16, 1, 1],
            ..case(
                "a_swapped_axes",
                A,
                "uint r = thread_position_in_grid.y, c = thread_position_in_grid.x;\n\
                 out[r * 16 + c] = inp[c * 16 + r];",
                View("input", "inp", &[64..=243]),
            )
        },
        Case {
            template: &[("OFFSET", 3)],
            ..case(
                "a_template_offset",
                A,
                "uint i = thread_position_in_grid.x;\nout[i] = inp[i + OFFSET];",
                View("input", "inp", &[64..=66]),
            )
        },
        Case {
            template: &[("N", 128)],
            outputs: &[("out", &[1], false)],
            grid: [1, 1, 1],
            tg: [1, 1, 1],
            ..case(
                "a_template_length",
                A,
                "float acc = 0;\nfor (int k = 0; k < N; ++k) { acc += inp[k]; }\nout[0] = acc;",
                View("input", "inp", &[64..=127]),
            )
        },
        Case {
            atomic: true,
            outputs: &[("out", &[8], true)],
            ..case(
                "a_atomic_histogram_bin",
                A,
                "uint i = thread_position_in_grid.x;\nint b = int(inp[i]) / 7;\n\
                 atomic_fetch_add_explicit(&out[b], 1, memory_order_relaxed);",
                View("output", "out", &[8..=9]),
            )
        },
        Case {
            atomic: true,
            outputs: &[("out", &[8], true)],
            ..case(
                "a_atomic_negative_bin",
                A,
                "uint i = thread_position_in_grid.x;\nint b = int(inp[i]) / 8 - 1;\n\
                 atomic_fetch_add_explicit(&out[b], 1, memory_order_relaxed);",
                View("output", "out", &[-1..=-1]),
            )
        },
        Case {
            inputs: &[("a", &[64]), ("b", &[32])],
            ..case(
                "a_second_input_shorter",
                A,
                "uint i = thread_position_in_grid.x;\nout[i] = a[i] + b[i];",
                View("input", "b", &[32..=63]),
            )
        },
        Case {
            inputs: &[("a", &[64]), ("b", &[64])],
            ..case(
                "a_second_input_past_end",
                A,
                "uint i = thread_position_in_grid.x;\nout[i] = a[i] * b[i + 1];",
                View("input", "b", &[64..=64]),
            )
        },
        Case {
            inputs: &[("x", &[64]), ("s", &[1])],
            ..case(
                "a_one_element_input_indexed",
                A,
                "uint i = thread_position_in_grid.x;\nout[i] = x[i] * s[i];",
                View("input", "s", &[1..=63]),
            )
        },
        Case {
            inputs: &[("x", &[64]), ("s", &[1])],
            ..case(
                "a_one_element_input_second",
                A,
                "uint i = thread_position_in_grid.x;\nout[i] = x[i] + s[1];",
                View("input", "s", &[1..=1]),
            )
        },
        case(
            "a_deref_of_sum",
            A,
            "uint i = thread_position_in_grid.x;\nout[i] = *(inp + i + 1);",
            View("input", "inp", &[64..=64]),
        ),
        case(
            "a_index_of_sum",
            A,
            "uint i = thread_position_in_grid.x;\nout[i] = (inp + 32)[i];",
            View("input", "inp", &[64..=95]),
        ),
        case(
            "a_deref_write",
            A,
            "uint i = thread_position_in_grid.x;\n*(out + i + 1) = inp[i];",
            View("output", "out", &[64..=64]),
        ),
        Case {
            held_out: true,
            outputs: &[("out", &[8], false)],
            grid: [8, 1, 1],
            tg: [8, 1, 1],
            ..case(
                "a_inclusive_loop",
                A,
                "uint i = thread_position_in_grid.x;\nfloat acc = 0;\n\
                 for (uint k = 0; k <= 8; ++k) { acc += inp[i * 8 + k]; }\nout[i] = acc;",
                View("input", "inp", &[64..=64]),
            )
        },
        Case {
            held_out: true,
            ..case(
                "a_stencil_edges",
                A,
                "uint i = thread_position_in_grid.x;\n\
                 out[i] = inp[i - 1] + inp[i] + inp[i + 1];",
                View("input", "inp", &[64..=64, 4294967295..=4294967295]),
            )
        },
        Case {
            held_out: true,
            inputs: &[("inp", &[8, 8])],
            outputs: &[("out", &[8, 8], false)],
            grid: [8, 9, 1],
            tg: [8, 1, 1],
            ..case(
                "a_grid_one_row_too_many",
                A,
                "uint2 p = thread_position_in_grid.xy;\nout[p.y * 8 + p.x] = inp[p.y * 8 + p.x];",
                View("input", "inp", &[64..=71]),
            )
        },
        Case {
            held_out: true,
            ..case(
                "a_group_size_assumed",
                A,
                "uint i = threadgroup_position_in_grid.x * 64 + thread_position_in_threadgroup.x;\n\
                 out[i] = inp[i];",
                View("input", "inp", &[64..=95]),
            )
        },
        Case {
            inputs: &[("inp", &[32])],
            strided: &["inp"],
            row_contiguous: false,
            outputs: &[("out", &[32], false)],
            grid: [32, 1, 1],
            ..case(
                "a_strided_view_past_its_span",
                A,
                "uint i = thread_position_in_grid.x;\n\
                 out[i] = inp[i * inp_strides[0] + 1];",
                View("input", "inp", &[63..=63]),
            )
        },
        Case {
            outputs: &[("out", &[64], false), ("total", &[1], false)],
            ..case(
                "a_second_output",
                A,
                "uint i = thread_position_in_grid.x;\nout[i] = inp[i];\ntotal[i] = 0;",
                View("output", "total", &[1..=63]),
            )
        },
        Case {
            cuda_body: true,
            ..case(
                "a_cuda_one_past_end",
                A,
                "int i = blockIdx.x * blockDim.x + threadIdx.x;\nout[i + 1] = inp[i];",
                View("output", "out", &[64..=64]),
            )
        },
        Case {
            cuda_body: true,
            held_out: true,
            ..case(
                "a_cuda_atomic_add",
                A,
                "int i = blockIdx.x * blockDim.x + threadIdx.x;\natomicAdd(&out[i + 2], inp[i]);",
                View("output", "out", &[64..=65]),
            )
        },
        // ---- (b) raw pointers and casts into buffers kernelkit allocated ----
        case(
            "b_raw_pointer_offset",
            B,
            "uint i = thread_position_in_grid.x;\ndevice float* p = out + 1;\np[i] = inp[i];",
            Guard("output", "out"),
        ),
        case(
            "b_cast_to_uint",
            B,
            "uint i = thread_position_in_grid.x;\ndevice uint* u = (device uint*)out;\n\
             u[i + 1] = i;",
            Guard("output", "out"),
        ),
        Case {
            header: "void store(device float* p, uint i, float v) { p[i] = v; }",
            ..case(
                "b_helper_writes_past_end",
                B,
                "uint i = thread_position_in_grid.x;\nstore(out, i + 1, inp[i]);",
                Guard("output", "out"),
            )
        },
        case(
            "b_wider_type_cast",
            B,
            "uint i = thread_position_in_grid.x;\ndevice float2* v = (device float2*)out;\n\
             v[i] = float2(inp[i], 0.0f);",
            Guard("output", "out"),
        ),
        case(
            "b_pointer_walk",
            B,
            "uint i = thread_position_in_grid.x;\ndevice float* p = out;\np += i;\np[1] = inp[i];",
            Guard("output", "out"),
        ),
        Case {
            outputs: &[("out", &[64], false), ("out2", &[64], false)],
            ..case(
                "b_second_output_far",
                B,
                "uint i = thread_position_in_grid.x;\nout[i] = inp[i];\n\
                 device float* q = out2;\nq[i + 64] = 1.0f;",
                Guard("output", "out2"),
            )
        },
        Case {
            outputs: &[("out", &[64], true)],
            ..case(
                "b_int_alias",
                B,
                "uint i = thread_position_in_grid.x;\ndevice int* a = (device int*)out;\n\
                 a[i + 1] = 7;",
                Guard("output", "out"),
            )
        },
        Case {
            held_out: true,
            ..case(
                "b_address_of_first_element",
                B,
                "uint i = thread_position_in_grid.x;\ndevice float* p = &out[0];\np[i + 1] = inp[i];",
                Guard("output", "out"),
            )
        },
        Case {
            held_out: true,
            ..case(
                "b_far_past_end",
                B,
                "uint i = thread_position_in_grid.x;\ndevice float* p = out;\n\
                 if (i == 0) { p[64 + 100] = 1.0f; }\nout[i] = inp[i];",
                Guard("output", "out"),
            )
        },
        Case {
            inputs: &[("inp", &[32])],
            strided: &["inp"],
            outputs: &[("out", &[32], false)],
            grid: [32, 1, 1],
            ..case(
                "b_write_into_an_input_copy",
                B,
                "uint i = thread_position_in_grid.x;\nout[i] = inp[i];\n\
                 device float* w = (device float*)inp;\nif (i == 31) { w[32] = 0.0f; }",
                Guard("input", "inp"),
            )
        },
        // ---- (c) what the mode does not claim to see ----
        case(
            "c_read_through_alias",
            C,
            "uint i = thread_position_in_grid.x;\nconst device float* p = inp;\nout[i] = p[i + 1];",
            Unseen("input", "inp"),
        ),
        case(
            "c_threadgroup_array_read",
            C,
            "threadgroup float tile[32];\nuint l = thread_position_in_threadgroup.x;\n\
             tile[l] = inp[thread_position_in_grid.x];\n\
             threadgroup_barrier(mem_flags::mem_threadgroup);\n\
             out[thread_position_in_grid.x] = tile[l + 1];",
            Unseen("input", "tile"),
        ),
        Case {
            header: "float load(const device float* p, uint i) { return p[i]; }",
            ..case(
                "c_helper_reads_past_end",
                C,
                "uint i = thread_position_in_grid.x;\nout[i] = load(inp, i + 1);",
                Unseen("input", "inp"),
            )
        },
    ]
}
