//! The C++ dialect of the CPU backend.
//!
//! The user's body (Metal, lowered by [`super::lower`]) becomes a function
//! of one thread, with the Metal position names it uses as parameters; an
//! `extern "C"` entry runs a range of threadgroups, so the backend can hand
//! ranges of groups to a thread pool. The threads of a group run one after
//! another, or, when the body calls a barrier, SIMD-group or quad function
//! ([`KernelSpec::group_function`]), as fibers that switch at those calls
//! (the runtime is in `prelude/metal/group_cpu.h`).

use std::fmt::Write;

use super::attributes::portable_expr;
use super::lower::{lower, member_names, Options, Target};
use super::parts::{SharedText, VariantText};
use super::{cxx_template_args, cxx_template_decl, portable_name};
use crate::codegen::math::MathMode;
use crate::codegen::spec::KernelSpec;
use crate::codegen::variant::{PassMode, VariantDesc};
use std::borrow::Cow;

/// The first call-site number of the header's SIMD-group calls (the
/// body's count from 1).
const HEADER_SITES: usize = 1 << 20;

/// The prelude every CPU variant starts with.
pub(crate) const PRELUDE: &str = super::prelude::CPU;

/// The lowered header and body of `spec` in class `small` (16-bit floats
/// about, see [`super::small_floats`]).
fn lowered(spec: &KernelSpec, small: bool) -> (String, String) {
    let header = super::portable_header(&spec.header);
    let members = member_names(&[&spec.source, &header]);
    let opts = |first_site| Options {
        target: Target::Cpu,
        members: &members,
        first_site,
        conditionals: small,
    };
    let body = lower(&spec.source, opts(1));
    let body = if spec.check_bounds {
        super::bounds::checked_body(&body, &array_names(spec)).0
    } else {
        body
    };
    (lower(&header, opts(HEADER_SITES)), body)
}

/// The names of a kernel's array arguments, inputs then outputs: what a
/// checked body sees through views (`codegen::bounds`).
pub(crate) fn array_names(spec: &KernelSpec) -> Vec<&str> {
    spec.input_names
        .iter()
        .chain(&spec.output_names)
        .map(String::as_str)
        .collect()
}

/// What every CPU variant of `spec` in class `small` shares: the prelude,
/// the lowered header, the lowered body.
pub(crate) fn shared(spec: &KernelSpec, small: bool) -> SharedText {
    let (header, body) = lowered(spec, small);
    let mut rest = String::with_capacity(header.len() + 16);
    rest.push_str("\n// header\n");
    rest.push_str(&header);
    rest.push_str("\n\n");
    // A mode other than safe: its line first (`codegen::math`). Such a
    // source does not start with the prelude, so it is compiled without
    // the precompiled header, which was built with the safe flags.
    let mut prefix = Vec::with_capacity(3);
    if spec.math_mode != MathMode::Safe {
        prefix.push(Cow::Borrowed(spec.math_mode.marker()));
    }
    prefix.push(Cow::Borrowed(PRELUDE));
    if spec.check_bounds {
        prefix.push(Cow::Borrowed(super::bounds::VIEWS));
    }
    prefix.push(Cow::Owned(rest));
    SharedText::new(prefix, super::marked_body(&spec.name, body), Vec::new())
}

/// The file name a CPU source's generated lines go by (the compile's
/// source file; the body's lines go by [`super::body_file`]).
pub(crate) const FILE_NAME: &str = "kernel.cpp";

/// What one CPU variant adds to its kernel's [`shared`] part: the template
/// declaration and `kk_body`'s signature before the body; after it, the
/// `#line` directive that numbers the generated lines again, the closing
/// brace and the `extern "C"` entry point.
pub(crate) fn variant(
    spec: &KernelSpec,
    shared: &SharedText,
    desc: &VariantDesc<'_>,
    variant_id: u64,
) -> VariantText {
    let name = portable_name(spec, desc, variant_id);
    let mut params: Vec<String> = Vec::new();
    let mut unpack = String::new();
    let mut args: Vec<String> = Vec::new();
    let mut slot = 0usize;
    let mut take = |unpack: &mut String, ty: &str, var: &str, deref: bool| {
        if deref {
            let _ = writeln!(
                unpack,
                "  const {ty}& {var} = *static_cast<const {ty}*>(kk_args[{slot}]);"
            );
        } else {
            let _ = writeln!(unpack, "  {ty} {var} = static_cast<{ty}>(kk_args[{slot}]);");
        }
        slot += 1;
    };
    for ((input, d), info) in spec
        .input_names
        .iter()
        .zip(desc.inputs)
        .zip(&spec.shape_infos)
    {
        let ty = d.dtype.c_name();
        match d.mode {
            PassMode::Scalar => {
                params.push(format!("const {ty}& {input}"));
                take(&mut unpack, ty, input, true);
            }
            PassMode::Constant | PassMode::Device => {
                params.push(format!("const {ty}* {input}"));
                take(&mut unpack, &format!("const {ty}*"), input, false);
            }
        }
        args.push(input.clone());
        if d.mode == PassMode::Scalar {
            // As in MLX, 0-d inputs get no layout parameters.
            continue;
        }
        if info.shape {
            let v = format!("{input}_shape");
            params.push(format!("const int* {v}"));
            take(&mut unpack, "const int*", &v, false);
            args.push(v);
        }
        if info.strides {
            let v = format!("{input}_strides");
            params.push(format!("const int64_t* {v}"));
            take(&mut unpack, "const int64_t*", &v, false);
            args.push(v);
        }
        if info.ndim {
            let v = format!("{input}_ndim");
            params.push(format!("const int& {v}"));
            take(&mut unpack, "int", &v, true);
            args.push(v);
        }
    }
    for (output, dtype) in spec.output_names.iter().zip(desc.outputs) {
        let ty = if spec.atomic_outputs {
            format!("atomic<{}>*", dtype.c_name())
        } else {
            format!("{}*", dtype.c_name())
        };
        params.push(format!("{ty} {output}"));
        take(&mut unpack, &ty, output, false);
        args.push(output.clone());
    }
    for a in &spec.attributes {
        params.push(format!("const {} {}", a.ty, a.name));
        args.push(portable_expr(a.name).to_string());
    }
    if spec.check_bounds {
        // Each array argument's view (`codegen::bounds`), made for each
        // thread with its position.
        let _ = writeln!(
            unpack,
            "  kk::bounds_record* kk_bounds = static_cast<kk::bounds_record*>(kk_args[{slot}]);"
        );
        for (k, (name, ty, scalar)) in super::bounds::view_args(spec, desc).enumerate() {
            let view = super::bounds::view_name(name);
            params.push(format!("kk::view<{ty}> {view}"));
            if scalar {
                args.push(format!(
                    "kk::view<{ty}>(&{name}, kk_bounds, {k}, &kk_at, 0)"
                ));
            } else {
                args.push(format!("kk::view<{ty}>({name}, kk_bounds, {k}, &kk_at)"));
            }
        }
    }

    let mut before = cxx_template_decl(desc);
    let _ = writeln!(before, "static inline void kk_body(");
    let _ = writeln!(before, "    {}) {{", params.join(",\n    "));
    let mut src = String::with_capacity(2048);
    src.push('\n');
    src.push_str(&shared.line_after_body(&before, "\n", FILE_NAME));
    src.push_str("}\n\n");
    let _ = writeln!(
        src,
        "extern \"C\" void {name}(void* const* kk_args, const kk_launch* kk_l) {{"
    );
    src.push_str(&unpack);
    src.push_str(concat!(
        "  const uint3 kk_grid{kk_l->grid[0], kk_l->grid[1], kk_l->grid[2]};\n",
        "  const uint3 kk_tg{kk_l->tg[0], kk_l->tg[1], kk_l->tg[2]};\n",
        "  const uint3 kk_groups{kk_l->groups[0], kk_l->groups[1], kk_l->groups[2]};\n",
        "  const uint kk_simd = kk_l->simd;\n",
        "  (void)kk_simd;\n",
        "  kk::rt::tl_status = kk_l->status;\n",
    ));
    let mut call = format!("kk_body{}({});", cxx_template_args(desc), args.join(", "));
    if spec.check_bounds {
        call = format!(
            "const kk::bounds_where kk_at{{{{kk_local.x, kk_local.y, kk_local.z}}, \
             {{kk_group.x, kk_group.y, kk_group.z}}}};\n          {call}"
        );
    }
    if spec.group_function.is_some() {
        // The threads of each group as fibers (see the module docs).
        src.push_str(concat!(
            "  if (!kk_l->stacks || kk_l->stack_count < kk_tg.x * kk_tg.y * kk_tg.z) {\n",
            "    kk::rt::report(2u);\n",
            "    return;\n",
            "  }\n",
            "  unsigned kk_lids[1024];\n",
            "  for (uint64_t kk_g = kk_l->group_begin; kk_g < kk_l->group_end; ++kk_g) {\n",
            "    const uint3 kk_group{(uint)(kk_g % kk_groups.x), (uint)((kk_g / kk_groups.x) % kk_groups.y),\n",
            "                         (uint)(kk_g / ((uint64_t)kk_groups.x * kk_groups.y))};\n",
            "    unsigned kk_n = 0;\n",
            "    for (uint kk_z = 0; kk_z < kk_tg.z; ++kk_z) {\n",
            "      if ((uint64_t)kk_group.z * kk_tg.z + kk_z >= kk_grid.z) break;\n",
            "      for (uint kk_y = 0; kk_y < kk_tg.y; ++kk_y) {\n",
            "        if ((uint64_t)kk_group.y * kk_tg.y + kk_y >= kk_grid.y) break;\n",
            "        for (uint kk_x = 0; kk_x < kk_tg.x; ++kk_x) {\n",
            "          if ((uint64_t)kk_group.x * kk_tg.x + kk_x >= kk_grid.x) break;\n",
            "          kk_lids[kk_n++] = (kk_z * kk_tg.y + kk_y) * kk_tg.x + kk_x;\n",
            "        }\n",
            "      }\n",
            "    }\n",
            "    auto kk_thread = [&](unsigned kk_lid) {\n",
            "      const uint3 kk_local{kk_lid % kk_tg.x, (kk_lid / kk_tg.x) % kk_tg.y, kk_lid / (kk_tg.x * kk_tg.y)};\n",
            "      (void)kk_local;\n",
        ));
        let _ = writeln!(src, "      {call}");
        src.push_str(concat!(
            "    };\n",
            "    kk::rt::run_group(kk_thread, kk_lids, kk_n, kk_l->stacks, kk_l->stack_stride, kk_l->stack_guard);\n",
            "  }\n",
        ));
        src.push_str(flush_printf(spec));
        src.push_str("}\n");
        return VariantText {
            name,
            before,
            after: src,
        };
    }
    src.push_str(concat!(
        "  for (uint64_t kk_g = kk_l->group_begin; kk_g < kk_l->group_end; ++kk_g) {\n",
        "    const uint3 kk_group{(uint)(kk_g % kk_groups.x), (uint)((kk_g / kk_groups.x) % kk_groups.y),\n",
        "                         (uint)(kk_g / ((uint64_t)kk_groups.x * kk_groups.y))};\n",
        "    for (uint kk_z = 0; kk_z < kk_tg.z; ++kk_z) {\n",
        "      if ((uint64_t)kk_group.z * kk_tg.z + kk_z >= kk_grid.z) break;\n",
        "      for (uint kk_y = 0; kk_y < kk_tg.y; ++kk_y) {\n",
        "        if ((uint64_t)kk_group.y * kk_tg.y + kk_y >= kk_grid.y) break;\n",
        "        for (uint kk_x = 0; kk_x < kk_tg.x; ++kk_x) {\n",
        "          if ((uint64_t)kk_group.x * kk_tg.x + kk_x >= kk_grid.x) break;\n",
        "          const uint3 kk_local{kk_x, kk_y, kk_z};\n",
        "          const uint kk_lid = (kk_z * kk_tg.y + kk_y) * kk_tg.x + kk_x;\n",
        "          (void)kk_local; (void)kk_lid;\n",
    ));
    let _ = writeln!(src, "          {call}");
    src.push_str("        }\n      }\n    }\n  }\n");
    src.push_str(flush_printf(spec));
    src.push_str("}\n");
    VariantText {
        name,
        before,
        after: src,
    }
}

/// A body that prints (`printf`) has its output flushed when its groups
/// have run, as a GPU's is at the launch's end: the launch returns with
/// the text written, in order with the host's own output.
fn flush_printf(spec: &KernelSpec) -> &'static str {
    let prints = |text: &str| {
        text.match_indices("printf").any(|(at, _)| {
            let before = text[..at].chars().next_back();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    if prints(&spec.source) || prints(&spec.header) {
        "  fflush(stdout);\n"
    } else {
        ""
    }
}

/// The user's body inside a generated CPU source: between the `kk_body`
/// signature line and the closing brace before the entry point (a
/// compiler's log refers to lines of the whole source; people, to lines of
/// their body).
pub(crate) fn body_of(src: &str) -> &str {
    let Some(start) = src.find("static inline void kk_body(") else {
        return "";
    };
    let Some(open) = src[start..].find(") {\n") else {
        return "";
    };
    let body_start = start + open + 4;
    let Some(end) = src[body_start..].find("\n}\n\nextern \"C\"") else {
        return "";
    };
    super::strip_line_marks(&src[body_start..body_start + end])
}
